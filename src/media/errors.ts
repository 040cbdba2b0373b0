/**
 * Why a file of a message could not be read. The worker answers each with a short message saying
 * what is supported and the limit (`refusal.ts`), without calling the model.
 */

/**
 * - `unsupported`: a kind or format the bot does not read (voice, video, audio, a ZIP…);
 * - `too_large`: over the size limit of its kind (announced, or found while downloading);
 * - `too_many_images`: more images in one message than `MAX_IMAGES_PER_MESSAGE`;
 * - `too_many_pages`: a PDF over `PDF_MAX_PAGES`;
 * - `too_many_pixels`: an image over `IMAGE_MAX_PIXELS` pixels (width × height), a valid file the
 *   bot will not decode (decompression bomb guard);
 * - `too_complex`: a PDF that passes a limit of opening it (decoded bytes, time or memory; see
 *   {@link MediaLimit}): a decompression bomb guard;
 * - `foreign_host`: a file URL outside the platform's own file hosts (never fetched);
 * - `unreadable`: the bytes are not what they claim (a broken image or PDF, a binary "text" file,
 *   an encrypted PDF);
 * - `download_failed`: the platform did not hand the file over (network, 4xx/5xx, expired link).
 */
export type MediaProblem =
  | "unsupported"
  | "too_large"
  | "too_many_images"
  | "too_many_pages"
  | "too_many_pixels"
  | "too_complex"
  | "foreign_host"
  | "unreadable"
  | "download_failed";

/**
 * Which limit of opening a PDF was passed (`too_complex`): `decoded` — its compressed streams
 * decode to more than `PDF_MAX_DECODED_BYTES`; `time` — more than `PDF_INSPECT_TIMEOUT_MS`;
 * `memory` — more than `PDF_WORKER_HEAP_MB` of heap.
 */
export type MediaLimit = "decoded" | "time" | "memory";

/** What a file is, for the refusal text: `image`, `pdf`, `text`, or another kind (`voice`, `video`, `video_note`, `audio`, `file`). */
export type MediaWhat = "image" | "pdf" | "text" | "voice" | "video" | "video_note" | "audio" | "file";

/**
 * A file that could not be read. The message is for logs: it never holds a URL (a Telegram file
 * URL contains the bot token) or file content.
 */
export class MediaError extends Error {
  /** For `too_many_images`: how many images the message has. */
  readonly count: number | undefined;
  /** For `too_complex`: which limit was passed. */
  readonly limit: MediaLimit | undefined;

  /**
   * @param options.cause - the underlying error, if any.
   * @param options.count - for `too_many_images`, the message's images (named in the answer).
   * @param options.limit - for `too_complex`, the limit passed (named in the answer).
   */
  constructor(
    /** Why; see {@link MediaProblem}. */
    readonly problem: MediaProblem,
    message: string,
    /** What kind of file it was, when known (picks the limit named in the answer). */
    readonly what?: MediaWhat,
    options?: { cause?: unknown; count?: number; limit?: MediaLimit },
  ) {
    super(message, options);
    this.name = "MediaError";
    this.count = options?.count;
    this.limit = options?.limit;
  }
}
