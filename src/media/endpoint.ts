/**
 * What the two OpenAI-compatible audio endpoints — transcription (`transcription.ts`) and speech
 * (`speech.ts`) — share: the retry of a passing failure with p-retry (a doubling, jittered wait,
 * a 429's `Retry-After` waited for first when it is short enough), the `Retry-After` header read,
 * and the error body's type and code for a log line.
 *
 * Sources: https://platform.openai.com/docs/guides/error-codes (the error body
 * `{ "error": { "message", "type", "param", "code" } }`), RFC 9110 §10.2.3 (`Retry-After`).
 */
import { setTimeout as sleep } from "node:timers/promises";
import pRetry from "p-retry";
import { z } from "zod";

/** How {@link retryPassing} retries. */
export interface RetryPolicy<E> {
  /** Retries after the first request (so at most `retries + 1` requests). */
  retries: number;
  /** First wait before a retry, in ms; each next one doubles, times a random 1-2 (p-retry's `randomize`). */
  minMs: number;
  /** Longest `Retry-After` still waited for, in ms; a failure asking for longer is not retried. */
  maxRetryAfterMs: number;
  /** Aborts the waits and the requests; its reason is rethrown as it is. */
  signal?: AbortSignal | undefined;
  /** The failure when it is one of this endpoint's errors that may pass (unreachable, 429, 5xx), else undefined. */
  passing(error: unknown): E | undefined;
  /** A passing failure's `Retry-After`, in ms, when it had one. */
  retryAfterMs(error: E): number | undefined;
}

/**
 * Runs `once` and retries it after a passing failure ({@link RetryPolicy.passing}) whose
 * `Retry-After` (if any) is at most `maxRetryAfterMs`: first that `Retry-After`, then p-retry's own
 * doubling wait from `minMs`. Any other failure ends it at once.
 *
 * @param once - one request; receives the attempt number (1, 2, …).
 * @returns what `once` returned, and the requests it took.
 * @throws the last failure; the signal's reason when it aborted (also during a wait).
 */
export async function retryPassing<T, E>(
  once: (attempt: number) => Promise<T>,
  policy: RetryPolicy<E>,
): Promise<{ value: T; attempts: number }> {
  let attempts = 0;
  const retryable = (error: unknown): boolean => {
    const passing = policy.passing(error);
    return passing !== undefined && (policy.retryAfterMs(passing) ?? 0) <= policy.maxRetryAfterMs;
  };
  const { signal } = policy;
  const value = await pRetry(
    async () => {
      attempts += 1;
      return once(attempts);
    },
    {
      retries: policy.retries,
      minTimeout: policy.minMs,
      factor: 2,
      randomize: true,
      ...(signal ? { signal } : {}),
      // A 429 that says when: wait that long first (p-retry's own wait follows).
      onFailedAttempt: async ({ error, retriesLeft }) => {
        const passing = retriesLeft > 0 && retryable(error) ? policy.passing(error) : undefined;
        const wait = passing !== undefined ? policy.retryAfterMs(passing) : undefined;
        if (wait) await sleep(wait, undefined, signal ? { signal } : {});
      },
      shouldRetry: ({ error }) => retryable(error),
    },
  ).catch((error: unknown) => {
    throw signal?.aborted ? signal.reason : error;
  });
  return { value, attempts };
}

/**
 * A `Retry-After` header in ms: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * @returns undefined when absent or unreadable; 0 for a date in the past.
 */
export function retryAfterOf(header: string | null): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** The OpenAI-style error body, `{ "error": { "message", "type", "code" } }`, for the log line (never the message: it may quote the key). */
const ErrorAnswer = z.object({
  error: z.object({ type: z.string().nullish(), code: z.union([z.string(), z.number()]).nullish() }).passthrough(),
});

/** ` (type, code)` of an OpenAI-style error body, for a log line (each at most 60 characters); "" when it has none. */
export function errorCode(body: string): string {
  try {
    const { error } = ErrorAnswer.parse(JSON.parse(body));
    const parts = [error.type, error.code]
      .filter((p) => p !== undefined && p !== null)
      .map((p) => String(p).slice(0, 60));
    return parts.length > 0 ? ` (${parts.join(", ")})` : "";
  } catch {
    return "";
  }
}

/** The problems both audio endpoints (transcription and speech) share; each adds its own. */
export type EndpointProblem =
  "unreachable" | "unauthorized" | "rate_limited" | "timeout" | "refused" | "failed" | "empty";

/**
 * A request to an OpenAI-compatible audio endpoint that gave nothing usable: the base of
 * `TranscriptionError` and `SpeechError`. Its message is for logs (the status and the API's error
 * code, never the key, the audio or the text).
 */
export class EndpointError<P extends string = EndpointProblem> extends Error {
  /**
   * @param problem - what went wrong (the subclass's union of problems).
   * @param options.cause - the underlying error, kept for logs; `status` the HTTP status when there
   *   was an answer; `retryAfterMs` a 429's `Retry-After`, in ms.
   */
  constructor(
    readonly problem: P,
    message: string,
    options?: { cause?: unknown; status?: number; retryAfterMs?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.status = options?.status;
    this.retryAfterMs = options?.retryAfterMs;
  }

  /** The HTTP status, when the endpoint answered. */
  readonly status: number | undefined;
  /** A 429's `Retry-After`, in ms, when it had one. */
  readonly retryAfterMs: number | undefined;

  /** Whether another request may well succeed: no answer, a 429, or a 5xx (not a timeout: its time is spent). */
  get passing(): boolean {
    const problem: string = this.problem;
    return (
      problem === "unreachable" || problem === "rate_limited" || (problem === "failed" && (this.status ?? 0) >= 500)
    );
  }
}
