/**
 * Issue 26 (5) and issue 39 (8): pairing cannot be locked, nor a real stranger's code pushed out.
 * Against a real Redis: one person gets at most PAIRING_CODES_PER_USER_PER_DAY codes a day (then
 * one "try again tomorrow" through the gate, then silence); past PAIRING_CODES_PER_PLATFORM_PER_HOUR
 * new codes in an hour new strangers are told to try again in an hour, while every code given stays
 * approvable; both are counted for `npm run access -- list`; names are stored as one plain line.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessGate } from "../../src/access/gate.js";
import {
  AccessStore,
  PAIRING_CODES_PER_PLATFORM_PER_HOUR,
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
      { platform: "discord", limited: 2, flooded: 0, since: t0 + 3 * hour + 3 },
    ]);
  });

  it(`50 new accounts cannot push out a real stranger's code: past ${PAIRING_CODES_PER_PLATFORM_PER_HOUR} new codes an hour, others wait`, async () => {
    const store = new AccessStore(redis);
    const now = Date.now() - 10 * PAIRING_TTL_MS; // long past: the later tests' hour is not flooded
    const real = await store.pair(who("telegram", "799", "Real"), now);
    expect(real.status).toBe("new");
    const flood = [];
    for (let i = 0; i < 50; i += 1) flood.push(await store.pair(who("telegram", String(800 + i)), now + 1 + i));
    expect(flood.filter((r) => r.status === "new")).toHaveLength(PAIRING_CODES_PER_PLATFORM_PER_HOUR - 1);
    expect(flood.filter((r) => r.status === "busy")).toHaveLength(50 - (PAIRING_CODES_PER_PLATFORM_PER_HOUR - 1));
    // The real stranger's code is still pending, the same when they write again, and approvable.
    const pending = (await store.pending(now + 100)).filter((p) => p.platform === "telegram");
    expect(pending).toHaveLength(PAIRING_CODES_PER_PLATFORM_PER_HOUR);
    expect(pending[0]).toMatchObject({ userId: "799", code: (real as { code: string }).code });
    expect(await store.pair(who("telegram", "799", "Real"), now + 200)).toEqual({ ...real, status: "same" });
    expect((await store.approve((real as { code: string }).code))?.userId).toBe("799");
    expect((await store.turnedAway()).find((t) => t.platform === "telegram")).toMatchObject({
      limited: 0,
      flooded: 50 - (PAIRING_CODES_PER_PLATFORM_PER_HOUR - 1),
    });
    // Another platform is not affected; an hour after the first codes, new strangers get codes again.
    expect((await store.pair(who("discord", "799"), now + 300)).status).toBe("new");
    expect((await store.pair(who("telegram", "900"), now + PAIRING_TTL_MS - 1)).status).toBe("busy");
    expect((await store.pair(who("telegram", "901"), now + PAIRING_TTL_MS + 100)).status).toBe("new");
  });

  it("through the gate: a new stranger past the hourly limit is told once to try again in an hour, then silence; one warning", async () => {
    const queue = new ChatQueue({ redis, prefix: "pairing-flood" });
    const replies: string[] = [];
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (_: unknown, msg?: string) => void warnings.push(String(msg)) };
    const gate = new AccessGate({
      config: testConfig({ ACCESS_POLICY: "pairing", BOT_LOCALE: "en" }),
      log: log as typeof silentLogger,
      redis,
      queue,
      reply: async (_to, text) => void replies.push(text),
    });
    const now = Date.now();
    for (let i = 0; i < PAIRING_CODES_PER_PLATFORM_PER_HOUR; i += 1)
      await gate.access.pair(who("discord", String(1000 + i)), now - 1000 + i);
    const message = (userId: string, id: string): IncomingMessage => ({
      platform: "discord",
      chatId: userId,
      chatKind: "dm",
      userId,
      userName: "New",
      text: "hi",
      messageId: id,
      sentAt: Date.now(),
      reply: {},
    });
    expect(await gate.admit(message("1100", "1"))).toBe("refused");
    expect(await gate.admit(message("1100", "2"))).toBe("silent");
    expect(await gate.admit(message("1101", "3"))).toBe("refused");
    expect(replies).toEqual(
      Array.from(
        { length: 2 },
        () => "This is a private bot. Too many people asked for a pairing code this hour; please try again in an hour.",
      ),
    );
    expect(warnings.filter((w) => w.startsWith("pairing codes for new strangers are used up"))).toHaveLength(1);
    await queue.close();
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

describe("an approved code", () => {
  it("is recorded for a day with whom it let in, who approved it and when; approving it again (even at once, twice) grants once", async () => {
    await redis.flushdb();
    const store = new AccessStore(redis, silentLogger);
    const given = (await store.pair(who("discord", "4242", "Nia"))) as { code: string };
    const at = Date.now();
    // Two admins at once: one approval.
    const results = await Promise.all([
      store.approve(given.code, "telegram:1", "Ann"),
      store.approve(given.code.toLowerCase(), "cli"),
    ]);
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    expect(await store.hasUser("discord:4242")).toBe(true);
    const record = await store.approvedCode(given.code);
    expect(record).toMatchObject({ code: given.code, platform: "discord", userId: "4242", userName: "Nia" });
    expect(record!.at).toBeGreaterThanOrEqual(at);
    expect(await redis.ttl(`access:{access}:approved:${given.code}`)).toBeGreaterThan(86_400 - 60);
    // Revoked, the old code grants nothing again; it is only remembered.
    await store.revokeUser("discord:4242");
    expect(await store.approve(given.code, "telegram:1")).toBeUndefined();
    expect(await store.hasUser("discord:4242")).toBe(false);
    expect(await store.approvedCode(given.code)).toEqual(record);
    // A code never approved has no record.
    expect(await store.approvedCode("ABCDEFGH")).toBeUndefined();
    expect(await store.approvedCode("not a code")).toBeUndefined();
  });
});
