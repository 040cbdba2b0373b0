/**
 * The tracer: structured events of one agent run, so an operator can see why the bot answered
 * what it did. The Redis-backed store lives beside this file; this module holds the contract.
 */
import { cutUnits } from "../cut.js";

/** Event types, in the order a run usually emits them. */
export type TraceEventType =
  | "transcription"
  | "speech"
  | "user_input"
  | "model_call"
  | "model_response"
  | "tool_call"
  | "tool_result"
  | "approval"
  | "final_answer"
  | "delivery"
  | "compaction"
  | "error";

/**
 * One event. `data` holds previews only (at most {@link PREVIEW_CHARS} characters of any text),
 * never a secret and never a full tool output.
 */
export interface TraceEvent {
  type: TraceEventType;
  /** Id of the run (one incoming message, or one resumed approval). */
  runId: string;
  /** `platform:chatId`. */
  chat: string;
  /** ms since the Unix epoch. */
  at: number;
  data: Record<string, unknown>;
}

/** Longest text kept in a trace field, in UTF-16 code units. */
export const PREVIEW_CHARS = 300;

/** Shortens `text` to {@link PREVIEW_CHARS} (or `max`) UTF-16 units, marking the cut with `…`. */
export function preview(text: string, max = PREVIEW_CHARS): string {
  // Idempotent: a preview of a preview (the trace store, a span) keeps one `…`.
  return cutUnits(text, max);
}

/** Receives trace events of one run. Implementations must not throw. */
export interface Tracer {
  /** Records an event of the current run; `runId`, `chat` and `at` are filled in by the tracer. */
  event(type: TraceEventType, data: Record<string, unknown>): void;
}

/** Where a run comes from, for tracers that join it to a distributed trace (`src/telemetry/otel.ts`). */
export interface TraceOrigin {
  /** W3C `traceparent` of the span that received the run's message (`IncomingMessage.traceparent`). */
  traceparent?: string;
}

/** A tracer that drops everything. */
export const nullTracer: Tracer = { event() {} };

/** A finished run ready to be written: what {@link RunTracer.take} returns. */
export interface PendingTrace {
  /** The trace key of the run's conversation (`traceKey` of `store.ts`). */
  key: string;
  /** The run as stored (JSON of a `TraceRun`). */
  json: string;
  /** Runs kept per conversation. */
  keepRuns: number;
  /** Expiry of the conversation's traces, in seconds. */
  ttlSeconds: number;
}

/**
 * The tracer of one run, with the two ways its run can end declared: {@link take} hands the
 * finished run over to a caller that writes it in a step of its own (the worker's finish script
 * pushes it in the same step as it pops the message), {@link finish} writes it at once. Only the
 * first of the two counts. The Redis-backed one is `RedisRunTracer` of `store.ts`.
 */
export interface RunTracer extends Tracer {
  /** Ends the run without writing it and returns it; undefined when it ended already or keeps nothing. */
  take(): PendingTrace | undefined;
  /** Ends the run and writes it. Never throws (a failed write is logged). */
  finish(): Promise<unknown>;
}

/** A run tracer that keeps nothing. */
export const nullRunTracer: RunTracer = { event() {}, take: () => undefined, finish: async () => undefined };
