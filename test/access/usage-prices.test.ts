/**
 * The estimated cost with a price per model (`MODEL_PRICES` entries, issue 31), on a real Redis:
 * each call's difference from the default price is recorded with its tokens, so `/usage` prices
 * every model's tokens at its own price.
 */
import { describe, expect, it } from "vitest";
import { formatUserUsage } from "../../src/commands/usage-report.js";
import { pricesFor } from "../../src/config.js";
import type { RedisClient } from "../../src/redis.js";
import { costOf, priceDeltaOf, UsageStore } from "../../src/usage/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((connection) => {
  redis = connection;
});

describe("a price per model", () => {
  it("records each call's difference from the default price, and /usage shows each model's tokens at its own price", async () => {
    const config = testConfig({
      MODELS: "claude-opus-5,claude-haiku-5",
      MODEL_PRICES: "15,75,18.75,1.5;claude-haiku-5=1,5,1.25,0.1",
    });
    const store = new UsageStore(redis, "Asia/Taipei");
    const at = Date.UTC(2026, 11, 1, 4);
    const owner = { platform: "telegram", userId: "u-prices", chatId: "c-prices" };
    const call = {
      input_tokens: 1_000_000,
      output_tokens: 100_000,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    const deltaOf = (model: string) => priceDeltaOf(call, pricesFor(config, model), config.MODEL_PRICES);
    expect(deltaOf("claude-opus-5")).toBe(0);
    // Haiku: 1 + 0.5 = 1.5 USD instead of 15 + 7.5 = 22.5 USD.
    expect(deltaOf("claude-haiku-5")).toBe(-21_000_000);
    await store.record(owner, call, at, deltaOf("claude-opus-5"));
    await store.record(owner, call, at, deltaOf("claude-haiku-5"));
    const totals = await store.userTotals("telegram", "u-prices", at);
    expect(totals.day).toMatchObject({ input: 2_000_000, output: 200_000, calls: 2, priceDelta: -21_000_000 });
    expect(costOf(totals.day, config.MODEL_PRICES!)).toBeCloseTo(24, 6);
    expect(formatUserUsage(config, "en", totals, false, at)).toContain(
      "Estimated cost: today $24.00, this month $24.00 (USD).",
    );
  });

  it("without MODEL_PRICES or with one price for all, nothing is recorded beside the tokens", async () => {
    const call = { input_tokens: 10, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    expect(priceDeltaOf(call, undefined, undefined)).toBe(0);
    const config = testConfig({ MODEL_PRICES: "15,75,18.75,1.5" });
    expect(priceDeltaOf(call, pricesFor(config, "claude-haiku-5"), config.MODEL_PRICES)).toBe(0);
    const store = new UsageStore(redis, "Asia/Taipei");
    await store.record({ platform: "telegram", userId: "u-flat", chatId: "c-flat" }, call, Date.UTC(2026, 11, 1, 4));
    expect(await redis.hgetall(UsageStore.key("u:telegram:u-flat", "d", "2026-12-01"))).not.toHaveProperty("pd");
  });
});
