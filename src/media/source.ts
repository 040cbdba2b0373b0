/**
 * Where a worker gets a message's files: an optional capability of a platform's outbound half
 * (`Outbound.media`), so the worker reaches the platform only through the outbound contract.
 */
import type { MediaRef } from "../queue/incoming.js";
import type { MediaWhat } from "./errors.js";

/** Options of {@link MediaSource.download}. */
export interface MediaDownloadOptions {
  /** Most bytes accepted for this file (its kind's limit, `src/media/limits.ts`). */
  maxBytes: number;
  /** What the file is taken to be (carried into a `MediaError`). */
  what: MediaWhat;
  /** Aborts the download (the answer's deadline). */
  signal?: AbortSignal;
}

/** Downloads the files of one platform, from that platform's own file hosts only. */
export interface MediaSource {
  /**
   * The bytes of `ref`'s file, at most `maxBytes` (and never more than the platform announced).
   * @throws {MediaError} `too_large`, `foreign_host`, `download_failed` (see `downloadFile`).
   */
  download(ref: MediaRef, options: MediaDownloadOptions): Promise<Buffer>;
}
