/**
 * The agent loop through the real SDK against the strict fake Messages API.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentDeps, AgentOutcome, MessageParam } from "../../src/agent/contract.js";
import { ModelUnavailableError } from "../../src/agent/errors.js";
import { callSignature, runAgent } from "../../src/agent/loop.js";
import { testContext } from "../helpers/context.js";
import {
  overloaded,
  rateLimited,
  serverError,
  startFakeAnthropic,
  text,
  toolUse,
  toolUses,
  type FakeAnthropic,
  type FakeRequest,
} from "../fakes/anthropic.js";
import { calls, resetCalls, TEST_API_KEY, testDeps } from "./helpers.js";

let fake: FakeAnthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  resetCalls();
  fake.requests.length = 0;
  fake.rejections.length = 0;
});

function answer(outcome: AgentOutcome): Extract<AgentOutcome, { kind: "answer" }> {
  if (outcome.kind !== "answer") throw new Error(`expected an answer, got ${outcome.kind}`);
  return outcome;
}

/** The run's history is valid: the strict fake accepts it on the next message. */
async function expectValidFollowUp(deps: AgentDeps, history: MessageParam[]): Promise<void> {
  const before = fake.requests.length;
  fake.enqueue(text("不客氣！"));
  const next = answer(await runAgent({ history, userText: "謝謝", context: testContext() }, deps));
  expect(fake.rejections).toEqual([]);
  expect(next.text).toBe("不客氣！");
  expect(fake.requests.length).toBe(before + 1);
  expect(fake.requests.at(-1)!.messages.length).toBe(history.length + 1);
}

function lastUserBlocks(request: FakeRequest): Record<string, unknown>[] {
  const last = request.messages.at(-1)!;
  expect(last.role).toBe("user");
  return last.content as Record<string, unknown>[];
}

describe("runAgent", () => {
  it("answers with text alone, caching tools and system, and returns user + assistant messages", async () => {
    const deps = testDeps(fake);
    fake.enqueue(text("你好！有什麼需要幫忙的嗎？"));
    const out = answer(await runAgent({ history: [], userText: "你好", context: testContext() }, deps));
    expect(out.text).toBe("你好！有什麼需要幫忙的嗎？");
    expect(out.messages).toEqual([
      { role: "user", content: "你好" },
      { role: "assistant", content: [{ type: "text", text: "你好！有什麼需要幫忙的嗎？" }] },
    ]);
    const req = fake.requests[0]!;
    expect(req.model).toBe("claude-test-1");
    expect(req.max_tokens).toBe(2048);
    expect(Array.isArray(req.system)).toBe(true);
    const system = req.system as { type: string; text: string; cache_control?: unknown }[];
    expect(system).toHaveLength(1);
    expect(system[0]!.cache_control).toEqual({ type: "ephemeral" });
    expect(system[0]!.text).toContain("Traditional Chinese");
    const tools = req.tools!;
    expect(tools.map((t) => t.name)).toEqual(["add_numbers", "get_time", "lookup", "delete_item"]);
    expect(tools.slice(0, -1).every((t) => t.cache_control === undefined)).toBe(true);
    expect(tools.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    // the breakpoint on the last message lives only in the request, not in the returned history
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "你好", cache_control: { type: "ephemeral" } }] },
    ]);
  });

  it("runs a single tool call and sends its tool_result in the next user message", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUse("add_numbers", { a: 2, b: 40 }, { id: "toolu_add1", text: "我來算一下。" }),
      text("2 + 40 = 42"),
    );
    const out = answer(await runAgent({ history: [], userText: "2+40 是多少？", context: testContext() }, deps));
    expect(out.text).toBe("2 + 40 = 42");
    expect(calls.add_numbers).toEqual([{ a: 2, b: 40 }]);
    expect(fake.requests).toHaveLength(2);
    expect(lastUserBlocks(fake.requests[1]!)).toEqual([
      { type: "tool_result", tool_use_id: "toolu_add1", content: "42", cache_control: { type: "ephemeral" } },
    ]);
    expect(out.messages).toEqual([
      { role: "user", content: "2+40 是多少？" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "我來算一下。" },
          { type: "tool_use", id: "toolu_add1", name: "add_numbers", input: { a: 2, b: 40 } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_add1", content: "42" }] },
      { role: "assistant", content: [{ type: "text", text: "2 + 40 = 42" }] },
    ]);
    const toolEvents = deps.tracer.of("tool_result");
    expect(toolEvents).toHaveLength(1);
    expect(toolEvents[0]).toMatchObject({ tool: "add_numbers", ok: true, preview: "42" });
    await expectValidFollowUp(deps, out.messages);
  });

  it("answers two parallel calls of one turn in one user message, in order", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUses([
        { name: "get_time", input: { timezone: "Asia/Taipei" }, id: "toolu_t" },
        { name: "add_numbers", input: { a: 1, b: 1 }, id: "toolu_a" },
      ]),
      text("現在是凌晨三點，1+1=2。"),
    );
    const out = answer(await runAgent({ history: [], userText: "幾點？1+1？", context: testContext() }, deps));
    expect(out.text).toBe("現在是凌晨三點，1+1=2。");
    const results = lastUserBlocks(fake.requests[1]!);
    expect(results.map((b) => [b.type, b.tool_use_id, b.content])).toEqual([
      ["tool_result", "toolu_t", "2026-11-30 03:00 (Asia/Taipei)"],
      ["tool_result", "toolu_a", "2"],
    ]);
    expect(fake.requests[1]!.messages).toHaveLength(3);
    await expectValidFollowUp(deps, out.messages);
  });

  it("returns a tool's failure as a tool_result with is_error", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUse("lookup", { query: "x", filter: { city: "臺北市", days: 1 } }, { id: "toolu_l" }),
      text("查不到結果。"),
    );
    const out = answer(await runAgent({ history: [], userText: "查 x", context: testContext() }, deps));
    expect(out.text).toBe("查不到結果。");
    expect(lastUserBlocks(fake.requests[1]!)[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_l",
      is_error: true,
      content: 'No results for "x". Try another query.',
    });
    // invalid input is an is_error result too, naming the field
    fake.enqueue(toolUse("add_numbers", { a: "abc", b: 1 }, { id: "toolu_bad" }), text("請給我數字。"));
    await runAgent({ history: [], userText: "abc+1", context: testContext() }, deps);
    const bad = lastUserBlocks(fake.requests.at(-1)!)[0]!;
    expect(bad.is_error).toBe(true);
    expect(bad.content).toContain("a: expected a number");
  });

  it("refuses the third identical call (keys in any order) and runs the first two", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUse("lookup", { query: "雨", filter: { city: "臺北市", days: 3 } }),
      toolUse("lookup", { filter: { days: 3, city: "臺北市" }, query: "雨" }),
      toolUse("lookup", { query: "雨", filter: { days: 3, city: "臺北市" } }),
      text("查詢一直失敗，請稍後再試。"),
    );
    const out = answer(await runAgent({ history: [], userText: "會下雨嗎", context: testContext() }, deps));
    expect(out.text).toBe("查詢一直失敗，請稍後再試。");
    expect(calls.lookup).toHaveLength(2);
    const third = lastUserBlocks(fake.requests[3]!)[0]!;
    expect(third.is_error).toBe(true);
    expect(third.content).toContain("will not change the result");
    expect(third.content).toContain("tell the user what is blocking you");
    expect(callSignature("f", { b: { y: 1, x: [2, { d: 1, c: 2 }] }, a: 1 })).toBe(
      callSignature("f", { a: 1, b: { x: [2, { c: 2, d: 1 }], y: 1 } }),
    );
    expect(deps.tracer.of("tool_result").filter((e) => e.refused === "repeated")).toHaveLength(1);
    await expectValidFollowUp(deps, out.messages);
  });

  it("stops after MAX_TURNS model calls with a localized message and a valid history", async () => {
    const deps = testDeps(fake, { env: { MAX_TURNS: "3" } });
    for (let i = 0; i < 3; i++) fake.enqueue(toolUse("add_numbers", { a: i, b: 1 }));
    const out = answer(await runAgent({ history: [], userText: "一直算", context: testContext() }, deps));
    expect(fake.requests).toHaveLength(3);
    expect(calls.add_numbers).toHaveLength(3);
    expect(out.text).toContain("太多步驟");
    expect(out.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: out.text }] });
    expect(out.messages.at(-2)!.role).toBe("user");
    const english = answer(
      await (async () => {
        for (let i = 0; i < 3; i++) fake.enqueue(toolUse("add_numbers", { a: i, b: 2 }));
        return runAgent({ history: [], userText: "go", context: testContext({ locale: "en" }) }, deps);
      })(),
    );
    expect(english.text).toContain("too many steps");
    expect(deps.tracer.of("final_answer").at(-1)).toMatchObject({ limit: "max_turns", turns: 3 });
    await expectValidFollowUp(deps, out.messages);
  });

  it("never runs a tool_use cut off by max_tokens, tells the model, and raises the budget", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      {
        content: [
          { type: "text", text: "好，我來加。" },
          { type: "tool_use", id: "toolu_cut", name: "add_numbers", input: { a: 1 } },
        ],
        stop_reason: "max_tokens",
      },
      toolUse("add_numbers", { a: 1, b: 2 }, { id: "toolu_ok" }),
      text("1+2=3"),
    );
    const out = answer(await runAgent({ history: [], userText: "1+2", context: testContext() }, deps));
    expect(out.text).toBe("1+2=3");
    expect(calls.add_numbers).toEqual([{ a: 1, b: 2 }]);
    const cut = lastUserBlocks(fake.requests[1]!)[0]!;
    expect(cut).toMatchObject({ tool_use_id: "toolu_cut", is_error: true });
    expect(cut.content).toContain("cut off by the output token limit");
    expect(fake.requests[0]!.max_tokens).toBe(2048);
    expect(fake.requests[1]!.max_tokens).toBe(4096);
    await expectValidFollowUp(deps, out.messages);
  });

  it("returns a text answer cut by max_tokens as it is, with a short note", async () => {
    const deps = testDeps(fake);
    fake.enqueue(text("這是一個很長的故事，從前從前", "max_tokens"));
    const out = answer(await runAgent({ history: [], userText: "講故事", context: testContext() }, deps));
    expect(out.text).toBe("這是一個很長的故事，從前從前\n\n（回答太長，已被截斷。）");
    expect(out.messages.at(-1)).toEqual({
      role: "assistant",
      content: [{ type: "text", text: "這是一個很長的故事，從前從前" }],
    });
    await expectValidFollowUp(deps, out.messages);
  });

  it("continues a pause_turn by sending the paused turn back", async () => {
    const deps = testDeps(fake);
    fake.enqueue(text("讓我想想……", "pause_turn"), text("答案是 42。"));
    const out = answer(await runAgent({ history: [], userText: "生命的意義？", context: testContext() }, deps));
    expect(out.text).toBe("答案是 42。");
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.messages.at(-1)).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "讓我想想……" }],
    });
    await expectValidFollowUp(deps, out.messages);
  });

  it(
    "asks beforeModelCall before every model call; its text ends the run there, the history " +
      "valid (after tools, after a pause_turn, before anything)",
    async () => {
      const stopAt = (n: number) => {
        let asked = 0;
        return {
          deps: { ...testDeps(fake), beforeModelCall: async () => (++asked >= n ? "預算用完了。" : undefined) },
          asked: () => asked,
        };
      };
      // after a tool turn: the call's result is answered, the text closes the run
      const afterTools = stopAt(2);
      fake.enqueue(toolUse("get_time", { timezone: "Asia/Taipei" }));
      const stopped = answer(
        await runAgent({ history: [], userText: "幾點？", context: testContext() }, afterTools.deps),
      );
      expect(stopped.text).toBe("預算用完了。");
      expect(fake.requests).toHaveLength(1);
      expect(afterTools.asked()).toBe(2);
      expect(stopped.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(stopped.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "預算用完了。" }] });
      await expectValidFollowUp(testDeps(fake), stopped.messages);

      // after a pause_turn: the text joins the paused assistant turn (no second assistant message)
      fake.requests.length = 0;
      const afterPause = stopAt(2);
      fake.enqueue(text("讓我想想……", "pause_turn"));
      const paused = answer(
        await runAgent({ history: [], userText: "生命的意義？", context: testContext() }, afterPause.deps),
      );
      expect(paused.messages).toEqual([
        { role: "user", content: "生命的意義？" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "讓我想想……" },
            { type: "text", text: "預算用完了。" },
          ],
        },
      ]);
      await expectValidFollowUp(testDeps(fake), paused.messages);

      // before the first call: no model call, nothing to keep
      fake.requests.length = 0;
      const none = answer(await runAgent({ history: [], userText: "你好", context: testContext() }, stopAt(1).deps));
      expect(none).toEqual({ kind: "answer", text: "預算用完了。", messages: [] });
      expect(fake.requests).toHaveLength(0);
    },
  );

  it("answers a refusal politely and an empty answer with a fallback, never crashing", async () => {
    const deps = testDeps(fake);
    fake.enqueue({ content: [], stop_reason: "refusal" });
    const refused = answer(await runAgent({ history: [], userText: "壞事", context: testContext() }, deps));
    expect(refused.text).toContain("無法協助");
    // a refused run gives nothing to store: neither the user turn nor the apology
    expect(refused).toMatchObject({ refused: true, messages: [] });
    // also after tool calls: the whole run is dropped
    fake.enqueue(toolUse("get_time", { timezone: "UTC" }), {
      content: [{ type: "text", text: "I won't" }],
      stop_reason: "refusal",
    });
    const late = answer(await runAgent({ history: [], userText: "壞事 2", context: testContext() }, deps));
    expect(late).toMatchObject({ refused: true, messages: [] });

    fake.enqueue({ content: [{ type: "text", text: "  \n" }], stop_reason: "end_turn" });
    const empty = answer(await runAgent({ history: [], userText: "?", context: testContext({ locale: "en" }) }, deps));
    expect(empty.text).toContain("did not come up with an answer");
    await expectValidFollowUp(deps, empty.messages);
  });

  it("a model_context_window_exceeded stop or a 400 'prompt is too long' is a context_window error, never an answer", async () => {
    const deps = testDeps(fake);
    fake.enqueue({ content: [{ type: "text", text: "cut in the mid" }], stop_reason: "model_context_window_exceeded" });
    const stopped = await runAgent({ history: [], userText: "long", context: testContext() }, deps).catch(
      (e: unknown) => e,
    );
    expect(stopped).toMatchObject({ name: "ModelUnavailableError", reason: "context_window", retryable: false });
    fake.enqueue({
      status: 400,
      errorType: "invalid_request_error",
      message: "prompt is too long: 210351 tokens > 200000 maximum",
    });
    const refused = await runAgent(
      { history: [], userText: "long", context: testContext({ locale: "en" }) },
      deps,
    ).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: "ModelUnavailableError", reason: "context_window", retryable: false });
    expect((refused as { userMessage(l: string): string }).userMessage("en")).toContain("/reset");
  });

  it("drops empty text blocks from the assistant content it sends back", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      {
        content: [
          { type: "text", text: " " },
          { type: "tool_use", id: "toolu_e", name: "get_time", input: { timezone: "UTC" } },
        ],
        stop_reason: "tool_use",
      },
      text("03:00"),
    );
    const out = answer(await runAgent({ history: [], userText: "time", context: testContext() }, deps));
    expect(out.messages[1]).toEqual({
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_e", name: "get_time", input: { timezone: "UTC" } }],
    });
    expect(fake.rejections).toEqual([]);
  });

  it("throws a retryable ModelUnavailableError on 529 after the SDK's retries", async () => {
    const deps = testDeps(fake, { maxRetries: 1 });
    fake.enqueue(overloaded(), overloaded());
    const started = Date.now();
    const error = await runAgent({ history: [], userText: "hi", context: testContext() }, deps).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelUnavailableError);
    const e = error as ModelUnavailableError;
    expect(e.retryable).toBe(true);
    expect(e.reason).toBe("overloaded");
    expect(e.status).toBe(529);
    expect(e.requestId).toMatch(/^req_/);
    expect(e.message).toContain("Overloaded");
    expect(fake.requests).toHaveLength(2); // first attempt + one retry
    expect(Date.now() - started).toBeLessThan(3000);
    expect(e.userMessage("zh-TW")).toContain("稍後再試");
    expect(deps.tracer.of("error")[0]).toMatchObject({ reason: "overloaded", retryable: true, status: 529 });
  });

  it("recovers when a retry succeeds (429 with retry-after, then 500, then an answer)", async () => {
    const deps = testDeps(fake, { maxRetries: 2 });
    fake.enqueue(rateLimited(0.01), { ...serverError(), headers: { "retry-after-ms": "10" } }, text("好了"));
    const out = answer(await runAgent({ history: [], userText: "hi", context: testContext() }, deps));
    expect(out.text).toBe("好了");
    expect(fake.requests).toHaveLength(3);
  });

  it("maps 401 to a non-retryable error that never shows the API key", async () => {
    const deps = testDeps(fake);
    fake.enqueue({ status: 401, errorType: "authentication_error", message: `invalid x-api-key ${TEST_API_KEY}` });
    const error = (await runAgent({ history: [], userText: "hi", context: testContext() }, deps).catch(
      (e: unknown) => e,
    )) as ModelUnavailableError;
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error.retryable).toBe(false);
    expect(error.reason).toBe("auth");
    expect(error.message).not.toContain(TEST_API_KEY);
    expect(JSON.stringify(deps.tracer.events)).not.toContain(TEST_API_KEY);
    expect(error.userMessage("en")).toContain("could not be processed");
  });

  it("maps an unreachable API to a retryable connection error", async () => {
    const closed = await startFakeAnthropic();
    await closed.close();
    const deps = testDeps(closed);
    const error = (await runAgent({ history: [], userText: "hi", context: testContext() }, deps).catch(
      (e: unknown) => e,
    )) as ModelUnavailableError;
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error).toMatchObject({ retryable: true, reason: "connection", status: undefined });
  });

  it("maps a refused request (400) to a non-retryable bad_request", async () => {
    const deps = testDeps(fake);
    const history: MessageParam[] = [{ role: "assistant", content: "我先說話" }];
    const error = (await runAgent({ history, userText: "hi", context: testContext() }, deps).catch(
      (e: unknown) => e,
    )) as ModelUnavailableError;
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(error).toMatchObject({ retryable: false, reason: "bad_request", status: 400 });
    expect(error.message).toContain('first message must use the "user" role');
    expect(fake.rejections).toHaveLength(1);
  });
});
