/**
 * OpenTelemetry traces, off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set (docs/telemetry.md).
 *
 * Nothing here is loaded until {@link startTelemetry} finds the endpoint: the SDK, the OTLP/HTTP
 * exporter and `bullmq-otel` are imported then, so a bot without it starts as fast as before and
 * exports nothing. Once started, a process has:
 *
 * - a span per message an adapter receives (`receive {platform}`, {@link withReceiptSpan}), around
 *   the access gate and the enqueue, so BullMQ's own spans (`add chats`, then `process chats` in the
 *   worker: `bullmq-otel` through {@link bullmqTelemetry}) carry its trace from the adapter to the worker;
 * - a span per answer (`invoke_agent`), with a `chat {model}` span per model call, an
 *   `execute_tool {tool}` span per tool call and a `deliver` span, made from the events of the
 *   project's own tracer (`src/trace/tracer.ts`, what `npm run trace` shows) by {@link otelTracerFor}:
 *   the agent loop and the toolbox are not touched. Attributes follow the OpenTelemetry GenAI
 *   semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/);
 *   approvals are events of the answer span (`approval`, with its verdict).
 *
 * Message content (people's messages, answers, tool inputs and results) is in no span unless
 * `OTEL_CAPTURE_CONTENT=on`; then as previews, at most 300 characters, redacted by `redact`
 * (`src/log.ts`): the bot's own secrets and anything shaped like a key or token a person pasted
 * (API keys, bot tokens, Bearer tokens: `SECRET_SHAPES`).
 */
import type * as OtelApi from "@opentelemetry/api";
import type { Telemetry as BullTelemetry } from "bullmq";
import type { ReadableSpan, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-node";
import type { Config } from "../config.js";
import { redact, type Logger } from "../log.js";
import type { PendingTrace, RunTracer, TraceEventType, TraceOrigin } from "../trace/tracer.js";
import { preview } from "../trace/tracer.js";

/** Instrumentation scope of the bot's own spans. */
export const TRACER_NAME = "taiwan-tool-bot";

/** `service.name` when `OTEL_SERVICE_NAME` is unset. */
export const DEFAULT_SERVICE_NAME = "taiwan-tool-bot";

interface Started {
  api: typeof OtelApi;
  tracer: OtelApi.Tracer;
  bullmq: BullTelemetry;
  capture: boolean;
  shutdown: () => Promise<void>;
  flush: () => Promise<void>;
  /** {@link startTelemetry} calls not yet matched by {@link stopTelemetry}. */
  users: number;
}

let started: Started | undefined;
let starting: Promise<Started> | undefined;

/** Options of {@link startTelemetry} (tests). */
export interface TelemetryOptions {
  /** Exporter in place of the OTLP/HTTP one (e.g. the SDK's `InMemorySpanExporter`); spans are then exported one by one. */
  exporter?: SpanExporter;
}

/**
 * Starts tracing for this process when `config.OTEL_EXPORTER_OTLP_ENDPOINT` is set (or
 * `options.exporter` is given): loads the SDK, registers a `NodeTracerProvider` (W3C trace
 * context, AsyncLocalStorage context) that batches spans to `{endpoint}/v1/traces` as OTLP/JSON.
 * Does nothing and loads nothing otherwise. Calls after the first share its provider (several bots
 * in one process); each must be matched by {@link stopTelemetry}.
 *
 * @returns true when tracing is on. Never throws: a failure to load is logged and tracing stays off.
 */
export async function startTelemetry(config: Config, log: Logger, options: TelemetryOptions = {}): Promise<boolean> {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint && !options.exporter) return false;
  try {
    starting ??= load(config, endpoint, options);
    const now = await starting;
    now.users += 1;
    started = now;
    const capture = now.capture ? "on" : "off";
    log.info(
      // The origin only: a URL may hold credentials (user:password@). Not under `content`: the
      // logger hides that key (message content, LOG_CONTENT), and this is a setting, not content.
      {
        endpoint: options.exporter ? "(in-process exporter)" : new URL(endpoint!).origin,
        captureContent: capture,
      },
      `OpenTelemetry traces are exported (OTEL_EXPORTER_OTLP_ENDPOINT); message content in spans: ${capture} (OTEL_CAPTURE_CONTENT)`,
    );
    return true;
  } catch (error) {
    starting = undefined;
    log.error({ err: error }, "OpenTelemetry could not be started; the bot runs without traces");
    return false;
  }
}

async function load(config: Config, endpoint: string | undefined, options: TelemetryOptions): Promise<Started> {
  const [api, node, resources, bullmqOtel] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/resources"),
    import("bullmq-otel"),
  ]);
  const exporter =
    options.exporter ??
    new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter({ url: `${endpoint}/v1/traces` });
  const processor = options.exporter
    ? new node.SimpleSpanProcessor(exporter)
    : new node.BatchSpanProcessor(exporter, { scheduledDelayMillis: 2000 });
  const capture = config.OTEL_CAPTURE_CONTENT === "on";
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({
      "service.name": config.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAME,
      "service.version": process.env.npm_package_version ?? "0.1.0",
      "bot.role": config.ROLE,
    }),
    spanProcessors: [keptSpans(processor, capture)],
  });
  provider.register();
  return {
    api,
    tracer: api.trace.getTracer(TRACER_NAME),
    bullmq: new bullmqOtel.BullMQOtel({ tracerName: "bullmq" }),
    capture,
    users: 0,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown().catch(() => {});
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
}

/** BullMQ operations whose spans are exported: the job's way from the producer to the worker. */
export const BULLMQ_KEPT_OPERATIONS: ReadonlySet<string> = new Set(["add", "addBulk", "process"]);

/**
 * BullMQ attributes that hold what a job carried or returned (an answer's text, a progress
 * record): exported only with `OTEL_CAPTURE_CONTENT=on`.
 */
const BULLMQ_CONTENT_KEYS = ["bullmq.job.result", "bullmq.job.progress"];

/**
 * A span processor in front of `next` that passes on the bot's spans and BullMQ's
 * {@link BULLMQ_KEPT_OPERATIONS} spans only: BullMQ's housekeeping (its stalled-job check every
 * 3 s, each `complete`, …) would be most of the traffic and tell an operator nothing. Without
 * `capture`, BullMQ's {@link BULLMQ_CONTENT_KEYS} are removed from its spans' events first, and a
 * failed job's reason is redacted.
 */
function keptSpans(next: SpanProcessor, capture: boolean): SpanProcessor {
  return {
    onStart: (span, parent) => next.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      if (span.instrumentationScope.name === "bullmq") {
        const operation = span.attributes["bullmq.queue.operation"];
        if (typeof operation !== "string" || !BULLMQ_KEPT_OPERATIONS.has(operation)) return;
        if (!capture)
          for (const event of span.events) {
            const attributes = event.attributes as Record<string, unknown> | undefined;
            if (!attributes) continue;
            for (const key of BULLMQ_CONTENT_KEYS) delete attributes[key];
            const reason = attributes["bullmq.job.failed.reason"];
            if (typeof reason === "string") attributes["bullmq.job.failed.reason"] = preview(redact(reason), 200);
          }
      }
      next.onEnd(span);
    },
    forceFlush: () => next.forceFlush(),
    shutdown: () => next.shutdown(),
  };
}

/**
 * Ends one {@link startTelemetry}: the last one flushes the spans still buffered (to the
 * collector) and unregisters the provider. Never throws.
 */
export async function stopTelemetry(): Promise<void> {
  const now = started;
  if (!now) return;
  now.users -= 1;
  if (now.users > 0) return;
  started = undefined;
  starting = undefined;
  await now.shutdown();
}

/** Exports the spans ended so far now (not at the next batch, every 2 s). Never throws. */
export async function flushTelemetry(): Promise<void> {
  await started?.flush().catch(() => {});
}

/** Whether tracing is on in this process (the SDK is loaded and registered). */
export function telemetryOn(): boolean {
  return started !== undefined;
}

/**
 * `{ telemetry }` for the options of a BullMQ `Queue` or `Worker` while tracing is on (BullMQ then
 * makes its `add …` and `process …` spans and carries the trace context in the job), else `{}`.
 */
export function bullmqTelemetry(): { telemetry?: BullTelemetry } {
  return started ? { telemetry: started.bullmq } : {};
}

/**
 * Runs `fn` (an adapter's hand-over of what it received: a message through the access gate to the
 * queue, or an approval's decision) inside a `SERVER` span named `name` (`receive telegram`,
 * `receive approval`) while tracing is on, so the job BullMQ adds in it carries its trace to the
 * worker. Without tracing it just calls `fn`. A string result (the gate's `queued`, `duplicate`, …)
 * or a result's `status` is kept as `bot.outcome`; a throw of `fn` marks the span as an error and
 * is rethrown.
 */
export async function withReceiptSpan<T>(
  name: string,
  attributes: Record<string, string>,
  fn: () => Promise<T>,
): Promise<T> {
  const now = started;
  if (!now) return fn();
  const { api } = now;
  return now.tracer.startActiveSpan(name, { kind: api.SpanKind.SERVER, attributes }, async (span) => {
    try {
      const result = await fn();
      const status = (result as { status?: unknown } | undefined)?.status;
      const outcome = typeof result === "string" ? result : typeof status === "string" ? status : undefined;
      if (outcome) span.setAttribute("bot.outcome", outcome);
      return result;
    } catch (error) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error).name });
      span.setAttribute("error.type", (error as Error).name || "Error");
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * `message` with the W3C `traceparent` of the active span (the receipt span of
 * {@link withReceiptSpan}) while tracing is on, so the worker's answer joins its trace
 * ({@link otelTracerFor}); `message` itself otherwise.
 */
export function carryTrace<T extends object>(message: T): T & TraceOrigin {
  const now = started;
  if (!now) return message;
  const carrier: Record<string, string> = {};
  now.api.propagation.inject(now.api.context.active(), carrier);
  return carrier.traceparent ? { ...message, traceparent: carrier.traceparent } : message;
}

/**
 * Wraps a `tracerFor` (a {@link RunTracer} per run) so each run also becomes an OpenTelemetry
 * answer span while tracing is on; returns `tracerFor`'s tracer itself otherwise. The run tracer
 * still records everything it did before (`npm run trace` is unchanged).
 *
 * The answer span's parent is the active span (BullMQ's `process …` span of the job), unless the
 * run's message carries a `traceparent` of another trace (`origin`: a message answered by a job
 * that an earlier message started, or a run resumed after an approval, whose job the press
 * started): then it is that receipt span, and the job's span is linked. So one message, its
 * approval included, is one trace.
 */
export function otelTracerFor(
  tracerFor: (runId: string, chat: string, origin?: TraceOrigin) => RunTracer,
): (runId: string, chat: string, origin?: TraceOrigin) => RunTracer {
  return (runId, chat, origin) => {
    const inner = tracerFor(runId, chat, origin);
    const now = started;
    return now ? new OtelRunTracer(inner, runId, chat, now, origin?.traceparent) : inner;
  };
}

type Span = OtelApi.Span;

/** Attribute value: strings, numbers, booleans and arrays of strings. */
type Value = string | number | boolean | string[];

function attrs(entries: Record<string, Value | undefined>): OtelApi.Attributes {
  const out: OtelApi.Attributes = {};
  for (const [k, v] of Object.entries(entries)) if (v !== undefined) out[k] = v;
  return out;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** A preview of content for a span attribute: redacted and cut to 300 characters. */
function shown(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text === undefined ? undefined : preview(redact(text));
}

/**
 * A run tracer that also turns its run into spans: the answer span starts with the run (under the
 * active span: BullMQ's `process …` span of the job), model and tool calls are its children,
 * ended by their result events; the run's end (take or finish) ends what is still open.
 */
class OtelRunTracer implements RunTracer {
  readonly #inner: RunTracer;
  readonly #otel: Started;
  readonly #answer: Span;
  readonly #parent: OtelApi.Context;
  #chat: Span | undefined;
  readonly #tools = new Map<string, Span>();
  #ended = false;

  constructor(inner: RunTracer, runId: string, chat: string, otel: Started, traceparent?: string) {
    this.#inner = inner;
    this.#otel = otel;
    const { api, tracer } = otel;
    const active = api.context.active();
    const job = api.trace.getSpanContext(active);
    const received = traceparent ? api.propagation.extract(api.ROOT_CONTEXT, { traceparent }) : undefined;
    const receipt = received && api.trace.getSpanContext(received);
    const joins = receipt !== undefined && api.trace.isSpanContextValid(receipt) && receipt.traceId !== job?.traceId;
    const parent = joins ? received! : active;
    const kind = runId.startsWith("compaction:") ? "compaction" : runId.endsWith(":approval") ? "resumed" : "answer";
    this.#answer = tracer.startSpan(
      "invoke_agent",
      {
        kind: api.SpanKind.INTERNAL,
        attributes: attrs({
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.provider.name": "anthropic",
          "gen_ai.agent.name": TRACER_NAME,
          "gen_ai.conversation.id": chat,
          "bot.run.id": runId,
          "bot.run.kind": kind,
        }),
        ...(joins && job && api.trace.isSpanContextValid(job) ? { links: [{ context: job }] } : {}),
      },
      parent,
    );
    this.#parent = api.trace.setSpan(parent, this.#answer);
  }

  event(type: TraceEventType, data: Record<string, unknown>): void {
    this.#inner.event(type, data);
    if (this.#ended) return;
    try {
      this.#record(type, data);
    } catch {
      // tracing never breaks an answer
    }
  }

  take(): PendingTrace | undefined {
    this.#end();
    return this.#inner.take();
  }

  finish(): Promise<unknown> {
    this.#end();
    return this.#inner.finish();
  }

  #child(name: string, kind: OtelApi.SpanKind, attributes: OtelApi.Attributes, startTime?: number): Span {
    return this.#otel.tracer.startSpan(name, { kind, attributes, ...(startTime ? { startTime } : {}) }, this.#parent);
  }

  #record(type: TraceEventType, data: Record<string, unknown>): void {
    const { api, capture } = this.#otel;
    const answer = this.#answer;
    switch (type) {
      case "user_input":
        answer.setAttributes(
          attrs({
            "bot.history.messages": num(data.historyMessages),
            "bot.resumed_at_turn": num(data.resumedAtTurn),
            "gen_ai.input.messages": capture
              ? JSON.stringify([{ role: "user", parts: [{ type: "text", content: shown(data.text) }] }])
              : undefined,
          }),
        );
        return;
      case "model_call": {
        this.#chat?.end();
        const model = str(data.model) ?? "unknown";
        this.#chat = this.#child(
          `chat ${model}`,
          api.SpanKind.CLIENT,
          attrs({
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": num(data.maxTokens),
            "bot.turn": num(data.turn),
            "bot.request.messages": num(data.messages),
            "bot.request.tools": num(data.tools),
          }),
        );
        return;
      }
      case "model_response": {
        const span = this.#chat;
        if (!span) return;
        this.#chat = undefined;
        const usage = (data.usage ?? {}) as Record<string, unknown>;
        span.setAttributes(
          attrs({
            "gen_ai.response.finish_reasons": str(data.stopReason) ? [data.stopReason as string] : undefined,
            "gen_ai.usage.input_tokens": num(usage.input_tokens),
            "gen_ai.usage.output_tokens": num(usage.output_tokens),
            "gen_ai.usage.cache_read.input_tokens": num(usage.cache_read_input_tokens),
            "gen_ai.usage.cache_creation.input_tokens": num(usage.cache_creation_input_tokens),
            "bot.tool_uses": Array.isArray(data.toolUses) ? (data.toolUses as unknown[]).map(String) : undefined,
            "gen_ai.output.messages": capture
              ? JSON.stringify([
                  {
                    role: "assistant",
                    parts: [{ type: "text", content: shown(data.text) }],
                    finish_reason: str(data.stopReason),
                  },
                ])
              : undefined,
          }),
        );
        span.end();
        return;
      }
      case "tool_call": {
        const name = str(data.tool) ?? "unknown";
        const id = str(data.toolUseId) ?? name;
        this.#tools.get(id)?.end();
        this.#tools.set(id, this.#toolSpan(name, data));
        return;
      }
      case "tool_result": {
        const name = str(data.tool) ?? "unknown";
        const id = str(data.toolUseId) ?? name;
        // A call refused before it ran (bad input, a limit) has no tool_call: its span is its result alone.
        const span = this.#tools.get(id) ?? this.#toolSpan(name, data);
        this.#tools.delete(id);
        span.setAttributes(
          attrs({
            "bot.tool.ok": typeof data.ok === "boolean" ? data.ok : undefined,
            "bot.tool.duration_ms": num(data.durationMs),
            "gen_ai.tool.call.result": capture ? shown(data.preview ?? data.content) : undefined,
          }),
        );
        if (data.ok === false) {
          span.setAttribute("error.type", "tool_error");
          span.setStatus({ code: api.SpanStatusCode.ERROR });
        }
        span.end();
        return;
      }
      case "approval":
        answer.addEvent(
          "approval",
          attrs({
            "bot.approval.verdict": str(data.verdict) ?? "asked",
            "gen_ai.tool.name": str(data.tool),
            "gen_ai.tool.call.id": str(data.toolUseId),
            "bot.approval.pending": num(data.pending),
          }),
        );
        if (data.verdict === undefined) answer.setAttribute("bot.approval.asked", true);
        return;
      case "delivery": {
        const ms = num(data.durationMs) ?? 0;
        const span = this.#child(
          "deliver",
          api.SpanKind.CLIENT,
          attrs({ "bot.delivery.chunks": num(data.chunks), "bot.delivery.ok": data.ok === true }),
          Date.now() - ms,
        );
        if (data.ok === false) span.setStatus({ code: api.SpanStatusCode.ERROR });
        span.end();
        return;
      }
      case "final_answer":
        answer.setAttributes(
          attrs({
            "bot.turns": num(data.turns),
            "bot.limit": str(data.limit),
            "bot.refused": data.refused === true ? true : undefined,
            "gen_ai.output.messages": capture
              ? JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: shown(data.text) }] }])
              : undefined,
          }),
        );
        return;
      case "error": {
        const error = str(data.error) ?? "error";
        if (data.where === "model_call" && this.#chat) {
          this.#chat.setAttribute("error.type", error);
          this.#chat.setStatus({ code: api.SpanStatusCode.ERROR });
          this.#chat.end();
          this.#chat = undefined;
        }
        answer.addEvent("error", attrs({ "error.type": error, "bot.error.where": str(data.where) }));
        return;
      }
      case "transcription":
      case "compaction":
        answer.addEvent(
          type,
          attrs({
            "bot.ok": typeof data.ok === "boolean" ? data.ok : undefined,
            "bot.seconds": num(data.seconds),
          }),
        );
        return;
    }
  }

  #toolSpan(name: string, data: Record<string, unknown>): Span {
    return this.#child(
      `execute_tool ${name}`,
      this.#otel.api.SpanKind.INTERNAL,
      attrs({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": str(data.toolUseId),
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": this.#otel.capture ? shown(data.input) : undefined,
      }),
    );
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.#chat?.end();
      for (const span of this.#tools.values()) span.end();
      this.#tools.clear();
      this.#answer.end();
    } catch {
      // tracing never breaks an answer
    }
  }
}
