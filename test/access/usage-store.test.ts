/**
 * The usage store on a real Redis: web searches and fetches are counted per user, chat and the
 * whole bot beside the tokens, `/usage` shows them, and the estimated cost prices searches.
 */
import { describe, expect, it } from "vitest";
import { formatTotals, formatUserUsage } from "../../src/commands/usage-report.js";
import type { RedisClient } from "../../src/redis.js";
import { costOf, daysEndingAt, UsageStore } from "../../src/usage/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((connection) => {
  redis = connection;
});

describe("usage of server tools", () => {
  it("counts web searches and fetches per user, chat and bot, and keeps the tokens as they were (the top list ranks budget tokens)", async () => {
    const store = new UsageStore(redis, "Asia/Taipei");
    const at = Date.UTC(2026, 11, 1, 4);
    const owner = { platform: "telegram", userId: "u-ws", chatId: "c-ws" };
    await store.record(
      owner,
      {
        input_tokens: 100,
        output_tokens: 20,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 5,
        web_search_requests: 2,
        web_fetch_requests: 1,
      },
      at,
    );
    await store.record(
      owner,
      { input_tokens: 10, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      at,
    );
    const user = await store.userTotals("telegram", "u-ws", at);
    expect(user.day).toEqual({
      input: 110,
      output: 22,
      cacheWrite: 0,
      cacheRead: 5,
      tokens: 137,
      // budget tokens: 100 + 0.1 × 5 + 5 × 20 = 200.5 → 201, then 10 + 5 × 2 = 20
      budget: 221,
      calls: 2,
      webSearches: 2,
      webFetches: 1,
      voiceSeconds: 0,
    });
    expect(user.month).toEqual(user.day);
    expect((await store.chatTotals("telegram", "c-ws", at)).day).toMatchObject({
      webSearches: 2,
      webFetches: 1,
      tokens: 137,
    });
    expect((await store.botTotals(at)).day).toMatchObject({ webSearches: 2, webFetches: 1 });
    expect(await store.topUsers(10, at)).toEqual([{ user: "telegram:u-ws", tokens: 221 }]);

    expect(formatTotals("zh-TW", user.day)).toBe(
      "137 tokens，2 次模型呼叫（輸入 110、輸出 22、快取寫入 0、快取讀取 5）；網頁搜尋 2 次、讀取網頁 1 次",
    );
    expect(formatTotals("en", { ...user.day, webFetches: 0, webSearches: 1 })).toBe(
      "137 tokens in 2 model calls (input 110, output 22, cache write 0, cache read 5); 1 web search",
    );
    expect(formatTotals("en", { ...user.day, webFetches: 0, webSearches: 0 })).toBe(
      "137 tokens in 2 model calls (input 110, output 22, cache write 0, cache read 5)",
    );
  });

  it("records seconds of voice transcribed per user, chat and bot, rounded up, without counting a model call", async () => {
    const at = Date.UTC(2026, 11, 1, 4);
    const store = new UsageStore(redis, "Asia/Taipei");
    const owner = { platform: "discord", userId: "u-vs", chatId: "c-vs" };
    await store.recordVoice(owner, 4.2, at);
    await store.recordVoice(owner, 61, at);
    await store.recordVoice(owner, 0, at);
    const user = await store.userTotals("discord", "u-vs", at);
    expect(user.day).toMatchObject({ voiceSeconds: 66, calls: 0, tokens: 0 });
    expect(user.month.voiceSeconds).toBe(66);
    expect((await store.chatTotals("discord", "c-vs", at)).day.voiceSeconds).toBe(66);
    expect((await store.botTotals(at)).month.voiceSeconds).toBeGreaterThanOrEqual(66);
    expect(formatTotals("zh-TW", user.day)).toBe(
      "0 tokens，0 次模型呼叫（輸入 0、輸出 0、快取寫入 0、快取讀取 0）；語音轉文字 66 秒",
    );
    expect(formatTotals("en", { ...user.day, webSearches: 2 })).toBe(
      "0 tokens in 0 model calls (input 0, output 0, cache write 0, cache read 0); 2 web searches, 66 s of voice transcribed",
    );
  });

  it("the estimated cost includes the searches at MODEL_PRICES' fifth price (default 10 USD per 1,000)", () => {
    const totals = {
      input: 1_000_000,
      output: 0,
      cacheWrite: 0,
      cacheRead: 0,
      tokens: 1_000_000,
      budget: 1_000_000,
      calls: 1,
      webSearches: 3,
      webFetches: 2,
      voiceSeconds: 0,
    };
    expect(costOf(totals, { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5, webSearch: 10 })).toBeCloseTo(
      15.03,
      10,
    );
    const config = testConfig({ MODEL_PRICES: "15,75,18.75,1.5" });
    const text = formatUserUsage(config, "en", { day: totals, month: totals }, false, Date.UTC(2026, 11, 1, 4));
    expect(text).toContain("3 web searches, 2 web fetches");
    expect(text).toContain("Estimated cost: today $15.03, this month $15.03 (USD).");
  });

  it("keeps the bot's usage by model and the chats by budget tokens per day, in the same script as the totals", async () => {
    const store = new UsageStore(redis, "Asia/Taipei");
    const at = Date.UTC(2027, 0, 2, 4); // 2027-01-02 in Taipei
    const call = { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 50 };
    await store.record({ platform: "telegram", userId: "m1", chatId: "-1001" }, call, at, 0, 5, "claude-a");
    await store.record(
      { platform: "telegram", userId: "m2", chatId: "-1001" },
      call,
      at - 86_400_000,
      0,
      5,
      "claude-b",
    );
    await store.record({ platform: "discord", userId: "m1", chatId: "c9" }, { ...call, web_search_requests: 1 }, at);
    const days = await store.botDays(3, at);
    expect(days.map((d) => d.day)).toEqual(["2026-12-31", "2027-01-01", "2027-01-02"]);
    expect(days[0]!.totals.calls).toBe(0);
    expect([...days[1]!.models.keys()]).toEqual(["claude-b"]);
    expect([...days[2]!.models.keys()]).toEqual(["?", "claude-a"]);
    // 100 + 10 × 5 + 50 × 0.1 = 155 budget tokens a call
    expect(days[2]!.models.get("claude-a")).toMatchObject({
      calls: 1,
      input: 100,
      output: 10,
      cacheRead: 50,
      budget: 155,
    });
    expect(days[2]!.models.get("?")).toMatchObject({ calls: 1, webSearches: 1, budget: 155 });
    expect(days[2]!.totals).toMatchObject({ calls: 2, budget: 310, webSearches: 1 });
    expect(await store.topOver("chats", 3, 10, at)).toEqual([
      { name: "telegram:-1001", tokens: 310 },
      { name: "discord:c9", tokens: 155 },
    ]);
    // Ties: by name.
    expect(await store.topOver("people", 3, 1, at)).toEqual([{ name: "discord:m1", tokens: 155 }]);
    expect(daysEndingAt("2024-03-01", 2)).toEqual(["2024-02-29", "2024-03-01"]);
  });
});
