/**
 * Which failures a job retries. Only transient ones: an error that declares itself `retryable`
 * (the platform errors of `src/outbound-errors.ts`, the agent loop's `ModelUnavailableError`), a
 * network error of this process, a Redis connection problem. Everything else is final: the user
 * gets an apology and the message is consumed, so one bad message never blocks its chat.
 *
 * No library's error is inspected here: adapters translate platform errors at the `Outbound`
 * boundary, the agent loop translates the SDK's.
 */
import { localize, type Locale } from "../i18n.js";
import { RateLimitedError } from "../outbound-errors.js";

/** Node's network error codes: the connection of this process failed, not the request. */
const TRANSIENT_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * An error of ours that says whether retrying may help (`OutboundError`, `ModelUnavailableError`,
 * `AnswerDeadlineError`, `NoOutboundError`).
 */
export interface RetryableError extends Error {
  readonly retryable: boolean;
}

/** True when `error` declares `retryable` (see {@link RetryableError}). */
function declaresRetryable(error: Error): error is RetryableError {
  return typeof (error as Partial<RetryableError>).retryable === "boolean";
}

/**
 * True when retrying the job later may succeed:
 * - an error that declares `retryable` ({@link RetryableError}): that value;
 * - a Node network error code (`ECONNRESET`, …) and ioredis's connection errors (the worker's
 *   Redis connection waits through an outage, so these mean it is reconnecting): true;
 * - the same, found in the `cause` chain: true;
 * - anything else: false.
 */
export function isTransient(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    if (declaresRetryable(e)) return e.retryable;
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string" && TRANSIENT_CODES.has(code)) return true;
    if (e.name === "MaxRetriesPerRequestError" || /Connection is closed|Stream isn't writeable/.test(e.message))
      return true;
  }
  return false;
}

/** When `error` is a platform's rate limit ({@link RateLimitedError}), the wait it asks for, in ms; otherwise undefined. */
export function retryAfterMs(error: unknown): number | undefined {
  return error instanceof RateLimitedError ? error.retryAfterMs : undefined;
}

/**
 * This worker has no outbound for the message's platform (its token is not set here): another
 * worker process may have one, so the job is retried there.
 */
export class NoOutboundError extends Error {
  readonly retryable = true;
  /** @param platform - the platform of the message. */
  constructor(readonly platform: string) {
    super(`no outbound for platform ${platform} in this worker (set its token here)`);
    this.name = "NoOutboundError";
  }
}

/**
 * The processing of this answer crashed a worker process {@link CrashLoopError.crashes} times
 * (the process died with it: a native crash, memory exhausted, a kill): it is skipped with a short
 * apology instead of being handed to the next worker again. Final, never retried.
 */
export class CrashLoopError extends Error {
  readonly retryable = false;
  /**
   * @param crashes - attempts that began and whose worker process died before they ended.
   * @param fallback - what the user reads instead of the generic words (a decision's own failure text).
   */
  constructor(
    readonly crashes: number,
    private readonly fallback?: string,
  ) {
    super(`the processing of this message crashed a worker ${crashes} times; skipped`);
    this.name = "CrashLoopError";
  }

  /** The apology the user reads (`sendApology` uses it). */
  userMessage(locale: Locale): string {
    return (
      this.fallback ??
      localize(locale, {
        "zh-TW": "抱歉，處理這則訊息時出了問題，我先跳過它。可以換個方式再說一次嗎？",
        en: "Sorry, something went wrong while handling this message, so I skipped it. Could you say it another way?",
      })
    );
  }
}
