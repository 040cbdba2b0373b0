/**
 * Downloading the files of LINE messages for the worker (`Outbound.media`): the content API
 * `GET /v2/bot/message/{messageId}/content` on the data host (`api-data.line.me`, or
 * `LINE_DATA_API_URL`) through the SDK's `MessagingApiBlobClient`, and from nowhere else. The size
 * is checked before the bytes are read (the size a file message announced, then the response's
 * `Content-Length`) and while they are read (the stream is destroyed past the limit).
 * Source: https://developers.line.biz/en/reference/messaging-api/#get-content
 */
import type { Readable } from "node:stream";
import { MediaError } from "../../src/media/errors.js";
import type { MediaDownloadOptions, MediaSource } from "../../src/media/source.js";
import type { MediaRef } from "../../src/queue/incoming.js";
import { lineCall, type LineClients } from "./api.js";

/** See the module comment. */
export class LineMedia implements MediaSource {
  constructor(private readonly clients: LineClients) {}

  /**
   * The bytes of the message `ref.fileId` (a LINE message id), within `maxBytes` and the announced size.
   * @throws {MediaError} `too_large` (announced, `Content-Length`, or found while reading);
   *   `download_failed` (LINE refused, e.g. the content expired, or the network failed).
   */
  async download(ref: MediaRef, options: MediaDownloadOptions): Promise<Buffer> {
    const { what, maxBytes, signal } = options;
    if (!ref.fileId || !/^\d{1,32}$/.test(ref.fileId))
      throw new MediaError("download_failed", "a LINE file reference without a message id", what);
    if (ref.size !== undefined && ref.size > maxBytes)
      throw new MediaError("too_large", `announced ${ref.size} bytes, over ${maxBytes}`, what);
    const limit = Math.min(maxBytes, ref.size ?? Infinity);
    let response: { httpResponse: Response; body: Readable };
    try {
      const id = ref.fileId;
      response = await lineCall("getMessageContent", () => this.clients.blob.getMessageContentWithHttpInfo(id));
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new MediaError("download_failed", `getMessageContent failed: ${(error as Error).message}`, what, {
        cause: error,
      });
    }
    const { body, httpResponse } = response;
    const declared = Number(httpResponse.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > limit) {
      body.destroy();
      throw new MediaError("too_large", `Content-Length ${declared} over ${limit}`, what);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    const abort = () => body.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal?.addEventListener("abort", abort, { once: true });
    try {
      for await (const chunk of body) {
        total += (chunk as Buffer).length;
        if (total > limit) {
          body.destroy();
          throw new MediaError("too_large", `more than ${limit} bytes`, what);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof MediaError) throw error;
      if (signal?.aborted) throw signal.reason;
      throw new MediaError("download_failed", `reading the content failed: ${(error as Error).message}`, what, {
        cause: error,
      });
    } finally {
      signal?.removeEventListener("abort", abort);
    }
    return Buffer.concat(chunks);
  }
}
