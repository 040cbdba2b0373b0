/**
 * Downloading a platform file, safely: only from the platform's own file hosts (given by the
 * caller as origins, e.g. `https://cdn.discordapp.com`), no redirects, and never more bytes than
 * allowed: the announced size is checked before the request, `Content-Length` before the body, and
 * the body is counted while it arrives and cut off as soon as it passes the announced size or the
 * limit (a file larger than announced is refused, not truncated).
 */
import { MediaError, type MediaWhat } from "./errors.js";

/** Default time for one download, in ms (headers and body). */
const DOWNLOAD_TIMEOUT_MS = 30_000;

/** Options of {@link downloadFile}. */
export interface DownloadOptions {
  /** Origins (`protocol://host[:port]`, as `URL.origin` gives them) files may come from; any other is refused unfetched. */
  allowedOrigins: readonly string[];
  /** Most bytes accepted. */
  maxBytes: number;
  /** The size the platform announced, in bytes: more than `maxBytes` is refused unfetched; a body longer than it is cut off and refused. */
  announcedBytes?: number;
  /** What the file is, carried into a {@link MediaError} for the answer. */
  what?: MediaWhat;
  /** Aborts the download (e.g. the answer's deadline). */
  signal?: AbortSignal;
  /** Time for the whole download in ms; default {@link DOWNLOAD_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/** The origin of `url` when it parses as http(s), else undefined. */
export function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Downloads `url` into memory.
 *
 * @returns the file's bytes (at most `min(maxBytes, announcedBytes)`).
 * @throws {MediaError} `foreign_host` for a URL outside `allowedOrigins` (nothing is fetched);
 *   `too_large` when the announced size, the `Content-Length` or the bytes received pass the limit
 *   (the connection is cut at once); `download_failed` for a network error, a timeout, a redirect or
 *   a status other than 200. The error message never contains the URL (a Telegram file URL holds
 *   the bot token). An abort of `signal` rethrows its reason.
 */
export async function downloadFile(url: string, options: DownloadOptions): Promise<Buffer> {
  const { what } = options;
  const origin = originOf(url);
  if (origin === undefined || !options.allowedOrigins.includes(origin)) {
    throw new MediaError(
      "foreign_host",
      `refused a file on ${origin ?? "a URL that is not http(s)"}: not one of the platform's file hosts`,
      what,
    );
  }
  const limit = Math.min(options.maxBytes, options.announcedBytes ?? Infinity);
  if (options.announcedBytes !== undefined && options.announcedBytes > options.maxBytes) {
    throw new MediaError(
      "too_large",
      `announced ${options.announcedBytes} bytes, over the limit of ${options.maxBytes}`,
      what,
    );
  }
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DOWNLOAD_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, { redirect: "error", signal });
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw new MediaError("download_failed", `download from ${origin} failed: ${(error as Error).name}`, what);
  }
  const body = response.body;
  if (response.status !== 200 || !body) {
    await body?.cancel().catch(() => {});
    throw new MediaError("download_failed", `download from ${origin} answered HTTP ${response.status}`, what);
  }
  const announced = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(announced) && announced > limit) {
    await body.cancel().catch(() => {});
    throw new MediaError("too_large", `Content-Length ${announced} is over the limit of ${limit} bytes`, what);
  }
  const chunks: Uint8Array[] = [];
  let received = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received += value.byteLength;
      if (received > limit) {
        await reader.cancel().catch(() => {});
        const why =
          options.announcedBytes !== undefined && received > options.announcedBytes
            ? `larger than the announced ${options.announcedBytes} bytes`
            : `over the limit of ${limit} bytes`;
        throw new MediaError("too_large", `download cut off after ${received} bytes: ${why}`, what);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof MediaError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    throw new MediaError("download_failed", `download from ${origin} broke off: ${(error as Error).name}`, what);
  }
  return Buffer.concat(chunks);
}
