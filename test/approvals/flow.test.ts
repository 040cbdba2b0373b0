/**
 * The approval flow over the real store (real Redis), a real toolbox with a dangerous tool that
 * changes Redis, and a recording outbound. `resumeAgent` is a small stand-in that follows
 * `src/agent/contract.ts` without a model, so retries, forged jobs and multi-call turns can be
 * driven exactly; the same flow with the real loop and the fake Messages API is in `loop.test.ts`.
 */
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PendingCall } from "../../src/agent/contract.js";
import { decisionNotice } from "../../src/approvals/decider.js";
import {
  describeCall,
  grantLeadText,
  LEAD_ACTION_UNITS,
  outcomeText,
  supersededLeadText,
} from "../../src/approvals/flow.js";
import { GrantStore } from "../../src/approvals/grants.js";
import { HistoryStore } from "../../src/history/store.js";
import { PlatformUnavailableError } from "../../src/outbound-errors.js";
import { connectRedis } from "../../src/redis.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import deleteTodoTool from "../../tools/delete_todo.js";
import { testContext } from "../helpers/context.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { RecordingOutbound } from "./recording-outbound.js";
import { chat, harness, message, nextMessage, paused, requester, resumes, toolbox, toolRuns } from "./support.js";

let server: TestRedis;
let redis: RedisClient;
const connections: RedisClient[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  connections.push(redis);
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await server.stop();
});

const call2: PendingCall = { toolUseId: "toolu_a", name: "approvals_test_delete_note", input: { note_id: 2 } };

beforeEach(async () => {
  await redis.flushall();
  await redis.hset("notes:telegram:u1", { "1": "買牛奶", "2": "繳電費" });
  toolRuns.count = 0;
  resumes.length = 0;
});

describe("ApprovalFlow.begin", () => {
  it("saves the run, posts a prompt in plain words, and schedules the expiry", async () => {
    const h = harness(redis);
    const before = Date.now();
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(h.outbound.prompts).toHaveLength(1);
    const posted = h.outbound.prompts[0]!;
    expect(posted.prompt).toMatchObject({ approvalId: id, action: "刪除筆記 #2「繳電費」", requesterName: "Alice" });
    expect(posted.prompt.expiresAt).toBeGreaterThanOrEqual(before + 300_000);
    expect(posted.prompt.expiresAt).toBeLessThanOrEqual(Date.now() + 300_000);
    expect(h.expiries).toEqual([{ approvalId: id, delayMs: 300_000 }]);
    const record = await h.store.get(id);
    expect(record?.prompt).toEqual(posted.ref);
    expect(record?.status).toBe("pending");
    expect(toolRuns.count).toBe(0);
  });

  it("is idempotent per message and tool_use id: a retried job makes no second approval or prompt", async () => {
    const h = harness(redis);
    const failing = new RecordingOutbound();
    failing.sendApprovalPrompt = async () => {
      throw new Error("Telegram 502");
    };
    await expect(h.flow.begin(message, paused([call2]), failing)).rejects.toThrow("Telegram 502");
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.flow.begin(message, paused([call2]), h.outbound)).toBe(id);
    expect(h.outbound.prompts.map((p) => p.prompt.approvalId)).toEqual([id]);
    expect(h.expiries).toEqual([{ approvalId: id, delayMs: 300_000 }]);
    expect((await h.store.get(id))?.prompt).toEqual(h.outbound.prompts[0]!.ref);
  });

  it("shows the tool name and input for a tool without describe; never raw input when describe cannot give the action", async () => {
    const context = testContext({ redis });
    // No describe: the tool's author left the call itself as its description.
    expect(
      await describeCall(toolbox, { toolUseId: "t", name: "approvals_test_wipe", input: { really: true } }, context),
    ).toBe('approvals_test_wipe {"really":true}');
    // A describe that cannot run (input no longer valid, a tool gone): its title or name, no JSON.
    expect(
      await describeCall(
        toolbox,
        { toolUseId: "t", name: "approvals_test_delete_note", input: { note_id: "x" } },
        context,
      ),
    ).toBe("approvals_test_delete_note");
    expect(await describeCall(toolbox, { toolUseId: "t", name: "gone", input: { a: "x".repeat(300) } }, context)).toBe(
      "gone",
    );
  });

  it("a todo gone before its prompt is posted: the prompt says the tool's action in plain words, in its language", async () => {
    const todos = new ToolBox([deleteTodoTool]);
    const call: PendingCall = { toolUseId: "t", name: "delete_todo", input: { todo_id: 7 } };
    const zh = testContext({ redis, locale: "zh-TW" });
    const en = testContext({ redis, locale: "en" });
    // describe throws "no todo #7": the loop answers such a call before asking; one raced past it is shown plainly.
    expect(await describeCall(todos, call, zh)).toBe("刪除待辦 #7");
    expect(await describeCall(todos, call, en)).toBe("Deleting todo #7");
    // describe failing unexpectedly (Redis gone) shows the same plain action.
    const closed = connectRedis(server.url);
    closed.disconnect();
    expect(await describeCall(todos, call, testContext({ redis: closed, locale: "zh-TW" }))).toBe("刪除待辦 #7");
  });
});

describe("ApprovalFlow.handleDecision", () => {
  it("approve: the tool runs once, the prompt shows the outcome, history gets a valid run, the answer is sent", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "accepted",
      approve: true,
    });
    expect(h.jobs).toEqual([{ approvalId: id, verdict: "approved" }]);

    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(toolRuns.count).toBe(1);
    expect(await redis.hgetall("notes:telegram:u1")).toEqual({ "1": "買牛奶" });
    expect(h.outbound.prompts[0]!.closed).toEqual({ outcome: "approved", text: "✅ 已確認：刪除筆記 #2「繳電費」" });
    expect(h.outbound.answers.map((a) => a.text)).toEqual(["Deleted note #2."]);
    const saved = await h.saved("telegram:-100200");
    expect(saved.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(saved[2]!.content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_a", content: "Deleted note #2.", is_error: false },
    ]);

    // A redelivered job, and the expiry job firing later, change nothing.
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "skipped", reason: "unknown" });
    expect(await h.decide({ approvalId: id, verdict: "expired" })).toEqual({ status: "skipped", reason: "unknown" });
    expect(toolRuns.count).toBe(1);
    expect(h.outbound.answers).toHaveLength(1);
    expect(await h.store.pendingId(requester)).toBeUndefined();
  });

  it("a retried job after a crash past the tool does not run it again nor append history twice", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    // First attempt: the tool ran, the prompt was edited, history was appended, then sending the answer failed.
    const sendAnswer = h.outbound.sendAnswer.bind(h.outbound);
    h.outbound.sendAnswer = async () => {
      // As the Telegram outbound reports a 502 that outlasted its retries: the job may be retried.
      throw new PlatformUnavailableError("telegram", "sendAnswer", "Telegram 502");
    };
    await expect(h.decide({ approvalId: id, verdict: "approved" })).rejects.toThrow("Telegram 502");
    h.outbound.sendAnswer = sendAnswer;
    expect(toolRuns.count).toBe(1);
    // The retry, in another process.
    const connection = connectRedis(server.url);
    connections.push(connection);
    const retry = harness(connection, h.outbound);
    expect(await retry.decide({ approvalId: id, verdict: "approved" }, { attempt: 2 })).toEqual({
      status: "answered",
      text: "Deleted note #2.",
    });
    expect(toolRuns.count).toBe(1);
    expect(await h.saved("telegram:-100200")).toHaveLength(4);
    expect(h.outbound.answers.map((a) => a.text)).toEqual(["Deleted note #2."]);
    expect(h.outbound.closeCalls).toBe(1);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("approved");
  });

  it("decline: the tool does not run; its tool_result is an error; the prompt says declined", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "Not run: the user declined it." });
    expect(toolRuns.count).toBe(0);
    expect(await redis.hlen("notes:telegram:u1")).toBe(2);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("declined");
    expect((await h.saved("telegram:-100200"))[2]!.content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_a", content: "Not run: the user declined it.", is_error: true },
    ]);
  });

  it("a job whose verdict is not the stored one (forged, or for a still pending approval) runs nothing", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.decide({ approvalId: id, verdict: "approved" })).toEqual({
      status: "skipped",
      reason: "not_current",
    });
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    expect(await h.decide({ approvalId: id, verdict: "approved" })).toEqual({
      status: "skipped",
      reason: "not_current",
    });
    expect(toolRuns.count).toBe(0);
    expect(h.outbound.answers).toEqual([]);
  });

  it("expiry: closes the prompt as timed out, answers, and a later click gets not_found", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.decide({ approvalId: id, verdict: "expired" })).toEqual({
      status: "answered",
      text: "Not run: the user expired it.",
    });
    expect(h.outbound.prompts[0]!.closed).toEqual({
      outcome: "expired",
      text: "⌛ 逾時未確認，未執行：刪除筆記 #2「繳電費」",
    });
    expect(await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(h.jobs).toEqual([]);
    expect(toolRuns.count).toBe(0);
  });

  it("a press after the answer (record deleted) is told how it was decided until the prompt's expiry, then expired", async () => {
    const clock = { now: Date.now() };
    const h = harness(redis, undefined, { now: () => clock.now });
    const press = () => h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    const expiresAt = h.outbound.prompts[0]!.prompt.expiresAt;
    expect(await press()).toEqual({ status: "accepted", approve: true });
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(await h.store.get(id)).toBeUndefined();

    // A prompt that was not closed (LINE cannot edit it; a Discord edit failed) is pressed again.
    const late = await press();
    expect(decisionNotice(late, "zh-TW")).toBe("這個請求已經確認過了。");
    clock.now = expiresAt;
    expect(decisionNotice(await press(), "en")).toBe("This request was already confirmed.");
    clock.now = expiresAt + 1;
    expect(decisionNotice(await press(), "zh-TW")).toBe("這個確認請求已過期或不存在。");
    expect(h.jobs).toHaveLength(1);
    expect(toolRuns.count).toBe(1);
  });

  it("a decision whose conversation was reset before its job ran: closed as reset, and a later press is told expired", async () => {
    const h = harness(redis);
    const history = new HistoryStore(redis, { maxMessages: 100, ttlSeconds: 3600 });
    const id = await h.flow.begin(message, paused([call2]), h.outbound, "zh-TW", await history.generation(chat));
    const press = () => h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(await press()).toEqual({ status: "accepted", approve: true });
    await history.reset(chat);
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "skipped", reason: "reset" });
    expect(h.outbound.prompts[0]!.closed?.text).toBe(outcomeText("reset", "刪除筆記 #2「繳電費」", "zh-TW"));
    expect(await h.store.get(id)).toBeUndefined();
    expect(await press()).toEqual({ status: "not_found" });
    expect(toolRuns.count).toBe(0);
  });

  it("the expiry job loses to a decision that came first", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(await h.decide({ approvalId: id, verdict: "expired" })).toEqual({
      status: "skipped",
      reason: "not_current",
    });
    expect(h.outbound.prompts[0]!.closed).toBeUndefined();
    expect((await h.decide(h.jobs[0]!)).status).toBe("answered");
    expect(toolRuns.count).toBe(1);
  });

  it("two dangerous calls in one turn: approving the first asks about the second with a new prompt", async () => {
    const h = harness(redis);
    const call1: PendingCall = { toolUseId: "toolu_b", name: "approvals_test_delete_note", input: { note_id: 1 } };
    const first = await h.flow.begin(message, paused([call2, call1]), h.outbound);
    await h.store.decide({ approvalId: first, platform: "telegram", deciderId: "u1", approve: true });
    const next = await h.decide(h.jobs[0]!);
    expect(next.status).toBe("asked_again");
    const second = (next as { approvalId: string }).approvalId;
    expect(second).not.toBe(first);
    expect(await h.store.get(first)).toBeUndefined();
    expect(await h.store.pendingId(requester)).toBe(second);
    expect(h.outbound.prompts.map((p) => p.prompt.action)).toEqual(["刪除筆記 #2「繳電費」", "刪除筆記 #1「買牛奶」"]);
    expect(h.expiries.map((e) => e.approvalId)).toEqual([first, second]);

    await h.store.decide({ approvalId: second, platform: "telegram", deciderId: "u1", approve: false });
    expect(await h.decide(h.jobs[1]!)).toEqual({
      status: "answered",
      text: "Deleted note #2. Not run: the user declined it.",
    });
    expect(await redis.hgetall("notes:telegram:u1")).toEqual({ "1": "買牛奶" });
    expect(toolRuns.count).toBe(1);
  });

  it("a restart between the prompt and the click: a new process resumes the run", async () => {
    const before = harness(redis);
    const id = await before.flow.begin(message, paused([call2]), before.outbound);
    const connection = connectRedis(server.url);
    connections.push(connection);
    const after = harness(connection, before.outbound);
    await after.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(await after.decide(after.jobs[0]!)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(before.outbound.prompts[0]!.closed?.outcome).toBe("approved");
    expect(toolRuns.count).toBe(1);
  });
});

describe("ApprovalFlow.supersedePending", () => {
  it("closes the pending approval without a model call, keeps history valid, edits the prompt, sends nothing", async () => {
    const h = harness(redis);
    const call1: PendingCall = { toolUseId: "toolu_b", name: "approvals_test_delete_note", input: { note_id: 1 } };
    const id = await h.flow.begin(message, paused([call2, call1]), h.outbound);
    expect(await h.flow.supersedePending(nextMessage, h.outbound)).toEqual({ approvalId: id });
    expect(resumes).toEqual([
      { verdict: "superseded", callModel: false, toolUseId: "toolu_a" },
      { verdict: "superseded", callModel: false, toolUseId: "toolu_b" },
    ]);
    expect(h.outbound.prompts[0]!.closed).toEqual({
      outcome: "superseded",
      text: outcomeText("superseded", "刪除筆記 #2「繳電費」", "zh-TW"),
    });
    const saved = await h.saved("telegram:-100200");
    expect(saved.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect((saved[2]!.content as unknown[]).length).toBe(2);
    expect(h.outbound.answers).toEqual([]);
    expect(await h.flow.supersedePending(nextMessage, h.outbound)).toBeUndefined();
    // The record is gone; a press on the prompt until its expiry is told a new message closed it.
    expect(await h.store.get(id)).toBeUndefined();
    expect(await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "already_decided",
      verdict: "superseded",
    });
    expect(toolRuns.count).toBe(0);
  });

  it("drops the run instead of appending it when the new message is the same one (a retried job)", async () => {
    const h = harness(redis);
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.flow.supersedePending(message, h.outbound)).toEqual({ approvalId: id });
    expect(resumes).toEqual([]);
    expect((await h.conversations()).length).toBe(0);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("superseded");
    expect(await h.store.pendingId(requester)).toBeUndefined();
  });

  it("leaves the prompt open for other people's messages and the requester's messages in other topics", async () => {
    const h = harness(redis);
    const inTopic = { ...message, topicId: "11", reply: { threadId: "11" } };
    const id = await h.flow.begin(inTopic, paused([call2]), h.outbound);
    expect(await h.flow.supersedePending({ ...inTopic, userId: "u2", messageId: "b1" }, h.outbound)).toBeUndefined();
    expect(await h.flow.supersedePending({ ...nextMessage, userId: "u2" }, h.outbound)).toBeUndefined();
    expect(await h.flow.supersedePending({ ...nextMessage, topicId: "22" }, h.outbound)).toBeUndefined();
    expect(await h.flow.supersedePending(nextMessage, h.outbound)).toBeUndefined();
    expect(h.outbound.prompts[0]!.closed).toBeUndefined();
    expect(resumes).toEqual([]);
    // The requester decides later: the run lands in the topic's history, not the chat's.
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(await h.decide(h.jobs[0]!)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(await h.conversations()).toEqual(["telegram:-100200/11"]);
    expect(h.outbound.answers.map((a) => a.to.reply)).toEqual([{ threadId: "11" }]);
  });

  it("does nothing in a chat without a pending approval", async () => {
    const h = harness(redis);
    expect(
      await h.flow.supersedePending({ ...nextMessage, platform: "discord", chatId: "9" }, h.outbound),
    ).toBeUndefined();
    expect(resumes).toEqual([]);
  });
});

describe("where a sent prompt cannot be edited (LINE: Outbound.promptsStayAsSent)", () => {
  const DAY = 86_400_000;
  const staying = () => new RecordingOutbound("telegram", { promptsStayAsSent: true });

  it("the answer to the requester's new message is given the line saying the earlier request was closed, not done", async () => {
    const h = harness(redis, staying());
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.flow.supersedePending(nextMessage, h.outbound)).toEqual({
      approvalId: id,
      lead: "↩️ 先前等你確認的請求已關閉，未執行：刪除筆記 #2「繳電費」",
    });
    // Closing the prompt is still asked of the outbound (LINE's does nothing), and nothing is sent.
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("superseded");
    expect(h.outbound.answers).toEqual([]);
  });

  it("no line when the new message is the approval's own (a retried job answers it again)", async () => {
    const h = harness(redis, staying());
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    expect(await h.flow.supersedePending(message, h.outbound)).toEqual({ approvalId: id });
  });

  it("an answer after an always-allow press starts with the grant's line; after a plain confirm, or where prompts are edited, it does not", async () => {
    const grants = new GrantStore(redis, { ttlMs: 30 * DAY });
    const staysHarness = harness(redis, staying(), { grants });
    const alwaysId = await staysHarness.flow.begin(message, paused([call2]), staysHarness.outbound);
    expect(staysHarness.outbound.prompts[0]!.prompt.alwaysAllow).toBe(true);
    await staysHarness.store.decide({
      approvalId: alwaysId,
      platform: "telegram",
      deciderId: "u1",
      approve: true,
      always: true,
    });
    const lead = "✅ 已確認，30 天內一律允許：刪除筆記 #2「繳電費」（/permissions 可撤銷）";
    expect(await staysHarness.decide(staysHarness.jobs[0]!)).toEqual({
      status: "answered",
      text: `${lead}\n\nDeleted note #2.`,
    });
    expect(staysHarness.outbound.answers.map((a) => a.text)).toEqual([`${lead}\n\nDeleted note #2.`]);
    expect(await grants.find(requester, "approvals_test_delete_note")).toBeDefined();

    // A plain confirm says nothing more: the chat shows the press, and the answer follows.
    await redis.hset("notes:telegram:u1", { "2": "繳電費" });
    const plainId = await staysHarness.flow.begin(
      { ...nextMessage, messageId: "m3" },
      paused([{ ...call2, toolUseId: "toolu_c" }]),
      staysHarness.outbound,
    );
    await staysHarness.store.decide({ approvalId: plainId, platform: "telegram", deciderId: "u1", approve: true });
    expect(await staysHarness.decide(staysHarness.jobs[1]!)).toEqual({ status: "answered", text: "Deleted note #2." });

    // Where the prompt is edited (Telegram, Discord), the edit says it: no line in the answer.
    await redis.flushall();
    await redis.hset("notes:telegram:u1", { "2": "繳電費" });
    const edited = harness(redis, new RecordingOutbound(), { grants });
    const editedId = await edited.flow.begin(message, paused([call2]), edited.outbound);
    await edited.store.decide({
      approvalId: editedId,
      platform: "telegram",
      deciderId: "u1",
      approve: true,
      always: true,
    });
    expect(await edited.decide(edited.jobs[0]!)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(edited.outbound.prompts[0]!.closed?.text).toBe("✅ 已確認，30 天內一律允許：刪除筆記 #2「繳電費」");
  });

  it("speaks both locales; the closed request's action is cut short", () => {
    expect(grantLeadText('delete note #2 "bills"', 30 * DAY, "en")).toBe(
      '✅ Confirmed, always allowed for 30 days: delete note #2 "bills" (/permissions to revoke)',
    );
    expect(grantLeadText("刪除筆記 #2「繳電費」", 30 * DAY, "zh-TW")).toBe(
      "✅ 已確認，30 天內一律允許：刪除筆記 #2「繳電費」（/permissions 可撤銷）",
    );
    expect(supersededLeadText('delete note #2 "bills"', "en")).toBe(
      '↩️ Your earlier request that was waiting for confirmation was closed, not done: delete note #2 "bills"',
    );
    const long = supersededLeadText("x".repeat(500), "zh-TW");
    expect(long.endsWith("…")).toBe(true);
    expect(long.length).toBe("↩️ 先前等你確認的請求已關閉，未執行：".length + LEAD_ACTION_UNITS);
  });
});

describe("outcomeText", () => {
  it("speaks both locales", () => {
    expect(outcomeText("declined", "刪除待辦 #3「買牛奶」", "zh-TW")).toBe("❌ 已取消，未執行：刪除待辦 #3「買牛奶」");
    expect(outcomeText("expired", 'delete todo #3 "milk"', "en")).toBe('⌛ Timed out, not done: delete todo #3 "milk"');
  });
});
