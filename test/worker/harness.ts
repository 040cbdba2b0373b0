/**
 * A real bot core for worker tests: a private redis-server, the strict fake Messages API, the real
 * agent loop and SDK client, the real ChatQueue and Worker, and the console adapter's outbound
 * writing to a stream the test reads.
 */
import Anthropic from "@anthropic-ai/sdk";
import { Writable } from "node:stream";
import type { RedisClient } from "../../src/redis.js";
import { z } from "zod";
import { ConsoleOutbound } from "../../adapters/console/outbound.js";
import { runAgent } from "../../src/agent/loop.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { historyTtlSeconds, type Config } from "../../src/config.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger, type Logger } from "../../src/log.js";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type { ApprovalPrompt, Destination, Outbound, ReminderMessage, SentRef } from "../../src/outbound.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { ChatQueue } from "../../src/queue/producer.js";
import { connectRedis } from "../../src/redis.js";
import { ToolError, defineTool, type Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { TraceStore } from "../../src/trace/store.js";
import type { ApprovalFlow } from "../../src/approvals/flow.js";
import { startWorker, type ChatWorker } from "../../src/worker/worker.js";
import { startFakeAnthropic, text, toolUse, type FakeAnthropic, type FakeRequest } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { FEATURES } from "../../src/features.js";
import type { Feature } from "../../src/feature.js";

/**
 * A todo tool pair for tests, stored per platform and user; `add_todo` takes `delayMs` to stay in
 * flight. `extra` tools are offered beside them (the memory tool, for instance).
 */
export function todoTools(extra: Tool[] = []): ToolBox {
  const add = defineTool({
    name: "add_todo",
    description: "Add an item to the user's todo list.",
    tags: ["todo"],
    input: z.object({ item: z.string().min(1), delayMs: z.number().int().min(0).default(0) }),
    run: async ({ item, delayMs }, ctx) => {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      const n = await ctx.redis.rpush(`test-todos:${ctx.platform}:${ctx.userId}`, item);
      return `added #${n}: ${item}`;
    },
  });
  const list = defineTool({
    name: "list_todos",
    description: "List the user's todo items.",
    tags: ["todo"],
    readOnly: true,
    input: z.object({}),
    run: async (_input, ctx) => {
      const items = await ctx.redis.lrange(`test-todos:${ctx.platform}:${ctx.userId}`, 0, -1);
      if (items.length === 0) throw new ToolError("the list is empty");
      return items.map((t, i) => `#${i + 1} ${t}`).join("\n");
    },
  });
  const remove = defineTool({
    name: "delete_todo",
    description: "Delete one of the user's todo items by number.",
    tags: ["todo"],
    dangerous: true,
    input: z.object({ number: z.number().int().min(1) }),
    run: async ({ number }, ctx) => {
      const key = `test-todos:${ctx.platform}:${ctx.userId}`;
      const item = await ctx.redis.lindex(key, number - 1);
      if (item === null) throw new ToolError(`there is no item #${number}`);
      await ctx.redis.lrem(key, 1, item);
      return `deleted #${number}: ${item}`;
    },
  });
  return new ToolBox([add, list, remove, ...extra]);
}

/** The last message of a request as plain text (`tool_result` content for a tool turn). */
export function lastText(request: FakeRequest): string {
  const last = request.messages[request.messages.length - 1]!;
  if (typeof last.content === "string") return last.content;
  return last.content
    .map((b) =>
      typeof b.text === "string" ? b.text : typeof b.content === "string" ? b.content : JSON.stringify(b.content ?? ""),
    )
    .join(" ");
}

/**
 * A model that follows the user: "add todo X" → `add_todo`, "list todos" → `list_todos`, a tool
 * result → a text repeating it, anything else → `echo: <text>`.
 */
export function todoModel(request: FakeRequest) {
  const last = request.messages[request.messages.length - 1]!;
  const said = lastText(request);
  if (Array.isArray(last.content) && last.content.some((b) => b.type === "tool_result")) return text(`ok: ${said}`);
  const add = /add todo (\S+)(?: slow (\d+))?/.exec(said);
  if (add) return toolUse("add_todo", { item: add[1], delayMs: Number(add[2] ?? 0) });
  if (/list todos/.test(said)) return toolUse("list_todos", {});
  const del = /delete todo (\d+)/.exec(said);
  if (del) return toolUse("delete_todo", { number: Number(del[1]) });
  return text(`echo: ${said}`);
}

/** A stream that collects what the console outbound writes. */
export class CapturingStream extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.lines.push(chunk.toString());
    callback();
  }
  /** Every `bot> …` answer written so far. */
  answers(): string[] {
    return this.lines.map((l) => l.replace(/^bot> /, "").replace(/\n$/, ""));
  }
}

/**
 * A minimal platform fake around the console outbound: counts typing indicators, and can make the
 * send after chunk `failAfterChunk` fail once with a network error (the chunk before it went out),
 * or the next `failBeforeSend` answers fail before anything went out.
 */
export class FlakyOutbound implements Outbound {
  readonly platform = "console" as const;
  /** What the outbound declares to the worker (see `Outbound.singleChunkUnits`); unset by default. */
  singleChunkUnits: number | undefined;
  typing = 0;
  failAfterChunk: number | undefined;
  /** How many of the next answers fail with a network error before anything is sent. */
  failBeforeSend = 0;
  constructor(private readonly inner: ConsoleOutbound) {}
  async sendAnswer(
    to: Destination,
    textValue: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    if (this.failBeforeSend > 0) {
      this.failBeforeSend -= 1;
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    }
    return this.inner.sendAnswer(to, textValue, {
      skip: options.skip,
      onSent: async (index, ref) => {
        await options.onSent?.(index, ref);
        if (this.failAfterChunk === index) {
          this.failAfterChunk = undefined;
          throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        }
      },
    });
  }
  async sendTyping(to: Destination): Promise<void> {
    this.typing += 1;
    await this.inner.sendTyping(to);
  }
  sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    return this.inner.sendReminder(reminder);
  }
  closeReminder(message: SentRef, textValue: string): Promise<void> {
    return this.inner.closeReminder(message, textValue);
  }
  sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    return this.inner.sendApprovalPrompt(to, prompt);
  }
  closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict, textValue: string): Promise<void> {
    return this.inner.closeApprovalPrompt(prompt, outcome, textValue);
  }
}

/** Polls `check` every 20 ms until it returns true. @throws after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A message of chat `chatId` on the console platform. */
export function message(
  chatId: string,
  messageId: string,
  textValue: string,
  extra: Partial<IncomingMessage> = {},
): IncomingMessage {
  return {
    platform: "console",
    chatId,
    chatKind: "dm",
    userId: `user-${chatId}`,
    userName: "Alice",
    text: textValue,
    messageId,
    sentAt: Date.now(),
    reply: {},
    ...extra,
  };
}

/** The bot's features, without the approvals feature unless `approvals` is given (a function watches each worker's flow). */
function features(approvals: true | ((flow: ApprovalFlow) => void) | undefined): Feature[] {
  if (!approvals) return FEATURES.filter((f) => f.name !== "approvals");
  if (approvals === true) return [...FEATURES];
  return FEATURES.map((f) => {
    const start = f.worker;
    if (f.name !== "approvals" || !start) return f;
    return {
      ...f,
      worker: (parts) => {
        const side = start(parts);
        approvals(side.lends.approvals!);
        return side;
      },
    };
  });
}

/** The running parts. */
export interface Harness {
  server: TestRedis;
  fake: FakeAnthropic;
  config: Config;
  output: CapturingStream;
  outbound: FlakyOutbound;
  redis: RedisClient;
  queue: ChatQueue;
  history: HistoryStore;
  workers: ChatWorker[];
  /** Starts one more worker process-equivalent (own connection). */
  addWorker(): Promise<ChatWorker>;
  stop(): Promise<void>;
}

/**
 * Starts Redis, the fake model and `workers` workers.
 * @param options.approvals - true: each worker runs the approvals feature (its confirmation flow on
 *   its own connection); a function also gets each worker's flow (to watch it). Default: without
 *   the approvals feature (confirmation unavailable).
 * @param options.log - the workers' logger (default silent).
 */
export async function startHarness(
  options: {
    workers?: number;
    env?: Record<string, string>;
    chunkChars?: number;
    approvals?: true | ((flow: ApprovalFlow) => void);
    traces?: boolean;
    /** The workers' logger (default: silent). */
    log?: Logger;
    /** Tools offered beside the todo tools (e.g. `memoryTools(config)`). */
    tools?: (config: Config) => Tool[];
  } = {},
): Promise<Harness> {
  const server = await startRedis();
  const fake = await startFakeAnthropic();
  const config = testConfig({ WORKER_CONCURRENCY: "4", ...options.env });
  const client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  const output = new CapturingStream();
  const outbound = new FlakyOutbound(
    new ConsoleOutbound({ output, locale: config.BOT_LOCALE, chunkChars: options.chunkChars }),
  );
  const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  const queue = new ChatQueue({ redis });
  const toolbox = todoTools(options.tools?.(config));
  const connections: RedisClient[] = [redis];
  const closers: (() => Promise<void>)[] = [];
  const historyOptions = { maxMessages: config.HISTORY_MAX_MESSAGES, ttlSeconds: historyTtlSeconds(config) };
  const harness: Harness = {
    server,
    fake,
    config,
    output,
    outbound,
    redis,
    queue,
    history: new HistoryStore(redis, historyOptions),
    workers: [],
    async addWorker() {
      const wredis = connectRedis(server.url, { maxRetriesPerRequest: null });
      connections.push(wredis);
      const history = new HistoryStore(wredis, historyOptions);
      const worker = startWorker(
        {
          config,
          log: options.log ?? silentLogger,
          redis: wredis,
          history,
          toolbox,
          client,
          runAgent: (request, deps) => runAgent(request, { ...deps, modelRetry: TEST_MODEL_RETRY }),
          outbounds: { console: outbound },
          typingIntervalMs: 50,
          ...(options.traces
            ? { tracerFor: (runId: string, chat: string) => new TraceStore(wredis).startRun({ chat, runId }) }
            : {}),
        },
        features(options.approvals),
      );
      await worker.waitUntilReady();
      harness.workers.push(worker);
      return worker;
    },
    async stop() {
      // A graceful close bounded at 5 s, then forced (a BullMQ worker after a Redis outage can keep
      // its graceful close waiting; the worker's own 30-s default is the whole hook's timeout).
      for (const w of harness.workers) await w.close(5000);
      for (const close of closers) await close();
      await queue.close();
      for (const c of connections) c.disconnect();
      await fake.close();
      await server.stop();
    },
  };
  for (let i = 0; i < (options.workers ?? 1); i += 1) await harness.addWorker();
  return harness;
}
