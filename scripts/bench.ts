/**
 * `npm run bench`: how much the queue, worker and history add to answering a message.
 *
 * N chats × M messages go through the real ChatQueue, BullMQ Worker, HistoryStore, the
 * production tracer (`TraceStore`, every run stored in "our" Redis) and the real agent loop + SDK client, against a
 * zero-latency fake model (the strict fake Messages API from
 * the tests) and a fake platform (an Outbound that only records when each answer went out).
 * Baseline: the same messages through the agent loop called in-process, with history kept in
 * memory, without Redis. BullMQ and our keys live on two redis-servers so `INFO commandstats`
 * splits the commands per message into BullMQ's share and ours.
 *
 * Figures: throughput (messages/s) at full speed; p50/p99 latency at a steady 100 messages/s,
 * with the added latency (queue path minus baseline at the same percentile); Redis commands per
 * message, ours split into history / ordering (inbox, dedupe, progress) / trace by watching a short
 * extra phase with `MONITOR` (which also lists the commands run inside our Lua scripts); peak RSS of
 * this process (which also hosts the fake model) and of each redis-server.
 *
 * `npm run bench -- --cluster` instead compares one redis-server with a local three-master Redis
 * Cluster on the same workload ({@link topologyBench}).
 *
 * `npm run bench -- --cost` instead prints what a 200-turn conversation costs in tokens, with and
 * without compaction, prompt caching included (`scripts/bench-cost.ts`).
 *
 * `npm run bench -- --ablate` instead compares the queue path's throughput ratio with a part
 * taken out or changed (`scripts/bench-ablate.ts`).
 *
 * `npm run bench -- --soak` instead sends SOAK_MESSAGES (10,000) messages through one worker in a
 * process of its own and prints its memory after warm-up and at the end ({@link soakBench});
 * `-- --soak --snapshot` also writes a heap snapshot at both points, to compare in Chrome DevTools.
 *
 * Environment: BENCH_CHATS (100), BENCH_MESSAGES (20 per chat), BENCH_RATE (100 messages/s),
 * BENCH_SECONDS (10 s at that rate), WORKER_CONCURRENCY (32), BENCH_ONE (200 messages one at a
 * time), BENCH_ROUNDS (8 alternating rounds for the throughput ratio), BENCH_PROFILE (a folder:
 * CPU profiles of the two full-speed bursts are written there and summarised).
 */
import Anthropic from "@anthropic-ai/sdk";
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import inspector from "node:inspector";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { runAgent } from "../src/agent/loop.js";
import type { MessageParam } from "../src/agent/contract.js";
import { historyTtlSeconds, loadConfig } from "../src/config.js";
import { HistoryStore } from "../src/history/store.js";
import { trimHistory } from "../src/history/trim.js";
import { silentLogger } from "../src/log.js";
import type { IncomingMessage } from "../src/queue/incoming.js";
import { ChatQueue } from "../src/queue/producer.js";
import { AccessGate } from "../src/access/gate.js";
import { UsageStore } from "../src/usage/store.js";
import { connectRedis, isCluster, WORKER_REDIS_OPTIONS, type RedisClient } from "../src/redis.js";
import { ToolBox } from "../src/toolbox/toolbox.js";
import { nullTracer } from "../src/trace/tracer.js";
import { TraceStore } from "../src/trace/store.js";
import { startWorker } from "../src/worker/worker.js";
import { BenchOutbound, benchMessage } from "./bench-outbound.js";
import { startFakeAnthropic, text, toolUse, type FakeAnthropic, type FakeRequest } from "../test/fakes/anthropic.js";
import { FakeTelegram } from "../test/fakes/telegram.js";
import { startRedis, startRedisCluster } from "../test/helpers/redis.js";
import { FEATURES } from "../src/features.js";

const CHATS = Number(process.env.BENCH_CHATS ?? 100);
const PER_CHAT = Number(process.env.BENCH_MESSAGES ?? 20);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = process.env.WORKER_CONCURRENCY ?? "32";

const config = loadConfig(
  { LOG_LEVEL: "silent", WORKER_CONCURRENCY: CONCURRENCY, ANTHROPIC_API_KEY: "bench-key-000" },
  { purpose: "inspect" },
);
const toolbox = new ToolBox([]);

const message = benchMessage;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function commandStats(redis: RedisClient): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const stats = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(m[1]!, Number(m[2]));
  return stats;
}

async function rssOf(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory_rss:(\d+)/.exec(info)?.[1] ?? 0);
}

/** Counts the commands this client sends (round trips; a script counts once). */
function countCommands(redis: Redis): { count: number } {
  const counter = { count: 0 };
  const original = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    counter.count += 1;
    return original(...args);
  }) as Redis["sendCommand"];
  return counter;
}

/**
 * Issue 37's figures, filled by {@link main} (the worker path at RATE msg/s: our own server-side
 * commands and the round trips our code sent, per message, the producer's enqueue included) and
 * by {@link gateBench} (what the access gate adds), printed together at the end.
 */
const cost: {
  worker?: { commands: number; trips: number; writes: number };
  gate?: { commands: number; trips: number };
} = {};

let peakRss = 0;
// `memoryUsage.rss()` alone: the whole `memoryUsage()` walks the heap spaces (1.5% of the burst's CPU every 50 ms).
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50);

/**
 * Throughput: enqueues PER_CHAT messages to each of CHATS chats (interleaved) at once and waits until
 * `outbound` delivered them all. Call after `outbound.done.clear()` and feeding the fake model.
 * @returns seconds from the first enqueue to the last answer, and each message's latency (ms).
 */
async function burst(
  queue: ChatQueue,
  outbound: BenchOutbound,
  perChat = PER_CHAT,
  prefix = "chat",
): Promise<{ seconds: number; latencies: number[] }> {
  const total = CHATS * perChat;
  const sentAt = new Map<string, number>();
  const allDone = new Promise<void>((resolve) => (outbound.onDone = () => outbound.done.size >= total && resolve()));
  const t0 = performance.now();
  const enqueues: Promise<unknown>[] = [];
  for (let n = 0; n < perChat; n += 1) {
    for (let c = 0; c < CHATS; c += 1) {
      const m = message(c, n, prefix);
      sentAt.set(`${m.chatId}:${m.messageId}`, performance.now());
      enqueues.push(queue.enqueue(m));
    }
  }
  await Promise.all(enqueues);
  await allDone;
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, latencies: [...outbound.done.entries()].map(([k, t]) => t - sentAt.get(k)!) };
}

/**
 * Latency at a steady rate: enqueues `count` messages at RATE per second over the CHATS chats and
 * waits until `outbound` delivered them all. Call after `outbound.done.clear()` and feeding the fake model.
 * @returns each message's latency (ms).
 */
async function steady(queue: ChatQueue, outbound: BenchOutbound, count: number): Promise<number[]> {
  outbound.onDone = undefined;
  const sent = new Map<string, number>();
  const start = performance.now();
  for (let i = 0; i < count; i += 1) {
    const wait = start + (i * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const m = message(i % CHATS, Math.floor(i / CHATS), "paced");
    sent.set(`${m.chatId}:${m.messageId}`, performance.now());
    void queue.enqueue(m);
  }
  while (outbound.done.size < count) await new Promise((r) => setTimeout(r, 20));
  return [...outbound.done.entries()].map(([k, t]) => t - sent.get(k)!);
}

function feed(fake: FakeAnthropic, n: number): void {
  fake.requests.length = 0;
  fake.enqueue(...Array.from({ length: n }, () => text("好的，你今天的清單上有三件事。")));
}

/** The machine's load average (1, 5 and 15 minutes, as `uptime` prints it). */
function loadAverage(): string {
  return os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(" ");
}

/** The 1-minute load average, for the lines that say when a figure was taken. */
function loadAverage1(): string {
  return os.loadavg()[0]!.toFixed(1);
}

/** Prints the machine the figures were taken on, and its load average now. */
function printMachine(): void {
  console.log(
    `machine: ${os.cpus().length} cores (nproc), ${os.cpus()[0]?.model ?? "unknown CPU"}, node ${process.version}, ${os.platform()} ${os.release()}`,
  );
  console.log(`load average at start: ${loadAverage()} (1, 5, 15 min; the machine may be shared)`);
}

/**
 * The queue path's worker (the production TraceStore tracer, history and traces on `store`, BullMQ
 * on `redis`, the model through `client`), answering through `outbound`; resolves once it is ready. Tool contexts use `store`.
 */
async function startBenchWorker(redis: RedisClient, store: RedisClient, client: Anthropic, outbound: BenchOutbound) {
  ctxRedis = store;
  const traces = new TraceStore(store);
  const history = new HistoryStore(store, {
    maxMessages: config.HISTORY_MAX_MESSAGES,
    ttlSeconds: historyTtlSeconds(config),
  });
  const worker = startWorker(
    {
      config,
      log: silentLogger,
      redis,
      ...(store !== redis ? { store } : {}),
      history,
      toolbox,
      client,
      runAgent,
      outbounds: { telegram: outbound },
      tracerFor: (runId, chat) => traces.startRun({ chat, runId }),
    },
    FEATURES,
  );
  await worker.waitUntilReady();
  return { worker, history };
}

/** Warm-up (JIT, connections, scripts loaded): 50 messages through the queue path, waited for. */
async function warmUp(queue: ChatQueue, outbound: BenchOutbound, fake: FakeAnthropic): Promise<void> {
  feed(fake, 50);
  await Promise.all(Array.from({ length: 50 }, (_, i) => queue.enqueue(message(i, 0, "warm"))));
  while (outbound.done.size < 50) await new Promise((r) => setTimeout(r, 20));
}

/** The order check after {@link burst}: chat7's history holds all its PER_CHAT messages, in order (an empty or short history is not). */
async function chatInOrder(history: HistoryStore): Promise<boolean> {
  const h = await history.load({ platform: "telegram", chatId: "chat7" });
  const order = h
    .filter((m) => m.role === "user")
    .map((m) => Number(/message (\d+)/.exec(JSON.stringify(m.content))?.[1]));
  return order.length === PER_CHAT && order.every((v, i) => i === 0 || v === order[i - 1]! + 1);
}

/** CPU seconds (user + system) a redis-server used so far (`INFO cpu`), in ms. */
async function redisCpuMs(redis: RedisClient): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return (field("used_cpu_user") + field("used_cpu_sys")) * 1000;
}

/**
 * Runs `work` and measures the CPU it took: this process's (`process.cpuUsage`, user + system, in
 * ms) and that of the redis-servers of `servers`. With BENCH_PROFILE=<folder>, also records this
 * process's CPU profile of `work` (node:inspector) into `<folder>/<label>.cpuprofile` and returns
 * a summary: self time by package or source folder, most first.
 */
async function measured<T>(
  label: string,
  servers: RedisClient[],
  work: () => Promise<T>,
): Promise<{ result: T; cpuMs: number; redisCpuMs: number; profile?: string }> {
  const folder = process.env.BENCH_PROFILE;
  const session = folder ? new inspector.Session() : undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))),
    );
  if (session) {
    session.connect();
    await post("Profiler.enable");
    await post("Profiler.setSamplingInterval", { interval: 200 });
    await post("Profiler.start");
  }
  const redisBefore = await Promise.all(servers.map(redisCpuMs));
  const before = process.cpuUsage();
  const result = await work();
  const used = process.cpuUsage(before);
  const redisAfter = await Promise.all(servers.map(redisCpuMs));
  const out = {
    result,
    cpuMs: (used.user + used.system) / 1000,
    redisCpuMs: redisAfter.reduce((sum, v, i) => sum + v - redisBefore[i]!, 0),
  };
  if (!session) return out;
  const { profile } = (await post("Profiler.stop")) as { profile: CpuProfile };
  session.disconnect();
  mkdirSync(folder!, { recursive: true });
  const file = path.join(folder!, `${label}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  return { ...out, profile: `profile of the ${label} burst (${file}): ${summarizeProfile(profile)}` };
}

/** The parts of a V8 CPU profile that {@link summarizeProfile} reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Self time of a CPU profile by where the code lives: an npm package, a folder of this repository
 * (`src/worker`, `test/fakes` …), a Node.js internal, garbage collection, `(program)` (V8 and
 * native work not attributed to a JavaScript function); idle time left out. The first 12, in % of
 * the busy time; then the first 10 files of our own code (src/, adapters/, tools/) by self time.
 */
function summarizeProfile(profile: CpuProfile): string {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byPlace = new Map<string, number>();
  // Our own code by file (src/, adapters/, tools/): where the worker's share goes.
  const byOwnFile = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id)!;
    const url = frame.url;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    const own = /\/(src|scripts|test|adapters|tools)\/([^/]+)/.exec(url);
    const place =
      frame.functionName === "(idle)"
        ? "idle"
        : frame.functionName.startsWith("(")
          ? frame.functionName
          : pkg
            ? pkg
            : url.startsWith("node:")
              ? "node internals"
              : own
                ? `${own[1]}/${own[2]!.replace(/\.ts$/, "")}`
                : "native";
    const delta = profile.timeDeltas[i] ?? 0;
    byPlace.set(place, (byPlace.get(place) ?? 0) + delta);
    const file = !pkg ? /\/((?:src|adapters|tools)\/.+\.ts)$/.exec(url)?.[1] : undefined;
    if (file) byOwnFile.set(file, (byOwnFile.get(file) ?? 0) + delta);
  });
  byPlace.delete("idle");
  const busy = [...byPlace.values()].reduce((a, b) => a + b, 0);
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${k} ${((v / busy) * 100).toFixed(1)}%`)
      .join(", ");
  return `busy ${(busy / 1e6).toFixed(2)} s: ${top(byPlace, 12)}\n  our code by file (self time): ${top(byOwnFile, 10)}`;
}

/** Baseline: the loop in-process, chats in parallel (at most `concurrency`), each chat in order. */
async function baselineBurst(client: Anthropic, fake: FakeAnthropic, concurrency: number, perChat = PER_CHAT) {
  feed(fake, CHATS * perChat);
  // Each chat's history in memory, with each message's JSON length measured once (as HistoryStore
  // keeps them), so trimming does not serialise the whole history again for every message.
  const histories = new Map<number, { messages: MessageParam[]; sizes: number[] }>();
  const latencies: number[] = [];
  const started = performance.now();
  let next = 0;
  const runChat = async (chat: number) => {
    for (let n = 0; n < perChat; n += 1) {
      const t0 = performance.now();
      const m = message(chat, n, "base");
      const kept = histories.get(chat) ?? { messages: [], sizes: [] };
      const history = trimHistory(kept.messages, { maxMessages: config.HISTORY_MAX_MESSAGES }, kept.sizes);
      const outcome = await runAgent(
        { history, userText: m.chatKind === "group" ? `[${m.userName}] ${m.text}` : m.text, context: ctx(m) },
        { client, config, toolbox, tracer: nullTracer },
      );
      if (outcome.kind !== "answer") throw new Error("unexpected approval");
      kept.messages.push(...outcome.messages);
      kept.sizes.push(...outcome.messages.map((x) => JSON.stringify(x).length));
      histories.set(chat, kept);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < CHATS) await runChat(next++);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { rate: (CHATS * perChat) / seconds, seconds, latencies };
}

/**
 * The throughput ratio measured in alternation (BENCH_ROUNDS, 8): each round a burst through the
 * queue and one of the loop alone, CHATS × PER_CHAT / 4 messages each, in new chats, right after
 * each other; so a change of the machine's load between the two full bursts (minutes apart) does
 * not decide the ratio; the loop goes first in every other round. @returns each round's ratio, in
 * order, and the 1-minute load average after each round.
 */
async function alternatingRatios(
  queue: ChatQueue,
  outbound: BenchOutbound,
  client: Anthropic,
  fake: FakeAnthropic,
): Promise<{ ratios: number[]; loads: string[] }> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 8);
  const perChat = Math.max(1, Math.floor(PER_CHAT / 4));
  const ratios: number[] = [];
  const loads: string[] = [];
  for (let r = 0; r < rounds; r += 1) {
    outbound.done.clear();
    // The loop goes first in every other round, so neither side always runs on the other's leftovers (GC, JIT).
    const loopFirst = r % 2 === 1;
    const loopBefore = loopFirst ? await baselineBurst(client, fake, config.WORKER_CONCURRENCY, perChat) : undefined;
    feed(fake, CHATS * perChat);
    const q = await burst(queue, outbound, perChat, `alt${r}-`);
    const loop = loopBefore ?? (await baselineBurst(client, fake, config.WORKER_CONCURRENCY, perChat));
    ratios.push((CHATS * perChat) / q.seconds / loop.rate);
    loads.push(os.loadavg()[0]!.toFixed(1));
  }
  outbound.onDone = undefined;
  return { ratios, loads };
}

/** Baseline at a steady rate: one loop call per message, as they arrive. */
async function baselinePaced(client: Anthropic, fake: FakeAnthropic) {
  const total = RATE * SECONDS;
  feed(fake, total);
  const latencies: number[] = [];
  const runs: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; i += 1) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const m = message(i % CHATS, Math.floor(i / CHATS), "pbase");
    const t0 = performance.now();
    runs.push(
      runAgent(
        { history: [], userText: m.text, context: ctx(m) },
        { client, config, toolbox, tracer: nullTracer },
      ).then(() => void latencies.push(performance.now() - t0)),
    );
  }
  await Promise.all(runs);
  return { latencies };
}

let ctxRedis: RedisClient;
function ctx(m: IncomingMessage) {
  return {
    platform: m.platform,
    chatId: m.chatId,
    chatKind: m.chatKind,
    userId: m.userId,
    userName: m.userName,
    locale: config.BOT_LOCALE,
    timezone: config.TIMEZONE,
    signal: new AbortController().signal,
    log: silentLogger,
    redis: ctxRedis,
    config,
  };
}

async function main() {
  const bullServer = await startRedis();
  const ourServer = await startRedis();
  const fake = await startFakeAnthropic();
  const client = new Anthropic({ apiKey: "bench-key-000", baseURL: fake.url, maxRetries: 0 });
  const bullProducer = connectRedis(bullServer.url, { maxRetriesPerRequest: 1 }) as Redis;
  const bullWorker = connectRedis(bullServer.url, WORKER_REDIS_OPTIONS) as Redis;
  const ourProducer = connectRedis(ourServer.url, { maxRetriesPerRequest: 1 }) as Redis;
  const ourWorker = connectRedis(ourServer.url, WORKER_REDIS_OPTIONS) as Redis;
  ctxRedis = ourWorker;
  const ours = [countCommands(ourProducer), countCommands(ourWorker)];
  const outbound = new BenchOutbound(2000);
  const queue = new ChatQueue({ redis: bullProducer, store: ourProducer });
  const { worker } = await startBenchWorker(bullWorker, ourWorker, client, outbound);
  const admin = connectRedis(bullServer.url) as Redis;
  const adminOurs = connectRedis(ourServer.url) as Redis;

  printMachine();
  console.log(
    `workload: ${CHATS} chats × ${PER_CHAT} messages; WORKER_CONCURRENCY=` +
      `${config.WORKER_CONCURRENCY}; one worker (with the production TraceStore tracer and the features of ` +
      `FEATURES as production runs them: the confirmation flow, the settings and Stop's listener included), ` +
      `producer, fake model and fake platform in this process; two redis-servers (BullMQ, ours)`,
  );

  await warmUp(queue, outbound, fake);

  // 1. Throughput through the queue.
  const total = CHATS * PER_CHAT;
  feed(fake, total);
  outbound.done.clear();
  await admin.config("RESETSTAT");
  await adminOurs.config("RESETSTAT");
  for (const c of ours) c.count = 0;
  const queueLoad = [loadAverage1()];
  const queueCpu = await measured("queue", [admin, adminOurs], () => burst(queue, outbound));
  queueLoad.push(loadAverage1());
  const { seconds: burstSeconds, latencies: burstLatencies } = queueCpu.result;
  const bullStats = await commandStats(admin);
  const ourStats = await commandStats(adminOurs);
  const ourClientCommands = ours.reduce((s, c) => s + c.count, 0);
  const sum = (m: Map<string, number>) =>
    [...m.entries()].filter(([k]) => k !== "config" && k !== "info").reduce((s, [, v]) => s + v, 0);

  // Order check: each chat's history holds its messages in order.
  const probeHistory = new HistoryStore(adminOurs, { maxMessages: 400, ttlSeconds: 600 });
  const inOrder = await chatInOrder(probeHistory);

  // 2. Latency at a steady rate through the queue.
  const paced = RATE * SECONDS;
  feed(fake, paced);
  outbound.done.clear();
  await admin.config("RESETSTAT");
  await adminOurs.config("RESETSTAT");
  for (const c of ours) c.count = 0;
  const pacedLatencies = await steady(queue, outbound, paced);
  const pacedBull = await commandStats(admin);
  const pacedOurs = await commandStats(adminOurs);
  const pacedOurClient = ours.reduce((s, c) => s + c.count, 0);

  // 2b. Long chats: 10 chats of phase 1 (20 runs stored each) get 60 more messages at the steady
  // rate, so their history passes HISTORY_MAX_MESSAGES + 40 and is trimmed, and their trace lists are cut.
  const longChats = 10;
  const longMessages = 60 * longChats;
  feed(fake, longMessages);
  outbound.done.clear();
  await adminOurs.config("RESETSTAT");
  const longStart = performance.now();
  for (let i = 0; i < longMessages; i += 1) {
    const due = longStart + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    void queue.enqueue(message(i % longChats, PER_CHAT + Math.floor(i / longChats), "chat"));
  }
  while (outbound.done.size < longMessages) await new Promise((r) => setTimeout(r, 20));
  const longOurs = await commandStats(adminOurs);
  const longHistory = await probeHistory.read({ platform: "telegram", chatId: "chat3" });

  // 2c. Where our commands go: a short paced phase watched with MONITOR (not timed; MONITOR slows Redis).
  const splitChats = 20;
  const splitMessages = 5 * splitChats;
  feed(fake, splitMessages);
  outbound.done.clear();
  const split = new Map<string, Map<string, number>>();
  const monitor = await adminOurs.monitor();
  monitor.on("monitor", (_time: string, args: string[]) => {
    const name = String(args[0]).toLowerCase();
    if (name === "monitor" || name === "info" || name === "config") return;
    const key = String(name === "evalsha" || name === "eval" ? args[3] : (args[1] ?? ""));
    const area = /^(seen|inbox|sent):/.test(key)
      ? "ordering"
      : key.startsWith("history:")
        ? "history"
        : key.startsWith("trace:")
          ? "trace"
          : `other (${key.split(":")[0]})`;
    const byName = split.get(area) ?? new Map<string, number>();
    byName.set(name, (byName.get(name) ?? 0) + 1);
    split.set(area, byName);
  });
  const splitStart = performance.now();
  for (let i = 0; i < splitMessages; i += 1) {
    const due = splitStart + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    // chats that already have a history (the paced phase's), so no message creates a key
    void queue.enqueue(message(i % splitChats, 100 + Math.floor(i / splitChats), "paced"));
  }
  while (outbound.done.size < splitMessages) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 200));
  monitor.disconnect();

  // 2d. One message at a time: round trips as socket writes, and where one message's time goes.
  const one = await oneAtATime(queue, outbound, fake, worker, [ourProducer, ourWorker]);

  const queueRss = peakRss;
  const bullRss = await rssOf(admin);
  const ourRss = await rssOf(adminOurs);

  // 3. Baselines: the loop alone.
  const loopLoad = [loadAverage1()];
  const loopCpu = await measured("loop", [], () => baselineBurst(client, fake, config.WORKER_CONCURRENCY));
  loopLoad.push(loadAverage1());
  const base = loopCpu.result;
  const basePaced = await baselinePaced(client, fake);
  const { ratios, loads: roundLoads } = await alternatingRatios(queue, outbound, client, fake);

  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .filter(([k]) => k !== "config" && k !== "info")
      .sort((a, b) => b[1] - a[1])
      .slice(0, 9)
      .map(([k, v]) => `${k} ${(v / n).toFixed(2)}`)
      .join(", ");
  console.log("");
  console.log(
    `throughput, queue path:    ${(total / burstSeconds).toFixed(0)} messages/s (${total} ` +
      `messages in ${burstSeconds.toFixed(2)} s; chat7 answered in order: ` +
      `${inOrder ? "yes" : "NO"})`,
  );
  console.log(`throughput, loop alone:    ${base.rate.toFixed(0)} messages/s (${base.seconds.toFixed(2)} s)`);
  console.log(
    `ratio queue/loop:          ${(total / burstSeconds / base.rate).toFixed(2)} (the two bursts above; 1-min load ` +
      `${queueLoad.join(" → ")} during the queue's, ${loopLoad.join(" → ")} during the loop's); ` +
      `in alternating rounds of ${CHATS * Math.max(1, Math.floor(PER_CHAT / 4))} messages each: median ` +
      `${percentile(ratios, 50).toFixed(2)} [${ratios.map((r) => r.toFixed(2)).join(", ")}] (1-min load after each ` +
      `round: ${roundLoads.join(", ")})`,
  );
  console.log(
    `CPU per message at full speed: queue path ${(queueCpu.cpuMs / total).toFixed(2)} ms in this process + ` +
      `${(queueCpu.redisCpuMs / total).toFixed(2)} ms in the two redis-servers; loop alone ` +
      `${(loopCpu.cpuMs / total).toFixed(2)} ms (CPU ratio loop/queue ` +
      `${(loopCpu.cpuMs / (queueCpu.cpuMs + queueCpu.redisCpuMs)).toFixed(2)}: what the throughput ratio is on an idle 2-core machine, roughly)`,
  );
  for (const m of [queueCpu, loopCpu]) if (m.profile) console.log(m.profile);
  console.log(
    `latency at full speed:     p50 ${ms(percentile(burstLatencies, 50))}, p99 ` +
      `${ms(percentile(burstLatencies, 99))} (enqueue → answer sent; includes waiting behind the ` +
      `backlog)`,
  );
  const p50 = percentile(pacedLatencies, 50);
  const p99 = percentile(pacedLatencies, 99);
  const b50 = percentile(basePaced.latencies, 50);
  const b99 = percentile(basePaced.latencies, 99);
  console.log(
    `latency at ${RATE} msg/s:       queue path p50 ${ms(p50)}, p99 ${ms(p99)}; loop alone p50 ${ms(b50)}, p99 ${ms(b99)}`,
  );
  console.log(`added latency at ${RATE} msg/s: p50 ${ms(p50 - b50)}, p99 ${ms(p99 - b99)}`);
  console.log(
    `Redis commands per message (INFO commandstats, commands inside Lua scripts included; idle polling of BullMQ included):`,
  );
  console.log(`  full speed (a chat's job drains several messages):`);
  console.log(`    BullMQ: ${(sum(bullStats) / total).toFixed(2)}  [${top(bullStats, total)}]`);
  console.log(
    `    ours:   ${(sum(ourStats) / total).toFixed(2)}  [${top(ourStats, total)}]; round trips ` +
      `sent by our code (a script = 1): ${(ourClientCommands / total).toFixed(2)}`,
  );
  console.log(`  at ${RATE} msg/s (about one job per message):`);
  console.log(`    BullMQ: ${(sum(pacedBull) / paced).toFixed(2)}  [${top(pacedBull, paced)}]`);
  console.log(
    `    ours:   ${(sum(pacedOurs) / paced).toFixed(2)}  [${top(pacedOurs, paced)}]; round ` +
      `trips sent by our code (a script = 1): ${(pacedOurClient / paced).toFixed(2)}`,
  );
  cost.worker = { commands: sum(pacedOurs) / paced, trips: pacedOurClient / paced, writes: one.writes };
  console.log(
    `  long chats (${longChats} chats × 60 more messages at ${RATE} msg/s, runs 21–80 of each ` +
      `chat: history trimmed every ~10 runs, trace list cut every 20; chat3 now stores ` +
      `${longHistory.stored} messages):`,
  );
  console.log(`    ours:   ${(sum(longOurs) / longMessages).toFixed(2)}  [${top(longOurs, longMessages)}]`);
  console.log(
    `  ours split by key (${splitMessages} messages at ${RATE} msg/s into ${splitChats} chats ` +
      `that already had a history, watched with MONITOR; the script's own EVALSHA counts where ` +
      `its first key belongs):`,
  );
  let splitTotal = 0;
  for (const [area, byName] of [...split.entries()].sort()) {
    const n = [...byName.values()].reduce((a, b) => a + b, 0);
    splitTotal += n;
    console.log(
      `    ${area.padEnd(9)} ${(n / splitMessages).toFixed(2)}  [${[...byName.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / splitMessages).toFixed(2)}`)
        .join(", ")}]`,
    );
  }
  console.log(`    total     ${(splitTotal / splitMessages).toFixed(2)}`);
  printOneAtATime(one);
  console.log(
    `peak RSS: this process ${(queueRss / 1048576).toFixed(0)} MiB (worker + producer + fake ` +
      `model); redis-server BullMQ ${(bullRss / 1048576).toFixed(0)} MiB, ours ` +
      `${(ourRss / 1048576).toFixed(0)} MiB`,
  );

  clearInterval(rssTimer);
  await worker.close();
  await queue.close();
  for (const r of [bullProducer, bullWorker, ourProducer, ourWorker, admin, adminOurs]) r.disconnect();
  await fake.close();
  await bullServer.stop();
  await ourServer.stop();
}

/** What {@link oneAtATime} measured, per message. */
interface OneAtATime {
  messages: number;
  /** Socket writes of our clients (producer and worker): the round trips of one message. */
  writes: number;
  /** Commands our clients sent (a script = 1). */
  sent: number;
  /** Those commands per message, by name and key prefix, most first. */
  names: string[];
  /** Medians in ms: the producer's enqueue; enqueue → BullMQ hands the job to the worker; → the fake model receives the request; → the answer is sent. */
  enqueue: number;
  pickup: number;
  toModel: number;
  toSent: number;
  total: number;
  /** Median ms per message during which at least one of our worker's Redis commands was in flight. */
  redisBusy: number;
}

/**
 * One message at a time (BENCH_ONE, 200, into 20 chats of its own that already have a history;
 * each waited for before the next): our clients' socket writes per message (a write carries every command
 * issued in the same tick, so this is the round trips one message costs), and the median time of
 * each part of its way: the producer's enqueue, BullMQ's pick-up (the job reaches the worker's
 * `active` event), the worker's work before the model request arrives at the fake model (restore,
 * the reads, building the request, the SDK), and from there to the answer sent (the response
 * parsed, the append, the delivery); plus the time our worker's Redis commands were in flight.
 */
async function oneAtATime(
  queue: ChatQueue,
  outbound: BenchOutbound,
  fake: FakeAnthropic,
  worker: Awaited<ReturnType<typeof startBenchWorker>>["worker"],
  clients: Redis[],
): Promise<OneAtATime> {
  const n = Number(process.env.BENCH_ONE ?? 200);
  const chats = 20;
  // Chats of their own, each given its history first (not measured); at most 11 runs each, so no
  // compaction starts (it would take the fake model's answers and run beside the measured message).
  feed(fake, chats + n);
  outbound.done.clear();
  outbound.onDone = undefined;
  for (let c = 0; c < chats; c += 1) await queue.enqueue(message(c, 0, "one"));
  while (outbound.done.size < chats) await new Promise((r) => setTimeout(r, 5));
  const active = new Map<string, number>();
  const onActive = (job: { data: IncomingMessage }) =>
    active.set(`${job.data.chatId}:${job.data.messageId}`, performance.now());
  worker.chats.on("active", onActive);
  let modelAt = 0;
  const push = fake.requests.push.bind(fake.requests);
  fake.requests.push = (...items) => {
    modelAt = performance.now();
    return push(...items);
  };
  // Time during which at least one of the worker's own commands is in flight.
  const workerClient = clients[1]!;
  let inFlight = 0;
  let busySince = 0;
  let busy = 0;
  const send = workerClient.sendCommand.bind(workerClient);
  workerClient.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    if (inFlight++ === 0) busySince = performance.now();
    const settle = () => {
      if (--inFlight === 0) busy += performance.now() - busySince;
    };
    const promise = send(...args);
    void Promise.resolve(promise).then(settle, settle);
    return promise;
  }) as Redis["sendCommand"];
  const writes = clients.map(countWrites);
  const sent = clients.map(countCommands);
  // What our clients sent, by command and the first key's prefix (a script: its first key's).
  const names = new Map<string, number>();
  const unnamed = clients.map((c) => {
    const original = c.sendCommand.bind(c);
    c.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
      const command = args[0] as unknown as { name: string; args: unknown[] };
      const key = String((command.name === "evalsha" ? command.args[2] : command.args[0]) ?? "").split(":")[0];
      const name = `${command.name} ${key}`;
      names.set(name, (names.get(name) ?? 0) + 1);
      return original(...args);
    }) as Redis["sendCommand"];
    return () => (c.sendCommand = original as Redis["sendCommand"]);
  });
  const spans = { enqueue: [] as number[], pickup: [] as number[], toModel: [] as number[], toSent: [] as number[] };
  const totals: number[] = [];
  const busyPer: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const m = message(i % chats, 1 + Math.floor(i / chats), "one");
    const key = `${m.chatId}:${m.messageId}`;
    busy = 0;
    const t0 = performance.now();
    await queue.enqueue(m);
    const t1 = performance.now();
    if (!outbound.done.has(key))
      await new Promise<void>((r) => (outbound.onDone = () => outbound.done.has(key) && r()));
    const done = outbound.done.get(key)!;
    // Let the finish script go out before the next message, so its write is counted with this one.
    await new Promise((r) => setTimeout(r, 2));
    const picked = active.get(key) ?? t1;
    spans.enqueue.push(t1 - t0);
    spans.pickup.push(picked - t0);
    spans.toModel.push(modelAt - picked);
    spans.toSent.push(done - modelAt);
    totals.push(done - t0);
    busyPer.push(busy);
  }
  for (const restore of unnamed) restore();
  outbound.onDone = undefined;
  worker.chats.off("active", onActive);
  fake.requests.push = push;
  workerClient.sendCommand = send as Redis["sendCommand"];
  const median = (v: number[]) => percentile(v, 50);
  return {
    messages: n,
    writes: writes.reduce((a, c) => a + c.count, 0) / n,
    sent: sent.reduce((a, c) => a + c.count, 0) / n,
    names: [...names.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / n).toFixed(2)}`),
    enqueue: median(spans.enqueue),
    pickup: median(spans.pickup),
    toModel: median(spans.toModel),
    toSent: median(spans.toSent),
    total: median(totals),
    redisBusy: median(busyPer),
  };
}

/** Prints {@link OneAtATime}. */
function printOneAtATime(r: OneAtATime): void {
  const ms = (v: number) => `${v.toFixed(2)} ms`;
  console.log(
    `  one message at a time (${r.messages} messages into 20 chats with a history, no compaction): round trips ` +
      `(socket writes of our producer and worker) ${r.writes.toFixed(2)}, commands sent ${r.sent.toFixed(2)} ` +
      `[${r.names.join(", ")}]`,
  );
  console.log(
    `where one message's time goes (medians): enqueue ${ms(r.enqueue)}; enqueue → worker picks the job ` +
      `${ms(r.pickup)}; → model request received ${ms(r.toModel)}; → answer sent ${ms(r.toSent)}; ` +
      `total ${ms(r.total)}; our worker's Redis commands in flight ${ms(r.redisBusy)}`,
  );
}

/** Figures of the queue path on one Redis topology (see {@link topologyBench}). */
interface TopologyFigures {
  label: string;
  throughput: number;
  burstP50: number;
  burstP99: number;
  pacedP50: number;
  pacedP99: number;
  /** Server-side commands per message at full speed, summed over every master. */
  commands: number;
  /** Per master: `host:port`, its share of the commands (0-1) and the keys it holds after the run. */
  masters: { node: string; share: number; keys: number }[];
  inOrder: boolean;
}

/**
 * One topology: producer, worker, history and traces on the Redis at `url` (BullMQ and our keys
 * together, as in production), the burst of {@link main} (CHATS × PER_CHAT messages at full
 * speed) and then RATE messages/s for SECONDS.
 */
async function queuePath(label: string, url: string, client: Anthropic, fake: FakeAnthropic): Promise<TopologyFigures> {
  const producer = connectRedis(url, { maxRetriesPerRequest: 1 });
  const workerRedis = connectRedis(url, WORKER_REDIS_OPTIONS);
  const admin = connectRedis(url);
  await admin.ping();
  const masters = isCluster(admin) ? admin.nodes("master") : [admin];
  const outbound = new BenchOutbound(2000);
  const queue = new ChatQueue({ redis: producer });
  const { worker, history } = await startBenchWorker(workerRedis, workerRedis, client, outbound);
  const resetStats = () => Promise.all(masters.map((m) => m.config("RESETSTAT")));
  const statsPerMaster = () =>
    Promise.all(
      masters.map(async (m) =>
        [...(await commandStats(m)).entries()]
          .filter(([k]) => k !== "config" && k !== "info")
          .reduce((s, [, v]) => s + v, 0),
      ),
    );

  await warmUp(queue, outbound, fake);

  const total = CHATS * PER_CHAT;
  feed(fake, total);
  outbound.done.clear();
  await resetStats();
  const { seconds: burstSeconds, latencies: burstLatencies } = await burst(queue, outbound);
  const perMaster = await statsPerMaster();
  const inOrder = await chatInOrder(history);

  const paced = RATE * SECONDS;
  feed(fake, paced);
  outbound.done.clear();
  const pacedLatencies = await steady(queue, outbound, paced);

  const keys = await Promise.all(masters.map((m) => m.dbsize()));
  const all = perMaster.reduce((a, b) => a + b, 0);
  await worker.close();
  await queue.close();
  for (const r of [producer, workerRedis, admin]) r.disconnect();
  return {
    label,
    throughput: total / burstSeconds,
    burstP50: percentile(burstLatencies, 50),
    burstP99: percentile(burstLatencies, 99),
    pacedP50: percentile(pacedLatencies, 50),
    pacedP99: percentile(pacedLatencies, 99),
    commands: all / total,
    masters: masters.map((m, i) => ({
      node: `${m.options.host ?? "socket"}:${m.options.port ?? ""}`,
      share: perMaster[i]! / all,
      keys: keys[i]!,
    })),
    inOrder,
  };
}

/**
 * `npm run bench -- --cluster`: the queue path on one redis-server and on a local three-master
 * Redis Cluster (`redis-server --cluster-enabled yes`, as the tests start it), one after the other
 * with the same workload, printed side by side. Everything (BullMQ and our keys) lives on the one
 * Redis or cluster, as in production.
 */
async function topologyBench(): Promise<void> {
  const fake = await startFakeAnthropic();
  const client = new Anthropic({ apiKey: "bench-key-000", baseURL: fake.url, maxRetries: 0 });
  printMachine();
  console.log(
    `workload: ${CHATS} chats × ${PER_CHAT} messages at full speed, then ${RATE} messages/s ` +
      `for ${SECONDS} s; WORKER_CONCURRENCY=${config.WORKER_CONCURRENCY}; one worker, producer, ` +
      `fake model and fake platform in this process`,
  );
  const rows: TopologyFigures[] = [];
  for (const [label, start] of [
    ["one redis-server", () => startRedis()],
    ["Redis Cluster, 3 masters", startRedisCluster],
  ] as const) {
    const server = await start();
    try {
      rows.push(await queuePath(label, server.url, client, fake));
    } finally {
      await server.stop();
    }
  }
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  console.log("");
  for (const r of rows) {
    console.log(`${r.label}:`);
    console.log(
      `  throughput ${r.throughput.toFixed(0)} messages/s (chat7 in order: ` +
        `${r.inOrder ? "yes" : "NO"}); latency at full speed p50 ${ms(r.burstP50)}, p99 ` +
        `${ms(r.burstP99)}; at ${RATE} msg/s p50 ${ms(r.pacedP50)}, p99 ${ms(r.pacedP99)}`,
    );
    console.log(`  server-side commands per message at full speed: ${r.commands.toFixed(2)}`);
    if (r.masters.length > 1)
      console.log(
        `  per master: ${r.masters.map((m) => `${m.node} ${(m.share * 100).toFixed(0)}% of commands, ${m.keys} keys`).join("; ")}`,
      );
  }
  clearInterval(rssTimer);
  await fake.close();
}

/** Counts the writes on this client's socket: one per round trip when each message is awaited before the next. */
function countWrites(redis: Redis): { count: number } {
  const counter = { count: 0 };
  const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
  const original = stream.write.bind(stream);
  stream.write = (...args: unknown[]) => {
    counter.count += 1;
    return original(...args);
  };
  return counter;
}

/**
 * The access gate's cost (issue 13): BENCH_GATE_MESSAGES messages (2000), one at a time, from
 * users already granted under the `pairing` policy with both budgets on (the common path: the
 * grant, the rate counter and the two day totals are read; the message is queued). Compared with
 * the bare `ChatQueue.enqueue` of the same messages: socket writes (round trips), server-side
 * commands (INFO commandstats) and latency per message. No worker runs; the inboxes just grow.
 */
async function gateBench(): Promise<void> {
  const n = Number(process.env.BENCH_GATE_MESSAGES ?? 2000);
  const server = await startRedis();
  const gateConfig = loadConfig(
    {
      LOG_LEVEL: "silent",
      ACCESS_POLICY: "pairing",
      USER_DAILY_TOKENS: "200000",
      GLOBAL_DAILY_TOKENS: "100000000",
      RATE_LIMIT_PER_MINUTE: "10000",
      MAX_QUEUED_PER_CHAT: "10000",
    },
    { purpose: "inspect" },
  );
  const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 }) as Redis;
  const admin = connectRedis(server.url) as Redis;
  await redis.ping();
  const queue = new ChatQueue({ redis });
  const gate = new AccessGate({ config: gateConfig, log: silentLogger, redis, queue, reply: async () => {} });
  const users = 50;
  for (let u = 0; u < users; u += 1) await gate.access.allowUser(`telegram:g${u}`);
  // Every user has used some tokens today, so the budget reads find real hashes.
  const usage = new UsageStore(admin, gateConfig.TIMEZONE);
  for (let u = 0; u < users; u += 1)
    await usage.record(
      { platform: "telegram", userId: `g${u}`, chatId: `g${u}` },
      { input_tokens: 1000, output_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 500 },
    );
  const gateMessage = (i: number, prefix: string): IncomingMessage => ({
    platform: "telegram",
    chatId: `${prefix}${i % users}`,
    chatKind: "dm",
    userId: `g${i % users}`,
    userName: "G",
    text: `gate ${i}`,
    messageId: String(i + 1),
    sentAt: Date.now(),
    reply: {},
  });
  // Warm up both paths (script loading, first job of each chat), then measure.
  for (let i = 0; i < users; i += 1) {
    await queue.enqueue(gateMessage(i, "e"));
    await gate.admit(gateMessage(i, "a"));
  }
  const phase = async (label: string, send: (i: number) => Promise<unknown>) => {
    const writes = countWrites(redis);
    const before = await commandStats(admin);
    const latencies: number[] = [];
    for (let i = users; i < users + n; i += 1) {
      const t = performance.now();
      await send(i);
      latencies.push(performance.now() - t);
    }
    const after = await commandStats(admin);
    let commands = 0;
    for (const [k, v] of after) commands += v - (before.get(k) ?? 0);
    commands -= 1; // the INFO call itself
    return {
      label,
      writes: writes.count / n,
      commands: commands / n,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  };
  const bare = await phase("enqueue alone", (i) => queue.enqueue(gateMessage(i, "e")));
  const gated = await phase("gate + enqueue", async (i) => {
    const outcome = await gate.admit(gateMessage(i, "a"));
    if (outcome !== "queued") throw new Error(`the gate refused a granted user's message: ${outcome}`);
  });
  console.log(
    `access gate (${n} messages one at a time from ${users} granted users; ACCESS_POLICY=pairing, user and global budgets on, rate limit on):`,
  );
  for (const r of [bare, gated]) {
    console.log(
      `  ${r.label.padEnd(15)} round trips (socket writes) ${r.writes.toFixed(2)}, server-side ` +
        `commands ${r.commands.toFixed(2)}, latency p50 ${r.p50.toFixed(3)} ms, p99 ` +
        `${r.p99.toFixed(3)} ms`,
    );
  }
  console.log(
    `  added by the gate: ${(gated.writes - bare.writes).toFixed(2)} round trips, ` +
      `${(gated.commands - bare.commands).toFixed(2)} commands, p50 ` +
      `${(gated.p50 - bare.p50).toFixed(3)} ms per message`,
  );
  cost.gate = { commands: gated.commands - bare.commands, trips: gated.writes - bare.writes };
  await queue.close();
  redis.disconnect();
  admin.disconnect();
  await server.stop();
}

/** Prints {@link cost}: the worker path and the gate per message, beside issue 37's bounds (≤ 11 and ≤ 6 commands). */
function printCost(): void {
  const { worker, gate } = cost;
  if (!worker || !gate) return;
  console.log(`Redis cost per message at ${RATE} msg/s (issue 37: worker path ≤ 11 own commands, gate ≤ 6):`);
  console.log(
    `  worker path (enqueue, answer, finish): ${worker.commands.toFixed(2)} commands, ${worker.trips.toFixed(2)} ` +
      `commands sent (a script = 1), ${worker.writes.toFixed(2)} round trips (socket writes, one message at a time)`,
  );
  console.log(
    `  access gate (added):                  ${gate.commands.toFixed(2)} commands, ${gate.trips.toFixed(2)} round trips`,
  );
  console.log(
    `  both:                                 ${(worker.commands + gate.commands).toFixed(2)} commands, ` +
      `${(worker.trips + gate.trips).toFixed(2)} round trips`,
  );
}

/** Memory figures of the soak worker (`process.memoryUsage()`, bytes). */
type Memory = NodeJS.MemoryUsage;

/** The soak worker's answer to `message` over IPC (see `scripts/soak-worker.ts`). */
function ask<T>(child: ChildProcess, message: { type: string; file?: string }, answer: string): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (m: { type: string }) => {
      if (m.type !== answer) return;
      child.off("message", onMessage);
      resolve(m as T);
    };
    child.on("message", onMessage);
    child.send(message);
  });
}

/**
 * The fake model's answer in the soak, by the request: every fifth user message (its text says
 * "calculate") gets a `calculate` call first; tool results and other messages get a ~300-character
 * answer, streamed in 40-character deltas.
 */
function soakReply(request: FakeRequest) {
  const last = request.messages[request.messages.length - 1]!;
  const content = last.content;
  const asked =
    typeof content === "string"
      ? content
      : content.map((b) => ("text" in b && typeof b.text === "string" ? b.text : "")).join("");
  if (asked.includes("calculate")) return toolUse("calculate", { expression: "(1200 + 800) * 0.05" });
  return {
    ...text(`好的。${"這是一段用來測量記憶體的回答，內容夠長，會分成好幾段串流送出。".repeat(8)}`),
    stream: { chunkChars: 40 },
  };
}

/**
 * `npm run bench -- --soak`: worker memory under a long load. One worker (`scripts/soak-worker.ts`,
 * the production `startBot` with `ROLE=worker` and the tools of `tools/`) in a process of its own,
 * streaming answers (`STREAMING=on`, the default) to the fake Telegram; the fake model, the fake
 * Telegram, the producer and a redis-server run outside it. Warm-up: SOAK_WARMUP (1,000) messages.
 * Then SOAK_MESSAGES (10,000) messages in SOAK_CHATS (1,000) new conversations (half private chats,
 * half groups), every fifth with a tool call, enqueued in waves that keep about 200 waiting. The
 * worker collects garbage twice before each figure (`--expose-gc`): RSS and heap after warm-up,
 * every 2,000 messages, and at the end, with the growth after warm-up in %.
 */
async function soakBench(): Promise<void> {
  const total = Number(process.env.SOAK_MESSAGES ?? 10_000);
  const warmup = Number(process.env.SOAK_WARMUP ?? 1000);
  const chats = Number(process.env.SOAK_CHATS ?? 1000);
  const snapshots = process.argv.includes("--snapshot");
  const server = await startRedis(["--appendonly", "yes"]);
  const fake = await startFakeAnthropic({ fallback: soakReply });
  const tg = await FakeTelegram.start();
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const child = fork(path.join(root, "scripts", "soak-worker.ts"), [], {
    execArgv: ["--import", "tsx", "--expose-gc"],
    env: {
      PATH: process.env.PATH ?? "",
      ROLE: "worker",
      REDIS_URL: server.url,
      ANTHROPIC_API_KEY: "bench-key-000",
      ANTHROPIC_BASE_URL: fake.url,
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      STREAM_EDIT_INTERVAL_MS: "100",
      WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY ?? "8",
      LOG_LEVEL: "silent",
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  await ask(child, { type: "none" }, "ready");
  const producer = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  const queue = new ChatQueue({ redis: producer });
  const answered = () => tg.sent.length;
  const sentPerChat = new Map<number, number>();

  /** Sends `count` messages to `chatCount` conversations numbered from `firstChat`, at most ~200 unanswered at a time. */
  const send = async (count: number, firstChat: number, chatCount: number) => {
    const target = answered() + count;
    for (let i = 0; i < count; i += 1) {
      while (i - (answered() - (target - count)) >= 200) await new Promise((r) => setTimeout(r, 5));
      const chat = firstChat + (i % chatCount);
      const group = chat % 2 === 1;
      const n = sentPerChat.get(chat) ?? 0; // message ids count per conversation (job ids come from them)
      sentPerChat.set(chat, n + 1);
      await queue.enqueue({
        platform: "telegram",
        chatId: String(group ? -1_000_000_000_000 - chat : 10_000 + chat),
        chatKind: group ? "group" : "dm",
        userId: String(10_000 + chat),
        userName: `User ${chat}`,
        text:
          i % 5 === 4
            ? `message ${n}: please calculate (1200 + 800) * 0.05`
            : `message ${n} of chat ${chat}: what is on my list today?`,
        messageId: String(n + 1),
        sentAt: Date.now(),
        reply: {},
      });
    }
    while (answered() < target) await new Promise((r) => setTimeout(r, 20));
    fake.requests.length = 0; // the fakes' own records live in this process, not the worker's
  };
  const measure = async () => (await ask<{ usage: Memory }>(child, { type: "measure" }, "memory")).usage;
  const dir = path.join(root, ".data");
  const snapshot = async (name: string) => {
    mkdirSync(dir, { recursive: true });
    return (
      await ask<{ file: string }>(
        child,
        { type: "snapshot", file: path.join(dir, `soak-${name}.heapsnapshot`) },
        "snapshot",
      )
    ).file;
  };
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  const row = (label: string, m: Memory) =>
    console.log(
      `  ${label.padEnd(22)} RSS ${mib(m.rss).padStart(10)}  heap used ` +
        `${mib(m.heapUsed).padStart(9)} of ${mib(m.heapTotal).padStart(9)}  external ` +
        `${mib(m.external).padStart(8)}  array buffers ${mib(m.arrayBuffers).padStart(8)}`,
    );

  printMachine();
  console.log(
    `soak: one worker process (production start-up, ROLE=worker, WORKER_CONCURRENCY=` +
      `${process.env.WORKER_CONCURRENCY ?? "8"}, STREAMING=on, STREAM_EDIT_INTERVAL_MS=100), the ` +
      `fake model and fake Telegram outside it`,
  );
  console.log(
    `workload: warm-up ${warmup} messages in 100 conversations, then ${total} messages in ` +
      `${chats} new conversations (half private, half groups; every fifth message a calculate ` +
      `call); figures after forced GCs`,
  );
  const started = performance.now();
  await send(warmup, 0, 100);
  const base = await measure();
  row("after warm-up", base);
  if (snapshots) console.log(`  heap snapshot: ${await snapshot("after-warmup")}`);
  const soakStart = performance.now();
  const step = Math.max(1, Math.floor(total / 5));
  for (let done = 0; done < total; done += step) {
    const count = Math.min(step, total - done);
    // The same conversations in every wave: each gets about total / chats messages in all.
    await send(count, 1000, chats);
    row(`after ${done + count}`, await measure());
  }
  const end = await measure();
  const seconds = (performance.now() - soakStart) / 1000;
  if (snapshots) console.log(`  heap snapshot: ${await snapshot("end")}`);
  const growth = (a: number, b: number) => `${(((b - a) / a) * 100).toFixed(1)}%`;
  console.log(
    `growth after warm-up: RSS ${growth(base.rss, end.rss)} (${mib(end.rss - base.rss)}), heap ` +
      `used ${growth(base.heapUsed, end.heapUsed)} (${mib(end.heapUsed - base.heapUsed)})`,
  );
  console.log(
    `${total} messages in ${seconds.toFixed(0)} s (${(total / seconds).toFixed(0)} messages/s);` +
      ` ${answered()} answers delivered in all; whole run ` +
      `${((performance.now() - started) / 1000).toFixed(0)} s`,
  );

  const exited = new Promise((r) => child.once("exit", r));
  child.send({ type: "stop" });
  await exited;
  clearInterval(rssTimer);
  await queue.close();
  producer.disconnect();
  await tg.stop();
  await fake.close();
  await server.stop();
}

if (process.argv.includes("--cost")) {
  clearInterval(rssTimer);
  await (await import("./bench-cost.js")).costBench();
} else if (process.argv.includes("--ablate")) {
  clearInterval(rssTimer);
  await (await import("./bench-ablate.js")).ablationBench();
} else if (process.argv.includes("--soak")) {
  await soakBench();
} else if (process.argv.includes("--cluster")) {
  await topologyBench();
} else {
  await main();
  await gateBench();
  printCost();
  console.log(`load average at end: ${loadAverage()}`);
}
