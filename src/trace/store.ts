/**
 * The Redis-backed trace store: each run's events are buffered in memory, logged at debug level
 * as they happen, and written to Redis in one step when the run finishes (by {@link RunTracer.finish},
 * or by the worker's finish script after {@link RunTracer.take}). A conversation (a chat, or one
 * Telegram topic of it) keeps its last {@link TRACE_KEEP_RUNS} runs for {@link TRACE_TTL_SECONDS}
 * after its latest run, newest first, under `trace:{conversationKey}` (`trace:{platform:chatId}` or
 * `trace:{platform:chatId/topicId}`; older runs beyond those are cut every `keepRuns` runs and never read).
 *
 * Nothing secret is stored: every string passes through `redact` and is cut to a preview.
 */
import { randomUUID } from "node:crypto";
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import { redact, silentLogger, type Logger } from "../log.js";
import { conversationKey, type ConversationRef } from "../queue/incoming.js";
import { preview, type PendingTrace, type RunTracer, type TraceEvent, type TraceEventType } from "./tracer.js";

/** Runs kept per chat. */
export const TRACE_KEEP_RUNS = 20;
/** Seconds a chat's traces live after its last run: 7 days. */
export const TRACE_TTL_SECONDS = 7 * 24 * 3600;
/** Events kept per run; later ones are counted in `droppedEvents`, not stored. */
export const TRACE_MAX_EVENTS = 200;

/**
 * The Redis key of a chat's traces, `trace:{platform:chatId}`: the chat's hash tag, like its inbox
 * and history keys, so the worker's finish script may write the trace in the same step (and on the
 * same Redis Cluster node) as it pops the chat's message.
 */
export function traceKey(conversation: ConversationRef | string): string {
  return `trace:{${typeof conversation === "string" ? conversation : conversationKey(conversation)}}`;
}

/**
 * The Lua lines that push a run (`ARGV[i]`) onto a chat's trace list (`KEYS[k]`), keep `ARGV[i+1]`
 * runs and set the expiry to `ARGV[i+2]` seconds: `LPUSH` + `EXPIRE`, and an `LTRIM` back to the
 * kept runs only when the list has grown to twice that (so once every `keep` runs; readers never
 * look past the kept runs). Shared by {@link RunTracer.finish} and the worker's finish script.
 *
 * With `renew` (an ARGV index), the expiry is set only when that argument is `1`, when the push
 * created the list, or when it cut it: the worker renews a chat's expiry at most once an hour
 * (`TRACE_RENEW_MS` of `src/worker/worker.ts`), one `EXPIRE` fewer for the other runs.
 */
export function tracePushLua(k: number, i: number, renew?: number): string {
  const expire =
    renew === undefined
      ? `redis.call('EXPIRE', KEYS[${k}], ARGV[${i + 2}])`
      : `if n == 1 or n > 2 * keep or ARGV[${renew}] == '1' then redis.call('EXPIRE', KEYS[${k}], ARGV[${i + 2}]) end`;
  return `
do
  local keep = tonumber(ARGV[${i + 1}])
  local n = redis.call('LPUSH', KEYS[${k}], ARGV[${i}])
  if n > 2 * keep then redis.call('LTRIM', KEYS[${k}], 0, keep - 1) end
  ${expire}
end`;
}

const EventSchema = z.object({
  type: z.string(),
  runId: z.string(),
  chat: z.string(),
  at: z.number(),
  data: z.record(z.string(), z.unknown()),
});

const RunSchema = z.object({
  runId: z.string(),
  chat: z.string(),
  startedAt: z.number(),
  finishedAt: z.number(),
  droppedEvents: z.number().default(0),
  events: z.array(EventSchema),
});

/** One stored run: its events in order, times in ms since the Unix epoch. */
export interface TraceRun {
  runId: string;
  /** `platform:chatId`. */
  chat: string;
  startedAt: number;
  finishedAt: number;
  /** Events beyond {@link TRACE_MAX_EVENTS}, not stored. */
  droppedEvents: number;
  events: TraceEvent[];
}

// LPUSH + EXPIRE (+ an LTRIM every `keep` runs) as one atomic script.
const PUSH_SCRIPT = `${tracePushLua(1, 1)}
return 1`;

/** Options of a {@link TraceStore}. */
export interface TraceStoreOptions {
  /** Events are logged here at debug level. */
  log?: Logger;
  /** Runs kept per chat; default {@link TRACE_KEEP_RUNS}. */
  keepRuns?: number;
  /** Expiry of a chat's traces in seconds; default {@link TRACE_TTL_SECONDS}. */
  ttlSeconds?: number;
}

/** Makes a value safe to store: strings redacted and cut to a preview, depth and list length bounded. */
function sanitize(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return preview(redact(value));
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return value;
  if (depth >= 4) return preview(redact(safeString(value)), 120);
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => sanitize(v, depth + 1));
  if (typeof value === "object") {
    // The keys alone (no [key, value] pair per field): every event of every answer passes here.
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(record)) {
      const v = record[k];
      if (v !== undefined) out[k] = sanitize(v, depth + 1);
    }
    return out;
  }
  return preview(redact(String(value)));
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The Redis-backed tracer of one run. {@link event} never throws; {@link finish} writes the run to
 * Redis in one command and never throws either (a Redis problem is logged as a warning: tracing
 * must not break an answer).
 */
export class RedisRunTracer implements RunTracer {
  readonly runId: string;
  /** `platform:chatId`. */
  readonly chat: string;
  readonly startedAt = Date.now();
  readonly #events: TraceEvent[] = [];
  #dropped = 0;
  #finished = false;
  readonly #redis: RedisClient;
  readonly #log: Logger;
  readonly #keep: number;
  readonly #ttl: number;

  /** Use {@link TraceStore.startRun}. */
  constructor(
    redis: RedisClient,
    chat: string,
    runId: string,
    options: Required<Omit<TraceStoreOptions, "log">> & { log: Logger },
  ) {
    this.#redis = redis;
    this.chat = chat;
    this.runId = runId;
    this.#log = options.log;
    this.#keep = options.keepRuns;
    this.#ttl = options.ttlSeconds;
  }

  /** The events recorded so far (sanitised), in order. */
  get events(): readonly TraceEvent[] {
    return this.#events;
  }

  /** Records an event: sanitised, logged at debug, buffered until {@link finish}. */
  event(type: TraceEventType, data: Record<string, unknown>): void {
    try {
      const event: TraceEvent = {
        type,
        runId: this.runId,
        chat: this.chat,
        at: Date.now(),
        data: sanitize(data) as Record<string, unknown>,
      };
      // The event's data holds what people and the model wrote: content, shown only with LOG_CONTENT=on.
      this.#log.debug({ trace: { type, runId: this.runId, chat: this.chat }, content: event.data }, `trace ${type}`);
      if (this.#finished) return;
      if (this.#events.length >= TRACE_MAX_EVENTS) this.#dropped += 1;
      else this.#events.push(event);
    } catch (error) {
      this.#log.warn({ err: error }, "trace event could not be recorded");
    }
  }

  /**
   * Ends the run without writing it, and returns it for a caller that writes it in a step of its
   * own (the worker's finish script, which pushes it with {@link tracePushLua}). Returns undefined
   * when the run was already finished or taken, or recorded no event (a no-op `/compact`): an empty
   * run, stored, would only push the conversation's real runs down in `npm run trace` and the
   * console. Later events are ignored.
   */
  take(): PendingTrace | undefined {
    if (this.#finished) return undefined;
    this.#finished = true;
    if (this.#events.length === 0 && this.#dropped === 0) return undefined;
    const run: TraceRun = {
      runId: this.runId,
      chat: this.chat,
      startedAt: this.startedAt,
      finishedAt: Date.now(),
      droppedEvents: this.#dropped,
      events: this.#events,
    };
    return { key: traceKey(this.chat), json: JSON.stringify(run), keepRuns: this.#keep, ttlSeconds: this.#ttl };
  }

  /**
   * Writes the run to Redis: one `EVAL` doing LPUSH + EXPIRE (and, once every `keepRuns` runs,
   * LTRIM) on {@link traceKey}. Only the first call (or {@link take}) counts; later calls and
   * events are ignored.
   *
   * @returns true when the run was stored, false when it was already finished, recorded no event
   *   (nothing is stored), or Redis failed.
   */
  async finish(): Promise<boolean> {
    const pending = this.take();
    if (!pending) return false;
    try {
      await this.#redis.eval(PUSH_SCRIPT, 1, pending.key, pending.json, pending.keepRuns, pending.ttlSeconds);
      return true;
    } catch (error) {
      this.#log.warn(
        { err: { message: (error as Error).message }, runId: this.runId },
        "trace run could not be stored",
      );
      return false;
    }
  }
}

/** Starts run tracers and reads stored runs back. */
export class TraceStore {
  readonly #redis: RedisClient;
  readonly #options: Required<Omit<TraceStoreOptions, "log">> & { log: Logger };

  constructor(redis: RedisClient, options: TraceStoreOptions = {}) {
    this.#redis = redis;
    this.#options = {
      log: options.log ?? silentLogger,
      keepRuns: options.keepRuns ?? TRACE_KEEP_RUNS,
      ttlSeconds: options.ttlSeconds ?? TRACE_TTL_SECONDS,
    };
  }

  /**
   * Starts tracing one run (one incoming message or one resumed approval).
   * @param options.chat - the chat, as a {@link ConversationRef} or `platform:chatId`.
   * @param options.runId - e.g. the job id; default a random UUID.
   */
  startRun(options: { chat: ConversationRef | string; runId?: string }): RedisRunTracer {
    const chat = typeof options.chat === "string" ? options.chat : conversationKey(options.chat);
    return new RedisRunTracer(this.#redis, chat, options.runId ?? randomUUID(), this.#options);
  }

  /** The chat's latest finished run, or undefined when none is stored. @throws on a Redis error. */
  async latestRun(conversation: ConversationRef | string): Promise<TraceRun | undefined> {
    return (await this.runs(conversation, 1))[0];
  }

  /**
   * The chat's last `n` finished runs (at most `keepRuns`), newest first. Entries that do not
   * parse are skipped. @throws on a Redis error.
   */
  async runs(conversation: ConversationRef | string, n = this.#options.keepRuns): Promise<TraceRun[]> {
    n = Math.min(n, this.#options.keepRuns);
    if (n <= 0) return [];
    const raw = await this.#redis.lrange(traceKey(conversation), 0, n - 1);
    const runs: TraceRun[] = [];
    for (const entry of raw) {
      try {
        const parsed = RunSchema.safeParse(JSON.parse(entry));
        if (parsed.success) runs.push(parsed.data as TraceRun);
      } catch {
        // not JSON: skip it
      }
    }
    return runs;
  }
}
