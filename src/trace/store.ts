/**
 * The Redis-backed trace store: each run's events are buffered in memory, logged at debug level
 * as they happen, and written to Redis in one command when the run finishes. A chat keeps its
 * last {@link TRACE_KEEP_RUNS} runs for {@link TRACE_TTL_SECONDS}, newest first, under
 * `trace:{platform:chatId}`.
 *
 * Nothing secret is stored: every string passes through `redact` and is cut to a preview.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import { redact, silentLogger, type Logger } from "../log.js";
import { chatKey, type ChatRef } from "../queue/incoming.js";
import { preview, type TraceEvent, type TraceEventType, type Tracer } from "./tracer.js";

/** Runs kept per chat. */
export const TRACE_KEEP_RUNS = 20;
/** Seconds a chat's traces live after its last run: 7 days. */
export const TRACE_TTL_SECONDS = 7 * 24 * 3600;
/** Events kept per run; later ones are counted in `droppedEvents`, not stored. */
export const TRACE_MAX_EVENTS = 200;

/** The Redis key of a chat's traces, `trace:{platform:chatId}`. */
export function traceKey(chat: ChatRef | string): string {
  return `trace:${typeof chat === "string" ? chat : chatKey(chat)}`;
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

// LPUSH + LTRIM + EXPIRE as one atomic command (one round trip, one command of the budget).
const PUSH_SCRIPT = `
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
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
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (v !== undefined) out[k] = sanitize(v, depth + 1);
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
 * The tracer of one run. {@link event} never throws; {@link finish} writes the run to Redis in
 * one command and never throws either (a Redis problem is logged as a warning: tracing must not
 * break an answer).
 */
export class RunTracer implements Tracer {
  readonly runId: string;
  /** `platform:chatId`. */
  readonly chat: string;
  readonly startedAt = Date.now();
  readonly #events: TraceEvent[] = [];
  #dropped = 0;
  #finished = false;
  readonly #redis: Redis;
  readonly #log: Logger;
  readonly #keep: number;
  readonly #ttl: number;

  /** Use {@link TraceStore.startRun}. */
  constructor(redis: Redis, chat: string, runId: string, options: Required<Omit<TraceStoreOptions, "log">> & { log: Logger }) {
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
      const event: TraceEvent = { type, runId: this.runId, chat: this.chat, at: Date.now(), data: sanitize(data) as Record<string, unknown> };
      this.#log.debug({ trace: event }, `trace ${type}`);
      if (this.#finished) return;
      if (this.#events.length >= TRACE_MAX_EVENTS) this.#dropped += 1;
      else this.#events.push(event);
    } catch (error) {
      this.#log.warn({ err: error }, "trace event could not be recorded");
    }
  }

  /**
   * Writes the run to Redis: one `EVAL` doing LPUSH + LTRIM + EXPIRE on {@link traceKey}.
   * Only the first call writes; later calls and events are ignored.
   *
   * @returns true when the run was stored, false when it was already finished or Redis failed.
   */
  async finish(): Promise<boolean> {
    if (this.#finished) return false;
    this.#finished = true;
    const run: TraceRun = {
      runId: this.runId,
      chat: this.chat,
      startedAt: this.startedAt,
      finishedAt: Date.now(),
      droppedEvents: this.#dropped,
      events: this.#events,
    };
    try {
      await this.#redis.eval(PUSH_SCRIPT, 1, traceKey(this.chat), JSON.stringify(run), this.#keep, this.#ttl);
      return true;
    } catch (error) {
      this.#log.warn({ err: { message: (error as Error).message }, runId: this.runId }, "trace run could not be stored");
      return false;
    }
  }
}

/** Starts run tracers and reads stored runs back. */
export class TraceStore {
  readonly #redis: Redis;
  readonly #options: Required<Omit<TraceStoreOptions, "log">> & { log: Logger };

  constructor(redis: Redis, options: TraceStoreOptions = {}) {
    this.#redis = redis;
    this.#options = {
      log: options.log ?? silentLogger,
      keepRuns: options.keepRuns ?? TRACE_KEEP_RUNS,
      ttlSeconds: options.ttlSeconds ?? TRACE_TTL_SECONDS,
    };
  }

  /**
   * Starts tracing one run (one incoming message or one resumed approval).
   * @param options.chat - the chat, as a {@link ChatRef} or `platform:chatId`.
   * @param options.runId - e.g. the job id; default a random UUID.
   */
  startRun(options: { chat: ChatRef | string; runId?: string }): RunTracer {
    const chat = typeof options.chat === "string" ? options.chat : chatKey(options.chat);
    return new RunTracer(this.#redis, chat, options.runId ?? randomUUID(), this.#options);
  }

  /** The chat's latest finished run, or undefined when none is stored. @throws on a Redis error. */
  async latestRun(chat: ChatRef | string): Promise<TraceRun | undefined> {
    return (await this.runs(chat, 1))[0];
  }

  /**
   * The chat's last `n` finished runs, newest first. Entries that do not parse are skipped.
   * @throws on a Redis error.
   */
  async runs(chat: ChatRef | string, n = TRACE_KEEP_RUNS): Promise<TraceRun[]> {
    if (n <= 0) return [];
    const raw = await this.#redis.lrange(traceKey(chat), 0, n - 1);
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
