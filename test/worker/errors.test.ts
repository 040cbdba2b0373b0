import { DiscordAPIError, RateLimitError } from "discord.js";
import { GrammyError, HttpError } from "grammy";
import { describe, expect, it } from "vitest";
import { isTransient, retryAfterMs } from "../../src/worker/errors.js";

describe("platform rate limits are retryable, with their retry_after", () => {
  it("grammy: a 429 GrammyError with parameters.retry_after (seconds)", () => {
    const error = new GrammyError("Call to 'sendMessage' failed!", { ok: false, error_code: 429, description: "Too Many Requests: retry after 12", parameters: { retry_after: 12 } }, "sendMessage", {});
    expect(retryAfterMs(error)).toBe(12_000);
    expect(isTransient(error)).toBe(true);
    // a 400 is neither
    const bad = new GrammyError("Call to 'sendMessage' failed!", { ok: false, error_code: 400, description: "Bad Request: chat not found" }, "sendMessage", {});
    expect(retryAfterMs(bad)).toBeUndefined();
    expect(isTransient(bad)).toBe(false);
    // the Bot API could not be reached (e.g. a kept-alive socket reset after a retry_after wait)
    expect(isTransient(new HttpError("Network request for 'sendMessage' failed!", Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })))).toBe(true);
  });

  it("discord.js: RateLimitError (retryAfter in ms) and a 429 DiscordAPIError (retry_after in seconds), also wrapped as a cause", () => {
    const limited = new RateLimitError({
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
    });
    expect(retryAfterMs(limited)).toBe(4000);
    expect(isTransient(limited)).toBe(true);
    const api = new DiscordAPIError({ message: "You are being rate limited.", retry_after: 2.5, global: false, code: 0 } as never, 0, 429, "POST", "https://discord.com/api/v10/channels/1/messages", { body: {} });
    expect(retryAfterMs(api)).toBe(2500);
    const wrapped = Object.assign(new Error("createMessage failed"), { status: 429, cause: api });
    expect(retryAfterMs(wrapped)).toBe(2500);
    expect(isTransient(wrapped)).toBe(true);
    expect(retryAfterMs(new Error("boom"))).toBeUndefined();
  });
});
