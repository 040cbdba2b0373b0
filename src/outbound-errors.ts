/**
 * What can go wrong when the bot talks back to a platform, in the core's words. Each adapter's
 * outbound translates its library's errors (grammY's `GrammyError` and `HttpError`, discord.js's
 * `DiscordAPIError`, `RateLimitError` and `HTTPError`) into these classes at the `Outbound`
 * boundary, so the worker decides retries, waits and apologies without knowing any library —
 * as grammY itself gives each kind of failure a class of its own that carries the failing method.
 *
 * Every class says whether the same call may succeed later (`retryable`) and carries the platform,
 * the method (`sendAnswer`, `sendMessage`…), and the platform's own error code and HTTP status
 * when there were some. Messages pass through `redact`: a bot token never reaches them.
 */
import { redact } from "./log.js";
import type { Platform } from "./queue/incoming.js";

/** Details of an {@link OutboundError}. */
export interface OutboundErrorDetails {
  /** The platform's own error code (Telegram `error_code`, Discord's JSON `code`), when given. */
  code?: number | string;
  /** The HTTP status of the platform's answer, when there was one. */
  status?: number;
  cause?: unknown;
}

/** A call to a platform failed after the client library's own retries. */
export abstract class OutboundError extends Error {
  /** True when the same call may succeed later: the job that made it may be retried. */
  abstract readonly retryable: boolean;
  /** The platform's own error code, when given. */
  readonly code: number | string | undefined;
  /** The HTTP status of the answer, when there was one. */
  readonly status: number | undefined;

  /**
   * @param platform - the platform that failed.
   * @param method - what the bot was doing: an `Outbound` method or the platform's method name.
   * @param message - what happened (redacted here).
   */
  constructor(
    readonly platform: Platform,
    readonly method: string,
    message: string,
    details: OutboundErrorDetails = {},
  ) {
    super(redact(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.code = details.code;
    this.status = details.status;
  }
}

/**
 * The platform is rate limiting the bot in this chat (HTTP 429): the call may be made again after
 * {@link RateLimitedError.retryAfterMs}. Sources: Bot API `ResponseParameters.retry_after`
 * (seconds, https://core.telegram.org/bots/api#responseparameters); Discord `retry_after`
 * (seconds, https://discord.com/developers/docs/topics/rate-limits).
 */
export class RateLimitedError extends OutboundError {
  readonly retryable = true;
  /** How long the platform asks to wait, in ms (never negative). */
  readonly retryAfterMs: number;

  constructor(
    platform: Platform,
    method: string,
    retryAfterMs: number,
    message: string,
    details: OutboundErrorDetails = {},
  ) {
    super(platform, method, message, { status: 429, ...details });
    this.name = "RateLimitedError";
    this.retryAfterMs = Math.max(0, retryAfterMs);
  }
}

/** The platform could not be reached or failed on its side (network error, timeout, HTTP 5xx): retrying later may help. */
export class PlatformUnavailableError extends OutboundError {
  readonly retryable = true;

  constructor(platform: Platform, method: string, message: string, details: OutboundErrorDetails = {}) {
    super(platform, method, message, details);
    this.name = "PlatformUnavailableError";
  }
}

/**
 * The platform says the bot can no longer write to the chat (Telegram 403 blocked or kicked, 400
 * chat or topic not found; Discord 50001 Missing Access, 10003 Unknown Channel, 50007 Cannot send
 * messages to this user). Retrying cannot help.
 */
export class ChatUnreachableError extends OutboundError {
  readonly retryable = false;

  constructor(platform: Platform, method: string, message: string, details: OutboundErrorDetails = {}) {
    super(platform, method, message, details);
    this.name = "ChatUnreachableError";
  }
}

/**
 * The message to edit or delete does not exist any more (deleted in the chat: Telegram 400
 * "message to edit not found", Discord 10008 Unknown Message). Retrying cannot help.
 */
export class MessageGoneError extends OutboundError {
  readonly retryable = false;

  constructor(platform: Platform, method: string, message: string, details: OutboundErrorDetails = {}) {
    super(platform, method, message, details);
    this.name = "MessageGoneError";
  }
}

/**
 * The platform refused the call for another reason (HTTP 400 and the like: a malformed request,
 * a limit passed, a wrong token). Sending the same call again would be refused again.
 */
export class PlatformRefusedError extends OutboundError {
  readonly retryable = false;

  constructor(platform: Platform, method: string, message: string, details: OutboundErrorDetails = {}) {
    super(platform, method, message, details);
    this.name = "PlatformRefusedError";
  }
}
