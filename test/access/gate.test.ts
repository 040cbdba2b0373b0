/**
 * The access gate against a real Redis: a message from a granted user is queued; when Redis cannot
 * be reached while access is checked, `admit` throws `EnqueueError` (the adapters' "try again"
 * answer) and nothing is queued unchecked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessGate } from "../../src/access/gate.js";
import { EnqueueError } from "../../src/adapter.js";
import { silentLogger } from "../../src/log.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { ChatQueue } from "../../src/queue/producer.js";
import { connectRedis } from "../../src/redis.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server.stop();
});

const message = (id: string, userId = "501"): IncomingMessage => ({
  platform: "telegram",
  chatId: userId,
  chatKind: "dm",
  userId,
  userName: "U",
  text: "hello",
  messageId: id,
  sentAt: Date.now(),
  reply: {},
});

describe("access gate", () => {
  it("queues a granted user's message; a stranger's gets a pairing code and is not queued", async () => {
    const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 });
    const queue = new ChatQueue({ redis, prefix: "gate" });
    const replies: string[] = [];
    const gate = new AccessGate({
      config: testConfig({ ACCESS_POLICY: "pairing", RATE_LIMIT_PER_MINUTE: "10" }),
      log: silentLogger,
      redis,
      queue,
      reply: async (_to, text) => void replies.push(text),
    });
    await gate.access.allowUser("telegram:501");
    expect(await gate.admit(message("1"))).toBe("queued");
    expect(await redis.llen(conversationKeys({ platform: "telegram", chatId: "501" }).inbox)).toBe(1);
    expect(await gate.admit(message("2", "502"))).toBe("refused");
    expect(replies[0]).toMatch(/`[A-HJ-NP-Z2-9]{8}`/);
    expect(await redis.exists(conversationKeys({ platform: "telegram", chatId: "502" }).inbox)).toBe(0);
    await queue.close();
    redis.disconnect();
  });

  it(
    "the rate counter costs INCRBY alone below the limit (issue 37: the gate at ≤ 6 commands); " +
      "its window starts with the first message and the slow-down names its wait",
    async () => {
      const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 });
      const admin = connectRedis(server.url);
      const queue = new ChatQueue({ redis, prefix: "gate-rate" });
      const replies: string[] = [];
      const gate = new AccessGate({
        config: testConfig({
          ACCESS_POLICY: "pairing",
          RATE_LIMIT_PER_MINUTE: "3",
          USER_DAILY_TOKENS: "200000",
          GLOBAL_DAILY_TOKENS: "100000000",
        }),
        log: silentLogger,
        redis,
        queue,
        reply: async (_to, text) => void replies.push(text),
      });
      await gate.access.allowUser("telegram:601");
      const commands = async () => {
        const info = await admin.info("commandstats");
        return [...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)]
          .filter((m) => m[1] !== "info")
          .reduce((n, m) => n + Number(m[2]), 0);
      };
      expect(await gate.admit(message("1", "601"))).toBe("queued");
      const rate = "rate:{telegram:601}";
      const ttl = await admin.ttl(rate);
      expect(ttl).toBeGreaterThan(55);
      expect(ttl).toBeLessThanOrEqual(60);
      // Second message of the window: grant, chat grants, rate (script + INCRBY), two day totals; then the enqueue script.
      await admin.config("RESETSTAT");
      const before = await commands();
      expect(await gate.admit(message("2", "601"))).toBe("queued");
      const gateAndEnqueue = (await commands()) - before;
      await admin.config("RESETSTAT");
      const alone = await commands();
      await queue.enqueue(message("2b", "601"));
      const enqueue = (await commands()) - alone;
      expect(gateAndEnqueue - enqueue).toBeLessThanOrEqual(6);
      expect(await admin.get(rate)).toBe("2");
      expect(await gate.admit(message("3", "601"))).toBe("queued");
      // Past the limit: refused with the seconds left of the window; the counter keeps its expiry.
      expect(await gate.admit(message("4", "601"))).toBe("refused");
      expect(replies.at(-1)).toMatch(/\d+/);
      expect(await admin.ttl(rate)).toBeGreaterThan(0);
      await queue.close();
      redis.disconnect();
      admin.disconnect();
    },
  );

  it("Redis unreachable while checking: EnqueueError (the try-again answer), nothing queued unchecked", async () => {
    const redis = connectRedis(server.url, { maxRetriesPerRequest: 1, commandTimeout: 2000 });
    const queue = new ChatQueue({ redis, prefix: "gate-down" });
    const replies: string[] = [];
    const gate = new AccessGate({
      config: testConfig({ ACCESS_POLICY: "allowlist", USER_DAILY_TOKENS: "1000" }),
      log: silentLogger,
      redis,
      queue,
      reply: async (_to, text) => void replies.push(text),
    });
    await gate.access.allowUser("telegram:601");
    await server.stop();
    try {
      await expect(gate.admit(message("1", "601"))).rejects.toBeInstanceOf(EnqueueError);
      expect(replies).toEqual([]);
    } finally {
      server = await startRedis();
      await queue.close();
      redis.disconnect();
    }
    const fresh = connectRedis(server.url);
    expect(await fresh.exists(conversationKeys({ platform: "telegram", chatId: "601" }).inbox)).toBe(0);
    fresh.disconnect();
  });
});
