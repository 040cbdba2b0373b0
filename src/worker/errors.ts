/**
 * Which failures a chat job retries. Only transient ones: the network, a 5xx or 429 from the
 * model API, an error that says `retryable: true` (the agent loop's `ModelUnavailableError`), a
 * Redis connection problem. Everything else is final: the user gets an apology and the message is
 * consumed, so one bad message never blocks its chat.
 */
import Anthropic from "@anthropic-ai/sdk";

const TRANSIENT_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "ENOTFOUND", "ENETUNREACH", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"]);

/**
 * True when retrying the job later may succeed.
 *
 * - an error with a boolean `retryable` property: that value (set by `ModelUnavailableError`);
 * - `Anthropic.APIConnectionError` (includes timeouts): true;
 * - `Anthropic.APIError` with status 408, 409, 429 or ≥ 500: true; other statuses: false;
 * - a platform rate limit ({@link retryAfterMs} finds one): true;
 * - grammy's `HttpError` (the Bot API could not be reached: reset, refused, timeout): true;
 * - an error with a numeric `status` or `error_code` (platform REST errors) ≥ 500 or 429: true;
 * - Node network error codes (`ECONNRESET`, …) and ioredis connection errors: true;
 * - anything else: false.
 */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const retryable = (error as { retryable?: unknown }).retryable;
  if (typeof retryable === "boolean") return retryable;
  if (error instanceof Anthropic.APIConnectionError) return true;
  if (error instanceof Anthropic.APIError) {
    const status = error.status ?? 0;
    return status === 408 || status === 409 || status === 429 || status >= 500;
  }
  if (retryAfterMs(error) !== undefined) return true;
  // grammy's HttpError: the Bot API could not be reached (reset, refused, timeout); the cause is in `.error`
  if (error.name === "HttpError") return true;
  const status = (error as { status?: unknown; error_code?: unknown }).status ?? (error as { error_code?: unknown }).error_code;
  if (typeof status === "number") return status === 429 || status >= 500;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && TRANSIENT_CODES.has(code)) return true;
  if (error.name === "MaxRetriesPerRequestError" || /Connection is closed|Stream isn't writeable/.test(error.message)) return true;
  if (error.cause instanceof Error && error.cause !== error) return isTransient(error.cause);
  return false;
}

/** Wait assumed for a 429 that names no `retry_after`, in ms. */
const DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * When `error` is a platform's "too many requests" answer, the wait it asks for, in ms; otherwise
 * undefined. Looks at the error and its `cause` chain, by shape (the worker does not import the
 * platform libraries):
 * - grammy `GrammyError`: `error_code` 429 and `parameters.retry_after` in seconds
 *   (Bot API `ResponseParameters`, https://core.telegram.org/bots/api#responseparameters);
 * - discord.js `RateLimitError`: `retryAfter` in ms; `DiscordAPIError` / our `DiscordSendError`:
 *   `status` 429 and `rawError.retry_after` in seconds (https://discord.com/developers/docs/topics/rate-limits);
 * - any other error with `status` or `error_code` 429: {@link DEFAULT_RETRY_AFTER_MS}.
 */
export function retryAfterMs(error: unknown): number | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    const x = e as { name?: unknown; retryAfter?: unknown; status?: unknown; error_code?: unknown; parameters?: { retry_after?: unknown }; rawError?: { retry_after?: unknown } };
    // discord.js names it `RateLimitError[<route>]`
    if (typeof x.name === "string" && x.name.startsWith("RateLimitError") && typeof x.retryAfter === "number") return Math.max(0, x.retryAfter);
    if (x.status !== 429 && x.error_code !== 429) continue;
    const seconds = x.parameters?.retry_after ?? x.rawError?.retry_after;
    if (typeof seconds === "number" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    // a wrapper without the details: its cause may carry them
    let inner: number | undefined;
    if (e.cause instanceof Error && e.cause !== e) inner = retryAfterMs(e.cause);
    return inner ?? DEFAULT_RETRY_AFTER_MS;
  }
  return undefined;
}
