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
 * - an error with a numeric `status` (platform REST errors) ≥ 500 or 429: true;
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
  const status = (error as { status?: unknown }).status;
  if (typeof status === "number") return status === 429 || status >= 500;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && TRANSIENT_CODES.has(code)) return true;
  if (error.name === "MaxRetriesPerRequestError" || /Connection is closed|Stream isn't writeable/.test(error.message)) return true;
  if (error.cause instanceof Error && error.cause !== error) return isTransient(error.cause);
  return false;
}
