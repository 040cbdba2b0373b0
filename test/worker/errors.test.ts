/**
 * Platform errors as the worker sees them: each adapter translates its library's errors at the
 * `Outbound` boundary (`adapters/<platform>/errors.ts`), and the worker's retry rules read only the core's
 * classes (`src/outbound-errors.ts`).
 */
import { DiscordAPIError, RateLimitError } from "discord.js";
import { GrammyError, HttpError } from "grammy";
import { describe, expect, it } from "vitest";
import { discordError } from "../../adapters/discord/errors.js";
import { telegramError } from "../../adapters/telegram/errors.js";
import {
  ChatUnreachableError,
  MessageGoneError,
  PlatformRefusedError,
  PlatformUnavailableError,
  RateLimitedError,
} from "../../src/outbound-errors.js";
import { isTransient, retryAfterMs } from "../../src/worker/errors.js";

describe("platform rate limits are retryable, with their retry_after", () => {
  it("grammy: a 429 GrammyError with parameters.retry_after (seconds)", () => {
    const error = telegramError(
      new GrammyError(
        "Call to 'sendMessage' failed!",
        {
          ok: false,
          error_code: 429,
          description: "Too Many Requests: retry after 12",
          parameters: { retry_after: 12 },
        },
        "sendMessage",
        {},
      ),
      "sendAnswer",
    );
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(retryAfterMs(error)).toBe(12_000);
    expect(isTransient(error)).toBe(true);
    // a 400 is neither
    const bad = telegramError(
      new GrammyError(
        "Call to 'sendMessage' failed!",
        { ok: false, error_code: 400, description: "Bad Request: chat not found" },
        "sendMessage",
        {},
      ),
      "sendAnswer",
    );
    expect(bad).toBeInstanceOf(ChatUnreachableError);
    expect(retryAfterMs(bad)).toBeUndefined();
    expect(isTransient(bad)).toBe(false);
    // the Bot API could not be reached (e.g. a kept-alive socket reset after a retry_after wait)
    const unreachable = telegramError(
      new HttpError(
        "Network request for 'sendMessage' failed!",
        Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
      ),
      "sendAnswer",
    );
    expect(unreachable).toBeInstanceOf(PlatformUnavailableError);
    expect(isTransient(unreachable)).toBe(true);
    // a 5xx is retried; a deleted message to edit is gone; another 400 is refused
    expect(
      isTransient(
        telegramError(
          new GrammyError("x", { ok: false, error_code: 502, description: "Bad Gateway" }, "sendMessage", {}),
          "sendAnswer",
        ),
      ),
    ).toBe(true);
    expect(
      telegramError(
        new GrammyError(
          "x",
          { ok: false, error_code: 400, description: "Bad Request: message to edit not found" },
          "editMessageText",
          {},
        ),
        "sendAnswer",
      ),
    ).toBeInstanceOf(MessageGoneError);
    expect(
      telegramError(
        new GrammyError(
          "x",
          { ok: false, error_code: 400, description: "Bad Request: BUTTON_DATA_INVALID" },
          "sendMessage",
          {},
        ),
        "sendAnswer",
      ),
    ).toBeInstanceOf(PlatformRefusedError);
  });

  it("discord.js: RateLimitError (retryAfter in ms) and a 429 DiscordAPIError (retry_after in seconds)", () => {
    const limited = discordError(
      new RateLimitError({
        timeToReset: 4000,
        limit: 5,
        method: "POST",
        hash: "h",
        url: "https://discord.com/api/v10/channels/1/messages",
        route: "/channels/:id/messages",
        majorParameter: "1",
        global: false,
        retryAfter: 4000,
        sublimitTimeout: 0,
        scope: "user",
      }),
      "sendAnswer",
      "/channels/1/messages",
    );
    expect(retryAfterMs(limited)).toBe(4000);
    expect(isTransient(limited)).toBe(true);
    const api = discordError(
      new DiscordAPIError(
        { message: "You are being rate limited.", retry_after: 2.5, global: false, code: 0 } as never,
        0,
        429,
        "POST",
        "https://discord.com/api/v10/channels/1/messages",
        { body: {} },
      ),
      "sendAnswer",
      "/channels/1/messages",
    );
    expect(retryAfterMs(api)).toBe(2500);
    expect(isTransient(api)).toBe(true);
    const gone = discordError(
      new DiscordAPIError(
        { message: "Unknown Channel", code: 10003 },
        10003,
        404,
        "POST",
        "https://discord.com/api/v10/channels/1/messages",
        { body: {} },
      ),
      "sendAnswer",
      "/channels/1/messages",
    );
    expect(gone).toBeInstanceOf(ChatUnreachableError);
    expect(isTransient(gone)).toBe(false);
    expect(retryAfterMs(new Error("boom"))).toBeUndefined();
    expect(isTransient(new Error("boom"))).toBe(false);
  });
});
