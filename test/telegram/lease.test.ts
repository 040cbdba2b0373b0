/**
 * One long poller per bot token: the Redis polling lease (`adapters/telegram/lease.ts`).
 *
 * - The lease itself on a real Redis: one holder at a time; an abandoned lease (a holder that
 *   stopped renewing, as a paused process does) is taken over with a higher fence, and the old
 *   holder's confirmation then fails, so it sends no further `getUpdates`.
 * - stop() racing the lease, one adapter in this process on the fake Bot API (Redis held with
 *   `CLIENT PAUSE` so an acquire is in flight): an acquire that answers after stop() is handed back
 *   at once, start-up rejects instead of polling, and no renewal timer outlives stop().
 * - Two adapter processes (`npm start`'s entry point, `ROLE=adapter`, real child processes) on the
 *   strict fake Bot API, with a worker in this process: one polls, the other waits (no 409 between
 *   them); after the first is killed (SIGKILL) the second takes over once the lease has run out
 *   (its TTL checked, then run out in Redis rather than waited for: within 10 s), and every
 *   message, also those sent while no one polled, is answered exactly once.
 * - A 409 injected into the polling adapter's `getUpdates`: polling resumes, the lease is kept.
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { RedisClient } from "../../src/redis.js";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createAnthropicClient } from "../../src/agent/client.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot, type RunningBot } from "../../src/app.js";
import { loadTools } from "../../src/toolbox/registry.js";
import type { TelegramAdapter } from "../../adapters/telegram/index.js";
import { LEASE_DEFAULTS, PollingLease, pollingLeaseKey } from "../../adapters/telegram/lease.js";
import { silentLogger } from "../../src/log.js";
import { startHarness } from "./harness.js";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { scriptedModel } from "../e2e/scripted-model.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import type { TestRedis } from "../helpers/redis.js";
import { useRedis } from "../helpers/use-redis.js";

let server: TestRedis;
let redis: RedisClient;
useRedis((connection, started) => {
  redis = connection;
  server = started;
});

describe("the lease", () => {
  it("has one holder at a time; an abandoned lease is taken over with a higher fence and the old holder is fenced off", async () => {
    const timings = { ttlMs: 600, renewEveryMs: 200, retryEveryMs: 100 };
    const a = new PollingLease(redis, 123456, timings);
    const b = new PollingLease(redis, 123456, timings);
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    expect(await a.confirm()).toBe(true);
    const first = a.fence!;
    // `a` is paused: it stops renewing. Its lease runs out, and `b` takes it.
    await new Promise((r) => setTimeout(r, 700));
    expect(a.held()).toBe(false);
    expect(await b.tryAcquire()).toBe(true);
    expect(b.fence).toBeGreaterThan(first);
    // `a` resumes: its fencing check fails, and its release does not touch `b`'s tenure.
    expect(await a.confirm()).toBe(false);
    await a.release();
    expect(await b.confirm()).toBe(true);
    await b.release();
    expect(await a.tryAcquire()).toBe(true);
    await a.release();
  });

  it("is keyed by a hash of the bot id in a hash tag of its own, never by the token", () => {
    const key = pollingLeaseKey(900000001);
    expect(key).toMatch(/^telegram:poller:\{[0-9a-f]{16}\}$/);
    expect(key).not.toContain("900000001");
    expect(pollingLeaseKey(900000002)).not.toBe(key);
  });
});

describe("stop() while the lease is being taken (one adapter in this process)", () => {
  const timings = { ttlMs: 5000, renewEveryMs: 40, retryEveryMs: 50 };
  let tg: FakeTelegram;
  beforeAll(async () => {
    tg = await FakeTelegram.start();
  });
  afterAll(async () => {
    await tg?.stop();
  });

  /**
   * Waits until the acquire that waited in Redis has taken the lease (its fence counter went past
   * `fence`) and handed it back (the key is gone): well before the lease's TTL would have run out.
   * Waiting for that state, not a fixed time, so a loaded machine that answers late is no failure.
   */
  async function handedBack(key: string, fence: number): Promise<void> {
    await vi.waitFor(
      async () => {
        expect(Number(await redis.get(`${key}:fence`))).toBeGreaterThan(fence);
        expect(await redis.exists(key)).toBe(0);
      },
      { timeout: timings.ttlMs - 1000, interval: 20 },
    );
  }

  /** Holds every Redis client's commands for `ms` (`CLIENT PAUSE … ALL`, https://redis.io/commands/client-pause/). */
  async function pauseRedis(ms: number): Promise<void> {
    await redis.call("CLIENT", "PAUSE", String(ms), "ALL");
  }

  it("a take-over whose acquire answers after stop() hands the lease back at once", async () => {
    const key = pollingLeaseKey(tg.bot.id);
    const other = new PollingLease(redis, tg.bot.id, timings);
    expect(await other.tryAcquire()).toBe(true);
    const h = await startHarness({}, tg, silentLogger, { lease: timings }, { redis });
    expect(h.adapter.bot.isRunning()).toBe(false); // waiting for the lease
    const fence = Number(await redis.get(`${key}:fence`));
    // The lease is freed and Redis pauses in the same read of this connection: the adapter's next acquire waits in Redis.
    await redis.pipeline().del(key).call("CLIENT", "PAUSE", "800", "ALL").exec();
    await delay(250);
    await h.adapter.stop();
    await handedBack(key, fence); // the pause is over; the acquire has answered
    expect(await redis.exists(key)).toBe(0);
    expect(h.adapter.bot.isRunning()).toBe(false);
    expect(await other.tryAcquire()).toBe(true);
    await other.release();
  });

  it("stop() while start-up's acquire waits for Redis: start-up rejects, the lease is handed back, no polling", async () => {
    const key = pollingLeaseKey(tg.bot.id);
    const fence = Number(await redis.get(`${key}:fence`));
    let adapter: TelegramAdapter | undefined;
    let paused = false;
    const starting = startHarness(
      {},
      tg,
      silentLogger,
      { lease: timings },
      {
        redis,
        beforeStart: (a) => {
          adapter = a;
          a.bot.api.config.use(async (prev, method, payload, signal) => {
            const result = await prev(method, payload, signal);
            if (method === "setMyCommands" && !paused) {
              paused = true;
              await pauseRedis(1000); // start-up's acquire, next, waits in Redis
            }
            return result;
          });
        },
      },
    );
    const failed = expect(starting).rejects.toThrow("telegram: start-up was stopped");
    await vi.waitFor(() => expect(paused).toBe(true), { timeout: 10_000 });
    await delay(300);
    await adapter!.stop();
    await failed;
    await handedBack(key, fence); // the pause is over; the acquire has answered
    expect(adapter!.bot.isRunning()).toBe(false);
  });

  it("stop() after deleteWebhook, before polling runs: start-up rejects, the lease is handed back, no timer is left behind", async () => {
    const key = pollingLeaseKey(tg.bot.id);
    await redis.ping(); // connected: ioredis's connect timer is gone
    await delay(100); // transient timers of the set-up have run
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    let adapter: TelegramAdapter | undefined;
    let stopping: Promise<void> | undefined;
    const starting = startHarness(
      {},
      tg,
      silentLogger,
      { lease: timings },
      {
        redis,
        beforeStart: (a) => {
          adapter = a;
          a.bot.api.config.use(async (prev, method, payload, signal) => {
            const result = await prev(method, payload, signal);
            if (method === "deleteWebhook") stopping = a.stop();
            return result;
          });
        },
      },
    );
    await expect(starting).rejects.toThrow("telegram: start-up was stopped");
    await stopping;
    await delay(200); // several renewal periods
    expect(adapter!.bot.isRunning()).toBe(false);
    expect(await redis.exists(key)).toBe(0);
    // No renewal interval runs on (it would keep the process from exiting).
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBeLessThanOrEqual(timersBefore);
  });
});

describe("two polling adapter processes", () => {
  let tg: FakeTelegram;
  let model: FakeAnthropic;
  let worker: RunningBot;
  const children: ChildProcess[] = [];
  const outputs = new Map<ChildProcess, string>();
  const env = () =>
    childEnv({
      ROLE: "adapter",
      LOG_LEVEL: "info",
      REDIS_URL: server.url,
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      ANTHROPIC_API_KEY: "fake-lease-anthropic-key-0000",
      ACCESS_POLICY: "open",
      RATE_LIMIT_PER_MINUTE: "10000",
      MAX_QUEUED_PER_CHAT: "10000",
      USER_DAILY_TOKENS: "0",
    });

  function startAdapter(): ChildProcess {
    const child = spawn(process.execPath, nodeArgs("src/main.ts"), { env: env(), stdio: ["ignore", "pipe", "pipe"] });
    outputs.set(child, "");
    const collect = (d: Buffer) => outputs.set(child, outputs.get(child)! + d.toString());
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);
    children.push(child);
    return child;
  }

  async function waitForOutput(child: ChildProcess, text: string, timeoutMs: number): Promise<number> {
    const until = Date.now() + timeoutMs;
    while (!outputs.get(child)!.includes(text)) {
      if (Date.now() > until) throw new Error(`no "${text}" within ${timeoutMs} ms; output:\n${outputs.get(child)}`);
      if (child.exitCode !== null)
        throw new Error(`the adapter exited (${child.exitCode}); output:\n${outputs.get(child)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return Date.now();
  }

  /** The one of `children` that says it started long polling (within `timeoutMs`). */
  async function firstToPoll(children: ChildProcess[], timeoutMs: number): Promise<ChildProcess> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const polling = children.find((child) => outputs.get(child)!.includes("telegram: long polling started"));
      if (polling) return polling;
      const exited = children.find((child) => child.exitCode !== null);
      if (exited) throw new Error(`an adapter exited (${exited.exitCode}); output:\n${outputs.get(exited)}`);
      if (Date.now() > until)
        throw new Error(
          `no adapter started polling within ${timeoutMs} ms; outputs:\n${children.map((c) => outputs.get(c)).join("\n---\n")}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * When (this process's `Date.now()`) the lease was taken with a fence above `fence`: the lease
   * key is read every 20 ms until it names a higher fence, and its remaining time to live says how
   * long ago it was set (Redis' own clock). So the bound checked is the waiting adapter's retry
   * and Redis, not how fast a loaded machine then starts polling and pipes the log line here.
   */
  async function leaseTakenAfter(fence: number, timeoutMs: number): Promise<{ at: number; fence: number }> {
    const key = pollingLeaseKey(tg.bot.id);
    const until = Date.now() + timeoutMs;
    for (;;) {
      const [[, value], [, ttl]] = (await redis.multi().get(key).pttl(key).exec()) as [
        [unknown, string | null],
        [unknown, number],
      ];
      const now = Date.now();
      const current = Number(/:(\d+)$/.exec(value ?? "")?.[1] ?? 0);
      if (current > fence && ttl > 0) return { at: now - (LEASE_DEFAULTS.ttlMs - ttl), fence: current };
      if (now > until) throw new Error(`the lease was not taken with a fence above ${fence} within ${timeoutMs} ms`);
      await delay(20);
    }
  }

  /** The fence of the lease's current tenure (0 when no one holds it). */
  async function currentFence(): Promise<number> {
    return Number(/:(\d+)$/.exec((await redis.get(pollingLeaseKey(tg.bot.id))) ?? "")?.[1] ?? 0);
  }

  /** Sends `calc <n> + 1` from user `id` (a private chat of its own). */
  function ask(id: number, n: number): void {
    const user = tg.user(id, `User${id}`);
    tg.sendUserMessage({ chat: tg.privateChat(user), from: user, text: `calc ${n} + 1` });
  }

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    model = await startFakeAnthropic({ fallback: scriptedModel });
    const config = testConfig({ ...env(), ROLE: "worker", LOG_LEVEL: "silent", ANTHROPIC_BASE_URL: model.url });
    const { log } = captureLogger("info");
    const { toolbox } = await loadTools({ config, log });
    worker = await startBot({
      config,
      log,
      redisUrl: server.url,
      toolbox,
      role: "worker",
      agent: { runAgent, client: createAnthropicClient(config, { maxRetries: 1 }) },
    });
  }, 60_000);
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await worker?.stop();
    await model?.close();
    await tg?.stop();
  });

  it("one polls, the other waits; the second takes over within 10 s of the first being killed, and no message is lost or answered twice", async () => {
    // Started together, so their start-ups overlap: one takes the lease and polls, the other waits.
    const pair = [startAdapter(), startAdapter()];
    const first = await firstToPoll(pair, 30_000);
    const second = pair.find((child) => child !== first)!;
    await waitForOutput(second, "another adapter is polling this bot; waiting to take over its polling lease", 30_000);

    for (let i = 0; i < 3; i++) ask(9100 + i, i);
    await tg.waitFor(
      () => [0, 1, 2].every((i) => tg.sent.some((m) => m.chatId === 9100 + i)),
      20_000,
      "answers while the first polls",
    );
    // Only the first polled: the waiting adapter never sent a getUpdates that fought it.
    expect(tg.conflicts).toBe(0);

    first.kill("SIGKILL");
    const killedAt = Date.now();
    for (let i = 3; i < 6; i++) ask(9100 + i, i); // nobody polls now: these wait at Telegram
    // The dead holder's lease would run out within its TTL, and the waiting adapter tries every
    // retryEveryMs: within 10 s. The test checks that bound, then runs the TTL out instead of waiting.
    const leaseKey = pollingLeaseKey(tg.bot.id);
    await vi.waitFor(() => expect(first.signalCode).toBe("SIGKILL"));
    const ttl = await redis.pttl(leaseKey);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_DEFAULTS.ttlMs);
    expect(LEASE_DEFAULTS.ttlMs + LEASE_DEFAULTS.retryEveryMs).toBeLessThan(10_000);
    const firstFence = await currentFence();
    expect(firstFence).toBeGreaterThan(0);
    const expiredAt = Date.now();
    await redis.pexpire(leaseKey, 1);
    const tookOver = await leaseTakenAfter(firstFence, 15_000);
    expect(tookOver.at - expiredAt).toBeLessThan(LEASE_DEFAULTS.retryEveryMs + 1000);
    // Had the TTL run out by itself, the take-over would have come at most this long after the kill.
    expect(expiredAt - killedAt + ttl + (tookOver.at - expiredAt)).toBeLessThan(10_000);
    await waitForOutput(second, "telegram: took over the polling lease; long polling started", 30_000);
    for (let i = 6; i < 8; i++) ask(9100 + i, i);
    await tg.waitFor(
      () => [3, 4, 5, 6, 7].every((i) => tg.sent.some((m) => m.chatId === 9100 + i)),
      20_000,
      "answers after the takeover",
    );
    // Answers of late duplicates would still be on their way: give them time to show up.
    await new Promise((r) => setTimeout(r, 1000));
    for (let i = 0; i < 8; i++) {
      const answers = tg.sent.filter((m) => m.chatId === 9100 + i);
      expect(answers.map((m) => m.text)).toEqual([expect.stringContaining(String(i + 1))]);
    }
    expect(tg.conflicts).toBe(0);

    // A 409 in the polling adapter's getUpdates: polling resumes (the lease stays with it).
    tg.failNext("getUpdates", {
      error_code: 409,
      description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    });
    ask(9110, 41);
    await tg.waitFor(
      () => tg.sent.some((m) => m.chatId === 9110 && m.text.includes("42")),
      20_000,
      "the answer after a 409",
    );
    await waitForOutput(second, "telegram: polling works again", 10_000);
    expect(outputs.get(second)).not.toContain("the polling lease was lost");
    // No token in either process's output.
    for (const child of [first, second]) expect(outputs.get(child)).not.toContain(tg.token);

    // A graceful stop hands the lease back: a new adapter takes it within about retryEveryMs.
    const third = startAdapter();
    await waitForOutput(third, "waiting to take over its polling lease", 30_000);
    const secondFence = await currentFence();
    const stoppedAt = Date.now();
    second.kill("SIGTERM");
    // The stopping adapter hands the lease back, and the waiting one takes it at its next try.
    const third_at = await leaseTakenAfter(secondFence, 15_000);
    expect(third_at.at - stoppedAt).toBeLessThan(8_000);
    await waitForOutput(third, "telegram: took over the polling lease", 30_000);
    ask(9111, 1);
    await tg.waitFor(
      () => tg.sent.some((m) => m.chatId === 9111 && m.text.includes("2")),
      20_000,
      "the answer after a graceful handover",
    );
  }, 120_000);
});
