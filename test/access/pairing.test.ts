/**
 * Issue 26 (5): pairing cannot be locked for everyone. Against a real Redis: one person gets at
 * most PAIRING_CODES_PER_USER_PER_DAY codes a day (then one "try again tomorrow" through the gate,
 * then silence); past MAX_PENDING_CODES the oldest pending code gives way to a new stranger's; both
 * are counted for `npm run access -- list`; names are stored as one plain line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessGate } from "../../src/access/gate.js";
import {
  AccessStore,
  MAX_PENDING_CODES,
  PAIRING_CODES_PER_USER_PER_DAY,
  PAIRING_TTL_MS,
} from "../../src/access/store.js";
import { silentLogger } from "../../src/log.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { ChatQueue } from "../../src/queue/producer.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { testConfig } from "../helpers/config.js";
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

const who = (platform: "telegram" | "discord", userId: string, userName = `U${userId}`) => ({
  platform,
  userId,
  userName,
  chatId: userId,
});

describe("pairing codes", () => {
  it("one person: the same code while it is pending, a new one after it expired, and none past 3 a day (counted)", async () => {
    const store = new AccessStore(redis);
    const hour = PAIRING_TTL_MS;
    const t0 = Date.now() - 5 * hour;
    const first = await store.pair(who("discord", "700"), t0);
    expect(first.status).toBe("new");
    expect(await store.pair(who("discord", "700"), t0 + 1000)).toEqual({
      status: "same",
      code: (first as { code: string }).code,
    });
    const second = await store.pair(who("discord", "700"), t0 + hour + 1);
    const third = await store.pair(who("discord", "700"), t0 + 2 * hour + 2);
    expect([second.status, third.status]).toEqual(["new", "new"]);
    expect(new Set([first, second, third].map((r) => (r as { code: string }).code)).size).toBe(
      PAIRING_CODES_PER_USER_PER_DAY,
    );
    expect(await store.pair(who("discord", "700"), t0 + 3 * hour + 3)).toEqual({ status: "limited" });
    expect(await store.pair(who("discord", "700"), t0 + 3 * hour + 4)).toEqual({ status: "limited" });
    // Someone else is not affected.
    expect((await store.pair(who("discord", "701"), t0 + 3 * hour + 5)).status).toBe("new");
    expect(await store.turnedAway()).toEqual([
      { platform: "discord", limited: 2, displaced: 0, since: t0 + 3 * hour + 3 },
    ]);
  });

  it(`past ${MAX_PENDING_CODES} pending codes the oldest gives way: it can no longer be approved, its owner gets a new code`, async () => {
    const store = new AccessStore(redis);
    const now = Date.now();
    const codes: string[] = [];
    for (let i = 0; i <= MAX_PENDING_CODES; i += 1) {
      const result = await store.pair(who("telegram", String(800 + i)), now + i);
      expect(result.status).toBe("new");
      codes.push((result as { code: string }).code);
    }
    const pending = await store.pending(now + MAX_PENDING_CODES);
    expect(pending).toHaveLength(MAX_PENDING_CODES);
    expect(pending.map((p) => p.code)).toEqual(codes.slice(1));
    expect((await store.turnedAway()).find((t) => t.platform === "telegram")).toMatchObject({
      limited: 0,
      displaced: 1,
    });
    expect(await store.approve(codes[0]!)).toBeUndefined();
    const again = await store.pair(who("telegram", "800"), now + MAX_PENDING_CODES + 1);
    expect(again.status).toBe("new");
    expect((await store.approve((again as { code: string }).code))?.userId).toBe("800");
    expect(await store.approve(codes[1]!)).toBeUndefined(); // gave way to the new code of 800
    expect((await store.approve(codes[2]!))?.userId).toBe("802");
  });

  it("stores the name as one plain line", async () => {
    const store = new AccessStore(redis);
    const result = await store.pair(who("telegram", "900", "Eve\n  ABCDEFGH  telegram:1  Owner\u202E\u200B\u001b[2J"));
    const pairing = (await store.pending()).find((p) => p.code === (result as { code: string }).code);
    expect(pairing?.userName).toBe("Eve ABCDEFGH telegram:1 Owner [2J");
  });

  it("through the gate: a stranger past the daily limit is told once to try tomorrow, then silence", async () => {
    const queue = new ChatQueue({ redis, prefix: "pairing-limit" });
    const replies: string[] = [];
    const gate = new AccessGate({
      config: testConfig({ ACCESS_POLICY: "pairing", BOT_LOCALE: "en" }),
      log: silentLogger,
      redis,
      queue,
      reply: async (_to, text) => void replies.push(text),
    });
    // Three codes over the last hours, each expired by now.
    for (let k = 3; k >= 1; k -= 1)
      expect((await gate.access.pair(who("telegram", "950"), Date.now() - k * PAIRING_TTL_MS - 10)).status).toBe("new");
    const message = (id: string): IncomingMessage => ({
      platform: "telegram",
      chatId: "950",
      chatKind: "dm",
      userId: "950",
      userName: "Lee",
      text: "hi",
      messageId: id,
      sentAt: Date.now(),
      reply: {},
    });
    expect(await gate.admit(message("1"))).toBe("refused");
    expect(replies).toEqual([
      "This is a private bot. You have been given 3 pairing codes today; please try again tomorrow.",
    ]);
    expect(await gate.admit(message("2"))).toBe("silent");
    expect(replies).toHaveLength(1);
    await queue.close();
  });
});
