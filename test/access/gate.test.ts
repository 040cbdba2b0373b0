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
