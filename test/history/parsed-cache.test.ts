/**
 * `HistoryStore.read` keeps what it parsed of each conversation's value: a value that only grew
 * (the last answer's lines appended, by this store or another process) parses only its new lines;
 * any other change (a trim, a compaction's summary, a reset, a damaged line) parses the value whole.
 * Whatever it kept, each read returns what a store reading the value for the first time returns.
 */
import { describe, expect, it } from "vitest";
import type { MessageParam } from "../../src/agent/contract.js";
import { HistoryStore } from "../../src/history/store.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((connection) => (redis = connection));

const options = { maxMessages: 6, ttlSeconds: 600 };

function turn(n: number): MessageParam[] {
  return [
    { role: "user", content: `question ${n}` },
    { role: "assistant", content: [{ type: "text", text: `answer ${n}` }] },
  ];
}

/** What a store that never read the conversation returns (nothing kept). */
async function fresh(chat: { platform: "telegram"; chatId: string }) {
  return new HistoryStore(redis, { ...options, parsedCacheChars: 0 }).read(chat);
}

describe("HistoryStore.read keeps what it parsed", () => {
  it("a value that grew, was trimmed, got a summary, was damaged or reset reads as a first read does", async () => {
    const chat = { platform: "telegram" as const, chatId: "parsed-1" };
    const store = new HistoryStore(redis, options);
    const other = new HistoryStore(redis, options); // another process appending
    for (let n = 0; n < 12; n += 1) {
      const before = await store.read(chat);
      expect(before).toEqual(await fresh(chat));
      await (n % 3 === 0 ? other : store).append(chat, turn(n), { messageId: String(n), text: `answer ${n}` }, before);
    }
    const read = await store.read(chat);
    expect(read).toEqual(await fresh(chat));
    expect(read.messages.at(-1)).toEqual(turn(11)[1]);

    // A compaction's summary in front: the value no longer continues the one read.
    const key = conversationKeys(chat).history;
    const summary = {
      text: "earlier: questions 0 to 5",
      summarized: 12,
      compactions: 1,
      at: 1,
      tokens: 10,
      after: "5",
    };
    await redis.set(key, `S${JSON.stringify(summary)}\n${(await redis.get(key))!}`);
    expect(await store.read(chat)).toEqual(await fresh(chat));
    expect((await store.read(chat)).summary).toBeDefined();

    // A damaged line appended by hand, then a valid run after it.
    await redis.append(key, "{not json\n");
    expect(await store.read(chat)).toEqual(await fresh(chat));
    await store.append(chat, turn(12), { messageId: "12", text: "answer 12" }, await store.read(chat));
    const afterDamage = await store.read(chat);
    expect(afterDamage).toEqual(await fresh(chat));
    expect(afterDamage.messages).toEqual(turn(12));

    // Reset: empty, then a new conversation.
    await store.reset(chat);
    expect(await store.read(chat)).toEqual({ messages: [], stored: 0, fresh: true });
    await store.append(chat, turn(13), { messageId: "13", text: "answer 13" }, await store.read(chat));
    expect((await store.read(chat)).messages).toEqual(turn(13));
  });

  it("returned lists are the caller's own: changing one does not change the next read", async () => {
    const chat = { platform: "telegram" as const, chatId: "parsed-2" };
    const store = new HistoryStore(redis, options);
    await store.append(chat, turn(1), { messageId: "1", text: "answer 1" }, await store.read(chat));
    const first = await store.read(chat);
    first.messages.push({ role: "user", content: "not stored" });
    first.messages.shift();
    expect((await store.read(chat)).messages).toEqual(turn(1));
  });
});
