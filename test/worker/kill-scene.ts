/**
 * The stage of the kill tests: a test Redis, the strict fake Messages API, the fake Discord and a
 * queue, a worker child to kill and a second worker that takes its jobs over. Everything started
 * is stopped after each test (a child still running is SIGKILLed first).
 */
import type { ChildProcess } from "node:child_process";
import { afterEach } from "vitest";
import type { Logger } from "../../src/log.js";
import { ChatQueue } from "../../src/queue/producer.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from "../fakes/anthropic.js";
import { FakeDiscord, type FakeUser } from "../fakes/discord.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { expireLocks } from "../helpers/jobs.js";
import { spawnChildWorker, startDiscordWorker } from "./children.js";
import { waitFor } from "./harness.js";

/**
 * `user` writes `words` to the bot in a DM on the fake Discord; @returns the job the adapter would
 * queue for it (for `queue.enqueue`: the tests hand jobs to the workers themselves).
 */
export function discordDm(fake: FakeDiscord, user: FakeUser, words: string): IncomingMessage {
  const m = fake.sendUserMessage(user, words, { dm: true });
  return {
    platform: "discord",
    chatId: m.channel_id,
    chatKind: "dm",
    userId: user.id,
    userName: user.username,
    text: words,
    messageId: m.id,
    sentAt: Date.now(),
    reply: {},
  };
}

/** A started stage: the services, a queue on the Redis, and the two ways to start a worker on them. */
export interface KillScene {
  server: TestRedis;
  model: FakeAnthropic;
  discord: FakeDiscord;
  /** A connection to `server` (one retry per request). */
  redis: RedisClient;
  queue: ChatQueue;
  /** Spawns `discord-worker-child.ts` on this stage with `env` added; resolves once it is ready. */
  startChild(env?: Record<string, string>): Promise<ChildProcess>;
  /**
   * SIGKILLs `child` unless it died already, waits until it is gone, and expires the locks of the
   * chat jobs it held (`expireLocks`: what BullMQ sees once `LOCK_DURATION_MS` has passed, which
   * the test does not wait for), so the next stalled-job check hands them on.
   * @returns the ids of the jobs it held.
   */
  bury(child: ChildProcess): Promise<string[]>;
  /** Starts the worker that takes the jobs over, in this process, with `env` added to its config (and `log`, default silent; the memory tool when `memory`). */
  startSecondWorker(
    env?: Record<string, string>,
    log?: Logger,
    memory?: boolean,
  ): ReturnType<typeof startDiscordWorker>;
}

/**
 * For a test file: returns a function that starts a {@link KillScene}, its fake model made with
 * `model` options; registers the clean-up after each test.
 */
export function useKillScene(): (model?: FakeAnthropicOptions) => Promise<KillScene> {
  const children: ChildProcess[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children.length = 0;
    for (const c of cleanups.reverse()) await c().catch(() => {});
    cleanups.length = 0;
  });
  return async (modelOptions) => {
    const server = await startRedis();
    cleanups.push(() => server.stop());
    const model = await startFakeAnthropic(modelOptions);
    cleanups.push(() => model.close());
    const discord = await FakeDiscord.start();
    cleanups.push(() => discord.close());
    const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 });
    cleanups.push(async () => redis.disconnect());
    const queue = new ChatQueue({ redis });
    cleanups.push(() => queue.close());
    return {
      server,
      model,
      discord,
      redis,
      queue,
      async startChild(env = {}) {
        const child = await spawnChildWorker("test/worker/discord-worker-child.ts", {
          REDIS_URL: server.url,
          MODEL_URL: model.url,
          DISCORD_TOKEN: discord.token,
          DISCORD_API_URL: discord.apiUrl,
          ...env,
        });
        children.push(child);
        return child;
      },
      async bury(child) {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await waitFor(() => child.exitCode !== null || child.signalCode !== null, 45_000, "the child worker to die");
        return expireLocks(redis, queue.queue);
      },
      startSecondWorker(env, log, memory) {
        const second = startDiscordWorker({
          redisUrl: server.url,
          modelUrl: model.url,
          discord,
          ...(env ? { env } : {}),
          ...(log ? { log } : {}),
          ...(memory ? { memory } : {}),
        });
        cleanups.push(() => second.close(5000));
        return second;
      },
    };
  };
}
