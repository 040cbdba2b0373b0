/**
 * Discord's REST errors in the core's words (`src/outbound-errors.ts`), for the `Outbound`
 * boundary: every REST call of the Discord outbound goes through {@link discordError}, so nothing
 * outside this adapter looks at a discord.js error.
 *
 * Sources: JSON error codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json),
 * rate limits and `retry_after` in seconds (https://discord.com/developers/docs/topics/rate-limits).
 */
import { DiscordAPIError, HTTPError, RateLimitError } from "discord.js";
import {
  ChatUnreachableError,
  MessageGoneError,
  OutboundError,
  PlatformRefusedError,
  PlatformUnavailableError,
  RateLimitedError,
} from "../../src/outbound-errors.js";

/** JSON error codes meaning the bot can no longer post there: Unknown Channel, Missing Access, Cannot send messages to this user. */
export const CHAT_GONE_CODES = new Set([10003, 50001, 50007]);

/** Discord's JSON error code for a message that does not exist (any more): Unknown Message. */
export const UNKNOWN_MESSAGE = 10008;

/** Wait assumed for a 429 that names no `retry_after`, in ms. */
const DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * What a REST call threw (after `@discordjs/rest`'s own retries) as a core error:
 * - `RateLimitError` (`retryAfter` in ms) and a 429 `DiscordAPIError` (`retry_after` in seconds)
 *   → {@link RateLimitedError};
 * - a 5xx (`DiscordAPIError` or `HTTPError`), and any other failure (network, timeout) →
 *   {@link PlatformUnavailableError};
 * - {@link CHAT_GONE_CODES} → {@link ChatUnreachableError}; {@link UNKNOWN_MESSAGE} → {@link MessageGoneError};
 * - any other `DiscordAPIError` (50035 Invalid Form Body…) → {@link PlatformRefusedError}.
 * The message names the method, the route (never the token), the HTTP status and Discord's code.
 *
 * @param method - what we were doing, e.g. `sendAnswer`.
 * @param route - the REST route, e.g. `/channels/123/messages`.
 */
export function discordError(error: unknown, method: string, route: string): OutboundError {
  if (error instanceof OutboundError) return error;
  const describe = (status?: number, code?: number | string) =>
    `Discord ${method} failed (${route}${status ? `, HTTP ${status}` : ""}` +
    `${code !== undefined ? `, code ${code}` : ""}): ` +
    `${error instanceof Error ? error.message : String(error)}`;
  if (error instanceof RateLimitError)
    return new RateLimitedError("discord", method, error.retryAfter, describe(429), { cause: error });
  if (error instanceof DiscordAPIError) {
    const { status, code } = error;
    const details = { code, status, cause: error };
    if (status === 429) {
      const seconds = (error.rawError as { retry_after?: unknown }).retry_after;
      return new RateLimitedError(
        "discord",
        method,
        typeof seconds === "number" ? seconds * 1000 : DEFAULT_RETRY_AFTER_MS,
        describe(status, code),
        details,
      );
    }
    if (status >= 500) return new PlatformUnavailableError("discord", method, describe(status, code), details);
    if (CHAT_GONE_CODES.has(Number(code)))
      return new ChatUnreachableError("discord", method, describe(status, code), details);
    if (Number(code) === UNKNOWN_MESSAGE)
      return new MessageGoneError("discord", method, describe(status, code), details);
    return new PlatformRefusedError("discord", method, describe(status, code), details);
  }
  if (error instanceof HTTPError)
    return new PlatformUnavailableError("discord", method, describe(error.status), {
      status: error.status,
      cause: error,
    });
  return new PlatformUnavailableError("discord", method, describe(), { cause: error });
}
