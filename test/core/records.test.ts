/**
 * Records read back from Redis go through one schema-checked decoder: a record that is not JSON,
 * or not of its shape, is logged and read as missing — never a crash. Checked on the helper and on
 * the stores that keep JSON (approvals, history, pairings), with corrupt values written by hand.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AccessStore } from "../../src/access/store.js";
import { ApprovalStore } from "../../src/approvals/store.js";
import { HistoryStore } from "../../src/history/store.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { decodeRecord, wellFormedJson } from "../../src/records.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
let redis: RedisClient;
beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushall();
});

const warnings = (lines: string[]) =>
  lines
    .map((l) => JSON.parse(l) as { level: number; msg: string; record?: string; issues?: string[] })
    .filter((l) => l.level === 40);

describe("decodeRecord", () => {
  const schema = z.object({ n: z.number() });

  it("decodes a record of its shape; a missing key is undefined without a word", () => {
    const { log, lines } = captureLogger();
    expect(decodeRecord(schema, '{"n":3}', "counter", log)).toEqual({ n: 3 });
    expect(decodeRecord(schema, null, "counter", log)).toBeUndefined();
    expect(decodeRecord(schema, undefined, "counter", log)).toBeUndefined();
    expect(warnings(lines)).toEqual([]);
  });

  it("reads a record that is not JSON, or not of its shape, as missing and says which (never the value)", () => {
    const { log, lines } = captureLogger();
    expect(decodeRecord(schema, "{not json", "counter", log, { chat: "telegram:1" })).toBeUndefined();
    expect(decodeRecord(schema, '{"n":"secret-value"}', "counter", log)).toBeUndefined();
    const [notJson, wrongShape] = warnings(lines);
    expect(notJson).toMatchObject({
      msg: "unreadable counter in Redis; treated as missing",
      record: "counter",
      chat: "telegram:1",
    });
    expect(wrongShape!.issues).toEqual(["n: Invalid input: expected number, received string"]);
    expect(lines.join("")).not.toContain("secret-value");
  });
});

describe("wellFormedJson", () => {
  /** What `JSON.parse` reads from `json` once mended. */
  const read = (json: string): unknown => JSON.parse(wellFormedJson(json));

  it("reads the escape of a lone surrogate, high or low, in keys and values, as U+FFFD", () => {
    expect(read(JSON.stringify({ [`k\udc01`]: ["a\ud800", "\udfff b", "\ud83d\ud83d"] }))).toEqual({
      "k\ufffd": ["a\ufffd", "\ufffd b", "\ufffd\ufffd"],
    });
    expect(read('"\\uD800x"')).toBe("\ufffdx");
  });

  it("leaves a pair's escapes, other escapes and an escaped backslash before `ud800` as they are", () => {
    const same = [
      '"\\ud83d\\ude00"',
      '"\\\\ud800"',
      '"\\\\\\\\ud800"',
      '"\\n\\u00e9\\"\\\\"',
      '{"a":1}',
      "not json \\uZZZZ",
    ];
    for (const json of same) expect(wellFormedJson(json)).toBe(json);
    expect(read('"\\ud83d\\ude00"')).toBe("😀");
    // An escaped backslash, then the escape of a lone surrogate.
    expect(read('"\\\\\\ud800"')).toBe("\\\ufffd");
  });

  it("decodeRecord reads such a record well-formed", () => {
    const { log, lines } = captureLogger();
    const schema = z.object({ name: z.string() });
    expect(decodeRecord(schema, JSON.stringify({ name: "Al\udc00ice" }), "name", log)).toEqual({ name: "Al\ufffdice" });
    expect(warnings(lines)).toEqual([]);
  });
});

describe("stores read a corrupt record as missing", () => {
  it("an approval whose saved run is damaged is unknown (its decision job then skips it), not a crash", async () => {
    const { log, lines } = captureLogger();
    const store = new ApprovalStore(redis, { timeoutMs: 60_000, log });
    const message = {
      platform: "telegram" as const,
      chatId: "-1",
      chatKind: "group" as const,
      userId: "u1",
      userName: "Ann",
      text: "刪掉",
      messageId: "m1",
      sentAt: 1,
      reply: {},
    };
    const call = { toolUseId: "toolu_1", name: "delete_todo", input: { number: 1 } };
    const run = {
      messages: [{ role: "user" as const, content: "刪掉" }],
      history: [],
      results: [],
      pending: [call],
      turns: 1,
      callCounts: {},
    };
    const id = await store.create({ message, run, call, action: "刪除待辦 #1", locale: "zh-TW" });
    expect((await store.get(id))?.run).toEqual(run);
    await redis.hset(
      `approval:{approval}:${id}`,
      "data",
      JSON.stringify({ message, run: { ...run, turns: "one" }, call, action: "x", locale: "zh-TW" }),
    );
    expect(await store.get(id)).toBeUndefined();
    await redis.hset(`approval:{approval}:${id}`, "data", "{");
    expect(await store.get(id)).toBeUndefined();
    expect(warnings(lines).map((w) => w.record)).toEqual(["approval record", "approval record"]);
  });

  it("a history line that is not a message ends the usable prefix; a damaged run tag tags nothing", async () => {
    const { log, lines } = captureLogger();
    const history = new HistoryStore(redis, { maxMessages: 50, ttlSeconds: 60, log });
    const chat = { platform: "telegram" as const, chatId: "42" };
    const turn = (text: string) => [
      JSON.stringify({ role: "user", content: text }),
      JSON.stringify({ role: "assistant", content: [{ type: "text", text: `re: ${text}` }] }),
    ];
    const [u1, a1] = turn("one");
    const [u2, a2] = turn("two");
    await redis.set(
      conversationKeys(chat).history,
      `U${u1}\n${a1}\n{"role":"robot","content":"?"}\n#{"id":7}\nU${u2}\n${a2}\n#{"id":"m2"}\n`,
    );
    const read = await history.read(chat, "m2");
    expect(read.messages.map((m) => m.content)).toEqual(["two", [{ type: "text", text: "re: two" }]]);
    expect(read.answer).toBe("re: two");
    expect(warnings(lines).map((w) => w.record)).toEqual(["history message", "history run tag"]);
  });

  it("a damaged pairing is not approved and not listed", async () => {
    const { log, lines } = captureLogger();
    const access = new AccessStore(redis, log);
    const pairing = await access.pair({ platform: "telegram", userId: "9", userName: "Bo", chatId: "9" });
    expect(pairing.status).toBe("new");
    const code = (pairing as { code: string }).code;
    await redis.set(`access:{access}:code:${code}`, '{"code":1}', "KEEPTTL");
    expect(await access.pending()).toEqual([]);
    expect(await access.approve(code)).toBeUndefined();
    expect(warnings(lines).map((w) => w.record)).toEqual(["pairing", "pairing"]);
  });
});
