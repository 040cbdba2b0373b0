/**
 * Issue 42 (Stop) end to end on Telegram: the real grammy client, the adapters and the worker as
 * two bots on one Redis (the stop request crosses from the adapter side to the worker over Redis
 * pub/sub), the strict fake Bot API and the fake Messages API streaming an answer that the test
 * holds mid-way (injected pacing: `holdAfterChars` + `hold`, no clock).
 */
import { z } from "zod";
import type { Chat } from "grammy/types";
import { describe, expect, it } from "vitest";
import { htmlToPlain, planChunks } from "../../adapters/telegram/split.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { UsageStore } from "../../src/usage/store.js";
import type { RedisClient } from "../../src/redis.js";
import { text, toolUse, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";

const WAIT = 20_000;
const MARK = "⏹ 已停止";

/** A read-only tool that runs until its signal aborts (a Stop), and says when it saw it. */
const lookup = { started: false, signalledAt: 0 };
const slowLookup = defineTool({
  name: "e2e_stop_lookup",
  description: "Looks something up slowly (a test tool).",
  tags: ["util"],
  readOnly: true,
  input: z.object({}),
  timeoutMs: 60_000,
  run: (_input, context) =>
    new Promise<string>((_resolve, reject) => {
      lookup.started = true;
      context.signal.addEventListener("abort", () => {
        lookup.signalledAt = Date.now();
        reject(new Error("aborted"));
      });
    }),
});

/** A dangerous tool that, once approved, runs until the test lets it finish (`release`); it ignores its signal. */
const change = { started: false, signalled: false, release: () => {} };
const slowChange = defineTool({
  name: "e2e_stop_change",
  description: "Changes something once confirmed, and takes a while (a test tool).",
  tags: ["util"],
  dangerous: true,
  input: z.object({}),
  timeoutMs: 60_000,
  activity: () => "更改設定",
  run: (_input, context) =>
    new Promise<string>((resolve) => {
      change.started = true;
      context.signal.addEventListener("abort", () => (change.signalled = true));
      change.release = () => resolve("changed");
    }),
});

let stack: Stack;
let redis: RedisClient;
useStack(
  { env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" }, tools: [slowLookup, slowChange] },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function sentTo(chat: Chat): FakeSentMessage[] {
  return stack.telegram.sent.filter((m) => m.chatId === chat.id);
}

/** The visible text of `answer` as the final (formatted) message shows it. */
function finalText(answer: string): string {
  return planChunks(answer)
    .map((c) => htmlToPlain(c.html))
    .join("");
}

/** The model's request whose last user text contains `needle`. */
function requestWith(needle: string): FakeRequest | undefined {
  return stack.model.requests.find((r) => JSON.stringify(r.messages[r.messages.length - 1]).includes(needle));
}

const WRITTEN = "第一段：臺北市今天晴時多雲，";
const REST = "午後有局部短暫陣雨，氣溫 22 到 28 度，出門記得帶把傘。";

describe("Stop on Telegram", () => {
  it("the asker presses Stop mid-stream: the stream ends within 1 s, the partial answer stays marked in history and usage, the queued one runs", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009420001, "停止群組");
    const ann = tg.user(94201, "Ann");
    const bob = tg.user(94202, "Bob");
    const hold = deferred();
    const cutBefore = stack.model.cutOff.length;
    stack.model.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: 7, holdAfterChars: [...WRITTEN].length, hold: hold.promise },
    });
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 今天天氣如何？` });
    const live = await tg.waitFor(
      () => sentTo(group).find((m) => m.text === WRITTEN),
      WAIT,
      "the live answer showing what was written so far",
    );
    const [button] = tg.buttons(live);
    expect(button).toMatchObject({ text: "⏹ 停止" });
    expect(button!.callback_data).toMatch(/^sp:[A-Za-z0-9_-]{12}$/);

    // A second message waits behind the answer in the conversation's queue.
    stack.model.enqueue(text("在的，我在。"));
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 還在嗎？` });

    // Bob did not ask and is no admin: refused, nothing stops.
    const refused = tg.pressButton({ from: bob, message: live, data: button!.callback_data! });
    await tg.waitFor(() => tg.callbackAnswers.find((a) => a.callback_query_id === refused), WAIT, "Bob's answer");
    expect(tg.callbackAnswers.find((a) => a.callback_query_id === refused)?.text).toBe(
      "只有提問的人或群組管理員可以停止這個回答。",
    );
    expect(stack.model.cutOff).toHaveLength(cutBefore);

    const pressedAt = Date.now();
    const pressed = tg.pressButton({ from: ann, message: live, data: button!.callback_data! });
    const cut = await tg.waitFor(() => stack.model.cutOff[cutBefore], WAIT, "the model stream closed by the stop");
    expect(cut.at - pressedAt).toBeLessThan(1000);
    expect(tg.callbackAnswers.find((a) => a.callback_query_id === pressed)?.text).toBe("正在停止這個回答。");

    const stoppedAnswer = `${WRITTEN}\n\n${MARK}`;
    await tg.waitFor(() => live.text === finalText(stoppedAnswer), WAIT, "the stopped answer's final edit");
    expect(tg.buttons(live)).toEqual([]); // the Stop button is gone with the final edit
    expect(live.text).not.toContain(REST.slice(0, 5));

    // The queued message runs as usual, with the stopped answer in its history (valid: the fake checks it).
    const next = await tg.waitFor(
      () => sentTo(group).find((m) => m.text.includes("在的，我在。")),
      WAIT,
      "the next answer",
    );
    expect(next).toBeDefined();
    const request = requestWith("還在嗎");
    expect(request).toBeDefined();
    const assistant = request!.messages.filter((m) => m.role === "assistant");
    expect(JSON.stringify(assistant[assistant.length - 1])).toContain(WRITTEN);
    expect(JSON.stringify(assistant[assistant.length - 1])).toContain(MARK);
    expect(stack.model.rejections).toEqual([]);

    // Usage counts what was spent on the stopped call: its input, and output estimated from what arrived.
    const { user } = await new UsageStore(redis, stack.config.TIMEZONE).dayTotals("telegram", String(ann.id), {
      user: true,
      all: false,
    });
    expect(user!.calls).toBe(2);
    expect(user!.output).toBeGreaterThanOrEqual([...WRITTEN].length);

    // A press after the answer finished changes nothing and says so.
    const late = tg.pressButton({ from: ann, message: live, data: button!.callback_data! });
    await tg.waitFor(
      () => tg.callbackAnswers.find((a) => a.callback_query_id === late),
      WAIT,
      "the late press's answer",
    );
    expect(tg.callbackAnswers.find((a) => a.callback_query_id === late)?.text).toBe(
      "這個回答已經寫完了，沒有東西可以停止。",
    );
    expect(live.text).toBe(finalText(stoppedAnswer));
    hold.resolve();
  }, 60_000);

  it("a non-asker's press leaves the answer running to its end; /stop with nothing running says so", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009420002, "停止群組二");
    const ann = tg.user(94203, "Ann");
    const bob = tg.user(94204, "Bob");
    const hold = deferred();
    const cutBefore = stack.model.cutOff.length;
    stack.model.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: 5, holdAfterChars: 10, hold: hold.promise },
    });
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 今天天氣如何？` });
    const live = await tg.waitFor(() => sentTo(group).find((m) => tg.buttons(m).length > 0), WAIT, "the live answer");
    const refused = tg.pressButton({ from: bob, message: live, data: tg.buttons(live)[0]!.callback_data! });
    await tg.waitFor(() => tg.callbackAnswers.find((a) => a.callback_query_id === refused), WAIT, "Bob's answer");
    hold.resolve();
    // The last streamed edit may already show the whole text (with the button); the final edit removes the button.
    await tg.waitFor(
      () => live.text === finalText(WRITTEN + REST) && tg.buttons(live).length === 0,
      WAIT,
      "the whole answer, its final edit",
    );
    expect(stack.model.cutOff).toHaveLength(cutBefore);

    tg.sendUserMessage({ chat: group, from: ann, text: `/stop@${tg.bot.username}` });
    await tg.waitFor(
      () => sentTo(group).find((m) => m.text === "目前沒有正在寫的回答可以停止。"),
      WAIT,
      "/stop's answer",
    );
  }, 60_000);

  it("/stop from the asker stops a running tool call: the tool is signalled within 1 s and its tool_result says it was stopped", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009420003, "停止群組三");
    const ann = tg.user(94205, "Ann");
    lookup.started = false;
    stack.model.enqueue(toolUse("e2e_stop_lookup", {}));
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 幫我查一下` });
    const live = await tg.waitFor(
      () => sentTo(group).find((m) => m.text.includes("e2e_stop_lookup") && tg.buttons(m).length > 0),
      WAIT,
      "the live answer's status line",
    );
    await tg.waitFor(() => lookup.started || undefined, WAIT, "the tool running");
    const sentAt = Date.now();
    tg.sendUserMessage({ chat: group, from: ann, text: `/stop@${tg.bot.username}` });
    await tg.waitFor(() => lookup.signalledAt || undefined, WAIT, "the tool signalled");
    expect(lookup.signalledAt - sentAt).toBeLessThan(1000);
    await tg.waitFor(() => tg.buttons(live).length === 0 && live.text.includes(MARK), WAIT, "the stopped answer");
    await tg.waitFor(() => sentTo(group).find((m) => m.text === "正在停止這個回答。"), WAIT, "/stop's answer");

    stack.model.enqueue(text("好的。"));
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 算了` });
    await tg.waitFor(() => sentTo(group).find((m) => m.text === "好的。"), WAIT, "the next answer");
    const request = requestWith("算了")!;
    const results = JSON.stringify(request.messages);
    expect(results).toContain("pressed Stop while e2e_stop_lookup was running");
    expect(stack.model.rejections).toEqual([]);
  }, 60_000);

  it("a group admin may stop someone else's answer; an approved dangerous tool running is not cut: it finishes and the answer says so", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009420004, "停止群組四");
    const ann = tg.user(94206, "Ann");
    const admin = tg.user(94207, "Admin");
    tg.admins.set(group.id, new Set([admin.id]));
    change.started = false;
    change.signalled = false;
    stack.model.enqueue(toolUse("e2e_stop_change", {}));
    tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 幫我改設定` });
    const prompt = await tg.waitFor(
      () => sentTo(group).find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("ap:"))),
      WAIT,
      "the approval prompt",
    );
    const approve = tg.buttons(prompt).find((b) => b.callback_data!.endsWith(":y"))!;
    const requests = stack.model.requests.length;
    tg.pressButton({ from: ann, message: prompt, data: approve.callback_data! });
    await tg.waitFor(() => change.started || undefined, WAIT, "the approved tool running");
    const live = await tg.waitFor(
      () => sentTo(group).find((m) => m.text.includes("更改設定") && tg.buttons(m).length > 0),
      WAIT,
      "the resumed answer's status line with its Stop button",
    );
    const pressed = tg.pressButton({ from: admin, message: live, data: tg.buttons(live)[0]!.callback_data! });
    await tg.waitFor(() => tg.callbackAnswers.find((a) => a.callback_query_id === pressed), WAIT, "the admin's answer");
    expect(tg.callbackAnswers.find((a) => a.callback_query_id === pressed)?.text).toBe("正在停止這個回答。");
    // The approved change is neither signalled nor left behind: the answer waits for it.
    await tg.waitFor(() => live.text.includes("正在停止"), WAIT, "the stopping line");
    expect(change.signalled).toBe(false);
    change.release();
    await tg.waitFor(() => tg.buttons(live).length === 0 && live.text.includes(MARK), WAIT, "the stopped answer");
    expect(live.text).toContain("「更改設定」在停止前已開始，並已完成。");
    // Stopped: no model call after the tool.
    expect(stack.model.requests.length).toBe(requests);
    expect(stack.model.rejections).toEqual([]);
  }, 60_000);
});
