import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import type { MessageParam } from "../../src/agent/contract.js";
import { HistoryStore } from "../../src/history/store.js";
import { isUserTextTurn, trimHistory } from "../../src/history/trim.js";
import { chatKeys } from "../../src/queue/keys.js";
import { connectRedis } from "../../src/redis.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

const user = (text: string): MessageParam => ({ role: "user", content: text });
const assistant = (text: string): MessageParam => ({ role: "assistant", content: [{ type: "text", text }] });
const call = (id: string): MessageParam => ({ role: "assistant", content: [{ type: "text", text: "let me check" }, { type: "tool_use", id, name: "list_todos", input: {} }] });
const result = (id: string): MessageParam => ({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "#1 milk" }] });
const resultWithText = (id: string): MessageParam => ({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "ok" }, { type: "text", text: "and?" }] });

/** Run 1 (plain), run 2 (one tool exchange), run 3 (two tool exchanges): 2 + 4 + 6 = 12 messages. */
const runs: MessageParam[][] = [
  [user("hi"), assistant("hello")],
  [user("list"), call("a"), result("a"), assistant("#1 milk")],
  [user("twice"), call("b"), result("b"), call("c"), result("c"), assistant("done")],
];
const all = runs.flat();

describe("trimHistory", () => {
  it("recognises user text turns", () => {
    expect(isUserTextTurn(user("x"))).toBe(true);
    expect(isUserTextTurn(result("a"))).toBe(false);
    expect(isUserTextTurn(resultWithText("a"))).toBe(false);
    expect(isUserTextTurn(assistant("x"))).toBe(false);
    expect(isUserTextTurn({ role: "user", content: [{ type: "text", text: "  " }] })).toBe(false);
  });

  it("keeps everything when it fits", () => {
    expect(trimHistory(all, { maxMessages: 12 })).toEqual(all);
  });

  // Every possible cut point: the kept part always starts at the next user text turn.
  it.each([
    [11, 10, "cut at run 1's answer → moved to run 2's user turn"],
    [10, 10, "cut exactly at run 2's user turn"],
    [9, 6, "cut at run 2's tool_use → moved past the exchange to run 3"],
    [8, 6, "cut at run 2's tool_result → moved to run 3"],
    [7, 6, "cut at run 2's final answer → moved to run 3"],
    [6, 6, "cut exactly at run 3's user turn"],
    [5, 0, "cut at run 3's first tool_use → nothing valid left"],
    [4, 0, "cut at run 3's first tool_result"],
    [3, 0, "cut at run 3's second tool_use"],
    [2, 0, "cut at run 3's second tool_result"],
    [1, 0, "only the final answer"],
  ])("maxMessages %i keeps the last %i (%s)", (maxMessages, kept) => {
    const out = trimHistory(all, { maxMessages });
    expect(out).toEqual(kept === 0 ? [] : all.slice(all.length - kept));
    if (out.length > 0) expect(isUserTextTurn(out[0]!)).toBe(true);
  });

  it("keeps exactly the newest runs at run boundaries", () => {
    expect(trimHistory(all, { maxMessages: 10 })).toEqual([...runs[1]!, ...runs[2]!]);
    expect(trimHistory(all, { maxMessages: 6 })).toEqual(runs[2]);
    expect(trimHistory([...runs[0]!, ...runs[2]!, ...runs[1]!], { maxMessages: 10 })).toEqual([...runs[2]!, ...runs[1]!]);
  });

  it("drops a leading tool_result turn that also carries text", () => {
    const h = [resultWithText("z"), assistant("x"), ...runs[0]!];
    expect(trimHistory(h, { maxMessages: 10 })).toEqual(runs[0]);
  });

  it("drops a trailing assistant turn still waiting for its tool_result, and a trailing user turn", () => {
    expect(trimHistory([...runs[0]!, user("list"), call("q")], { maxMessages: 10 })).toEqual(runs[0]);
    expect(trimHistory([...runs[0]!, user("dangling")], { maxMessages: 10 })).toEqual(runs[0]);
  });

  it("drops whole exchanges from the oldest end to fit the size budget", () => {
    const big = [user("a".repeat(500)), assistant("b".repeat(500))];
    const h = [...big, ...runs[1]!];
    const budget = JSON.stringify(runs[1]).length + 10;
    expect(trimHistory(h, { maxMessages: 40, maxChars: budget })).toEqual(runs[1]);
    expect(trimHistory(h, { maxMessages: 40, maxChars: 10 })).toEqual([]);
  });
});

describe("HistoryStore", () => {
  let server: TestRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = connectRedis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it("appends runs, keeps them valid, and caps what Redis holds", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "h1" };
    for (let i = 0; i < 30; i += 1) await store.append(chat, [user(`q${i}`), call(`t${i}`), result(`t${i}`), assistant(`a${i}`)]);
    expect(await store.load(chat)).toEqual([user("q29"), call("t29"), result("t29"), assistant("a29")]);
    expect(await redis.llen(chatKeys(chat).history)).toBeLessThanOrEqual(4 + 20);
  });

  it("stores a record with the append in one step", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 3600 });
    const chat = { platform: "discord" as const, chatId: "h2" };
    await store.append(chat, runs[0]!, { key: "answer:test", value: "hello", ttlSeconds: 60 });
    expect(await redis.get("answer:test")).toBe("hello");
    expect(await store.load(chat)).toEqual(runs[0]);
  });

  it("sets and renews the expiry, and an expired chat starts empty", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const chat = { platform: "telegram" as const, chatId: "h3" };
    await store.append(chat, runs[0]!);
    const key = chatKeys(chat).history;
    expect(await redis.ttl(key)).toBeGreaterThan(590);
    await redis.expire(key, 5);
    await store.append(chat, runs[1]!);
    expect(await redis.ttl(key)).toBeGreaterThan(590);
    await redis.pexpire(key, 30);
    await new Promise((r) => setTimeout(r, 80));
    expect(await store.load(chat)).toEqual([]);
  });

  it("forgets a chat on reset, and only that chat", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const a = { platform: "telegram" as const, chatId: "h4" };
    const b = { platform: "telegram" as const, chatId: "h5" };
    await store.append(a, runs[0]!);
    await store.append(b, runs[0]!);
    await store.reset(a);
    expect(await store.load(a)).toEqual([]);
    expect(await store.load(b)).toEqual(runs[0]);
  });

  it("skips over an element that is not JSON", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const chat = { platform: "telegram" as const, chatId: "h6" };
    await store.append(chat, runs[1]!);
    await redis.rpush(chatKeys(chat).history, "{not json");
    await store.append(chat, runs[0]!);
    expect(await store.load(chat)).toEqual(runs[0]);
  });
});
