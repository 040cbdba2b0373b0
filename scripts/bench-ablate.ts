/**
 * `npm run bench -- --ablate`: which part of the queue path costs the throughput ratio (issue 37
 * item 4). Several workers run side by side in this process, each with its own pair of
 * redis-servers and its own variant of the production set-up; round after round, each variant's
 * burst through the queue follows a burst of the loop alone (the same messages, in new chats), and
 * the ratio of the two is noted. Variants:
 *
 * - `production`: one Redis connection for BullMQ and our keys, as `src/app.ts` opens it
 *   (`WORKER_REDIS_OPTIONS`), every feature of `FEATURES`, the trace store;
 * - `auto-pipelining`: the same with ioredis auto-pipelining on (as the worker had it until now);
 * - `no features`: `production` with no feature (no confirmation flow, settings, Stop, memory…);
 * - `no trace store`: `production` without the trace store (the loop's null tracer).
 *
 * Environment: ABLATE_ROUNDS (10), ABLATE_MESSAGES (5 per chat; 100 chats), WORKER_CONCURRENCY (32).
 * Prints, per variant, the median throughput ratio queue/loop with every round's, and the median
 * CPU ratio (this process's CPU per message, loop / queue).
 */
import Anthropic from "@anthropic-ai/sdk";
import type { Redis } from "ioredis";
import { runAgent } from "../src/agent/loop.js";
import type { MessageParam } from "../src/agent/contract.js";
import { historyTtlSeconds, loadConfig } from "../src/config.js";
import { FEATURES } from "../src/features.js";
import { HistoryStore } from "../src/history/store.js";
import { trimHistory } from "../src/history/trim.js";
import { silentLogger } from "../src/log.js";
import { ChatQueue } from "../src/queue/producer.js";
import { connectRedis, WORKER_REDIS_OPTIONS, type RedisClient } from "../src/redis.js";
import { ToolBox } from "../src/toolbox/toolbox.js";
import { TraceStore } from "../src/trace/store.js";
import { nullTracer } from "../src/trace/tracer.js";
import { startWorker } from "../src/worker/worker.js";
import { startFakeAnthropic, text, type FakeAnthropic } from "../test/fakes/anthropic.js";
import { startRedis } from "../test/helpers/redis.js";
import { BenchOutbound, benchMessage } from "./bench-outbound.js";

const CHATS = 100;
const PER_CHAT = Number(process.env.ABLATE_MESSAGES ?? 5);
const ROUNDS = Number(process.env.ABLATE_ROUNDS ?? 10);

const config = loadConfig(
  {
    LOG_LEVEL: "silent",
    WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY ?? "32",
    ANTHROPIC_API_KEY: "bench-key-000",
  },
  { purpose: "inspect" },
);
const toolbox = new ToolBox([]);

/** One variant of the queue path (see the module comment). */
interface Variant {
  label: string;
  autoPipelining: boolean;
  features: boolean;
  traces: boolean;
}

const VARIANTS: Variant[] = [
  { label: "production", autoPipelining: false, features: true, traces: true },
  { label: "auto-pipelining", autoPipelining: true, features: true, traces: true },
  { label: "no features", autoPipelining: false, features: false, traces: true },
  { label: "no trace store", autoPipelining: false, features: true, traces: false },
];

const message = benchMessage;

function feed(fake: FakeAnthropic, n: number): void {
  fake.requests.length = 0;
  fake.enqueue(...Array.from({ length: n }, () => text("好的，你今天的清單上有三件事。")));
}

/** CPU (user + system) this process used during `work`, in ms per message, and its wall time in s. */
async function timed(messages: number, work: () => Promise<void>): Promise<{ seconds: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - t0) / 1000, cpuMs: (used.user + used.system) / 1000 / messages };
}

/** The loop alone, as `npm run bench` runs it: chats in parallel (WORKER_CONCURRENCY), each in order, histories in memory. */
function loopBurst(client: Anthropic, fake: FakeAnthropic, redis: RedisClient, prefix: string) {
  feed(fake, CHATS * PER_CHAT);
  const histories = new Map<number, { messages: MessageParam[]; sizes: number[] }>();
  let next = 0;
  const runChat = async (chat: number) => {
    for (let n = 0; n < PER_CHAT; n += 1) {
      const m = message(chat, n, prefix);
      const kept = histories.get(chat) ?? { messages: [], sizes: [] };
      const history = trimHistory(kept.messages, { maxMessages: config.HISTORY_MAX_MESSAGES }, kept.sizes);
      const context = {
        ...{ platform: m.platform, chatId: m.chatId, chatKind: m.chatKind, userId: m.userId, userName: m.userName },
        ...{ locale: config.BOT_LOCALE, timezone: config.TIMEZONE, log: silentLogger, redis, config },
        signal: new AbortController().signal,
      };
      const userText = m.chatKind === "group" ? `[${m.userName}] ${m.text}` : m.text;
      const outcome = await runAgent({ history, userText, context }, { client, config, toolbox, tracer: nullTracer });
      if (outcome.kind !== "answer") throw new Error("the loop asked for an approval");
      kept.messages.push(...outcome.messages);
      kept.sizes.push(...outcome.messages.map((x) => JSON.stringify(x).length));
      histories.set(chat, kept);
    }
  };
  return timed(CHATS * PER_CHAT, async () => {
    await Promise.all(
      Array.from({ length: config.WORKER_CONCURRENCY }, async () => {
        while (next < CHATS) await runChat(next++);
      }),
    );
  });
}

/** Starts `variant`'s worker on a new redis-server and warms it up; @returns its burst and its stop. */
async function startVariant(variant: Variant, client: Anthropic, fake: FakeAnthropic) {
  const server = await startRedis();
  const options = { ...WORKER_REDIS_OPTIONS, enableAutoPipelining: variant.autoPipelining };
  const redis = connectRedis(server.url, options) as Redis;
  const producer = connectRedis(server.url, { maxRetriesPerRequest: 1 }) as Redis;
  const outbound = new BenchOutbound(2000);
  const queue = new ChatQueue({ redis: producer });
  const traces = new TraceStore(redis);
  const worker = startWorker(
    {
      config,
      log: silentLogger,
      redis,
      history: new HistoryStore(redis, {
        maxMessages: config.HISTORY_MAX_MESSAGES,
        ttlSeconds: historyTtlSeconds(config),
      }),
      toolbox,
      client,
      runAgent,
      outbounds: { telegram: outbound },
      ...(variant.traces ? { tracerFor: (runId: string, chat: string) => traces.startRun({ chat, runId }) } : {}),
    },
    variant.features ? FEATURES : [],
  );
  await worker.waitUntilReady();
  const burst = (prefix: string, perChat: number) => {
    const total = CHATS * perChat;
    feed(fake, total);
    outbound.done.clear();
    const done = new Promise<void>((resolve) => (outbound.onDone = () => outbound.done.size >= total && resolve()));
    return timed(total, async () => {
      const enqueues: Promise<unknown>[] = [];
      for (let n = 0; n < perChat; n += 1)
        for (let c = 0; c < CHATS; c += 1) enqueues.push(queue.enqueue(message(c, n, prefix)));
      await Promise.all(enqueues);
      await done;
    });
  };
  await burst("warm", 1);
  const stop = async () => {
    await worker.close();
    await queue.close();
    redis.disconnect();
    producer.disconnect();
    await server.stop();
  };
  return { burst: () => burst(`r${Math.random().toString(36).slice(2, 8)}-`, PER_CHAT), redis, stop };
}

/** Runs the ablation and prints its figures (see the module comment). */
export async function ablationBench(): Promise<void> {
  const fake = await startFakeAnthropic();
  const client = new Anthropic({ apiKey: "bench-key-000", baseURL: fake.url, maxRetries: 0 });
  const started = [];
  for (const variant of VARIANTS) started.push({ variant, ...(await startVariant(variant, client, fake)) });
  console.log(
    `ablation: ${ROUNDS} rounds; each round, for each variant, the loop alone then the queue path, ` +
      `${CHATS} chats × ${PER_CHAT} messages each in new chats; WORKER_CONCURRENCY=${config.WORKER_CONCURRENCY}`,
  );
  const ratios = new Map<string, { throughput: number[]; cpu: number[] }>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const { variant, burst, redis } of started) {
      const loop = await loopBurst(client, fake, redis, `loop${round}-${variant.label}-`);
      const queue = await burst();
      const r = ratios.get(variant.label) ?? { throughput: [], cpu: [] };
      r.throughput.push(loop.seconds / queue.seconds);
      r.cpu.push(loop.cpuMs / queue.cpuMs);
      ratios.set(variant.label, r);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  for (const [label, r] of ratios)
    console.log(
      `  ${label.padEnd(16)} throughput ratio queue/loop median ${median(r.throughput).toFixed(2)} ` +
        `[${r.throughput.map((v) => v.toFixed(2)).join(", ")}]; CPU ratio median ${median(r.cpu).toFixed(2)}`,
    );
  for (const s of started) await s.stop();
  await fake.close();
}
