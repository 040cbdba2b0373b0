/**
 * The approval flow with the real agent loop (`runAgent` / `resumeAgent`), the real SDK client
 * against the strict fake Messages API, and the real store on a real Redis. The strict fake
 * rejects any invalid history, so each test ends with a follow-up message over the saved history.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentOutcome, MessageParam } from "../../src/agent/contract.js";
import { resumeAgent, runAgent } from "../../src/agent/loop.js";
import { connectRedis } from "../../src/redis.js";
import { nullTracer } from "../../src/trace/tracer.js";
import { startFakeAnthropic, text, toolUse, toolUses, type FakeAnthropic } from "../fakes/anthropic.js";
import { testContext } from "../helpers/context.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { chat, config, harness, message, nextMessage, toolbox, toolRuns, type Harness } from "./support.js";

let server: TestRedis;
let redis: RedisClient;
let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  fake = await startFakeAnthropic();
  client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
});
afterAll(async () => {
  await fake.close();
  redis.disconnect();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushall();
  await redis.hset("notes:telegram:u1", { "1": "買牛奶", "2": "繳電費" });
  toolRuns.count = 0;
  fake.reset();
});

const context = () =>
  testContext({
    platform: "telegram",
    chatId: chat.chatId,
    chatKind: "group",
    userId: "u1",
    userName: "Alice",
    redis,
    config,
  });
const wired = (): Harness => harness(redis, undefined, { resumeAgent, client });

/** Runs the loop on the user's message; expects it to pause at a dangerous call. */
async function ask(h: Harness, history: MessageParam[] = []): Promise<Extract<AgentOutcome, { kind: "approval" }>> {
  const outcome = await runAgent(
    { history, userText: message.text, context: context() },
    { client, config, toolbox, tracer: nullTracer },
  );
  if (outcome.kind !== "approval") throw new Error(`expected an approval, got ${outcome.kind}`);
  expect(h.outbound.prompts).toHaveLength(0);
  return outcome;
}

/** Sends a follow-up over the saved history; the strict fake refuses an invalid one. */
async function followUp(h: Harness): Promise<void> {
  fake.enqueue(text("還需要什麼嗎？"));
  const history = await h.saved("telegram:-100200");
  const next = await runAgent(
    { history, userText: "好", context: context() },
    { client, config, toolbox, tracer: nullTracer },
  );
  expect(fake.rejections).toEqual([]);
  expect(next).toMatchObject({ kind: "answer", text: "還需要什麼嗎？" });
}

describe("approval flow with the real loop", () => {
  it("approve: the tool runs once, the model sees its result, the answer is sent and the history stays valid", async () => {
    const h = wired();
    fake.enqueue(toolUse("approvals_test_delete_note", { note_id: 2 }, { id: "toolu_d1", text: "好，我來刪除。" }));
    const id = await h.flow.begin(message, await ask(h), h.outbound);
    expect(h.outbound.prompts[0]!.prompt.action).toBe("刪除筆記 #2「繳電費」");
    expect(toolRuns.count).toBe(0);

    expect(
      (await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).status,
    ).toBe("accepted");
    fake.enqueue(text("已刪除筆記 #2「繳電費」。"));
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "已刪除筆記 #2「繳電費」。" });
    expect(toolRuns.count).toBe(1);
    expect(await redis.hgetall("notes:telegram:u1")).toEqual({ "1": "買牛奶" });
    const last = fake.requests.at(-1)!.messages.at(-1)!;
    expect(last.content).toEqual([
      expect.objectContaining({ type: "tool_result", tool_use_id: "toolu_d1", content: "Deleted note #2." }),
    ]);
    expect(h.outbound.answers.map((a) => a.text)).toEqual(["已刪除筆記 #2「繳電費」。"]);
    await followUp(h);
  });

  it("a paused run stored with a lone surrogate (by a version before messages were well-formed) resumes with a request the API accepts", async () => {
    const h = wired();
    fake.enqueue(toolUse("approvals_test_delete_note", { note_id: 2 }, { id: "toolu_w", text: "好，我來刪除。" }));
    const id = await h.flow.begin(message, await ask(h), h.outbound);
    // The record as that version stored it: the user's words end in half an emoji, JSON's escape `\ud83d`.
    const key = `approval:{approval}:${id}`;
    const data = (await redis.hget(key, "data"))!;
    expect(data).toContain(message.text);
    await redis.hset(key, "data", data.replaceAll(message.text, `${message.text} \\ud83d`));
    expect(
      (await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).status,
    ).toBe("accepted");
    fake.enqueue(text("已刪除筆記 #2。"));
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "已刪除筆記 #2。" });
    expect(fake.rejections).toEqual([]);
    expect(toolRuns.count).toBe(1);
    expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain(`${message.text} \ufffd`);
    expect(h.outbound.answers.map((a) => a.text)).toEqual(["已刪除筆記 #2。"]);
    await followUp(h);
  });

  it("a dangerous and a safe call in one turn: the safe one runs at once, the declined one never", async () => {
    const h = wired();
    fake.enqueue(
      toolUses([
        { name: "approvals_test_list_notes", input: {}, id: "toolu_l" },
        { name: "approvals_test_delete_note", input: { note_id: 1 }, id: "toolu_d" },
      ]),
    );
    const paused = await ask(h);
    expect(paused.run.results.map((r) => r.tool_use_id)).toEqual(["toolu_l"]);
    const id = await h.flow.begin(message, paused, h.outbound);
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    fake.enqueue(text("好的，沒有刪除。"));
    expect((await h.decide(h.jobs[0]!)).status).toBe("answered");
    expect(toolRuns.count).toBe(0);
    expect(await redis.hlen("notes:telegram:u1")).toBe(2);
    const results = fake.requests.at(-1)!.messages.at(-1)!.content as { tool_use_id: string; is_error?: boolean }[];
    expect(results.map((r) => [r.tool_use_id, r.is_error === true])).toEqual([
      ["toolu_l", false],
      ["toolu_d", true],
    ]);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("declined");
    await followUp(h);
  });

  it("a new message while pending closes the run without a model call and keeps history valid", async () => {
    const h = wired();
    fake.enqueue(toolUse("approvals_test_delete_note", { note_id: 2 }, { id: "toolu_s" }));
    const id = await h.flow.begin(message, await ask(h), h.outbound);
    const requestsBefore = fake.requests.length;
    expect(await h.flow.supersedePending(nextMessage, h.outbound)).toEqual({ approvalId: id });
    expect(fake.requests.length).toBe(requestsBefore);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("superseded");
    expect(h.outbound.answers).toEqual([]);
    expect(await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "already_decided",
      verdict: "superseded",
    });
    expect(toolRuns.count).toBe(0);
    await followUp(h);
  });

  it("expiry of two dangerous calls in one turn: both closed, one prompt, one model call", async () => {
    const h = wired();
    fake.enqueue(
      toolUses([
        { name: "approvals_test_delete_note", input: { note_id: 1 }, id: "toolu_e1" },
        { name: "approvals_test_delete_note", input: { note_id: 2 }, id: "toolu_e2" },
      ]),
    );
    const id = await h.flow.begin(message, await ask(h), h.outbound);
    fake.enqueue(text("確認逾時了，兩則筆記都沒有刪除。"));
    expect(await h.decide({ approvalId: id, verdict: "expired" })).toEqual({
      status: "answered",
      text: "確認逾時了，兩則筆記都沒有刪除。",
    });
    expect(h.outbound.prompts).toHaveLength(1);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("expired");
    expect(toolRuns.count).toBe(0);
    await followUp(h);
  });

  it("a restart between prompt and click: a new store on a new connection resumes the run", async () => {
    const before = wired();
    fake.enqueue(toolUse("approvals_test_delete_note", { note_id: 2 }, { id: "toolu_r" }));
    const id = await before.flow.begin(message, await ask(before), before.outbound);
    const connection = connectRedis(server.url);
    try {
      const after = harness(connection, before.outbound, { resumeAgent, client });
      await after.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
      fake.enqueue(text("刪好了。"));
      expect(await after.decide(after.jobs[0]!)).toEqual({ status: "answered", text: "刪好了。" });
      expect(toolRuns.count).toBe(1);
      await followUp(before);
    } finally {
      connection.disconnect();
    }
  });
});
