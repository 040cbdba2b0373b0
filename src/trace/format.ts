/**
 * A stored run as a readable timeline, for `npm run trace` and for logs an operator reads.
 */
import type { TraceEvent } from "./tracer.js";
import type { TraceRun } from "./store.js";
import { englishCount, englishNoun } from "../i18n.js";

function formatValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(formatValue).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${k}=${formatValue(v)}`)
      .join(" ")}}`;
  }
  return String(value);
}

/** One event as `   +123 ms  model_call      key=value …` (offset from the run's start, in ms). */
export function formatEvent(event: TraceEvent, startedAt: number): string {
  const offset = `+${event.at - startedAt} ms`.padStart(10);
  const data = Object.entries(event.data)
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(" ");
  return `${offset}  ${event.type.padEnd(15)} ${data}`.trimEnd();
}

/**
 * A run as a header line and one line per event. Times are UTC ISO 8601; offsets are ms since
 * the run started.
 */
export function formatRun(run: TraceRun): string {
  const header =
    `run ${run.runId} · ${run.chat} · ${new Date(run.startedAt).toISOString()} · ` +
    `${englishCount(run.events.length, "event")} · ${run.finishedAt - run.startedAt} ms`;
  const lines = run.events.map((e) => formatEvent(e, run.startedAt));
  if (run.droppedEvents > 0)
    lines.push(`  (${run.droppedEvents} more ${englishNoun(run.droppedEvents, "event")} not stored)`);
  return [header, ...lines].join("\n");
}
