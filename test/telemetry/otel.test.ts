/**
 * OpenTelemetry without the whole stack (the span tree of a real answer is test/e2e/otel.test.ts):
 * off when `OTEL_EXPORTER_OTLP_ENDPOINT` is unset (nothing loaded, nothing registered), and message
 * content in spans only with `OTEL_CAPTURE_CONTENT=on`, through the real SDK and its
 * `InMemorySpanExporter`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { context, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { createLogger, silentLogger } from "../../src/log.js";
import {
  bullmqTelemetry,
  carryTrace,
  flushTelemetry,
  otelTracerFor,
  startTelemetry,
  stopTelemetry,
  telemetryOn,
} from "../../src/telemetry/otel.js";
import { nullRunTracer, type RunTracer } from "../../src/trace/tracer.js";
import { nodeArgs } from "../helpers/compiled.js";
import { testConfig } from "../helpers/config.js";
import { fakePastedSecrets } from "../helpers/fake-tokens.js";

/** A module-resolution hook (node:module `register`) appending each OpenTelemetry package resolved to `OTEL_TEST_MARKS`. */
const HOOK = `data:text/javascript,${encodeURIComponent(`
import { register } from "node:module";
register("data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  if (/^(@opentelemetry\\/(sdk-|exporter-|resources)|bullmq-otel)/.test(specifier)) appendFileSync(process.env.OTEL_TEST_MARKS, specifier + "\\n");
  return next(specifier, context);
}`)}");`)}`;

describe("OTEL_EXPORTER_OTLP_ENDPOINT unset", () => {
  it("loads no OpenTelemetry SDK, exporter or bullmq-otel with the whole bot, and gives BullMQ no telemetry", async () => {
    const marks = path.join(mkdtempSync(path.join(tmpdir(), "otel-")), "marks.txt");
    writeFileSync(marks, "");
    const child = spawn(process.execPath, ["--import", HOOK, ...nodeArgs("test/telemetry/otel-off-child.ts")], {
      env: { PATH: process.env.PATH ?? "", OTEL_TEST_MARKS: marks },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(JSON.parse(out.trim())).toEqual({ started: false, on: false, bullmq: [], control: true });
    const [before, after] = readFileSync(marks, "utf8").split("--- with the endpoint\n") as [string, string];
    expect(before).toBe("");
    // The control: the hook does see them once the endpoint is set.
    expect(after).toContain("@opentelemetry/sdk-trace-node");
    expect(after).toContain("@opentelemetry/exporter-trace-otlp-http");
    expect(after).toContain("bullmq-otel");
  }, 60_000);

  it("in this process: startTelemetry says off, run tracers are returned as they are, no provider is registered", async () => {
    expect(await startTelemetry(testConfig({}), silentLogger)).toBe(false);
    expect(telemetryOn()).toBe(false);
    expect(bullmqTelemetry()).toEqual({});
    const inner: RunTracer = { ...nullRunTracer };
    expect(otelTracerFor(() => inner)("run-1", "telegram:1")).toBe(inner);
    const message = { messageId: "1" };
    expect(carryTrace(message)).toBe(message);
    const api = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[Symbol.for("opentelemetry.js.api.1")];
    expect(api?.trace).toBeUndefined();
  });
});

/** One run of events as the agent loop, the toolbox and the pipeline record them, with content in each. */
function recordRun(tracer: RunTracer): void {
  tracer.event("user_input", { text: "把 #3 刪掉 secret-plan", historyMessages: 2 });
  tracer.event("model_call", { model: "claude-test", turn: 1, messages: 3, tools: 2, maxTokens: 1024 });
  tracer.event("model_response", {
    stopReason: "tool_use",
    text: "好的，先看看待辦 secret-plan",
    toolUses: ["list_todos"],
    usage: { input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 1000, cache_read_input_tokens: 500 },
    durationMs: 5,
  });
  tracer.event("tool_call", { tool: "list_todos", toolUseId: "toolu_1", input: { filter: "secret-plan" } });
  tracer.event("tool_result", {
    tool: "list_todos",
    toolUseId: "toolu_1",
    ok: true,
    durationMs: 2,
    preview: "#3 secret-plan",
  });
  tracer.event("tool_result", {
    tool: "delete_todo",
    toolUseId: "toolu_2",
    ok: false,
    durationMs: 0,
    preview: "todo_id: expected an integer",
  });
  tracer.event("approval", { tool: "delete_todo", toolUseId: "toolu_3", input: '{"todo_id":3}', pending: 1 });
  tracer.event("final_answer", { text: "已刪除 secret-plan", turns: 1 });
  tracer.event("delivery", { chunks: 1, ok: true, durationMs: 7 });
}

describe("spans of one run (in-memory exporter)", () => {
  afterEach(() => stopTelemetry());

  async function spansOf(capture: "on" | "off"): Promise<ReadableSpan[]> {
    const config = testConfig({ OTEL_CAPTURE_CONTENT: capture });
    // A new one each time: stopping the provider shuts its exporter down.
    const exporter = new InMemorySpanExporter();
    expect(await startTelemetry(config, silentLogger, { exporter })).toBe(true);
    let finished = 0;
    const inner: RunTracer = { ...nullRunTracer, finish: async () => (finished += 1) };
    const tracer = otelTracerFor(() => inner)("telegram:5:77", "telegram:5");
    recordRun(tracer);
    await tracer.finish();
    expect(finished).toBe(1);
    await flushTelemetry();
    return exporter.getFinishedSpans();
  }

  it("without OTEL_CAPTURE_CONTENT: names, ids, token counts and timings; no content anywhere", async () => {
    const spans = await spansOf("off");
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    expect(spans.map((s) => s.name).sort()).toEqual(
      ["chat claude-test", "deliver", "execute_tool delete_todo", "execute_tool list_todos", "invoke_agent"].sort(),
    );
    const answer = byName("invoke_agent");
    for (const span of spans)
      if (span !== answer) expect(span.parentSpanContext?.spanId).toBe(answer.spanContext().spanId);
    expect(byName("chat claude-test").attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "claude-test",
      "gen_ai.request.max_tokens": 1024,
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_creation.input_tokens": 1000,
      "gen_ai.usage.cache_read.input_tokens": 500,
      "gen_ai.response.finish_reasons": ["tool_use"],
    });
    expect(byName("execute_tool list_todos").attributes).toMatchObject({
      "gen_ai.tool.name": "list_todos",
      "gen_ai.tool.call.id": "toolu_1",
      "bot.tool.ok": true,
    });
    // A call refused before it ran (no tool_call event) is a span too, marked as an error.
    expect(byName("execute_tool delete_todo").status.code).toBe(2);
    expect(answer.events.map((e) => [e.name, e.attributes?.["bot.approval.verdict"]])).toEqual([["approval", "asked"]]);
    expect(byName("deliver").attributes).toMatchObject({ "bot.delivery.chunks": 1, "bot.delivery.ok": true });
    const all = JSON.stringify(spans.map((s) => ({ a: s.attributes, e: s.events })));
    expect(all).not.toContain("secret-plan");
    expect(all).not.toContain("todo_id");
  });

  it("with OTEL_CAPTURE_CONTENT=on: previews of the input, the answers, the tool's arguments and result", async () => {
    const spans = await spansOf("on");
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const answer = byName("invoke_agent").attributes;
    expect(JSON.parse(answer["gen_ai.input.messages"] as string)).toEqual([
      { role: "user", parts: [{ type: "text", content: "把 #3 刪掉 secret-plan" }] },
    ]);
    expect(answer["gen_ai.output.messages"]).toContain("已刪除 secret-plan");
    expect(byName("chat claude-test").attributes["gen_ai.output.messages"]).toContain("好的，先看看待辦 secret-plan");
    const tool = byName("execute_tool list_todos").attributes;
    expect(tool["gen_ai.tool.call.arguments"]).toBe('{"filter":"secret-plan"}');
    expect(tool["gen_ai.tool.call.result"]).toBe("#3 secret-plan");
  });

  it("the start-up line says whether content is captured (on/off), not a hidden `content` field (newcomer round 4)", async () => {
    for (const capture of ["on", "off"] as const) {
      const destination = new PassThrough();
      let written = "";
      destination.on("data", (chunk: Buffer) => (written += chunk.toString()));
      // The real logger, content logging off (the default): it hides every `content` field.
      const log = createLogger({ destination, pretty: false });
      expect(
        await startTelemetry(testConfig({ OTEL_CAPTURE_CONTENT: capture }), log, {
          exporter: new InMemorySpanExporter(),
        }),
      ).toBe(true);
      await stopTelemetry();
      const line = JSON.parse(written.trim().split("\n").at(-1)!) as Record<string, unknown>;
      expect(line.msg).toBe(
        `OpenTelemetry traces are exported (OTEL_EXPORTER_OTLP_ENDPOINT); message content in spans: ${capture} (OTEL_CAPTURE_CONTENT)`,
      );
      expect(line.captureContent).toBe(capture);
      expect(line.endpoint).toBe("(in-process exporter)");
      expect(line).not.toHaveProperty("content");
      expect(written).not.toContain("[content not logged");
    }
  });

  it("with OTEL_CAPTURE_CONTENT=on: keys and tokens a person pasted are redacted in every content attribute", async () => {
    const exporter = new InMemorySpanExporter();
    expect(await startTelemetry(testConfig({ OTEL_CAPTURE_CONTENT: "on" }), silentLogger, { exporter })).toBe(true);
    // Shapes only: none of these was registered as a secret of this process.
    const pasted = { ...fakePastedSecrets(), bearer: "fAkE0".repeat(6) };
    const tracer = otelTracerFor(() => nullRunTracer)("telegram:5:79", "telegram:5");
    tracer.event("user_input", {
      text: `我的金鑰 ${pasted.anthropic}，機器人 token ${pasted.telegram}，幫我存起來`,
      historyMessages: 0,
    });
    tracer.event("model_call", { model: "claude-test", turn: 1, messages: 1, tools: 1, maxTokens: 1024 });
    tracer.event("model_response", {
      stopReason: "tool_use",
      text: `收到 ${pasted.openai}`,
      toolUses: ["fetch"],
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    tracer.event("tool_call", {
      tool: "fetch",
      toolUseId: "toolu_9",
      input: { url: "https://api.example.com", headers: { Authorization: `Bearer ${pasted.bearer}` } },
    });
    tracer.event("tool_result", {
      tool: "fetch",
      toolUseId: "toolu_9",
      ok: true,
      durationMs: 1,
      preview: `discord ${pasted.discord} github ${pasted.github}`,
    });
    tracer.event("final_answer", { text: `已記下 ${pasted.anthropic}`, turns: 1 });
    await tracer.finish();
    await flushTelemetry();
    const spans = exporter.getFinishedSpans();
    const all = JSON.stringify(spans.map((s) => ({ a: s.attributes, e: s.events })));
    for (const value of Object.values(pasted)) expect(all).not.toContain(value);
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    // The rest of the text is kept, each key replaced where it stood.
    expect(JSON.parse(byName("invoke_agent").attributes["gen_ai.input.messages"] as string)).toEqual([
      {
        role: "user",
        parts: [{ type: "text", content: "我的金鑰 [redacted]，機器人 token [redacted]，幫我存起來" }],
      },
    ]);
    const tool = byName("execute_tool fetch").attributes;
    expect(tool["gen_ai.tool.call.arguments"]).toBe(
      '{"url":"https://api.example.com","headers":{"Authorization":"Bearer [redacted]"}}',
    );
    expect(tool["gen_ai.tool.call.result"]).toBe("discord [redacted] github [redacted]");
    expect(byName("chat claude-test").attributes["gen_ai.output.messages"]).toContain("收到 [redacted]");
  });

  it("joins the message's trace: under its receipt span with the job's span linked, or under the job when they are one trace", async () => {
    const exporter = new InMemorySpanExporter();
    expect(await startTelemetry(testConfig({}), silentLogger, { exporter })).toBe(true);
    const tracer = trace.getTracer("test");
    const runIn = async (job: string, traceparent: string | undefined) => {
      const span = tracer.startSpan(job);
      await context.with(trace.setSpan(context.active(), span), async () => {
        const run = otelTracerFor(() => nullRunTracer)("telegram:5:78", "telegram:5", { traceparent });
        await run.finish();
      });
      span.end();
      return span.spanContext();
    };
    // The receipt of a message that queued behind another: its own trace, carried in the message.
    const receipt = tracer.startSpan("receive telegram");
    const message = context.with(trace.setSpan(context.active(), receipt), () => carryTrace({ messageId: "78" }));
    receipt.end();
    expect(message.traceparent).toBe(`00-${receipt.spanContext().traceId}-${receipt.spanContext().spanId}-01`);
    const otherJob = await runIn("process chats", message.traceparent);
    // The message that started the job: the job's trace is the receipt's.
    const ownJob = await context.with(trace.setSpan(context.active(), receipt), () =>
      runIn("process chats", message.traceparent),
    );
    await flushTelemetry();
    const answers = exporter.getFinishedSpans().filter((s) => s.name === "invoke_agent");
    expect(answers).toHaveLength(2);
    const [behind, own] = answers as [ReadableSpan, ReadableSpan];
    expect(behind.spanContext().traceId).toBe(receipt.spanContext().traceId);
    expect(behind.parentSpanContext?.spanId).toBe(receipt.spanContext().spanId);
    expect(behind.links.map((l) => l.context.spanId)).toEqual([otherJob.spanId]);
    expect(own.parentSpanContext?.spanId).toBe(ownJob.spanId);
    expect(own.links).toEqual([]);
  });
});
