/**
 * Starting the bot's parts by role, shared by `src/main.ts` (`npm start`) and `src/cli/chat.ts`
 * (`npm run chat`): adapters (inbound, producing jobs), the worker (consuming them), or both.
 * The platform adapters are listed in one map, {@link PLATFORM_MODULES}.
 */
import { watchDataLoss, type DataLossWatch, type LossReports } from "./redis-marker.js";
import { WaitingChats } from "./waiting-chats.js";
import type Anthropic from "@anthropic-ai/sdk";
import type { Server } from "node:http";
import { Queue } from "bullmq";
import { AccessGate } from "./access/gate.js";
import { AlbumStore } from "./media/album.js";
import { AdapterFatalError, type Adapter, type AdapterContext } from "./adapter.js";
import { pressButton } from "./buttons.js";
import { CommandRunner } from "./commands/runner.js";
import { ConfigError, historyTtlSeconds, loadConfig, type Config } from "./config.js";
import { startHealthServer, type HealthCheck } from "./health.js";
import { createAdminConsole } from "./admin/console.js";
import { HistoryStore } from "./history/store.js";
import { startLocalRedis, type LocalRedis } from "./local-redis.js";
import type { Logger } from "./log.js";
import { watchQueues } from "./metrics.js";
import type { McpConnectionOptions } from "./mcp/connection.js";
import { adapterToolbox, startWorkerMcp } from "./mcp/wiring.js";
import { conversationStores, migrateConversation } from "./conversations/migrate.js";
import { resetConversation } from "./conversations/reset.js";
import type { AdapterServices } from "./feature.js";
import { FEATURES, startFeatures } from "./features.js";
import { destinationOf, type Destination, type Outbound } from "./outbound.js";
import { conversationKey, type ConversationRef, type IncomingMessage, type Platform } from "./queue/incoming.js";
import { ChatQueue } from "./queue/producer.js";
import { bullPrefix, CHATS_QUEUE } from "./queue/keys.js";
import {
  connectRedis,
  describeRedisUrl,
  pingRedis,
  redisAddress,
  RedisEvictionError,
  checkRedisAtStart,
  WORKER_REDIS_OPTIONS,
  type RedisClient,
} from "./redis.js";
import { toolboxFor, warnCrowdedChats, warnUnofferedTools } from "./toolbox/select.js";
import { loadTools } from "./toolbox/registry.js";
import type { ToolBox } from "./toolbox/toolbox.js";
import { carryTrace, otelTracerFor, startTelemetry, stopTelemetry, withReceiptSpan } from "./telemetry/otel.js";
import { TraceStore } from "./trace/store.js";
import type { RunTracer, TraceOrigin } from "./trace/tracer.js";
import { UsageStore } from "./usage/store.js";
import { INTERRUPT_WAIT_MS, startWorker, type ChatWorker, type RunAgent } from "./worker/worker.js";
import { toTraditional } from "./media/voice.js";

/** What `adapters/<platform>/index.ts` exports. */
export interface PlatformModule {
  createAdapter(config: Config, log: Logger): Adapter;
  /**
   * The REST-only outbound half. `parts.redis`: the process's Redis connection, for an outbound
   * that keeps state there (LINE: its sent message ids and monthly push count); others ignore it.
   */
  createOutbound(config: Config, log: Logger, parts?: { redis?: RedisClient }): Outbound;
}

/** The adapters of this build, by platform. Add a platform here (one line) when its adapter exists. */
export const PLATFORM_MODULES: Partial<Record<Platform, () => Promise<PlatformModule>>> = {
  console: () => import("../adapters/console/index.js"),
  telegram: () => import("../adapters/telegram/index.js"),
  discord: () => import("../adapters/discord/index.js"),
  line: () => import("../adapters/line/index.js"),
};

/**
 * The platforms turned on by the configuration: Telegram with `TELEGRAM_BOT_TOKEN`, Discord with
 * `DISCORD_TOKEN`, LINE with `LINE_CHANNEL_ACCESS_TOKEN` (and `LINE_CHANNEL_SECRET`, which the
 * configuration requires with it).
 */
export function enabledPlatforms(config: Config): Platform[] {
  const platforms: Platform[] = [];
  if (config.TELEGRAM_BOT_TOKEN) platforms.push("telegram");
  if (config.DISCORD_TOKEN) platforms.push("discord");
  if (config.LINE_CHANNEL_ACCESS_TOKEN && config.LINE_CHANNEL_SECRET) platforms.push("line");
  return platforms;
}

/** Loads the module of `platform` from {@link PLATFORM_MODULES}. @throws when this build has no adapter for it. */
export async function loadPlatform(platform: Platform): Promise<PlatformModule> {
  const load = PLATFORM_MODULES[platform];
  if (!load) throw new Error(`this build has no ${platform} adapter (add it to PLATFORM_MODULES in src/app.ts)`);
  return load();
}

/** Options of {@link startBot}. */
export interface StartBotOptions {
  config: Config;
  log: Logger;
  /** Redis to use (`REDIS_URL`, or the local server's url). */
  redisUrl: string;
  /** Every loaded tool. */
  toolbox: ToolBox;
  /** Which side(s) to run; default `config.ROLE`. */
  role?: Config["ROLE"];
  /** The adapters to start (role `adapter`/`all`); default: every enabled platform's adapter. */
  adapters?: Adapter[];
  /** Needed by a worker: `runAgent` from `src/agent/loop.ts` and the Anthropic client. */
  agent?: { runAgent: RunAgent; client: Anthropic };
  /** The decider adapters use for buttons, reactions and y/n (tests); default: the one a feature lends (the approvals feature's). */
  decider?: (parts: { redis: RedisClient }) => Pick<AdapterServices, "decide">;
  /** A tracer per run; default: runs stored in Redis (`npm run trace`). */
  tracerFor?: (runId: string, chat: string, origin?: TraceOrigin) => RunTracer;
  /** BullMQ key prefix (tests, several bots on one Redis). */
  prefix?: string;
  /** Ms between checks of the chats waiting for an answer (`src/waiting-chats.ts`); default 5000 (tests: less). */
  waitingSweepMs?: number;
  /**
   * Whether the worker records each response's `usage` (`/usage`, budgets, costs). Default true;
   * false for `npm run chat -- --demo`, whose scripted model's tokens are made up and must not count
   * toward the real bot's figures and budgets in the same Redis.
   */
  recordUsage?: boolean;
  /** MCP connection options (tests: a short reconnection backoff); the servers come from `MCP_CONFIG`. */
  mcp?: Pick<McpConnectionOptions, "reconnectDelaysMs" | "connectTimeoutMs" | "listChangedIntervalMs">;
  /**
   * Called once the bot has stopped because an adapter cannot go on (e.g. the Telegram token was
   * revoked while polling: {@link AdapterFatalError}); the error was logged already. Default: sets
   * `process.exitCode` to 1. `npm start` exits 1 here.
   */
  onFatal?: (error: AdapterFatalError) => void;
  /**
   * Aborting it during start-up (Ctrl-C) stops the adapter that is starting, so its platform calls
   * in flight (Telegram `getMe`, Discord login) end at once; `startBot` then rejects.
   */
  signal?: AbortSignal;
}

/** A running bot. */
export interface RunningBot {
  adapters: Adapter[];
  /** The producer (role `adapter`/`all`). */
  queue?: ChatQueue;
  /** The worker (role `worker`/`all`). */
  worker?: ChatWorker;
  /** The chats waiting for an answer, told to send again when Redis loses their messages (role `adapter`/`all`). */
  waitingChats?: WaitingChats;
  /** The worker's MCP servers, connected in the background: settles once each has connected or been skipped (never rejects). */
  mcpConnected?: Promise<void>;
  /**
   * Graceful stop: adapters stop taking messages, the worker finishes or hands back its jobs
   * (BullMQ `close`), queues and Redis connections close. Never throws; safe to call twice.
   */
  stop(): Promise<void>;
}

/**
 * Marks the answers the worker of `bot` (a bot being started, or started) is still running as
 * interrupted, not crashed ({@link ChatWorker.interrupt}), for a forced exit: what
 * {@link stopOnSignals} is given as its `interrupt`. Nothing when there is no worker (yet).
 * Bounded by {@link INTERRUPT_WAIT_MS}; never throws.
 * @returns how many answers were marked.
 */
export async function interruptAnswers(bot: Promise<RunningBot> | undefined): Promise<number> {
  const started = await Promise.race([
    bot?.catch(() => undefined),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 0)),
  ]);
  return (await started?.worker?.interrupt().catch(() => 0)) ?? 0;
}

/** What the parts of a starting bot share: its options, what to close when it stops, the bot itself. */
interface Starting {
  options: StartBotOptions;
  /** Closed when the bot stops, last pushed first. */
  closers: (() => Promise<unknown>)[];
  /** Told first when the bot begins to stop, before the adapters and the closers (e.g. MCP: a server exiting now is not a lost connection). */
  stopping: (() => void)[];
  /** Quit when the bot stops, after the closers. */
  connections: RedisClient[];
  bot: RunningBot;
}

/**
 * Starts the parts of `role`. Adapters get an {@link AdapterContext} whose `enqueue` uses a
 * fail-fast producer connection (so a message that cannot be queued gets "try again"); the worker
 * uses a connection with {@link WORKER_REDIS_OPTIONS} (`maxRetriesPerRequest: null`, BullMQ's guidance,
 * so it waits through an outage; no auto-pipelining).
 * A worker answers on every enabled platform plus those of the adapters given; in-process adapters
 * lend their own outbound. Both sides start the features of {@link FEATURES}.
 *
 * @throws when an adapter fails to start or a worker is asked for without `agent`.
 */
export async function startBot(options: StartBotOptions): Promise<RunningBot> {
  const { config, log } = options;
  const role = options.role ?? config.ROLE;
  const runAdapters = role === "adapter" || role === "all";
  const runWorker = role === "worker" || role === "all";
  // Like the other Discord-only variables, the shard ones do nothing without DISCORD_TOKEN; a shared
  // .env may hold them, so say so instead of refusing to start.
  if (runAdapters && !config.DISCORD_TOKEN && (config.DISCORD_SHARDS || config.DISCORD_SHARD_COUNT)) {
    log.warn(
      "DISCORD_SHARDS / DISCORD_SHARD_COUNT are set but DISCORD_TOKEN is not: no Discord adapter runs in this process, so they are ignored",
    );
  }
  const starting: Starting = {
    options,
    closers: [],
    stopping: [],
    connections: [],
    bot: { adapters: [], stop: async () => {} },
  };
  const { closers, connections, bot } = starting;
  let stopping: Promise<void> | undefined;
  bot.stop = () =>
    (stopping ??= (async () => {
      for (const tell of starting.stopping) tell();
      for (const adapter of bot.adapters) await adapter.stop().catch(() => {});
      for (const close of closers.reverse()) await close().catch(() => {});
      for (const redis of connections) {
        await Promise.race([redis.quit().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
        redis.disconnect();
      }
      log.info("stopped");
    })());

  try {
    // OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT): loaded only when set; before any queue or worker, which take its BullMQ telemetry.
    if (await startTelemetry(config, log)) closers.push(stopTelemetry);
    // BullMQ loses jobs and locks on a Redis that evicts keys; a Redis without persistence loses them on a restart.
    await checkRedisAtStart(options.redisUrl, log);
    const adapters = runAdapters
      ? (options.adapters ??
        (await Promise.all(
          enabledPlatforms(config).map(async (p) => (await loadPlatform(p)).createAdapter(config, log)),
        )))
      : [];
    const workerRedis = runWorker ? await startWorkerSide(starting, adapters) : undefined;
    if (runAdapters) await startAdapterSide(starting, adapters, runWorker);
    if (config.HTTP_PORT) await startHealth(starting, workerRedis ?? connections[0]!);
    return bot;
  } catch (error) {
    // The cause first, then the "stopped" of the clean-up. A refusal the operator must fix is one clear line, no stack.
    if (options.signal?.aborted) log.info("start-up stopped");
    else if (error instanceof RedisEvictionError) log.error(`start-up failed: ${error.message}`);
    else if (error instanceof AdapterFatalError)
      log.error({ platform: error.platform }, `start-up failed: ${error.message}`);
    else if (isAddressInUse(error))
      log.error(
        `start-up failed: port ${error.port ?? "?"}${error.address ? ` on ${error.address}` : ""} ` +
          `is already in use by another process (HTTP_PORT, TELEGRAM_WEBHOOK_PORT or LINE_WEBHOOK_PORT; see HTTP_HOST)`,
      );
    else log.error({ err: error }, `start-up failed: ${(error as Error).message}`);
    // Undo what started adapters changed on the platform (a Telegram webhook) before stopping them.
    for (const adapter of bot.adapters) await adapter.abandon?.().catch(() => undefined);
    await bot.stop();
    throw error;
  }
}

/**
 * The worker side of {@link startBot}: its Redis connection (returned), the MCP servers, the
 * outbounds of every enabled platform (in-process adapters lend theirs), and the worker with the
 * features' worker sides (`Feature.worker`: what they lend the answers, their queues' processors).
 */
async function startWorkerSide(starting: Starting, adapters: Adapter[]): Promise<RedisClient> {
  const { options, closers, connections, bot } = starting;
  const { config, log } = options;
  if (!options.agent) throw new Error("a worker needs the agent loop and an Anthropic client");
  const redis = connectRedis(options.redisUrl, WORKER_REDIS_OPTIONS, log);
  connections.push(redis);
  watchRedisData(redis, log, closers);
  // MCP servers: connected by each worker process, their tools added to the toolbox; stopped after the worker.
  const mcp = await startWorkerMcp({ config, log, redis, toolbox: options.toolbox, connection: options.mcp });
  closers.push(mcp.close);
  starting.stopping.push(mcp.stopping);
  bot.mcpConnected = mcp.connected;
  if (config.STT_BASE_URL) {
    // The Traditional-Chinese dictionaries take about a second to build, on the event loop: here, before any job, not during an answer.
    if (config.BOT_LOCALE === "zh-TW") await toTraditional("");
    log.info(
      { model: config.STT_MODEL, maxSeconds: config.MAX_VOICE_SECONDS },
      "voice messages are transcribed (STT_BASE_URL)",
    );
  }
  const outbounds: Partial<Record<Platform, Outbound>> = {};
  for (const adapter of adapters) outbounds[adapter.platform] = adapter.outbound;
  for (const platform of enabledPlatforms(config))
    outbounds[platform] ??= (await loadPlatform(platform)).createOutbound(config, log, { redis });
  // A chat that moved while the worker sent to it (a group upgraded to a supergroup): its conversation's data moves too.
  const stores = conversationStores(FEATURES);
  for (const outbound of Object.values(outbounds)) {
    outbound.onChatMigrated?.(
      (from, to) =>
        void migrateConversation(redis, stores, from, to, log).catch((err: unknown) =>
          log.error({ err }, "could not move the data of a migrated chat"),
        ),
    );
  }
  const traces = new TraceStore(redis, { log });
  const worker = startWorker(
    {
      ...(options.recordUsage === false ? {} : { usage: new UsageStore(redis, config.TIMEZONE) }),
      config,
      log,
      redis,
      prefix: options.prefix,
      history: new HistoryStore(redis, {
        maxMessages: config.HISTORY_MAX_MESSAGES,
        ttlSeconds: historyTtlSeconds(config),
      }),
      toolbox: options.toolbox,
      client: options.agent.client,
      runAgent: options.agent.runAgent,
      outbounds,
      tracerFor: otelTracerFor(
        options.tracerFor ?? ((runId: string, chat: string) => traces.startRun({ chat, runId })),
      ),
    },
    FEATURES,
  );
  closers.push(() => worker.close(config.SHUTDOWN_WAIT_SECONDS * 1000));
  await worker.waitUntilReady();
  bot.worker = worker;
  log.info({ concurrency: config.WORKER_CONCURRENCY, platforms: Object.keys(outbounds) }, "worker started");
  return redis;
}

/**
 * The adapter side of {@link startBot}: the producer's fail-fast connection, the chat queue, the
 * chats waiting for an answer, the access gate, the features' adapter sides (`Feature.start`: their
 * commands, buttons, and what they lend the core), and the adapters, started with their context.
 */
async function startAdapterSide(starting: Starting, adapters: Adapter[], withWorker: boolean): Promise<void> {
  const { options, closers, connections, bot } = starting;
  const { config, log } = options;
  const redis = connectRedis(options.redisUrl, { maxRetriesPerRequest: 1 }, log);
  connections.push(redis);
  // Chats waiting for an answer, remembered here: told to send again if Redis loses their messages (src/waiting-chats.ts).
  const lost: { announce?: () => void } = {};
  const watch = watchRedisData(redis, log, closers, () => lost.announce?.());
  const queue = new ChatQueue({ redis, prefix: options.prefix });
  closers.push(() => queue.close());
  bot.queue = queue;
  const history = new HistoryStore(redis, {
    maxMessages: config.HISTORY_MAX_MESSAGES,
    ttlSeconds: historyTtlSeconds(config),
  });
  // The features' adapter side (their stores and queues), started in list order and stopped after the adapters.
  const features = await startFeatures(FEATURES, { config, log, redis, prefix: options.prefix, history });
  closers.push(() => features.close());
  const { lends } = features;
  const languageOf = (conversation: ConversationRef) => lends.languageOf?.(conversation) ?? Promise.resolve(undefined);
  // Outbounds for the gate's refusals and for "you are in": the adapters' own, else REST-only ones.
  const outbounds: Partial<Record<Platform, Outbound>> = {};
  for (const adapter of adapters) outbounds[adapter.platform] = adapter.outbound;
  const outboundFor = async (platform: Platform): Promise<Outbound> => {
    if (!outbounds[platform] && enabledPlatforms(config).includes(platform))
      outbounds[platform] = (await loadPlatform(platform)).createOutbound(config, log, { redis });
    const outbound = outbounds[platform];
    if (!outbound) throw new Error(`${platform} is not configured in this process`);
    return outbound;
  };
  const send = async (to: IncomingMessage, text: string) =>
    void (await (await outboundFor(to.platform)).sendAnswer(destinationOf(to), text));
  const waiting = new WaitingChats({
    redis,
    watch,
    send,
    languageOf,
    defaultLocale: config.BOT_LOCALE,
    log,
    ...(options.waitingSweepMs !== undefined ? { sweepMs: options.waitingSweepMs } : {}),
  });
  lost.announce = () => void waiting.announce();
  bot.waitingChats = waiting;
  closers.push(async () => waiting.stop());
  const gate = new AccessGate({ config, log, redis, queue, reply: send, languageOf });
  if (config.ACCESS_POLICY === "open")
    log.warn(
      "ACCESS_POLICY=open: anyone who finds the bot can use it and spend the Anthropic key (see docs/access.md)",
    );
  // The tools /tools lists: with a worker in this process, its toolbox (MCP tools included); else what the workers announce.
  let listed = () => options.toolbox;
  if (!withWorker) {
    const announced = adapterToolbox(redis, options.toolbox, log);
    closers.push(async () => announced.stop());
    listed = announced.current;
  }
  // `/reset`: the started features say first what it will close (a pending confirmation where the prompt stays as sent).
  const resetOne = (conversation: ConversationRef) =>
    resetConversation(history, FEATURES, conversation, () =>
      features.beforeReset(
        conversation,
        { promptsStayAsSent: outbounds[conversation.platform]?.promptsStayAsSent === true },
        log,
      ),
    );
  const commands = new CommandRunner(
    {
      config,
      log,
      toolboxFor: (chat) => toolboxFor(listed(), chat),
      resetConversation: resetOne,
      gate,
      notify: async (platform, chatId, _userId, text) => {
        const outbound = await outboundFor(platform as Platform);
        await outbound.sendAnswer(dmTo(platform as Platform, chatId), text);
      },
      languageOf,
    },
    features.commands,
  );
  const stores = conversationStores(FEATURES);
  // Decisions on approval prompts: a test's decider, else the one a feature lends (none: every prompt is gone).
  const decider: AdapterContext["decide"] =
    options.decider?.({ redis }).decide ?? lends.decide ?? (async () => ({ status: "not_found" }));
  // Each press is a receipt of its own: the decision job BullMQ adds in it carries its trace.
  const decide: AdapterContext["decide"] = (request) => withReceiptSpan("receive approval", {}, () => decider(request));
  const context: AdapterContext = {
    config,
    log,
    redis,
    enqueue: async (message) => {
      const admitted = await withReceiptSpan(
        `receive ${message.platform}`,
        {
          "bot.platform": message.platform,
          "gen_ai.conversation.id": conversationKey(message),
          "messaging.message.id": message.messageId,
        },
        () => gate.admit(carryTrace(message)),
      );
      if (admitted === "queued") waiting.add(message);
    },
    commands,
    albums: new AlbumStore(redis),
    resetConversation: resetOne,
    migrateConversation: async (from, to) => void (await migrateConversation(redis, stores, from, to, log)),
    toolboxFor: (chat) => toolboxFor(listed(), chat),
    repliesToAll: (message) => lends.repliesToAll?.(message) ?? Promise.resolve(false),
    press: (press) => pressButton(features, { config, log, decide, languageOf: (c) => commands.languageOf(c) }, press),
    decide,
    fatal: (error) => {
      log.fatal({ platform: error.platform }, `${error.message} Stopping.`);
      void bot.stop().then(() => (options.onFatal ?? (() => (process.exitCode = 1)))(error));
    },
  };
  for (const adapter of adapters) {
    options.signal?.throwIfAborted();
    const abort = () => void adapter.stop();
    options.signal?.addEventListener("abort", abort, { once: true });
    try {
      await adapter.start(context);
    } finally {
      options.signal?.removeEventListener("abort", abort);
    }
    bot.adapters.push(adapter);
    log.info({ platform: adapter.platform }, "adapter started");
  }
}

/**
 * The health server of {@link startBot} (`HTTP_PORT`): `/healthz` (Redis through `probe`, each
 * adapter's connection), `/metrics` (every queue's depth), and the operator console when on.
 */
async function startHealth(starting: Starting, probe: RedisClient): Promise<void> {
  const { options, closers, bot } = starting;
  const { config, log } = options;
  const checks: Record<string, HealthCheck> = { redis: async () => (await probe.ping()) === "PONG" };
  for (const adapter of bot.adapters) if (adapter.isConnected) checks[adapter.platform] = () => adapter.isConnected!();
  // `/metrics` reads the depth of every queue when scraped (`bot_queue_jobs`).
  const queues = [CHATS_QUEUE, ...FEATURES.flatMap((f) => f.queues?.map((q) => q.name) ?? [])].map(
    (name) => new Queue(name, { connection: probe, prefix: bullPrefix(probe, name, options.prefix) }),
  );
  for (const queue of queues) queue.on("error", () => {});
  // Bounded (the probe waits through an outage: maxRetriesPerRequest null): a scrape still answers.
  const unwatch = watchQueues(
    async () =>
      Object.fromEntries(
        await Promise.all(
          queues.map(async (q) => [q.name, await q.getJobCounts("waiting", "active", "delayed")] as const),
        ),
      ),
    { log },
  );
  closers.unshift(() => Promise.all(queues.map((q) => q.close())).finally(unwatch));
  const listed = options.toolbox;
  const admin =
    config.ADMIN_CONSOLE === "on"
      ? createAdminConsole({
          config,
          log,
          redis: probe,
          queues,
          checks,
          toolbox: () => listed,
          tell: async (platform, chatId, text) => {
            if (!enabledPlatforms(config).includes(platform)) throw new Error(`${platform} is not configured here`);
            const outbound = (await loadPlatform(platform)).createOutbound(config, log, { redis: probe });
            await outbound.sendAnswer(dmTo(platform, chatId), text);
          },
        })
      : undefined;
  const server: Server = await startHealthServer(config.HTTP_PORT!, checks, log, config.HTTP_HOST, admin);
  closers.unshift(() => new Promise((resolve) => server.close(() => resolve(undefined))));
  if (admin) {
    const host = !config.HTTP_HOST || ["0.0.0.0", "::"].includes(config.HTTP_HOST) ? "127.0.0.1" : config.HTTP_HOST;
    const link = await admin.loginLink(`http://${host.includes(":") ? `[${host}]` : host}:${config.HTTP_PORT}`);
    if (link) log.warn(`console: one-time login link (valid 10 minutes, no ADMIN_CONSOLE_TOKEN set): ${link}`);
    else log.info(`console on http://${host}:${config.HTTP_PORT}/admin`);
  }
}

/** A listen error for a port that another socket holds (`EADDRINUSE`, with the port and address Node tried). */
function isAddressInUse(error: unknown): error is NodeJS.ErrnoException & { port?: number; address?: string } {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === "EADDRINUSE";
}

/** A user's DM as a destination, for sends that answer no message of theirs ("you are in"). */
export function dmTo(platform: Platform, chatId: string): Destination {
  return { conversation: { platform, chatId }, chatKind: "dm" };
}

/** Reads and validates the configuration; prints what is wrong and exits 1 when it is invalid. */
export function configOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * Loads every tool under `tools/` and warns about tools no chat is offered and about chats that
 * would have more than ten tools in front of the model; prints the
 * registry's error (duplicate, invalid tool) and exits 1 when loading fails.
 */
export async function toolsOrExit(config: Config, log: Logger): Promise<ToolBox> {
  try {
    const { toolbox } = await loadTools({ config, log });
    warnUnofferedTools(toolbox, log);
    warnCrowdedChats(toolbox, log);
    return toolbox;
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

/**
 * Resolves `REDIS_URL` or the Redis Cluster of `REDIS_CLUSTER_NODES` (checking that it answers
 * within 10 s), or starts the local redis-server; prints the reason and exits 1 when it cannot.
 */
export async function redisOrExit(config: Config, log: Logger): Promise<{ url: string; local?: LocalRedis }> {
  const address = redisAddress(config);
  if (address) {
    const problem = await pingRedis(address, 10_000);
    if (problem) {
      const variable = config.REDIS_URL ? "REDIS_URL" : "REDIS_CLUSTER_NODES (and REDIS_PASSWORD)";
      console.error(
        `Cannot reach Redis at ${describeRedisUrl(address)}: ${problem}. Check ${variable}, or leave it empty to run a private redis-server.`,
      );
      process.exit(1);
    }
    return { url: address };
  }
  try {
    const local = await startLocalRedis({ log, supervise: {} });
    return { url: local.url, local };
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

/**
 * Calls `stop` once on the first SIGTERM or SIGINT, then exits 0 (1 when stopping failed).
 * At once it says that it is stopping and that a second Ctrl-C forces it: through the log (in
 * English), and through `announce` too when given (`npm run chat`, whose log goes to a file, says
 * it in the terminal, in the chat's language): `forcing` false for the first signal, true for the
 * second, after which the process exits (1) without tidying up. A second signal more than 1 s
 * later forces it; one within 1 s is ignored (a relayed copy). Before a forced exit, `interrupt`
 * (when given: the worker's {@link ChatWorker.interrupt}, marking the answers still running as
 * interrupted, not crashed) is given at most {@link INTERRUPT_WAIT_MS} ms plus a margin of 500 ms;
 * a third signal meanwhile exits at once.
 */
export function stopOnSignals(
  stop: () => Promise<void>,
  log: Logger,
  announce?: (notice: { signal: NodeJS.Signals; forcing: boolean }) => void,
  interrupt?: () => Promise<unknown>,
): void {
  let stoppingSince: number | undefined;
  let forcing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (forcing) process.exit(1);
    if (stoppingSince !== undefined) {
      // Ctrl-C reaches npm, tsx and node together, and tsx relays it once more: a repeat within
      // a second is that relay, not a person insisting.
      if (Date.now() - stoppingSince < 1000) return;
      forcing = true;
      log.warn(`${signal} again: exiting now`);
      announce?.({ signal, forcing: true });
      if (!interrupt) process.exit(1);
      // A forced exit is a stop too, not a crash: the answers still running are marked interrupted, briefly.
      void Promise.race([
        interrupt().catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, INTERRUPT_WAIT_MS + 500).unref()),
      ]).finally(() => process.exit(1));
      return;
    }
    stoppingSince = Date.now();
    const text = `${signal}: stopping (waits for answers in progress; press Ctrl-C again to force)`;
    log.info(text);
    announce?.({ signal, forcing: false });
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, "stopping failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

/** The data losses this process reported, shared by its watches (`src/redis-marker.ts`). */
const lossReports: LossReports = new Map();

/** Watches `redis` for a loss of its data (`src/redis-marker.ts`) until the bot stops; `onLoss` is told of one. */
function watchRedisData(
  redis: RedisClient,
  log: Logger,
  closers: (() => Promise<unknown>)[],
  onLoss?: (lostAt: number) => void,
): DataLossWatch {
  const watch = watchDataLoss(redis, log, { reports: lossReports, ...(onLoss ? { onLoss } : {}) });
  closers.push(async () => watch.stop());
  return watch;
}
