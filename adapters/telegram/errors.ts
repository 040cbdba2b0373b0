/**
 * The Bot API's errors in the core's words (`src/outbound-errors.ts`), for the `Outbound`
 * boundary: the Telegram outbound translates every grammY error it lets out with
 * {@link telegramError}, so nothing outside this adapter looks at a `GrammyError` or an `HttpError`.
 *
 * Sources: error codes and `ResponseParameters.retry_after`
 * (https://core.telegram.org/bots/api#making-requests, https://core.telegram.org/bots/api#responseparameters);
 * grammY's error classes (https://grammy.dev/guide/errors).
 */
import { GrammyError, HttpError } from "grammy";
import {
  ChatUnreachableError,
  MessageGoneError,
  OutboundError,
  PlatformRefusedError,
  PlatformUnavailableError,
  RateLimitedError,
} from "../../src/outbound-errors.js";
import { isUneditable } from "./api.js";

/** Wait assumed for a 429 that names no `retry_after`, in ms. */
const DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * True when the Bot API says the bot can no longer write to the chat: 403 (blocked by the user,
 * kicked from the group, deactivated user) or 400 "chat not found" / a deleted topic / no rights.
 */
export function isChatGone(error: unknown): boolean {
  if (!(error instanceof GrammyError)) return false;
  if (error.error_code === 403) return true;
  return (
    error.error_code === 400 &&
    /chat not found|message thread not found|not enough rights|have no rights|CHAT_WRITE_FORBIDDEN|group chat was upgraded/i.test(
      error.description,
    )
  );
}

/**
 * `error` (what a grammY call threw, after the auto-retry plugin's own retries) as a core error:
 * - `GrammyError` 429 → {@link RateLimitedError} with `parameters.retry_after` in ms;
 * - `GrammyError` ≥ 500, and `HttpError` (the Bot API could not be reached: reset, refused,
 *   timeout) → {@link PlatformUnavailableError};
 * - 403 and "chat not found"-like 400s ({@link isChatGone}) → {@link ChatUnreachableError};
 * - "message to edit not found" / "message can't be edited" → {@link MessageGoneError};
 * - any other `GrammyError` → {@link PlatformRefusedError};
 * - anything else (an error of ours, e.g. a failed Redis write in a callback) unchanged.
 *
 * @param method - the `Outbound` method that failed, e.g. `sendAnswer`.
 */
export function telegramError(error: unknown, method: string): unknown {
  if (error instanceof OutboundError) return error;
  if (error instanceof HttpError)
    return new PlatformUnavailableError("telegram", method, `telegram: ${method}: ${error.message}`, { cause: error });
  if (!(error instanceof GrammyError)) return error;
  const details = { code: error.error_code, status: error.error_code, cause: error };
  const message = `telegram: ${method}: ${error.message}`;
  if (error.error_code === 429) {
    const seconds = error.parameters.retry_after;
    return new RateLimitedError(
      "telegram",
      method,
      typeof seconds === "number" ? seconds * 1000 : DEFAULT_RETRY_AFTER_MS,
      message,
      details,
    );
  }
  if (error.error_code >= 500) return new PlatformUnavailableError("telegram", method, message, details);
  if (isChatGone(error)) return new ChatUnreachableError("telegram", method, message, details);
  if (isUneditable(error)) return new MessageGoneError("telegram", method, message, details);
  return new PlatformRefusedError("telegram", method, message, details);
}

/** Runs `call` and rethrows what it throws as {@link telegramError} of `method`. */
export async function translated<T>(method: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw telegramError(error, method);
  }
}
