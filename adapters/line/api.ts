/**
 * The LINE Messaging API clients (`@line/bot-sdk`'s `MessagingApiClient` and
 * `MessagingApiBlobClient`) and the rules every call of the adapter follows:
 * - bounded: a call that has not answered within {@link LINE_CALL_TIMEOUT_MS} fails (the SDK's
 *   `fetch` has no timeout of its own) as {@link PlatformUnavailableError};
 * - retried (p-retry) on 429 rate limiting (not the monthly quota), 5xx and network errors, up to
 *   {@link LINE_RETRIES} times, waiting `Retry-After` when LINE sends one, else 1 s, 2 s …;
 * - its failures translated into the core's errors (`src/outbound-errors.ts`) by {@link lineError}.
 *
 * Sources: https://developers.line.biz/en/reference/messaging-api/#status-codes and
 * #error-responses (error bodies `{ message, details }`), #rate-limits.
 */
import { HTTPFetchError, messagingApi } from "@line/bot-sdk";
import pRetry, { AbortError } from "p-retry";
import type { Config } from "../../src/config.js";
import {
  ChatUnreachableError,
  OutboundError,
  PlatformRefusedError,
  PlatformUnavailableError,
  RateLimitedError,
} from "../../src/outbound-errors.js";

/** LINE's Messaging API host. */
export const LINE_API_DEFAULT = "https://api.line.me";
/** LINE's content host (message contents: images, audio, files). */
export const LINE_DATA_API_DEFAULT = "https://api-data.line.me";
/** Longest wait for one LINE call, in ms. */
export const LINE_CALL_TIMEOUT_MS = 15_000;
/** Retries of a call after a 429 (rate limit), 5xx or network error. */
export const LINE_RETRIES = 2;

/** The two clients of one channel. */
export interface LineClients {
  api: messagingApi.MessagingApiClient;
  blob: messagingApi.MessagingApiBlobClient;
}

/**
 * The clients for `LINE_CHANNEL_ACCESS_TOKEN`, on `LINE_API_URL` / `LINE_DATA_API_URL` (LINE's own hosts by default).
 * @throws {Error} when `LINE_CHANNEL_ACCESS_TOKEN` is not set.
 */
export function createClients(config: Config): LineClients {
  const channelAccessToken = config.LINE_CHANNEL_ACCESS_TOKEN;
  if (!channelAccessToken) throw new Error("LINE_CHANNEL_ACCESS_TOKEN is not set");
  return {
    api: new messagingApi.MessagingApiClient({ channelAccessToken, baseURL: config.LINE_API_URL ?? LINE_API_DEFAULT }),
    blob: new messagingApi.MessagingApiBlobClient({
      channelAccessToken,
      baseURL: config.LINE_DATA_API_URL ?? LINE_DATA_API_DEFAULT,
    }),
  };
}

/** LINE's error body's `message`, or "" (never the request's content). */
export function lineMessage(error: unknown): string {
  if (!(error instanceof HTTPFetchError)) return "";
  try {
    const body = JSON.parse(error.body) as { message?: unknown };
    return typeof body.message === "string" ? body.message.slice(0, 200) : "";
  } catch {
    return "";
  }
}

/** True for LINE's 400 `Invalid reply token` (used, expired, or never issued). */
export function isInvalidReplyToken(error: unknown): boolean {
  const cause = error instanceof OutboundError ? error.cause : error;
  return cause instanceof HTTPFetchError && cause.status === 400 && /reply token/i.test(lineMessage(cause));
}

/** True for the 429 that means the channel's monthly message quota is used up (not a rate limit: waiting does not help). */
export function isQuotaExhausted(error: unknown): boolean {
  const cause = error instanceof OutboundError ? error.cause : error;
  return cause instanceof HTTPFetchError && cause.status === 429 && /monthly limit/i.test(lineMessage(cause));
}

/** True for the 409 of a push whose `X-Line-Retry-Key` LINE accepted before (it was sent then; not sent again). */
export function isRetryKeyAccepted(error: unknown): boolean {
  const cause = error instanceof OutboundError ? error.cause : error;
  return cause instanceof HTTPFetchError && cause.status === 409 && cause.headers.has("x-line-accepted-request-id");
}

/**
 * `error` (what an SDK call threw) as a core error:
 * - 429 with `You have reached your monthly limit.` → {@link PlatformRefusedError} (not retryable);
 * - other 429 → {@link RateLimitedError} (`Retry-After` seconds, else 1 s);
 * - ≥ 500, a network error, a timeout → {@link PlatformUnavailableError};
 * - 403, and 400 `Failed to send messages` for a push → {@link ChatUnreachableError} (the user
 *   blocked the bot, the bot left the group);
 * - any other HTTP error → {@link PlatformRefusedError};
 * - an error of ours is returned unchanged.
 * @param method - what the bot was doing (`sendAnswer`, `pushMessage` …).
 */
export function lineError(error: unknown, method: string): unknown {
  if (error instanceof OutboundError) return error;
  if (error instanceof HTTPFetchError) {
    const said = lineMessage(error);
    const message = `line: ${method}: ${error.status}${said ? ` ${said}` : ""}`;
    const details = { status: error.status, code: error.status, cause: error };
    if (error.status === 429 && !isQuotaExhausted(error)) {
      const seconds = Number(error.headers.get("retry-after"));
      return new RateLimitedError(
        "line",
        method,
        Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000,
        message,
        details,
      );
    }
    if (error.status >= 500) return new PlatformUnavailableError("line", method, message, details);
    if (error.status === 403 || (error.status === 400 && /failed to send messages/i.test(said)))
      return new ChatUnreachableError("line", method, message, details);
    return new PlatformRefusedError("line", method, message, details);
  }
  if (error instanceof TimeoutError || error instanceof TypeError)
    return new PlatformUnavailableError("line", method, `line: ${method}: ${(error as Error).message}`, {
      cause: error,
    });
  return error;
}

/** A LINE call that did not answer in time. */
export class TimeoutError extends Error {
  constructor(method: string, ms: number) {
    super(`${method} did not answer within ${ms / 1000} s`);
    this.name = "TimeoutError";
  }
}

/**
 * Runs one LINE call with the rules of this module: bounded by `timeoutMs`, retried on rate limits,
 * 5xx and network errors, failures translated by {@link lineError}.
 * @param method - names the call in errors and logs.
 * @param options.retries - default {@link LINE_RETRIES}; 0 for calls that must not repeat (a reply token is single use).
 * @throws the core error of the last failure.
 */
export async function lineCall<T>(
  method: string,
  call: () => Promise<T>,
  options: { retries?: number; timeoutMs?: number } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? LINE_CALL_TIMEOUT_MS;
  try {
    return await pRetry(
      async () => {
        try {
          return await bounded(call(), timeoutMs, method);
        } catch (error) {
          const translated = lineError(error, method);
          if (translated instanceof OutboundError && translated.retryable) throw translated;
          throw new AbortError(translated instanceof Error ? translated : new Error(String(translated)));
        }
      },
      {
        retries: options.retries ?? LINE_RETRIES,
        minTimeout: 0,
        maxTimeout: 0,
        randomize: false,
        // Waits here rather than p-retry's backoff: LINE's Retry-After when given, else 1 s, 2 s.
        onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
          if (retriesLeft === 0) return;
          const wait = error instanceof RateLimitedError ? error.retryAfterMs : 1000 * attemptNumber;
          await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 10_000)));
        },
      },
    );
  } catch (error) {
    throw lineError(error, method);
  }
}

function bounded<T>(promise: Promise<T>, ms: number, method: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(method, ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
