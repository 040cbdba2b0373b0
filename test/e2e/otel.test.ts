/**
 * OpenTelemetry end to end (issue 43): the whole stack (real grammy against the fake Bot API,
 * real Redis, the worker, the scripted model) with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at an
 * in-process OTLP/HTTP collector (test/fakes/otlp.ts), which decodes what the real exporter sends.
 * One answer with a tool call and an approval: the span tree from the adapter's receipt through
 * BullMQ's job to the answer, its model and tool calls and the delivery, the resumed answer in the
 * same trace with a link to the press's job, the GenAI attributes with
 * the token counts the model reported, and no message content (OTEL_CAPTURE_CONTENT is off).
 */
import type { RedisClient } from "../../src/redis.js";
import { afterAll, expect, it } from "vitest";
import { flushTelemetry } from "../../src/telemetry/otel.js";
import { startFakeCollector, type ReceivedSpan } from "../fakes/otlp.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { approvalsModel } from "./scripted-approvals.js";

const collector = await startFakeCollector();
afterAll(() => collector.close());

let stack: Stack;
let redis: RedisClient;
useStack(
  { model: approvalsModel, env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/` } },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const WAIT = 15_000;

/** The spans collected so far, flushing the SDK's batch until `found` finds what it looks for. */
async function spansUntil<T>(found: (spans: ReceivedSpan[]) => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + WAIT;
  for (;;) {
    await flushTelemetry();
    const result = found(collector.spans);
    if (result !== undefined) return result;
    if (Date.now() > deadline) throw new Error(`no ${what} among ${collector.spans.map((s) => s.name).join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function childrenOf(span: ReceivedSpan): ReceivedSpan[] {
  return collector.spans
    .filter((s) => s.parentSpanId === span.spanId && s.traceId === span.traceId)
    .sort((a, b) => a.startMs - b.startMs);
}

function parentOf(span: ReceivedSpan): ReceivedSpan | undefined {
  return collector.spans.find((s) => s.spanId === span.parentSpanId && s.traceId === span.traceId);
}

/** The names from the root of `span`'s trace down to `span`. */
function pathTo(span: ReceivedSpan): string[] {
  const path = [span.name];
  for (let p = parentOf(span); p; p = parentOf(p)) path.unshift(p.name);
  return path;
}

it("one answer with a tool call and an approval: GenAI spans from the receipt through the job to delivery", async () => {
  const tg = stack.telegram;
  const user = tg.user(7801, "Otto");
  const chat = tg.privateChat(user);
  await seedTodos(redis, "telegram", "7801", ["買牛奶", "繳電費"]);
  tg.sendUserMessage({ chat, from: user, text: "list todos and delete #1" });
  const prompt = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7801 && tg.buttons(m).length > 0),
    WAIT,
    "the approval prompt",
  );
  const yes = tg.approveData(prompt);
  tg.pressButton({ from: user, message: prompt, data: yes });
  await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7801 && m.text.includes("delete_todo:")),
    WAIT,
    "the answer after the approval",
  );
  expect(await todoLines(redis, "telegram", "7801")).toEqual(["#2 繳電費"]);

  const conversation = "telegram:7801";
  const answers = await spansUntil((spans) => {
    const mine = spans.filter(
      (s) => s.name === "invoke_agent" && s.attributes["gen_ai.conversation.id"] === conversation,
    );
    const resumed = mine.find((s) => s.attributes["bot.run.kind"] === "resumed");
    const deliveredResumed = resumed && childrenOf(resumed).some((c) => c.name === "deliver");
    // The press's job span ends after the answer it ran: wait for it too.
    const linked = resumed?.links.every((l) =>
      spans.some((s) => s.spanId === l.spanId && s.name === "process decisions"),
    );
    return mine.length >= 2 && deliveredResumed && linked ? mine : undefined;
  }, "two answer spans of the conversation");
  const first = answers.find((s) => s.attributes["bot.run.kind"] === "answer")!;
  const resumed = answers.find((s) => s.attributes["bot.run.kind"] === "resumed")!;
  expect(first).toBeDefined();
  for (const span of collector.spans) expect(span.service).toBe("taiwan-tool-bot");

  // The first run: receipt → BullMQ add → BullMQ process → the answer, in one trace.
  expect(pathTo(first)).toEqual(["receive telegram", "add chats.chat", "process chats", "invoke_agent"]);
  const receipt = collector.spans.find((s) => s.traceId === first.traceId && s.parentSpanId === "")!;
  expect(receipt.kind).toBe(2); // SERVER
  expect(receipt.attributes).toMatchObject({
    "bot.platform": "telegram",
    "gen_ai.conversation.id": conversation,
    "bot.outcome": "queued",
  });
  expect(first.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": "anthropic",
  });

  // Its model call asked for both tools; list_todos ran at once, delete_todo waits for the approval.
  const firstChildren = childrenOf(first);
  expect(firstChildren.map((s) => s.name)).toEqual([`chat ${stack.config.ANTHROPIC_MODEL}`, "execute_tool list_todos"]);
  const [chat1, listTodos] = firstChildren as [ReceivedSpan, ReceivedSpan];
  const answered = stack.model.answered.filter((a) =>
    JSON.stringify(a.request.messages).includes("list todos and delete #1"),
  );
  expect(answered).toHaveLength(2);
  const usage1 = answered[0]!.usage;
  expect(chat1.kind).toBe(3); // CLIENT
  expect(chat1.attributes).toMatchObject({
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": stack.config.ANTHROPIC_MODEL,
    "gen_ai.response.finish_reasons": ["tool_use"],
    "gen_ai.usage.input_tokens": usage1.input_tokens,
    "gen_ai.usage.output_tokens": usage1.output_tokens,
    "gen_ai.usage.cache_read.input_tokens": usage1.cache_read_input_tokens,
    "gen_ai.usage.cache_creation.input_tokens": usage1.cache_creation_input_tokens,
  });
  expect(listTodos.attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "list_todos",
    "bot.tool.ok": true,
  });
  const toolUses = answered[0]!.content.filter((b) => b.type === "tool_use") as { id: string; name: string }[];
  const deleteId = toolUses.find((b) => b.name === "delete_todo")!.id;
  expect(listTodos.attributes["gen_ai.tool.call.id"]).toBe(toolUses.find((b) => b.name === "list_todos")!.id);
  const asked = first.events.find((e) => e.name === "approval")!;
  expect(asked.attributes).toMatchObject({
    "bot.approval.verdict": "asked",
    "gen_ai.tool.name": "delete_todo",
    "gen_ai.tool.call.id": deleteId,
  });

  // The resumed answer stays in the message's trace, under its receipt; the press's own trace
  // (receipt of the approval → BullMQ add → process) is linked from it.
  expect(resumed.traceId).toBe(first.traceId);
  expect(pathTo(resumed)).toEqual(["receive telegram", "invoke_agent"]);
  expect(resumed.links).toHaveLength(1);
  const press = collector.spans.find((s) => s.spanId === resumed.links[0]!.spanId)!;
  expect(press.traceId).toBe(resumed.links[0]!.traceId);
  expect(pathTo(press)).toEqual(["receive approval", "add decisions.decision", "process decisions"]);
  expect(collector.spans.find((s) => s.traceId === press.traceId && s.parentSpanId === "")!.attributes).toMatchObject({
    "bot.outcome": "accepted",
  });
  expect(resumed.events.find((e) => e.name === "approval")?.attributes).toMatchObject({
    "bot.approval.verdict": "approved",
    "gen_ai.tool.call.id": deleteId,
  });
  const resumedChildren = childrenOf(resumed);
  expect(resumedChildren.map((s) => s.name)).toEqual([
    "execute_tool delete_todo",
    `chat ${stack.config.ANTHROPIC_MODEL}`,
    "deliver",
  ]);
  const [deleteTodo, chat2, deliver] = resumedChildren as [ReceivedSpan, ReceivedSpan, ReceivedSpan];
  expect(deleteTodo.attributes).toMatchObject({
    "gen_ai.tool.name": "delete_todo",
    "gen_ai.tool.call.id": deleteId,
    "bot.tool.ok": true,
  });
  const usage2 = answered[1]!.usage;
  expect(chat2.attributes).toMatchObject({
    "gen_ai.response.finish_reasons": ["end_turn"],
    "gen_ai.usage.input_tokens": usage2.input_tokens,
    "gen_ai.usage.output_tokens": usage2.output_tokens,
  });
  expect(deliver.attributes).toMatchObject({ "bot.delivery.chunks": 1, "bot.delivery.ok": true });
  for (const span of [first, resumed]) expect(span.endMs).toBeGreaterThanOrEqual(childrenOf(span).at(-1)!.endMs);

  // No content without OTEL_CAPTURE_CONTENT=on: neither what the user wrote nor the todos nor the answer.
  const everything = JSON.stringify(collector.spans);
  for (const text of ["list todos", "買牛奶", "繳電費", "已刪除"]) expect(everything).not.toContain(text);
  for (const span of collector.spans)
    for (const key of Object.keys(span.attributes))
      expect(key).not.toMatch(/^gen_ai\.(input|output)\.messages$|^gen_ai\.tool\.call\.(arguments|result)$/);
  // BullMQ's housekeeping (its stalled-job check every 3 s) is not exported: only the job's way.
  const bullmq = collector.spans.filter((s) => s.scope === "bullmq");
  expect(bullmq.length).toBeGreaterThanOrEqual(4);
  for (const span of bullmq) expect(span.name).toMatch(/^(add|process) /);
  expect(collector.rejections).toEqual([]);
});
