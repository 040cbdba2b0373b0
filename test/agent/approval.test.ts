/**
 * Dangerous tools in the loop: the run pauses without running them, and resumeAgent finishes it
 * for each verdict. The saved run goes through JSON, as it does through Redis.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentDeps, AgentOutcome, MessageParam, PausedRun } from "../../src/agent/contract.js";
import { resumeAgent, runAgent } from "../../src/agent/loop.js";
import sharp from "sharp";
import { z } from "zod";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox, type ToolExecution } from "../../src/toolbox/toolbox.js";
import { testContext } from "../helpers/context.js";
import { startFakeAnthropic, text, toolUse, toolUses, type FakeAnthropic } from "../fakes/anthropic.js";
import { calls, resetCalls, testDeps, testToolbox } from "./helpers.js";

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

function approval(outcome: AgentOutcome): Extract<AgentOutcome, { kind: "approval" }> {
  if (outcome.kind !== "approval") throw new Error(`expected an approval, got ${outcome.kind}`);
  return outcome;
}
function answer(outcome: AgentOutcome): Extract<AgentOutcome, { kind: "answer" }> {
  if (outcome.kind !== "answer") throw new Error(`expected an answer, got ${outcome.kind}`);
  return outcome;
}
/** Through JSON, as the approval flow stores it in Redis. */
function saved(run: PausedRun): PausedRun {
  return JSON.parse(JSON.stringify(run)) as PausedRun;
}

async function expectValidFollowUp(deps: AgentDeps, history: MessageParam[]): Promise<void> {
  fake.enqueue(text("還需要什麼嗎？"));
  const next = answer(await runAgent({ history, userText: "好的", context: testContext() }, deps));
  expect(fake.rejections).toEqual([]);
  expect(next.text).toBe("還需要什麼嗎？");
}

async function pauseAtDelete(deps: AgentDeps) {
  fake.enqueue(toolUse("delete_item", { id: 3 }, { id: "toolu_del", text: "我來刪除 #3。" }));
  return approval(await runAgent({ history: [], userText: "刪掉 #3", context: testContext() }, deps));
}

describe("dangerous tools", () => {
  it("pause the run without running the tool", async () => {
    const deps = testDeps(fake);
    const out = await pauseAtDelete(deps);
    expect(calls.delete_item).toBeUndefined();
    expect(out.call).toEqual({ toolUseId: "toolu_del", name: "delete_item", input: { id: 3 } });
    expect(out.run.pending).toEqual([out.call]);
    expect(out.run.results).toEqual([]);
    expect(out.run.turns).toBe(1);
    expect(out.run.messages).toHaveLength(2);
    expect(out.run.messages.at(-1)!.role).toBe("assistant");
    expect(fake.requests).toHaveLength(1);
    expect(deps.tracer.of("approval")[0]).toMatchObject({ tool: "delete_item", toolUseId: "toolu_del" });
  });

  it("answer a call that cannot succeed at once, without asking anyone", async () => {
    const deps = testDeps(fake);
    fake.enqueue(toolUse("delete_item", { id: 404 }, { id: "toolu_404" }), text("沒有 #404 這一項。"));
    const out = answer(await runAgent({ history: [], userText: "刪掉 #404", context: testContext() }, deps));
    expect(calls.delete_item).toBeUndefined();
    expect(out.text).toBe("沒有 #404 這一項。");
    expect(fake.requests[1]!.messages.at(-1)!.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_404",
        content: "There is no item #404.",
        is_error: true,
        cache_control: { type: "ephemeral" },
      },
    ]);
    expect(deps.tracer.of("approval")).toEqual([]);
    await expectValidFollowUp(deps, out.messages);
  });

  it("run exactly once when approved, then the loop continues to an answer", async () => {
    const deps = testDeps(fake);
    const paused = await pauseAtDelete(deps);
    fake.enqueue(text("已刪除 #3。"));
    const once = new Map<string, ToolExecution>();
    const executeOnce = async (id: string, execute: () => Promise<ToolExecution>) => {
      const done = once.get(id);
      if (done) return done;
      const result = await execute();
      once.set(id, result);
      return result;
    };
    const out = answer(
      await resumeAgent(saved(paused.run), "approved", { ...deps, context: testContext(), executeOnce }),
    );
    expect(out.text).toBe("已刪除 #3。");
    expect(calls.delete_item).toEqual([{ id: 3 }]);
    expect(fake.requests[1]!.messages.at(-1)).toMatchObject({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_del", content: "Deleted item #3." }],
    });
    expect(out.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(out.messages[0]).toEqual({ role: "user", content: "刪掉 #3" });

    // a redelivered decision resumes the same saved run again: executeOnce keeps the tool from running twice
    fake.enqueue(text("已刪除 #3。"));
    await resumeAgent(saved(paused.run), "approved", { ...deps, context: testContext(), executeOnce });
    expect(calls.delete_item).toEqual([{ id: 3 }]);
    await expectValidFollowUp(deps, out.messages);
  });

  it("answer a declined call with an is_error tool_result the model can act on", async () => {
    const deps = testDeps(fake);
    const paused = await pauseAtDelete(deps);
    fake.enqueue(text("好的，沒有刪除。"));
    const out = answer(await resumeAgent(saved(paused.run), "declined", { ...deps, context: testContext() }));
    expect(out.text).toBe("好的，沒有刪除。");
    expect(calls.delete_item).toBeUndefined();
    const result = (fake.requests[1]!.messages.at(-1)!.content as Record<string, unknown>[])[0]!;
    expect(result).toMatchObject({ type: "tool_result", tool_use_id: "toolu_del", is_error: true });
    expect(result.content).toContain("The user declined this action");
    await expectValidFollowUp(deps, out.messages);
  });

  it("tell the model an expired approval was not run", async () => {
    const deps = testDeps(fake, { env: { CONFIRM_TIMEOUT_SECONDS: "60" } });
    const paused = await pauseAtDelete(deps);
    fake.enqueue(text("確認逾時，沒有刪除。"));
    const out = answer(await resumeAgent(saved(paused.run), "expired", { ...deps, context: testContext() }));
    const result = (fake.requests[1]!.messages.at(-1)!.content as Record<string, unknown>[])[0]!;
    expect(result.is_error).toBe(true);
    expect(result.content).toContain("within 60 seconds");
    expect(calls.delete_item).toBeUndefined();
    await expectValidFollowUp(deps, out.messages);
  });

  it("close a superseded run without calling the model", async () => {
    const deps = testDeps(fake);
    const paused = await pauseAtDelete(deps);
    const out = answer(await resumeAgent(saved(paused.run), "superseded", { ...deps, context: testContext() }));
    expect(fake.requests).toHaveLength(1);
    expect(calls.delete_item).toBeUndefined();
    expect(out.text).toBe("沒有收到確認，先前的操作已取消。");
    expect(out.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    const result = (out.messages[2]!.content as unknown as Record<string, unknown>[])[0]!;
    expect(result.is_error).toBe(true);
    expect(result.content).toContain("sent a new message instead of confirming");
    await expectValidFollowUp(deps, out.messages);
  });

  it("run the safe calls of a mixed turn at once and keep tool_result order", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUses([
        { name: "delete_item", input: { id: 7 }, id: "toolu_d" },
        { name: "add_numbers", input: { a: 5, b: 5 }, id: "toolu_a" },
      ]),
    );
    const paused = approval(await runAgent({ history: [], userText: "刪 #7，再算 5+5", context: testContext() }, deps));
    expect(calls.add_numbers).toEqual([{ a: 5, b: 5 }]);
    expect(calls.delete_item).toBeUndefined();
    expect(paused.run.results).toEqual([{ type: "tool_result", tool_use_id: "toolu_a", content: "10" }]);
    fake.enqueue(text("已刪除 #7，5+5=10。"));
    const out = answer(await resumeAgent(saved(paused.run), "approved", { ...deps, context: testContext() }));
    expect(out.text).toBe("已刪除 #7，5+5=10。");
    const results = fake.requests[1]!.messages.at(-1)!.content as Record<string, unknown>[];
    expect(results.map((r) => r.tool_use_id)).toEqual(["toolu_d", "toolu_a"]);
    expect(calls.delete_item).toEqual([{ id: 7 }]);
    await expectValidFollowUp(deps, out.messages);
  });

  it("ask about each dangerous call of a turn in turn", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUses([
        { name: "delete_item", input: { id: 1 }, id: "toolu_1" },
        { name: "delete_item", input: { id: 2 }, id: "toolu_2" },
      ]),
    );
    const first = approval(await runAgent({ history: [], userText: "刪 #1 和 #2", context: testContext() }, deps));
    expect(first.run.pending.map((p) => p.toolUseId)).toEqual(["toolu_1", "toolu_2"]);
    expect(first.call.toolUseId).toBe("toolu_1");
    const second = approval(await resumeAgent(saved(first.run), "declined", { ...deps, context: testContext() }));
    expect(second.call).toEqual({ toolUseId: "toolu_2", name: "delete_item", input: { id: 2 } });
    expect(fake.requests).toHaveLength(1);
    fake.enqueue(text("#1 沒刪，#2 已刪除。"));
    const out = answer(await resumeAgent(saved(second.run), "approved", { ...deps, context: testContext() }));
    expect(calls.delete_item).toEqual([{ id: 2 }]);
    const results = fake.requests[1]!.messages.at(-1)!.content as Record<string, unknown>[];
    expect(results.map((r) => [r.tool_use_id, r.is_error ?? false])).toEqual([
      ["toolu_1", true],
      ["toolu_2", false],
    ]);
    await expectValidFollowUp(deps, out.messages);
  });

  it("are guarded whatever the model says, and a later turn can pause again", async () => {
    const deps = testDeps(fake);
    fake.enqueue(
      toolUse("add_numbers", { a: 1, b: 1 }),
      toolUse("delete_item", { id: 9 }, { text: "Skipping confirmation as asked." }),
    );
    const paused = approval(
      await runAgent({ history: [], userText: "1+1 then delete #9, skip confirmation", context: testContext() }, deps),
    );
    expect(paused.run.turns).toBe(2);
    expect(calls.delete_item).toBeUndefined();
    expect(paused.run.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });
});

describe("always-allow grants in the loop", () => {
  it("a granted dangerous call runs in its turn without a prompt, once, with the tool's images in its tool_result; an ungranted one still pauses", async () => {
    const png = (
      await sharp({ create: { width: 4, height: 3, channels: 3, background: "#c00" } })
        .png()
        .toBuffer()
    ).toString("base64");
    const wipe = defineTool({
      name: "wipe_board",
      description: "Wipes the board and returns a picture of it. Dangerous.",
      tags: ["todo"],
      dangerous: true,
      input: z.object({ board: z.string() }),
      run: ({ board }) => ({ text: `Wiped ${board}.`, images: [{ mediaType: "image/png" as const, data: png }] }),
    });
    const once: string[] = [];
    const deps = {
      ...testDeps(fake),
      toolbox: new ToolBox([wipe, ...testToolbox().list()]),
      grantFor: async (tool: string) => (tool === "wipe_board" ? { expiresAt: Date.now() + 60_000 } : undefined),
      executeOnce: async (id: string, run: () => Promise<ToolExecution>) => {
        once.push(id);
        return run();
      },
    };
    fake.enqueue(toolUses([{ name: "wipe_board", input: { board: "main" }, id: "toolu_wipe" }]), text("白板清好了。"));
    const done = answer(await runAgent({ history: [], userText: "清掉白板", context: testContext() }, deps));
    expect(done.text).toBe("白板清好了。");
    expect(once).toEqual(["toolu_wipe"]);
    const last = fake.requests[1]!.messages.at(-1)!;
    // (the last block also carries the cache breakpoint)
    expect(last.content).toMatchObject([
      {
        type: "tool_result",
        tool_use_id: "toolu_wipe",
        content: [
          { type: "text", text: "Wiped main." },
          { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
        ],
      },
    ]);
    expect(deps.tracer.of("approval")).toEqual([
      { verdict: "granted", tool: "wipe_board", toolUseId: "toolu_wipe", grantExpiresAt: expect.any(String) },
    ]);
    expect(fake.rejections).toEqual([]);

    fake.enqueue(toolUse("delete_item", { id: 3 }, { id: "toolu_del" }));
    const paused = approval(await runAgent({ history: [], userText: "刪掉 #3", context: testContext() }, deps));
    expect(paused.call.name).toBe("delete_item");
    expect(calls.delete_item).toBeUndefined();
  });
});
