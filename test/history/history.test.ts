import { describe, expect, it, vi } from "vitest";
import type { RedisClient } from "../../src/redis.js";
import type { MessageParam } from "../../src/agent/contract.js";
import { HistoryStore } from "../../src/history/store.js";
import { isUserTextTurn, trimHistory } from "../../src/history/trim.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { useRedis } from "../helpers/use-redis.js";

const user = (text: string): MessageParam => ({ role: "user", content: text });
const assistant = (text: string): MessageParam => ({ role: "assistant", content: [{ type: "text", text }] });
const call = (id: string): MessageParam => ({
  role: "assistant",
  content: [
    { type: "text", text: "let me check" },
    { type: "tool_use", id, name: "list_todos", input: {} },
  ],
});
const result = (id: string): MessageParam => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id: id, content: "#1 milk" }],
});
const resultWithText = (id: string): MessageParam => ({
  role: "user",
  content: [
    { type: "tool_result", tool_use_id: id, content: "ok" },
    { type: "text", text: "and?" },
  ],
});

/** Run 1 (plain), run 2 (one tool exchange), run 3 (two tool exchanges): 2 + 4 + 6 = 12 messages. */
const runs: MessageParam[][] = [
  [user("hi"), assistant("hello")],
  [user("list"), call("a"), result("a"), assistant("#1 milk")],
  [user("twice"), call("b"), result("b"), call("c"), result("c"), assistant("done")],
];
const all = runs.flat();

/**
 * Asserts that `store` refuses the appends of a run that began before `chat`'s last /reset (its
 * `resets` guard), on the fresh-chat path (`before`, read before the reset) and on the trimming one.
 */
async function expectRefusedAfterReset(
  store: HistoryStore,
  chat: { platform: "telegram"; chatId: string },
  before: Awaited<ReturnType<HistoryStore["read"]>>,
  resets: number | { since: number },
): Promise<void> {
  expect(await store.append(chat, runs[1]!, { messageId: "m1", text: "#1 milk" }, before, resets)).toBe(false);
  expect(
    await store.append(
      chat,
      runs[2]!,
      { messageId: "m2", text: "done" },
      { stored: 40, fresh: false, raw: before.raw! },
      resets,
    ),
  ).toBe(false);
}

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
    expect(trimHistory([...runs[0]!, ...runs[2]!, ...runs[1]!], { maxMessages: 10 })).toEqual([
      ...runs[2]!,
      ...runs[1]!,
    ]);
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
  let redis: RedisClient;
  useRedis((connection) => (redis = connection));

  it("an append with the reset generation noted before a /reset writes nothing (plain and trimming appends); with the current one it writes", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "reset-gen" };
    const keys = conversationKeys(chat);
    expect(await store.generation(chat)).toBe(0);
    expect(await store.append(chat, runs[0]!, { messageId: "m0", text: "hello" }, await store.read(chat), 0)).toBe(
      true,
    );
    const before = await store.read(chat);
    expect(before.stored).toBe(2);
    await store.reset(chat);
    expect(await redis.exists(keys.history)).toBe(0);
    expect(await store.generation(chat)).toBe(1);
    expect(await redis.ttl(keys.resets)).toBeGreaterThan(29 * 24 * 3600);
    // A run that began before the reset (generation 0): refused, on the fresh-chat path and on the trimming one.
    await expectRefusedAfterReset(store, chat, before, 0);
    expect(await redis.exists(keys.history)).toBe(0);
    // A run that began after it: written, with the history's expiry.
    expect(await store.append(chat, runs[1]!, { messageId: "m3", text: "#1 milk" }, await store.read(chat), 1)).toBe(
      true,
    );
    expect((await store.read(chat)).messages).toEqual(runs[1]);
    expect(await redis.ttl(keys.history)).toBeGreaterThan(3500);
    // Without a generation, an append is not compared (as before).
    expect(await store.append(chat, runs[0]!, { messageId: "m4", text: "hello" })).toBe(true);
    expect((await store.read(chat)).stored).toBe(6);
  });

  it("an append with the time its run began writes nothing after a later /reset; generationAt gives that time's generation", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "reset-at" };
    const keys = conversationKeys(chat);
    const began = Date.now() - 1000;
    // No /reset yet: written (the guard reads the reset time, absent).
    expect(
      await store.append(chat, runs[0]!, { messageId: "m0", text: "hello" }, await store.read(chat), { since: began }),
    ).toBe(true);
    const before = await store.read(chat);
    expect(await store.generationAt(chat, began)).toBe(0);
    await store.reset(chat);
    const resetAt = Number(await redis.get(keys.resetAt));
    expect(resetAt).toBeGreaterThan(began);
    expect(await redis.ttl(keys.resetAt)).toBeGreaterThan(29 * 24 * 3600);
    // A run that began before the reset: refused, on the fresh-chat path and on the trimming one.
    await expectRefusedAfterReset(store, chat, before, { since: began });
    expect(await redis.exists(keys.history)).toBe(0);
    // Such a run asking for an approval now notes the generation of when it began; one begun after the reset, the new one.
    expect(await store.generationAt(chat, began)).toBe(0);
    expect(await store.generationAt(chat, resetAt)).toBe(1);
    // A run that began after it: written.
    expect(
      await store.append(chat, runs[1]!, { messageId: "m3", text: "#1 milk" }, await store.read(chat), {
        since: resetAt,
      }),
    ).toBe(true);
    expect((await store.read(chat)).messages).toEqual(runs[1]);
  });

  it("appends runs, keeps them valid, and caps what Redis holds", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "h1" };
    for (let i = 0; i < 30; i += 1) {
      const before = await store.read(chat);
      await store.append(chat, [user(`q${i}`), call(`t${i}`), result(`t${i}`), assistant(`a${i}`)], undefined, before);
    }
    expect(await store.load(chat)).toEqual([user("q29"), call("t29"), result("t29"), assistant("a29")]);
    // trimmed back to maxMessages + 20 once past maxMessages + 40
    expect((await store.read(chat)).stored).toBeLessThanOrEqual(4 + 40);
    expect((await store.read(chat)).stored).toBeGreaterThanOrEqual(4);
  });

  it("trims only in front of a user text turn: a cut inside a tool exchange moves past it", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "h1b" };
    const key = conversationKeys(chat).history;
    // 2 messages, then runs of 6: the raw cut point (keep 24) falls inside a tool exchange
    await store.append(chat, runs[0]!, undefined, await store.read(chat));
    let trimmed = false;
    for (let i = 0; i < 12; i += 1) {
      const before = await store.read(chat);
      await store.append(chat, runs[2]!, { messageId: `m${i}`, text: "done" }, before);
      const raw = (await redis.get(key))!;
      expect(raw.startsWith("U")).toBe(true);
      if (before.stored + 6 > 44) trimmed = true;
    }
    expect(trimmed).toBe(true);
    const after = await store.read(chat, "m11");
    expect(after.stored).toBeLessThanOrEqual(44);
    expect(after.stored % 6).toBe(0); // whole runs only
    expect(after.answer).toBe("done");
    expect(await redis.ttl(key)).toBeGreaterThan(3590);
  });

  it("bounds the stored value by size as well as by message count, cutting only in front of a user text turn", async () => {
    const maxStoredBytes = 20_000;
    const store = new HistoryStore(redis, { maxMessages: 400, ttlSeconds: 3600, maxStoredBytes });
    const chat = { platform: "telegram" as const, chatId: "hbytes" };
    const key = conversationKeys(chat).history;
    const big = (i: number): MessageParam[] => [
      user(`q${i}`),
      call(`t${i}`),
      { role: "user", content: [{ type: "tool_result", tool_use_id: `t${i}`, content: "待辦".repeat(700) }] },
      assistant(`a${i}`),
    ];
    let trims = 0;
    let last = 0;
    for (let i = 0; i < 40; i += 1) {
      await store.append(chat, big(i), { messageId: `m${i}`, text: `a${i}` }, await store.read(chat));
      const bytes = await redis.strlen(key);
      expect(bytes).toBeLessThanOrEqual(maxStoredBytes);
      if (bytes < last) trims += 1;
      last = bytes;
      expect((await redis.get(key))!.startsWith("U")).toBe(true);
    }
    expect(trims).toBeGreaterThanOrEqual(3); // once every several runs, not on every append
    const after = await store.read(chat, "m39");
    expect(after.messages.slice(-4)).toEqual(big(39));
    expect(after.stored % 4).toBe(0); // whole runs only
    expect(after.answer).toBe("a39");
    // a writer that appended meanwhile (an approval's run): the script's rebuild bounds the size the same way
    const before = await store.read(chat);
    await store.append(chat, big(100));
    await store.append(chat, big(101), undefined, { ...before, stored: 10_000 }); // forces the trimming append
    const rebuilt = (await redis.get(key))!;
    expect(Buffer.byteLength(rebuilt)).toBeLessThanOrEqual((maxStoredBytes * 3) / 4);
    expect(rebuilt.startsWith("U")).toBe(true);
    expect((await store.load(chat)).slice(-8)).toEqual([...big(100), ...big(101)]);
    // one run larger than the whole budget is still stored whole (the newest run is never cut)
    const huge: MessageParam[] = [
      user("list all"),
      call("h"),
      { role: "user", content: [{ type: "tool_result", tool_use_id: "h", content: "x".repeat(30_000) }] },
      assistant("that is a lot"),
    ];
    await store.append(chat, huge, undefined, await store.read(chat));
    const stored = (await store.read(chat)).raw!;
    expect(stored.startsWith(`U${JSON.stringify(huge[0])}`)).toBe(true);
  });

  it("forgets one run by its message id (messages and tag), keeping the others and the TTL", async () => {
    const store = new HistoryStore(redis, { maxMessages: 40, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "hforget" };
    const key = conversationKeys(chat).history;
    await store.append(chat, runs[0]!, { messageId: "1", text: "hello" }, await store.read(chat));
    await store.append(chat, runs[1]!, { messageId: "2", text: "#1 milk" }, await store.read(chat));
    await store.append(chat, [], { messageId: "3", text: "refused" }, await store.read(chat)); // a refusal: only its tag
    await store.append(chat, runs[2]!, { messageId: "22", text: "done" }, await store.read(chat));
    expect(await store.forget(chat, "2")).toBe(true);
    expect(await store.load(chat)).toEqual([...runs[0]!, ...runs[2]!]);
    expect((await store.read(chat, "22")).answer).toBe("done");
    expect((await store.read(chat, "3")).answer).toBe("refused");
    expect(await store.forget(chat, "3")).toBe(true);
    expect((await store.read(chat, "3")).answer).toBeUndefined();
    expect(await store.load(chat)).toEqual([...runs[0]!, ...runs[2]!]);
    expect(await store.forget(chat, "2")).toBe(false);
    expect(await redis.ttl(key)).toBeGreaterThan(3590);
    expect(await store.forget(chat, "1")).toBe(true);
    expect(await store.forget(chat, "22")).toBe(true);
    expect(await redis.exists(key)).toBe(0);
  });

  it("a trimming append loses no update written by another writer since the read", async () => {
    const store = new HistoryStore(redis, { maxMessages: 4, ttlSeconds: 3600 });
    const chat = { platform: "telegram" as const, chatId: "h1c" };
    for (let i = 0; i < 7; i += 1)
      await store.append(chat, runs[2]!, { messageId: `m${i}`, text: "done" }, await store.read(chat));
    const before = await store.read(chat); // 42 stored: this run's append trims
    expect(before.stored).toBe(42);
    await store.append(chat, runs[0]!); // an approval's resumed run, meanwhile
    await store.append(chat, runs[2]!, { messageId: "last", text: "done" }, before); // 42 + 6 > 4 + 40: trims
    const after = await store.read(chat, "last");
    const stored = after
      .raw!.split("\n")
      .filter((l) => l !== "" && !l.startsWith("#"))
      .map((l) => JSON.parse(l.replace(/^U/, "")) as MessageParam);
    expect(stored.slice(-8)).toEqual([...runs[0]!, ...runs[2]!]);
    expect(after.answer).toBe("done");
    expect(after.stored).toBeLessThanOrEqual(24);
    expect(after.raw!.startsWith("U")).toBe(true);
    expect((await store.read(chat, "m6")).answer).toBe("done");
  });

  it("tags a run with its message id, so a retry finds the answer in the history", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 3600 });
    const chat = { platform: "discord" as const, chatId: "h2" };
    const first = await store.read(chat, "m1");
    expect(first).toEqual({ messages: [], stored: 0, fresh: true });
    await store.append(chat, runs[0]!, { messageId: "m1", text: "hello" }, first);
    // an approval's resumed run appends in between, without a tag
    await store.append(chat, runs[1]!);
    // an answer that is not the last turn's text is stored in the tag
    await store.append(chat, runs[0]!, { messageId: "m2", text: "hello (edited)" }, await store.read(chat));
    expect((await store.read(chat, "m1")).answer).toBe("hello");
    expect((await store.read(chat, "m2")).answer).toBe("hello (edited)");
    expect((await store.read(chat, "m3")).answer).toBeUndefined();
    const read = await store.read(chat);
    expect(read).toMatchObject({ messages: [...runs[0]!, ...runs[1]!, ...runs[0]!], stored: 8, fresh: false });
    // the tag is in the same value as the messages: one key per chat
    expect(await redis.keys("*h2*")).toEqual([conversationKeys(chat).history]);
  });

  it("sets the expiry on creation, renews it on every read, and an expired chat starts empty", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const chat = { platform: "telegram" as const, chatId: "h3" };
    await store.append(chat, runs[0]!, undefined, await store.read(chat)); // SET … EX NX
    const key = conversationKeys(chat).history;
    expect(await redis.ttl(key)).toBeGreaterThan(590);
    await redis.expire(key, 5);
    await store.load(chat);
    expect(await redis.ttl(key)).toBeGreaterThan(590);
    await redis.pexpire(key, 30);
    await new Promise((r) => setTimeout(r, 80));
    expect(await store.load(chat)).toEqual([]);
    // a writer that did not read first (an approval's resumed run) still leaves an expiry
    await store.append(chat, runs[1]!);
    expect(await redis.ttl(key)).toBeGreaterThan(590);
  });

  it("readAlong reads the history and the conversation's other keys in one MGET, renewing the expiry once an hour", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const chat = { platform: "telegram" as const, chatId: "h8" };
    const keys = conversationKeys(chat);
    await store.append(chat, runs[0]!, undefined, { stored: 0, fresh: true });
    await redis.set(keys.settings, '{"persona":"pirate"}');
    const calls = async () => {
      const stats = await redis.info("commandstats");
      const count = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
      return { mget: count("mget"), getex: count("getex") };
    };
    let clock = 1_800_000_000_000;
    const now = vi.spyOn(Date, "now").mockImplementation(() => clock);
    try {
      await redis.expire(keys.history, 5);
      // The first read of the conversation by this store renews it (GETEX, the others in an MGET beside it).
      let before = await calls();
      const first = await store.readAlong(chat, undefined, [keys.settings, "approval-pending:{telegram:h8}:u1"]);
      expect(first.history.messages).toEqual(runs[0]);
      expect(first.values).toEqual(['{"persona":"pirate"}', null]);
      expect(await calls()).toEqual({ mget: before.mget + 1, getex: before.getex + 1 });
      expect(await redis.ttl(keys.history)).toBeGreaterThan(590);
      // Within the hour: one MGET, the expiry left as it is.
      await redis.expire(keys.history, 100);
      clock += 3_599_000;
      before = await calls();
      const second = await store.readAlong(chat, undefined, [keys.settings]);
      expect(second.history.messages).toEqual(runs[0]);
      expect(second.values).toEqual(['{"persona":"pirate"}']);
      expect(await calls()).toEqual({ mget: before.mget + 1, getex: before.getex });
      expect(await redis.ttl(keys.history)).toBeLessThanOrEqual(100);
      // An hour after the last renewal: renewed again.
      clock += 1_000;
      await store.readAlong(chat, undefined, [keys.settings]);
      expect(await redis.ttl(keys.history)).toBeGreaterThan(590);
      // A reset chat reads as new through the MGET too.
      await redis.del(keys.history);
      expect((await store.readAlong(chat, undefined, [keys.settings])).history).toEqual({
        messages: [],
        stored: 0,
        fresh: true,
      });
    } finally {
      now.mockRestore();
    }
  });

  it("reads a history left in the older list layout as empty, and replaces it", async () => {
    const store = new HistoryStore(redis, { maxMessages: 10, ttlSeconds: 600 });
    const chat = { platform: "telegram" as const, chatId: "h7" };
    await redis.rpush(conversationKeys(chat).history, JSON.stringify(user("old")));
    expect(await store.read(chat)).toEqual({ messages: [], stored: 0, fresh: true });
    await store.append(chat, runs[0]!, undefined, { stored: 0, fresh: true });
    expect(await store.load(chat)).toEqual(runs[0]);
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
    await redis.append(conversationKeys(chat).history, "{not json\n");
    await store.append(chat, runs[0]!);
    expect(await store.load(chat)).toEqual(runs[0]);
  });
});
