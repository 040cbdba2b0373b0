/**
 * The access gate against a real Redis: a message from a granted user is queued; when Redis cannot
 * be reached while access is checked, `admit` throws `EnqueueError` (the adapters' "try again"
 * answer) and nothing is queued unchecked. A conversation over its queue cap is told "busy" once per
 * window, however many adapter processes and senders.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessGate, BUSY_NOTICE_SECONDS, GATE_TEXT } from "../../src/access/gate.js";
import { EnqueueError } from "../../src/adapter.js";
import { localize } from "../../src/i18n.js";
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

  it(
    "40 members of a group write at once with 2 adapter processes: 20 are queued, one 'busy' answer " +
      `between the other 20, none more for ${BUSY_NOTICE_SECONDS} s; a DM and another group are told on their own`,
    async () => {
      const config = testConfig({ MAX_QUEUED_PER_CHAT: "20", RATE_LIMIT_PER_MINUTE: "10" });
      let now = 1_800_000_000_000;
      const replies: { chatId: string; userId: string; text: string }[] = [];
      const connections = [connectRedis(server.url), connectRedis(server.url)];
      const queues = connections.map((redis) => new ChatQueue({ redis, prefix: "gate-busy" }));
      const [one, two] = connections.map(
        (redis, i) =>
          new AccessGate({
            config,
            log: silentLogger,
            redis,
            queue: queues[i]!,
            reply: async (to, text) => void replies.push({ chatId: to.chatId, userId: to.userId, text }),
            now: () => now,
          }),
      ) as [AccessGate, AccessGate];
      const inGroup = (chatId: string, userId: string, id: string): IncomingMessage => ({
        ...message(id, userId),
        chatId,
        chatKind: "group",
      });
      const busy = localize(config.BOT_LOCALE, GATE_TEXT.busy);
      try {
        const members = Array.from({ length: 40 }, (_, i) => String(7000 + i));
        // Each member's one mention, in order, through one adapter process or the other.
        const admitted: string[] = [];
        for (const [i, member] of members.entries())
          admitted.push(await (i % 2 === 0 ? one : two).admit(inGroup("-100900", member, `m${i}`)));
        expect(admitted.slice(0, 20)).toEqual(Array(20).fill("queued"));
        expect(admitted.slice(20)).toEqual(["refused", ...Array(19).fill("silent")]);
        expect(replies).toEqual([{ chatId: "-100900", userId: "7020", text: busy }]);
        // Nothing queued was lost: the 20 wait in the group's inbox.
        const inbox = conversationKeys({ platform: "telegram", chatId: "-100900" }).inbox;
        expect(await connections[0]!.llen(inbox)).toBe(20);

        // At once from both processes: still one answer between them (none here: the minute is not over).
        const together = await Promise.all([
          one.admit(inGroup("-100900", "7100", "t1")),
          two.admit(inGroup("-100900", "7101", "t2")),
        ]);
        expect(together).toEqual(["silent", "silent"]);

        // Another group and a DM over their caps are told on their own.
        const dmConfig = testConfig({ MAX_QUEUED_PER_CHAT: "1" });
        const dmGate = new AccessGate({
          config: dmConfig,
          log: silentLogger,
          redis: connections[1]!,
          queue: queues[1]!,
          reply: async (to, text) => void replies.push({ chatId: to.chatId, userId: to.userId, text }),
          now: () => now,
        });
        expect(await dmGate.admit(message("d1", "7200"))).toBe("queued");
        expect(await dmGate.admit(message("d2", "7200"))).toBe("refused");
        expect(await dmGate.admit(message("d3", "7200"))).toBe("silent");
        expect(await dmGate.admit(inGroup("-100901", "7201", "g1"))).toBe("queued");
        expect(await dmGate.admit(inGroup("-100901", "7202", "g2"))).toBe("refused");
        expect(replies.slice(1)).toEqual([
          { chatId: "7200", userId: "7200", text: busy },
          { chatId: "-100901", userId: "7202", text: busy },
        ]);

        // The window is measured from the answer: 1 ms short of it, silence; at its end, one answer again.
        now += BUSY_NOTICE_SECONDS * 1000 - 1;
        expect(await two.admit(inGroup("-100900", "7102", "w1"))).toBe("silent");
        now += 1;
        expect(await one.admit(inGroup("-100900", "7103", "w2"))).toBe("refused");
        expect(await two.admit(inGroup("-100900", "7104", "w3"))).toBe("silent");
        expect(replies.filter((r) => r.chatId === "-100900").map((r) => r.userId)).toEqual(["7020", "7103"]);
        expect(await connections[0]!.llen(inbox)).toBe(20);
      } finally {
        for (const queue of queues) await queue.close();
        for (const redis of connections) redis.disconnect();
      }
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
