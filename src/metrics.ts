/**
 * The bot's Prometheus metrics: one registry (prom-client), every metric defined here, and one
 * small named function per thing that happens, so a call site is one line
 * (`metrics.received(message)`, `metrics.toolCall(name, ok, ms)`). `GET /metrics` on `HTTP_PORT`
 * serves {@link renderMetrics} (see `src/health.ts`). Default process metrics (CPU, memory, event
 * loop lag, GC) are on.
 *
 * Counters and histograms count what happened in this process; the queue depths are read from
 * Redis (BullMQ `getJobCounts`) when Prometheus scrapes, so they are the same in every process.
 * Format: https://prometheus.io/docs/instrumenting/exposition_formats/
 *
 * This module imports nothing of the bot: any layer may call it.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** The registry `/metrics` serves. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Seconds buckets for times a user waits (first text, whole answer, queue wait). */
const WAIT_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120, 180];
/** Seconds buckets for tool calls (most take milliseconds; the default tool timeout is 30 s). */
const TOOL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const messagesReceived = new Counter({
  name: "bot_messages_received_total",
  help: "Messages addressed to the bot that reached the access gate, by platform and chat kind (dm, group).",
  labelNames: ["platform", "chat_kind"] as const,
  registers: [registry],
});
const messagesAnswered = new Counter({
  name: "bot_messages_answered_total",
  help: "Messages whose answer (or approval prompt) was delivered, by platform.",
  labelNames: ["platform"] as const,
  registers: [registry],
});
const messagesFailed = new Counter({
  name: "bot_messages_failed_total",
  help: "Messages that could not be answered (the user got an apology, or nothing while rate limited), by platform.",
  labelNames: ["platform"] as const,
  registers: [registry],
});
const messagesRefused = new Counter({
  name: "bot_messages_refused_total",
  help: "Messages refused by the access gate before any model call, by platform and reason (access, rate, budget, queue).",
  labelNames: ["platform", "reason"] as const,
  registers: [registry],
});
const firstTextSeconds = new Histogram({
  name: "bot_first_visible_text_seconds",
  help: "Seconds from the adapter receiving a message to the first text of its answer visible in the chat.",
  labelNames: ["platform"] as const,
  buckets: WAIT_BUCKETS,
  registers: [registry],
});
const answerSeconds = new Histogram({
  name: "bot_answer_seconds",
  help: "Seconds from the adapter receiving a message to its whole answer delivered.",
  labelNames: ["platform"] as const,
  buckets: WAIT_BUCKETS,
  registers: [registry],
});
const queueWaitSeconds = new Histogram({
  name: "bot_queue_wait_seconds",
  help: "Seconds from the adapter receiving a message to a worker starting on it.",
  labelNames: ["platform"] as const,
  buckets: WAIT_BUCKETS,
  registers: [registry],
});
const modelCalls = new Counter({
  name: "bot_model_calls_total",
  help: "HTTP requests to the Anthropic Messages API (the SDK's retries included).",
  registers: [registry],
});
const modelTokens = new Counter({
  name: "bot_model_tokens_total",
  help: "Tokens reported in the responses' usage, by kind (input, output, cache_write, cache_read).",
  labelNames: ["kind"] as const,
  registers: [registry],
});
const modelErrors = new Counter({
  name: "bot_model_errors_total",
  help: "Failed Messages API requests, by HTTP status (`network` when no response came, `aborted` when cancelled).",
  labelNames: ["status"] as const,
  registers: [registry],
});
const toolCalls = new Counter({
  name: "bot_tool_calls_total",
  help: "Tool executions, by tool (`unknown` for a name that is no tool of the toolbox) and outcome (ok, error).",
  labelNames: ["tool", "outcome"] as const,
  registers: [registry],
});
const toolSeconds = new Histogram({
  name: "bot_tool_duration_seconds",
  help: "Seconds a tool execution took, by tool (`unknown` for a name that is no tool of the toolbox).",
  labelNames: ["tool"] as const,
  buckets: TOOL_BUCKETS,
  registers: [registry],
});
const approvals = new Counter({
  name: "bot_approvals_total",
  help:
    "Approval outcomes, by verdict: approved, declined, expired (decisions on a prompt), " +
    'always (approved with "always allow", recording a grant), granted (a call run without a ' +
    "prompt under a grant).",
  labelNames: ["verdict"] as const,
  registers: [registry],
});
const pushedMessages = new Counter({
  name: "bot_pushed_messages_total",
  help:
    "Push requests sent (LINE: each counts against the channel's monthly message quota, however many " +
    "message objects it carries; answers within the reply token's minute are free), by platform.",
  labelNames: ["platform"] as const,
  registers: [registry],
});
const workerActive = new Gauge({
  name: "bot_worker_active_jobs",
  help: "Chat jobs this worker process is running now (at most bot_worker_concurrency).",
  registers: [registry],
});
const workerConcurrency = new Gauge({
  name: "bot_worker_concurrency",
  help: "Chat jobs this worker process may run at once (WORKER_CONCURRENCY); 0 in a process without a worker.",
  registers: [registry],
});

/** Job counts of one BullMQ queue, as `Queue.getJobCounts("waiting", "active", "delayed")` returns them. */
export type QueueCounts = Record<string, number>;
/** Reads the job counts of each queue, by queue name; see {@link watchQueues}. */
export type QueueCountsReader = () => Promise<Record<string, QueueCounts>>;

/** Options of {@link watchQueues}. */
export interface WatchQueuesOptions {
  /** How long a scrape waits for the depths, in ms, before it answers without them. Default {@link QUEUE_READ_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Told (at debug level) when a scrape answers without the depths: the read failed or took too long. */
  log?: { debug(message: string): void };
}

/** Default of {@link WatchQueuesOptions.timeoutMs}: a scrape during a Redis outage still answers in about 2 s. */
export const QUEUE_READ_TIMEOUT_MS = 2000;

let watched: { read: QueueCountsReader; options: WatchQueuesOptions } | undefined;
/** The read in flight: a scrape while one is still waiting for Redis (an outage) waits for the same one, so reads do not pile up. */
let reading: Promise<Record<string, QueueCounts>> | undefined;

/** The watched depths, or undefined when the read fails or takes longer than the timeout. */
async function queueDepths(): Promise<Record<string, QueueCounts> | undefined> {
  if (!watched) return undefined;
  const { read, options } = watched;
  const current = (reading ??= read().finally(() => {
    if (reading === current) reading = undefined;
  }));
  const timeoutMs = options.timeoutMs ?? QUEUE_READ_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([current, timeout]);
  } catch (error) {
    options.log?.debug(`metrics: queue depths left out of this scrape (${(error as Error).message})`);
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

new Gauge({
  name: "bot_queue_jobs",
  help: "Jobs in each BullMQ queue by state (waiting, active, delayed), read from Redis at scrape time.",
  labelNames: ["queue", "state"] as const,
  registers: [registry],
  async collect() {
    this.reset();
    const byQueue = (await queueDepths()) ?? {};
    for (const [queue, counts] of Object.entries(byQueue)) {
      for (const state of ["waiting", "active", "delayed"]) this.set({ queue, state }, counts[state] ?? 0);
    }
  },
});

/** First-visible-text already recorded, by message (bounded: the oldest are forgotten). */
const firstTextSeen = new Set<string>();
const FIRST_TEXT_REMEMBERED = 10_000;

/** What the timing functions need of a message (an `IncomingMessage` fits). */
export interface TimedMessage {
  platform: string;
  chatId: string;
  topicId?: string | undefined;
  messageId: string;
  /** When the adapter received it, ms since the Unix epoch (set by the access gate). */
  receivedAt?: number | undefined;
}

function sinceReceipt(message: TimedMessage): number | undefined {
  return message.receivedAt === undefined ? undefined : Math.max(0, Date.now() - message.receivedAt) / 1000;
}

/** Why the gate refused a message, as the `reason` label. */
export type RefusalReason = "access" | "rate" | "budget" | "queue";

const redisDataLost = new Counter({
  name: "bot_redis_data_lost_total",
  help: "Times this process found that Redis lost its data (the deployment marker was gone after a reconnection).",
  registers: [registry],
});

/** The named metric functions; see the module comment. None throws. */
export const metrics = {
  /** This process found that Redis lost its data (`src/redis-marker.ts`). */
  redisDataLost(): void {
    redisDataLost.inc();
  },
  /** A message reached the access gate. */
  received(message: { platform: string; chatKind: string }): void {
    messagesReceived.inc({ platform: message.platform, chat_kind: message.chatKind });
  },
  /** The gate refused a message (answered or silently). */
  refused(platform: string, reason: RefusalReason): void {
    messagesRefused.inc({ platform, reason });
  },
  /** A worker started answering a message: observes its queue wait. */
  started(message: TimedMessage): void {
    const seconds = sinceReceipt(message);
    if (seconds !== undefined) queueWaitSeconds.observe({ platform: message.platform }, seconds);
  },
  /**
   * The first text of the answer to `message` is visible in the chat (a streamed draft, or the
   * first chunk sent). Only the first call per message is observed, so calling it again (or
   * {@link metrics.answered} after it) is harmless.
   */
  firstVisibleText(message: TimedMessage): void {
    const id = `${message.platform}:${message.chatId}/${message.topicId ?? ""}:${message.messageId}`;
    if (firstTextSeen.has(id)) return;
    firstTextSeen.add(id);
    if (firstTextSeen.size > FIRST_TEXT_REMEMBERED) firstTextSeen.delete(firstTextSeen.values().next().value!);
    const seconds = sinceReceipt(message);
    if (seconds !== undefined) firstTextSeconds.observe({ platform: message.platform }, seconds);
  },
  /** The whole answer to `message` (or its approval prompt) was delivered; also its first visible text if not yet recorded. */
  answered(message: TimedMessage): void {
    metrics.firstVisibleText(message);
    messagesAnswered.inc({ platform: message.platform });
    const seconds = sinceReceipt(message);
    if (seconds !== undefined) answerSeconds.observe({ platform: message.platform }, seconds);
  },
  /** `message` could not be answered (the run failed for good). */
  failed(message: { platform: string }): void {
    messagesFailed.inc({ platform: message.platform });
  },
  /** One HTTP request to the Messages API began. */
  modelCall(): void {
    modelCalls.inc();
  },
  /** A Messages API request failed: its HTTP status, or `network` / `aborted`. */
  modelError(status: number | "network" | "aborted"): void {
    modelErrors.inc({ status: String(status) });
  },
  /** The `usage` of one model response (the four token kinds the Messages API reports). */
  modelUsage(usage: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  }): void {
    modelTokens.inc({ kind: "input" }, usage.input_tokens);
    modelTokens.inc({ kind: "output" }, usage.output_tokens);
    modelTokens.inc({ kind: "cache_write" }, usage.cache_creation_input_tokens ?? 0);
    modelTokens.inc({ kind: "cache_read" }, usage.cache_read_input_tokens ?? 0);
  },
  /**
   * One tool execution finished; `durationMs` in ms. `tool` is the name of a tool of the toolbox,
   * or undefined for a name the model made up, counted as `unknown`: labels only take known
   * values, so the model cannot add series.
   */
  toolCall(tool: string | undefined, ok: boolean, durationMs: number): void {
    const label = tool ?? "unknown";
    toolCalls.inc({ tool: label, outcome: ok ? "ok" : "error" });
    toolSeconds.observe({ tool: label }, durationMs / 1000);
  },
  /**
   * An approval outcome: the worker handled a decision on a prompt (`approved`, `declined`,
   * `expired`, or `always` for an approval that also recorded a grant), or a dangerous call ran
   * without a prompt under an "always allow" grant (`granted`).
   */
  approval(verdict: "approved" | "declined" | "expired" | "always" | "granted"): void {
    approvals.inc({ verdict });
  },
  /** The worker may run `concurrency` chat jobs at once (`WORKER_CONCURRENCY`). */
  workerConcurrency(concurrency: number): void {
    workerConcurrency.set(concurrency);
  },
  /** Runs one chat job, counted in `bot_worker_active_jobs` while it runs. */
  async activeJob<T>(run: () => Promise<T>): Promise<T> {
    workerActive.inc();
    try {
      return await run();
    } finally {
      workerActive.dec();
    }
  },
  /** A push request was accepted (LINE, counted against the monthly quota). */
  pushed(platform: string): void {
    pushedMessages.inc({ platform });
  },
};

/**
 * Sets where the queue depths come from (the bot's BullMQ queues, read at scrape time); the last
 * call wins. A scrape waits at most `options.timeoutMs` for them (its other metrics are not held
 * up by a Redis outage); when the read fails or is late, that scrape has no `bot_queue_jobs`.
 * Returns a function that stops reading them (when the bot stops).
 */
export function watchQueues(read: QueueCountsReader, options: WatchQueuesOptions = {}): () => void {
  const entry = { read, options };
  watched = entry;
  reading = undefined;
  return () => {
    if (watched === entry) watched = undefined;
  };
}

/**
 * A `fetch` for the Anthropic SDK (`new Anthropic({ fetch })`) that counts each Messages API
 * request and its failures by status; it changes nothing of the request or response.
 */
export function countingFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    metrics.modelCall();
    try {
      const response = await inner(input, init);
      if (!response.ok) metrics.modelError(response.status);
      return response;
    } catch (error) {
      metrics.modelError((error as Error).name === "AbortError" ? "aborted" : "network");
      throw error;
    }
  };
}

/** The metrics in Prometheus text format, and its content type. Never throws (a failed collect is left out by prom-client). */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/**
 * Sets every metric of {@link registry} back to zero and forgets which messages' first visible
 * text was recorded: the state of a fresh process. For tests that count metrics while sharing one
 * process with other test files (vitest's `isolate: false`); the bot itself never calls it.
 */
export function resetMetrics(): void {
  registry.resetMetrics();
  firstTextSeen.clear();
}
