/**
 * The tracer: structured events of one agent run, so an operator can see why the bot answered
 * what it did. The Redis-backed store lives beside this file; this module holds the contract.
 */

/** Event types, in the order a run usually emits them. */
export type TraceEventType =
  | "user_input"
  | "model_call"
  | "model_response"
  | "tool_call"
  | "tool_result"
  | "approval"
  | "final_answer"
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
  if (text.length <= max) return text;
  let cut = max - 1;
  // never end on the high half of a surrogate pair
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut)}…`;
}

/** Receives trace events of one run. Implementations must not throw. */
export interface Tracer {
  /** Records an event of the current run; `runId`, `chat` and `at` are filled in by the tracer. */
  event(type: TraceEventType, data: Record<string, unknown>): void;
}

/** A tracer that drops everything. */
export const nullTracer: Tracer = { event() {} };

/** Stores a run's events when the tracer keeps them until the end of the run (see `RunTracer.finish`); otherwise does nothing. Never throws. */
export async function finishTracer(tracer: Tracer): Promise<void> {
  const finish = (tracer as Tracer & { finish?: () => Promise<unknown> }).finish;
  if (typeof finish === "function") await finish.call(tracer).catch(() => {});
}
