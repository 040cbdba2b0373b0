/**
 * English texts that name a count say `1 file`, not `1 files`: one rule (`englishNoun` /
 * `englishCount` of `src/i18n.ts`, CLDR's plural rules through `Intl.PluralRules`) behind every
 * such text — the commands' replies (`/usage`, `/forget`, `/memory`), refusals of media, tasks paused
 * after failures, the budget's refusal, the calculator's arity error, MCP results, `npm run trace`,
 * the console's hidden values. The Chinese texts, which do not change with the count, stay as they were.
 */
import { expect, it } from "vitest";
import { formatAllUsage, formatTotals } from "../../src/commands/usage-report.js";
import { forgetMemory, memoryListing, pressMemoryButton } from "../../src/commands/memory.js";
import { englishCount, englishNoun } from "../../src/i18n.js";
import { mediaRefusal } from "../../src/media/refusal.js";
import { MediaError } from "../../src/media/errors.js";
import { MemoryStore } from "../../src/memory/store.js";
import { describeMcpCall } from "../../src/mcp/prompt.js";
import type { RedisClient } from "../../src/redis.js";
import { durationInWords } from "../../src/reminders/time.js";
import { formatTask } from "../../src/tasks/format.js";
import type { Task } from "../../src/tasks/store.js";
import { formatRun } from "../../src/trace/format.js";
import { budgetText } from "../../src/usage/budget.js";
import type { UsageTotals } from "../../src/usage/store.js";
import { jobView } from "../../src/admin/job-view.js";
import { calculate } from "../../tools/calculate.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

it("englishNoun and englishCount: one is singular, zero and more plural, irregular plurals when given", () => {
  expect(englishNoun(1, "file")).toBe("file");
  expect(englishNoun(0, "file")).toBe("files");
  expect(englishNoun(2, "file")).toBe("files");
  expect(englishNoun(1, "search", "searches")).toBe("search");
  expect(englishNoun(3, "search", "searches")).toBe("searches");
  expect(englishCount(1, "tool")).toBe("1 tool");
  expect(englishCount(12, "tool")).toBe("12 tools");
  expect(englishCount(1234, "token", undefined, "1,234")).toBe("1,234 tokens");
});

it("/usage counts one token, call, search, fetch and character in the singular", () => {
  const one: UsageTotals = {
    input: 1,
    output: 0,
    cacheWrite: 0,
    cacheRead: 0,
    tokens: 1,
    budget: 1,
    calls: 1,
    webSearches: 1,
    webFetches: 1,
    voiceSeconds: 0,
    spokenCharacters: 1,
  };
  expect(formatTotals("en", one)).toBe(
    "1 token in 1 model call (input 1, output 0, cache write 0, cache read 0); 1 web search, 1 web fetch, " +
      "1 character of voice replies",
  );
  const two = { ...one, tokens: 2, calls: 2, webSearches: 2, webFetches: 2, spokenCharacters: 2 };
  expect(formatTotals("en", two)).toBe(
    "2 tokens in 2 model calls (input 1, output 0, cache write 0, cache read 0); 2 web searches, 2 web fetches, " +
      "2 characters of voice replies",
  );
  // The Chinese text is unchanged.
  expect(formatTotals("zh-TW", one)).toBe(
    "1 tokens，1 次模型呼叫（輸入 1、輸出 0、快取寫入 0、快取讀取 0）；網頁搜尋 1 次、讀取網頁 1 次、語音回覆 1 字",
  );
  const all = formatAllUsage(testConfig(), "en", { day: one, month: one }, [{ user: "telegram:1", tokens: 1 }]);
  expect(all).toContain("— 1 budget token");
});

it("/memory and /forget name one memory file in the singular", async () => {
  const store = new MemoryStore(redis);
  const asker = {
    platform: "telegram" as const,
    chatKind: "dm" as const,
    chatId: "41",
    userId: "41",
    locale: "en" as const,
    timezone: "Asia/Taipei",
  };
  const scope = { kind: "personal" as const, platform: "telegram" as const, userId: "41" };
  const write = (files: Record<string, string>) =>
    store.update(scope, () => ({ files: new Map(Object.entries(files)), result: undefined }));
  // A listing too long to show whole: the rest is counted. The first number of files that does not
  // fit leaves one out.
  let listed = "";
  for (let n = 2; n <= 40 && !listed.includes("more"); n += 1) {
    await write(Object.fromEntries(Array.from({ length: n }, (_, i) => [`/memories/f${i}.md`, "x".repeat(1000)])));
    listed = (await memoryListing(asker, store, { maxBytes: 100_000, off: false })).text;
  }
  expect(listed).toContain("…and 1 more file (too long to show).");
  // /forget asks (naming the files), and its ⚠️ button erases them (saying how many).
  const forget = async (locale: "en" | "zh-TW") => {
    const question = await forgetMemory({ ...asker, locale }, store);
    const erased = await pressMemoryButton({ ...asker, locale, data: question.buttons![0]!.data, admin: false }, store);
    return { question: question.text, erased: erased.notice };
  };
  await write({ "/memories/a.md": "I live in Hsinchu" });
  expect(await forget("en")).toEqual({
    question: "Erase all of your personal memory (1 file)? This cannot be undone.",
    erased: "Your personal memory is erased (1 file). The conversation itself is kept (use /reset for that).",
  });
  await write({ "/memories/a.md": "a", "/memories/b.md": "b" });
  const two = await forget("en");
  expect(two.question).toBe("Erase all of your personal memory (2 files)? This cannot be undone.");
  expect(two.erased).toMatch(/^Your personal memory is erased \(2 files\)\./);
  await write({ "/memories/a.md": "a" });
  expect((await forget("zh-TW")).erased).toMatch(/^已清除你的個人記憶（1 個檔案）。/);
});

it("refusals, paused tasks, budgets, the calculator, MCP calls, durations, traces and hidden values in the singular", () => {
  expect(mediaRefusal(new MediaError("too_many_images", "2 images", "image", { count: 2 }), "en", 1)).toMatch(
    /^At most 1 image per message, please \(this one has 2\)\./,
  );
  const at = Date.UTC(2026, 11, 1, 23, 30);
  const task: Task = {
    id: 3,
    instruction: "weather in Hsinchu",
    at,
    next: undefined,
    repeat: "daily",
    timezone: "Asia/Taipei",
    chatId: "1",
    chatKind: "dm",
    userName: "Alice",
    createdAt: at - 1000,
    failures: 1,
    paused: { at, by: "failures", reason: "x" },
  };
  expect(formatTask(task, "en", "Asia/Taipei")).toContain("paused after 1 failure in a row");
  expect(budgetText(testConfig({ USER_DAILY_TOKENS: "1", BOT_LOCALE: "en" }), "user", Date.UTC(2026, 0, 1))).toMatch(
    /^You have used today's budget \(1 token\)\./,
  );
  expect(() => calculate("sqrt(1, 2)", "en")).toThrow("sqrt takes 1 argument.");
  expect(() => calculate("round(1, 2, 3)", "en")).toThrow("round takes 1-2 arguments.");
  const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field${i}`, "y".repeat(200)]));
  const described = describeMcpCall("notes", "write", fields, "en");
  const more = /…\((\d+) more (fields?) not shown\)/.exec(described);
  expect(more?.[2]).toBe(Number(more?.[1]) === 1 ? "field" : "fields");
  expect(durationInWords(60_000 * 100, "en")).toBe("100 minutes");
  expect(durationInWords(3_600_000 * 24, "en")).toBe("24 hours");
  expect(durationInWords(86_400_000 * 2, "en")).toBe("2 days");
  const run = {
    runId: "r1",
    chat: "telegram:1",
    startedAt: 0,
    finishedAt: 5,
    droppedEvents: 1,
    events: [{ at: 1, type: "model_call", data: {} }],
  };
  const lines = formatRun(run as Parameters<typeof formatRun>[0]).split("\n");
  expect(lines[0]).toMatch(/ · 1 event · 5 ms$/);
  expect(lines.at(-1)).toBe("  (1 more event not stored)");
  expect(jobView("x")).toBe("[hidden: 1 character]");
});
