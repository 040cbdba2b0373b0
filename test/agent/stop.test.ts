/**
 * Stop in the agent loop (issue 42, `AgentDeps.stop`), through the real SDK against the strict
 * fake Messages API: the stream is aborted and what it wrote stays, calls of the turn are answered
 * (interrupted or not run), the run's messages are valid for the API (the fake checks the next
 * request that carries them), and usage counts the stopped call.
 */
import { z } from "zod";
import { describe, expect, it } from "vitest";
import type { MessageParam, ModelUsage } from "../../src/agent/contract.js";
import { estimateOutputTokens, runAgent } from "../../src/agent/loop.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { text, toolUses, type FakeAnthropic } from "../fakes/anthropic.js";
import { testContext } from "../helpers/context.js";
import { waitFor } from "../worker/harness.js";
import { addNumbers, answerOf, testDeps, useFakeAnthropic } from "./helpers.js";

let fake: FakeAnthropic;
useFakeAnthropic((started) => (fake = started));

/** A read-only tool that runs until its signal aborts. */
const running = { started: false, aborted: false };
const slowRead = defineTool({
  name: "slow_read",
  description: "Reads slowly (a test tool).",
  tags: ["info"],
  readOnly: true,
  input: z.object({}),
  run: (_input, context) =>
    new Promise<string>((_resolve, reject) => {
      running.started = true;
      context.signal.addEventListener("abort", () => {
        running.aborted = true;
        reject(new Error("aborted"));
      });
    }),
});

/** Sends `messages` as history in a new run: the fake refuses it (400) when it is not valid for the API. */
async function acceptedAsHistory(messages: MessageParam[]): Promise<void> {
  fake.enqueue(text("ok"));
  const outcome = await runAgent({ history: messages, userText: "next", context: testContext() }, testDeps(fake));
  expect(answerOf(outcome).text).toBe("ok");
  expect(fake.rejections).toEqual([]);
}

describe("Stop in the agent loop", () => {
  it("aborts the stream: the text written so far and the mark are the answer and the history; usage counts the call", async () => {
    const written = "臺北市今天晴時多雲，";
    fake.enqueue({
      ...text(`${written}午後有局部短暫陣雨。`),
      stream: { chunkChars: [...written].length, holdAfterChars: [...written].length },
    });
    const stop = new AbortController();
    const usages: ModelUsage[] = [];
    const deps = {
      ...testDeps(fake),
      stop: stop.signal,
      onEvent: (e: { type: string }) => {
        if (e.type === "text") stop.abort();
      },
      onUsage: (u: ModelUsage) => usages.push(u),
    };
    const outcome = answerOf(await runAgent({ history: [], userText: "天氣如何？", context: testContext() }, deps));
    expect(outcome.stopped).toBe(true);
    expect(outcome.text).toBe(`${written}\n\n⏹ 已停止`);
    expect(outcome.messages).toEqual([
      { role: "user", content: "天氣如何？" },
      {
        role: "assistant",
        content: [
          { type: "text", text: written },
          { type: "text", text: "⏹ 已停止" },
        ],
      },
    ]);
    await waitFor(() => fake.cutOff.length === 1, 5000, "the stream closed");
    expect(usages).toHaveLength(1);
    expect(usages[0]!.input_tokens).toBe(fake.answered[0]!.usage.input_tokens);
    expect(usages[0]!.output_tokens).toBe(estimateOutputTokens(written));
    await acceptedAsHistory(outcome.messages);
  });

  it("stops during a turn's calls: the running read is signalled and answered as interrupted, the call after it is not run", async () => {
    running.started = running.aborted = false;
    const deps = testDeps(fake);
    const toolbox = new ToolBox([slowRead, addNumbers]);
    fake.enqueue(
      toolUses([
        { name: "slow_read", input: {}, id: "toolu_read" },
        { name: "add_numbers", input: { a: 1, b: 2 }, id: "toolu_add" },
      ]),
    );
    const stop = new AbortController();
    const run = runAgent(
      { history: [], userText: "讀一下再加", context: testContext() },
      { ...deps, toolbox, stop: stop.signal },
    );
    await waitFor(() => running.started, 5000, "the read running");
    stop.abort();
    const outcome = answerOf(await run);
    expect(running.aborted).toBe(true);
    expect(outcome.stopped).toBe(true);
    expect(outcome.text).toBe("⏹ 已停止");
    expect(fake.requests).toHaveLength(1); // no model call after the stop
    const results = outcome.messages[2]!.content as { tool_use_id: string; content: string; is_error?: boolean }[];
    expect(results.map((r) => [r.tool_use_id, r.is_error])).toEqual([
      ["toolu_read", true],
      ["toolu_add", true],
    ]);
    expect(results[0]!.content).toContain("pressed Stop while slow_read was running");
    expect(results[1]!.content).toContain("pressed Stop before add_numbers ran");
    expect(outcome.messages[3]).toEqual({ role: "assistant", content: [{ type: "text", text: "⏹ 已停止" }] });
    await acceptedAsHistory(outcome.messages);
  });

  it("a stop before the first model call makes none", async () => {
    const stop = new AbortController();
    stop.abort();
    const outcome = answerOf(
      await runAgent(
        { history: [], userText: "hi", context: testContext({ locale: "en" }) },
        { ...testDeps(fake), stop: stop.signal },
      ),
    );
    expect(outcome.text).toBe("⏹ Stopped");
    expect(fake.requests).toHaveLength(0);
    await acceptedAsHistory(outcome.messages);
  });

  it("estimates output tokens: one per CJK character, one per four other characters", () => {
    expect(estimateOutputTokens("臺北市")).toBe(3);
    expect(estimateOutputTokens("abcdefgh")).toBe(2);
    expect(estimateOutputTokens("")).toBe(1);
  });
});
