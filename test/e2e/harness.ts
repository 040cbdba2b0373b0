/**
 * The end-to-end stack: a real Redis (one redis-server, or a three-master Redis Cluster when
 * `TEST_REDIS=cluster`), the fake platforms (Telegram Bot API, Discord REST and
 * gateway), the fake CWA API and the strict fake Messages API answered by the scripted model,
 * and the bot itself started with `startBot` (the code `npm start` runs) — real grammy and
 * discord.js adapters, queue, worker, history, approvals and traces.
 *
 * The bot runs as two parts, an `adapter` and a `worker`, sharing Redis as on separate machines,
 * so a test can restart the worker (a new process would do the same work).
 */
import type { RedisClient } from "../../src/redis.js";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { createAnthropicClient } from "../../src/agent/client.js";
import type { AgentDeps, AgentRequest, ModelRetryTiming } from "../../src/agent/contract.js";
import { runAgent } from "../../src/agent/loop.js";
import { createAdapter as createDiscordAdapter, type DiscordAdapterOptions } from "../../adapters/discord/index.js";
import { createAdapter as createTelegramAdapter, type TelegramAdapterOptions } from "../../adapters/telegram/index.js";
import type { AdapterFatalError } from "../../src/adapter.js";
import { startBot, type RunningBot } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { connectRedis } from "../../src/redis.js";
import { loadTools } from "../../src/toolbox/registry.js";
import type { Tool } from "../../src/toolbox/tool.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import {
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeErrorReply,
  type FakeHangReply,
  type FakeMessageReply,
  type FakeRequest,
} from "../fakes/anthropic.js";
import { startFakeCwa, type FakeCwa } from "../fakes/cwa.js";
import { FakeDiscord } from "../fakes/discord.js";
import { fakesEnv } from "../fakes/env.js";
import { FakeLine, type FakeLineOptions } from "../fakes/line.js";
import { FakeTelegram, type FakeTelegramOptions } from "../fakes/telegram.js";
import { startFakeTranscription, type FakeTranscription } from "../fakes/transcription.js";
import { startFakeSpeech, type FakeSpeech } from "../fakes/speech.js";
import { testConfig } from "../helpers/config.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { captureLogger } from "../helpers/log.js";
import { freePort } from "../helpers/ports.js";
import type { TestRedis } from "../helpers/redis.js";
import { startTestRedis } from "../helpers/use-redis.js";
import { scriptedModel } from "./scripted-model.js";

/** A running end-to-end stack. */
export interface Stack {
  redis: TestRedis;
  model: FakeAnthropic;
  telegram: FakeTelegram;
  discord: FakeDiscord;
  cwa: FakeCwa;
  /** The fake transcription API, when {@link StackOptions.transcription} started one (`STT_BASE_URL` points at it). */
  stt: FakeTranscription | undefined;
  /** The fake speech API, when {@link StackOptions.speech} started one (`TTS_BASE_URL` points at it). */
  tts: FakeSpeech | undefined;
  config: Config;
  toolbox: ToolBox;
  /** The adapter part (grammy + discord.js inbound, producer). */
  adapters: RunningBot;
  /** The worker part; replaced by {@link Stack.restartWorker}. */
  worker: RunningBot;
  /** Every log line of both parts, parsed. */
  logs(): Record<string, unknown>[];
  /** Stops the worker (gracefully) and starts a new one on the same Redis. */
  restartWorker(): Promise<void>;
  /** Stops the adapter part and starts a new one (new grammy and discord.js clients, empty caches) on the same fakes and Redis. */
  restartAdapters(): Promise<void>;
  /** Starts one more worker part on the same Redis (as another process would); the caller stops it. */
  startWorker(): Promise<RunningBot>;
  stop(): Promise<void>;
}

/** Options of {@link startStack}. */
export interface StackOptions {
  /** Extra environment (e.g. `CONFIRM_TIMEOUT_SECONDS`). */
  env?: Record<string, string>;
  /**
   * Whether starting the worker waits until its MCP servers (from `MCP_CONFIG`, connected in the
   * background) have connected or been skipped; default true, so a test's first message finds them.
   */
  awaitMcp?: boolean;
  /** SDK retries of a model call; default 1 (the 529 scenario stays fast). */
  modelRetries?: number;
  /** The scripted model answering requests no test queued a reply for (an error reply too, e.g. a 529 outage); default {@link scriptedModel}. */
  model?: (request: FakeRequest) => FakeMessageReply | FakeErrorReply | FakeHangReply;
  /** Options of the fake Bot API (e.g. a bot with `has_topics_enabled` for private-chat topics). */
  telegram?: FakeTelegramOptions;
  /** The adapter part's `/health` port (the worker part runs none); default none. */
  healthPort?: number;
  /** Polling and gateway timings of the adapters (short ones for fault tests); default the adapters' own. */
  adapterOptions?: { telegram?: TelegramAdapterOptions; discord?: DiscordAdapterOptions };
  /** Called when an adapter cannot go on (`startBot`'s `onFatal`); default: the test fails on it. */
  onFatal?: (error: AdapterFatalError) => void;
  /** Tools of the test's own, added to those of `tools/` (e.g. a dangerous tool with `alwaysAllow: false`). */
  tools?: Tool[];
  /** Starts the fake transcription API and sets `STT_BASE_URL` and `STT_API_KEY` to it (voice messages are transcribed). */
  transcription?: boolean;
  /** Starts the fake speech API and sets `TTS_BASE_URL` and `TTS_API_KEY` to it (voice replies can be turned on). */
  speech?: boolean;
  /** The waits of a failing model call's repeats; default {@link TEST_MODEL_RETRY}. */
  modelRetry?: ModelRetryTiming;
  /** Ms between the adapter part's checks of the chats waiting for an answer (`src/waiting-chats.ts`); default the bot's (5000). */
  waitingSweepMs?: number;
}

/** Starts everything; resolves when both platforms are connected and the worker takes jobs. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  // Whatever started is stopped again if a later step fails, so a failed start leaves no redis-server behind.
  const started: (() => Promise<unknown>)[] = [];
  try {
    return await assemble(options, started);
  } catch (error) {
    for (const stop of started.reverse()) await stop().catch(() => {});
    throw error;
  }
}

async function assemble(options: StackOptions, started: (() => Promise<unknown>)[]): Promise<Stack> {
  const redis = await startTestRedis();
  started.push(() => redis.stop());
  const model = await startFakeAnthropic({ fallback: options.model ?? scriptedModel });
  started.push(() => model.close());
  const telegram = await FakeTelegram.start(options.telegram);
  started.push(() => telegram.stop());
  const discord = await FakeDiscord.start();
  started.push(() => discord.close());
  const cwa = await startFakeCwa();
  started.push(() => cwa.close());
  const stt = options.transcription ? await startFakeTranscription() : undefined;
  if (stt) started.push(() => stt.close());
  const tts = options.speech ? await startFakeSpeech() : undefined;
  if (tts) started.push(() => tts.close());
  const { log, lines } = captureLogger("debug");
  const config = testConfig({
    LOG_LEVEL: "debug",
    ...fakesEnv({ model, telegram, discord, cwa, stt, tts }),
    ...redis.env,
    ...options.env,
  });
  const { toolbox } = await loadTools({ config, log });
  for (const tool of options.tools ?? []) toolbox.add(tool);
  const prefix = "e2e";
  const agent = testAgent(config, options.modelRetries ?? 1, options.modelRetry);
  const startWorker = async () => {
    const worker = await startBot({
      config,
      log: log.child({ part: "worker" }),
      redisUrl: redis.url,
      toolbox,
      role: "worker",
      agent,
      prefix,
    });
    if (options.awaitMcp !== false) await worker.mcpConnected;
    return worker;
  };
  const startAdapters = () => {
    const adapterLog = log.child({ part: "adapter" });
    const adapterConfig = { ...config, HTTP_PORT: options.healthPort, HEALTH_PORT: options.healthPort };
    const own = options.adapterOptions;
    const adapters = own
      ? [
          createTelegramAdapter(adapterConfig, adapterLog, own.telegram),
          createDiscordAdapter(adapterConfig, adapterLog, own.discord),
        ]
      : undefined;
    const onFatal =
      options.onFatal ?? ((error: AdapterFatalError) => expect.fail(`an adapter stopped the bot: ${error.message}`));
    return startBot({
      config: adapterConfig,
      log: adapterLog,
      redisUrl: redis.url,
      toolbox,
      role: "adapter",
      prefix,
      adapters,
      ...(options.waitingSweepMs !== undefined ? { waitingSweepMs: options.waitingSweepMs } : {}),
      onFatal,
    });
  };
  const adapters = await startAdapters();
  started.push(() => adapters.stop());
  const worker = await startWorker();
  started.push(() => worker.stop());
  const stack: Stack = {
    redis,
    model,
    telegram,
    discord,
    cwa,
    stt,
    tts,
    config,
    toolbox,
    adapters,
    worker,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    async restartWorker() {
      await stack.worker.stop();
      stack.worker = await startWorker();
    },
    async restartAdapters() {
      await stack.adapters.stop();
      stack.adapters = await startAdapters();
    },
    startWorker,
    async stop() {
      await stack.adapters.stop();
      await stack.worker.stop();
      await Promise.all([model.close(), telegram.stop(), discord.close(), cwa.close(), stt?.close(), tts?.close()]);
      await redis.stop();
    },
  };
  return stack;
}

/**
 * One stack for the calling test file: started before its tests (`beforeAll`), stopped after
 * them, with a Redis connection of the test's own for direct checks. After each test it asserts
 * that the strict fake Messages API refused nothing (our history stayed valid).
 *
 * @param onStart - receives the stack and the connection once started (assign them to the file's variables).
 */
export function useStack(options: StackOptions, onStart: (stack: Stack, redis: RedisClient) => void): void {
  let stack: Stack | undefined;
  let redis: RedisClient | undefined;
  beforeAll(async () => {
    stack = await startStack(options);
    redis = connectRedis(stack.redis.url);
    onStart(stack, redis);
  }, 60_000);
  afterAll(async () => {
    await redis?.quit();
    await stack?.stop();
  });
  afterEach(() => {
    expect(stack?.model.rejections).toEqual([]);
  });
}

/**
 * The agent of the tests' worker parts: the real agent loop and Anthropic SDK client against
 * `config`'s Messages API (10-s timeout), with the tests' short model-retry waits.
 * @param retries - SDK retries of a model call.
 */
function testAgent(config: Config, retries: number, modelRetry: ModelRetryTiming = TEST_MODEL_RETRY) {
  return {
    runAgent: (request: AgentRequest, deps: AgentDeps) => runAgent(request, { ...deps, modelRetry }),
    client: createAnthropicClient(config, { maxRetries: retries, timeoutMs: 10_000 }),
  };
}

/** A running LINE end-to-end stack ({@link startLineStack}). */
export interface LineStack {
  redis: TestRedis;
  model: FakeAnthropic;
  line: FakeLine;
  /** The fake transcription API, when {@link LineStackOptions.transcription} started one. */
  stt: FakeTranscription | undefined;
  /** The fake speech API, when {@link LineStackOptions.speech} started one. */
  tts: FakeSpeech | undefined;
  config: Config;
  adapters: RunningBot;
  worker: RunningBot;
  /** Every log line of both parts, as written. */
  lines: string[];
  /** Stops both parts, then the fakes and Redis. */
  stop(): Promise<void>;
}

/** Options of {@link startLineStack}. */
export interface LineStackOptions {
  /** The scripted model answering requests no test queued a reply for; default the fake's own. */
  model?: (request: FakeRequest) => FakeMessageReply | FakeErrorReply | FakeHangReply;
  /** Options of the fake LINE platform, given the bot's local webhook server base (`http://127.0.0.1:<port>`). */
  line?: (local: string) => FakeLineOptions;
  /** Starts the fake transcription API and sets `STT_BASE_URL` and `STT_API_KEY` to it. */
  transcription?: boolean;
  /** Starts the fake speech API and sets `TTS_BASE_URL` and `TTS_API_KEY` to it. */
  speech?: boolean;
  /** Extra environment (e.g. `LINE_PUBLIC_URL`). */
  env?: Record<string, string>;
  /** The captured logger's level; default `debug`. */
  logLevel?: string;
}

/**
 * The LINE stack, whose platform starts from configuration only: a real Redis, the fake Messages
 * API, the fake LINE platform (its webhooks sent to the bot's webhook server on a free port) and
 * the bot as two parts on one Redis, as a deployment may run them: the adapters
 * (`role: "adapter"`) and a worker (`role: "worker"`, 1 SDK retry, 10-s timeout, the tests'
 * short model-retry waits). The parts log as children `{part: "adapter" | "worker"}` of one
 * captured logger. Whatever started is stopped again if a later step fails.
 * @throws what `loadTools` or `startBot` throws (a bad configuration, an unreachable Redis).
 */
export async function startLineStack(options: LineStackOptions = {}): Promise<LineStack> {
  const started: (() => Promise<unknown>)[] = [];
  try {
    const redis = await startTestRedis();
    started.push(() => redis.stop());
    const model = await startFakeAnthropic(options.model ? { fallback: options.model } : {});
    started.push(() => model.close());
    const port = await freePort();
    const local = `http://127.0.0.1:${port}`;
    const line = await FakeLine.start(options.line?.(local) ?? {});
    started.push(() => line.stop());
    line.webhookUrl = `${local}/line/webhook`;
    const stt = options.transcription ? await startFakeTranscription() : undefined;
    if (stt) started.push(() => stt.close());
    const tts = options.speech ? await startFakeSpeech() : undefined;
    if (tts) started.push(() => tts.close());
    const level = options.logLevel ?? "debug";
    const { log, lines } = captureLogger(level);
    const config = testConfig({
      LOG_LEVEL: level,
      ...fakesEnv({ model, line, stt, tts }),
      LINE_WEBHOOK_PORT: String(port),
      HTTP_HOST: "127.0.0.1",
      ...redis.env,
      ...options.env,
    });
    const { toolbox } = await loadTools({ config, log });
    const agent = testAgent(config, 1);
    const part = (role: "adapter" | "worker") =>
      startBot({
        config,
        log: log.child({ part: role }),
        redisUrl: redis.url,
        toolbox,
        role,
        prefix: "e2e",
        ...(role === "worker" ? { agent } : {}),
      });
    const adapters = await part("adapter");
    started.push(() => adapters.stop());
    const worker = await part("worker");
    started.push(() => worker.stop());
    const stop = async () => {
      await adapters.stop();
      await worker.stop();
      await Promise.all([line.stop(), model.close(), stt?.close(), tts?.close()]);
      await redis.stop();
    };
    return { redis, model, line, stt, tts, config, adapters, worker, lines, stop };
  } catch (error) {
    for (const stop of started.reverse()) await stop().catch(() => {});
    throw error;
  }
}
