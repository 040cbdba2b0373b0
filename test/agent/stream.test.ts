/**
 * The agent loop with streaming on (`onEvent` given: `messages.stream`), through the real SDK
 * against the strict fake Messages API speaking server-sent events.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/contract.js";
import { ModelUnavailableError } from "../../src/agent/errors.js";
import { runAgent } from "../../src/agent/loop.js";
import { testContext } from "../helpers/context.js";
import { hang, startFakeAnthropic, text, toolUse, type FakeAnthropic } from "../fakes/anthropic.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { waitFor } from "../worker/harness.js";
import { calls, resetCalls, testDeps } from "./helpers.js";

let fake: FakeAnthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  resetCalls();
  fake.reset();
});

function collect(): { events: AgentEvent[]; onEvent: (e: AgentEvent) => void } {
  const events: AgentEvent[] = [];
  return { events, onEvent: (e) => events.push(e) };
}

describe("streamed model calls", () => {
  it("reports text deltas as they arrive and answers with the same text and usage as a plain call", async () => {
    const answer = "臺北市今天晴時多雲，氣溫 22 到 28 度。😀 出門記得帶水。".repeat(3);
    fake.enqueue({ ...text(answer), stream: { chunkChars: 7, totalMs: 200 } });
    const { events, onEvent } = collect();
    const usages: unknown[] = [];
    const deps = { ...testDeps(fake), onEvent, onUsage: (u: unknown) => usages.push(u) };
    const outcome = await runAgent({ history: [], userText: "天氣如何？", context: testContext() }, deps);
    expect(fake.requests[0]!.stream).toBe(true);
    expect(outcome.kind).toBe("answer");
    if (outcome.kind !== "answer") return;
    expect(outcome.text).toBe(answer);
    const deltas = events.filter((e): e is Extract<AgentEvent, { type: "text" }> => e.type === "text");
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.map((d) => d.text).join("")).toBe(answer);
    expect(events[0]).toEqual({ type: "model_call", turn: 1 });
    // usage comes from message_start (input) and message_delta (output), as the fake reported it
    expect(usages).toEqual([
      {
        input_tokens: fake.answered[0]!.usage.input_tokens,
        output_tokens: fake.answered[0]!.usage.output_tokens,
        cache_creation_input_tokens: fake.answered[0]!.usage.cache_creation_input_tokens,
        cache_read_input_tokens: fake.answered[0]!.usage.cache_read_input_tokens,
      },
    ]);
  });

  it("parses a tool input streamed as input_json_delta pieces and reports the tool's status around its run", async () => {
    fake.enqueue(toolUse("add_numbers", { a: 40, b: 2 }, { text: "我來算一下。", id: "toolu_stream_1" }), {
      ...text("答案是 42。"),
      stream: { chunkChars: 2 },
    });
    const { events, onEvent } = collect();
    const outcome = await runAgent(
      { history: [], userText: "40+2?", context: testContext() },
      { ...testDeps(fake), onEvent },
    );
    expect(calls.add_numbers).toEqual([{ a: 40, b: 2 }]);
    expect(outcome.kind === "answer" && outcome.text).toBe("答案是 42。");
    expect(events.map((e) => e.type)).toEqual([
      "model_call",
      "text",
      "tool_use",
      "tool_start",
      "tool_end",
      "model_call",
      "text",
      "text",
      "text",
      "text",
    ]);
    expect(events[3]).toEqual({
      type: "tool_start",
      toolUseId: "toolu_stream_1",
      name: "add_numbers",
      activity: "add_numbers",
    });
    expect(events[4]).toEqual({ type: "tool_end", toolUseId: "toolu_stream_1", ok: true });
    // the second request carries the streamed tool_use back, with its parsed input
    const assistant = fake.requests[1]!.messages[1]!;
    expect(assistant.content).toEqual([
      { type: "text", text: "我來算一下。" },
      { type: "tool_use", id: "toolu_stream_1", name: "add_numbers", input: { a: 40, b: 2 } },
    ]);
  });

  it("an error event mid-stream is a retryable ModelUnavailableError (overloaded), after the deltas already seen", async () => {
    fake.enqueue({
      ...text("這是一段會在中途斷掉的回答，後面還有很多字。"),
      stream: { chunkChars: 5, breakAfterChars: 10 },
    });
    const { events, onEvent } = collect();
    const error = await runAgent(
      { history: [], userText: "hi", context: testContext() },
      { ...testDeps(fake), onEvent },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).reason).toBe("overloaded");
    expect((error as ModelUnavailableError).retryable).toBe(true);
    expect(
      events
        .filter((e) => e.type === "text")
        .map((e) => (e as { text: string }).text)
        .join(""),
    ).toBe("這是一段會在中途斷掉");
  });

  it("an api_error event mid-stream maps to server_error", async () => {
    fake.enqueue({ ...text("abcdefghij"), stream: { chunkChars: 2, breakAfterChars: 2, errorType: "api_error" } });
    const error = await runAgent(
      { history: [], userText: "hi", context: testContext() },
      { ...testDeps(fake), onEvent: () => {} },
    ).catch((e: unknown) => e);
    expect((error as ModelUnavailableError).reason).toBe("server_error");
  });

  it("without onEvent the call is still read as a stream (for its idle bound) and answers the same", async () => {
    fake.enqueue(text("好"));
    const outcome = await runAgent({ history: [], userText: "hi", context: testContext() }, testDeps(fake));
    expect(outcome.kind === "answer" && outcome.text).toBe("好");
    expect(fake.requests[0]!.stream).toBe(true);
  });
});

describe("issue 38 (1): a model that stays silent without streaming (no onEvent)", () => {
  const IDLE_SECONDS = 1;
  const idleDeps = () => testDeps(fake, { env: { STREAM_IDLE_SECONDS: String(IDLE_SECONDS) }, timeoutMs: 120_000 });

  it("a silent call is given up after STREAM_IDLE_SECONDS (not the client's timeout) and asked again: one answer", async () => {
    fake.enqueue(hang(), text("來了"));
    const started = Date.now();
    const outcome = await runAgent(
      { history: [], userText: "hi", context: testContext() },
      { ...idleDeps(), retryUntil: Date.now() + 30_000, modelRetry: { ...TEST_MODEL_RETRY } },
    );
    expect(outcome.kind === "answer" && outcome.text).toBe("來了");
    expect(fake.requests).toHaveLength(2);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(IDLE_SECONDS * 1000 - 50);
    expect(took).toBeLessThan(IDLE_SECONDS * 1000 + 3000);
    await waitFor(() => fake.hanging() === 0, 2000, "the silent call to be closed");
  });

  it("a model that never answers: the busy notice after busyNoticeMs, given up (exhausted) at the silent limit, long before retryUntil", async () => {
    fake.enqueue(...Array.from({ length: 20 }, () => hang()));
    const timing = { ...TEST_MODEL_RETRY, busyNoticeMs: 1500, silentLimitMs: 3500 };
    const started = Date.now();
    let noticeAt = 0;
    const error = await runAgent(
      { history: [], userText: "hi", context: testContext() },
      {
        ...idleDeps(),
        retryUntil: Date.now() + 60_000,
        modelRetry: timing,
        onModelBusy: () => (noticeAt = Date.now()),
      },
    ).catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).exhausted).toBe(true);
    expect((error as ModelUnavailableError).silent).toBe(true);
    expect(noticeAt - started).toBeGreaterThanOrEqual(timing.busyNoticeMs - 50);
    expect(noticeAt - started).toBeLessThan(timing.busyNoticeMs + 1000);
    expect(took).toBeLessThanOrEqual(timing.silentLimitMs + 500);
    expect(fake.requests.length).toBeGreaterThanOrEqual(2);
    await waitFor(() => fake.hanging() === 0, 2000, "the silent calls to be closed");
  });

  it("an answer that streams in for longer than busyNoticeMs shows no busy notice", async () => {
    fake.enqueue({ ...text("慢慢寫完的回答".repeat(4)), stream: { chunkChars: 2, totalMs: 1200 } });
    let noticed = false;
    const outcome = await runAgent(
      { history: [], userText: "hi", context: testContext() },
      {
        ...idleDeps(),
        retryUntil: Date.now() + 30_000,
        modelRetry: { ...TEST_MODEL_RETRY, busyNoticeMs: 300 },
        onModelBusy: () => (noticed = true),
      },
    );
    expect(outcome.kind).toBe("answer");
    expect(noticed).toBe(false);
  });
});
