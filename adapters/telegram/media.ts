/**
 * Downloading Telegram files for the worker (`Outbound.media`): `getFile` turns a `file_id` into a
 * `file_path`, and the file is fetched from the Bot API's file endpoint,
 * `<TELEGRAM_API_ROOT>/file/bot<token>/<file_path>`, and from nowhere else. Bots may download files
 * of at most 20 MB (`getFile` answers "file is too big" beyond that).
 * Source: https://core.telegram.org/bots/api#getfile and #file.
 */
import { GrammyError, type Api } from "grammy";
import type { Config } from "../../src/config.js";
import { downloadFile, originOf } from "../../src/media/download.js";
import { MediaError } from "../../src/media/errors.js";
import type { MediaDownloadOptions, MediaSource } from "../../src/media/source.js";
import type { MediaRef } from "../../src/queue/incoming.js";
import { botToken } from "./api.js";

/** The official Bot API root. */
const OFFICIAL_ROOT = "https://api.telegram.org";

/** See the module comment. */
export class TelegramMedia implements MediaSource {
  readonly #root: string;

  constructor(
    private readonly api: Api,
    private readonly config: Config,
  ) {
    this.#root = (config.TELEGRAM_API_ROOT ?? OFFICIAL_ROOT).replace(/\/+$/, "");
  }

  /**
   * `getFile`, then the download from the Bot API's own origin, within `maxBytes` and the size
   * `getFile` (or the message) announced. (A size the message announced over the limit is refused
   * by `prepareMedia` before this is called; `downloadFile` refuses one `getFile` announces unfetched.)
   * @throws {MediaError} `too_large` (announced, "file is too big", or found while downloading);
   *   `download_failed` (a `getFile` error, no `file_path`, a network error); `foreign_host` never
   *   happens for a Bot API file URL, but is checked all the same.
   */
  async download(ref: MediaRef, options: MediaDownloadOptions): Promise<Buffer> {
    const { what, maxBytes, signal } = options;
    if (!ref.fileId) throw new MediaError("download_failed", "a Telegram file reference without file_id", what);
    let file: Awaited<ReturnType<Api["getFile"]>>;
    try {
      file = await this.api.getFile(ref.fileId, signal as Parameters<Api["getFile"]>[1]);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof GrammyError && /file is too big/i.test(error.description))
        throw new MediaError("too_large", "getFile: file is too big", what);
      throw new MediaError(
        "download_failed",
        `getFile failed: ${error instanceof GrammyError ? `${error.error_code} ${error.description}` : (error as Error).name}`,
        what,
      );
    }
    if (!file.file_path) throw new MediaError("download_failed", "getFile returned no file_path", what);
    const url = `${this.#root}/file/bot${botToken(this.config)}/${file.file_path.split("/").map(encodeURIComponent).join("/")}`;
    return downloadFile(url, {
      allowedOrigins: [originOf(this.#root) ?? OFFICIAL_ROOT],
      maxBytes,
      announcedBytes: file.file_size ?? ref.size,
      what,
      signal,
    });
  }
}
