/**
 * Downloading Discord attachments for the worker (`Outbound.media`): the attachment URL the
 * gateway gave (`attachment.url`, signed with `ex`/`is`/`hm`) is fetched only when it is on
 * Discord's CDN (`https://cdn.discordapp.com`, `https://media.discordapp.net`) or on the origin
 * of `DISCORD_API_URL` (a proxy, or the test fake); any other host is refused unfetched.
 * Source: https://discord.com/developers/docs/reference#image-formatting-image-base-url and
 * https://discord.com/developers/docs/resources/message#attachment-object.
 */
import type { Config } from "../../src/config.js";
import { downloadFile, originOf } from "../../src/media/download.js";
import { MediaError } from "../../src/media/errors.js";
import type { MediaDownloadOptions, MediaSource } from "../../src/media/source.js";
import type { MediaRef } from "../../src/queue/incoming.js";

/** Discord's own file hosts. */
const DISCORD_FILE_ORIGINS = ["https://cdn.discordapp.com", "https://media.discordapp.net"] as const;

/** The origins attachments may be downloaded from: Discord's CDN and the origin of `DISCORD_API_URL`. */
function discordFileOrigins(config: Config): string[] {
  const api = originOf(config.DISCORD_API_URL ?? "https://discord.com/api");
  return [...DISCORD_FILE_ORIGINS, ...(api ? [api] : [])];
}

/** See the module comment. */
export class DiscordMedia implements MediaSource {
  readonly #origins: string[];

  constructor(config: Config) {
    this.#origins = discordFileOrigins(config);
  }

  /**
   * Downloads an attachment within `maxBytes` and its announced `size`.
   * @throws {MediaError} `foreign_host` for a URL on any other origin (nothing fetched); `too_large`;
   *   `download_failed`.
   */
  async download(ref: MediaRef, options: MediaDownloadOptions): Promise<Buffer> {
    if (!ref.url) throw new MediaError("download_failed", "a Discord file reference without url", options.what);
    return downloadFile(ref.url, {
      allowedOrigins: this.#origins,
      maxBytes: options.maxBytes,
      announcedBytes: ref.size,
      what: options.what,
      signal: options.signal,
    });
  }
}
