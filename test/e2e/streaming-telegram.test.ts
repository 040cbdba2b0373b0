/**
 * Issue 15 end to end on Telegram with `STREAMING=on`: the real grammy client and worker against
 * the fake Bot API (drafts only in private chats, the real 400 for an unchanged edit) and the
 * strict fake Messages API streaming server-sent events. `STREAMING=off` is what every other
 * end-to-end file runs (`testConfig`), unchanged.
 */
import type { Chat } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { htmlToPlain, planChunks } from "../../adapters/telegram/split.js";
import { text, toolUse, toolUses } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { keysEverywhere } from "../helpers/redis.js";
import { itOneRedis } from "../helpers/cluster.js";
import { useStack, type Stack } from "./harness.js";
import { MODEL_RETRIES } from "./scenarios-common.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";

const INTERVAL_MS = 300;
const TIMEOUT_MS = 30_000;

let stack: Stack;
let redis: RedisClient;
useStack(
  { modelRetries: MODEL_RETRIES, env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: String(INTERVAL_MS) } },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** Every text a message showed, in order: its first send, then each successful edit. */
function historyOf(message: FakeSentMessage): { text: string; parseMode: unknown; at: number }[] {
  const tg = stack.telegram;
  const first = tg
    .callsOf("sendMessage")
    .find(
      (c) => c.at <= message.at && String(c.payload.chat_id) === String(message.chatId) && c.payload.text !== undefined,
    );
  const edits = tg.edits.filter(
    (e) =>
      e.method === "editMessageText" &&
      Number(e.payload.chat_id) === message.chatId &&
      Number(e.payload.message_id) === message.messageId,
  );
  return [
    ...(first ? [{ text: String(message.payload.text), parseMode: message.payload.parse_mode, at: message.at }] : []),
    ...edits.map((e) => ({ text: String(e.payload.text), parseMode: e.payload.parse_mode, at: e.at })),
  ];
}

/**
 * No edit of an answer was refused (e.g. "message is not modified"). Approval prompts are left
 * out: closing a prompt is allowed to meet "not modified" when a decision job is retried (a slow
 * machine can stall a job past its lock), and the outbound treats that as done.
 */
function expectNoRefusedEdits(): void {
  const tg = stack.telegram;
  const prompts = new Set(
    tg.sent
      .filter((m) => /^(⚠️|✅|❌|⌛|↩️)/u.test(m.text) || tg.buttons(m).length > 0)
      .map((m) => `${m.chatId}:${m.messageId}`),
  );
  expect(tg.refusedEdits.filter((r) => !prompts.has(`${r.chatId}:${r.messageId}`))).toEqual([]);
}

/**
 * No draft reached the private chat after the answer's final message `answer` (a draft after it
 * would show the answer's text being written again below the answer, for up to 30 s).
 */
function expectNoDraftAfter(chat: Chat, answer: FakeSentMessage): void {
  const late = stack.telegram.drafts.filter((d) => d.chatId === chat.id && d.at > answer.at);
  expect(late).toEqual([]);
}

/** The final answer as a non-streamed answer shows it: one entry per chunk, visible text and HTML. */
function finalChunks(answer: string): { text: string; html: string }[] {
  return planChunks(answer).map((c) => ({ text: htmlToPlain(c.html), html: c.html }));
}

const ANSWER = [
  "**臺北市**今天的天氣：晴時多雲，午後有局部短暫陣雨。",
  "",
  "- 氣溫：22 到 28 度",
  "- 降雨機率：30%",
  "",
  "出門記得帶把傘，也多喝水。祝你有美好的一天！😀 ".repeat(12),
].join("\n");

describe("streamed answers on Telegram", () => {
  itOneRedis(
    "group: the first piece is posted at once, edited at most once per interval, and the last edit is today's formatted answer",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150001, "串流群組");
      const ann = tg.user(95001, "Ann");
      stack.model.enqueue({ ...text(ANSWER), stream: { chunkChars: 25, totalMs: 1200 } });
      const sentAt = Date.now();
      const message = tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 今天天氣如何？` });
      const first = await tg.waitFor(() => sentTo(group)[0], TIMEOUT_MS, "the first streamed piece");
      expect(first.payload.parse_mode).toBeUndefined(); // live text is plain
      expect(first.payload.reply_parameters).toMatchObject({ message_id: message.message_id });
      const [chunk] = finalChunks(ANSWER);
      await tg.waitFor(
        () => sentTo(group)[0]!.text === chunk!.text && sentTo(group)[0]!.entities.length > 0,
        TIMEOUT_MS,
        "the final edit",
      );
      expect(sentTo(group)).toHaveLength(1);
      const shown = historyOf(sentTo(group)[0]!);
      expect(shown.length).toBeGreaterThanOrEqual(4); // the post, edits while streaming, the final edit
      const last = shown[shown.length - 1]!;
      expect(last.parseMode).toBe("HTML");
      expect(last.text).toBe(chunk!.html);
      for (let i = 1; i < shown.length; i++) {
        expect(shown[i]!.text).not.toBe(shown[i - 1]!.text);
        expect(shown[i]!.at - shown[i - 1]!.at).toBeGreaterThanOrEqual(INTERVAL_MS - 20);
      }
      // the live texts grow as the model writes
      expect(shown.slice(0, -1).every((s, i, all) => i === 0 || s.text.length >= all[i - 1]!.text.length)).toBe(true);
      // the typing indicator was shown before the first text
      expect(tg.chatActions.some((a) => Number(a.chat_id) === group.id)).toBe(true);
      expect(first.at - sentAt).toBeLessThan(TIMEOUT_MS);
      expectNoRefusedEdits();
    },
  );

  itOneRedis(
    "private chat: drafts show the growing text (sendMessageDraft), then the answer is sent once as a formatted message",
    async () => {
      const tg = stack.telegram;
      const mei = tg.user(95002, "Mei");
      const chat = tg.privateChat(mei);
      stack.model.enqueue({ ...text(ANSWER), stream: { chunkChars: 25, totalMs: 1200 } });
      tg.sendUserMessage({ chat, from: mei, text: "今天天氣如何？" });
      const answer = await tg.waitFor(() => sentTo(chat)[0], TIMEOUT_MS, "the answer");
      const drafts = tg.drafts.filter((d) => d.chatId === chat.id);
      expect(drafts.length).toBeGreaterThanOrEqual(3);
      expect(new Set(drafts.map((d) => d.draftId)).size).toBe(1);
      for (let i = 1; i < drafts.length; i++) {
        expect(drafts[i]!.text.length).toBeGreaterThan(drafts[i - 1]!.text.length);
        expect(drafts[i]!.at - drafts[i - 1]!.at).toBeGreaterThanOrEqual(INTERVAL_MS - 20);
      }
      expect(ANSWER.startsWith(drafts[0]!.text)).toBe(true);
      const [chunk] = finalChunks(ANSWER);
      expect(answer.text).toBe(chunk!.text);
      expect(answer.payload.text).toBe(chunk!.html);
      expect(answer.payload.parse_mode).toBe("HTML");
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 2));
      expect(sentTo(chat)).toHaveLength(1);
      expect(tg.edits.filter((e) => Number(e.payload.chat_id) === chat.id)).toEqual([]);
      expectNoDraftAfter(chat, answer);
    },
  );

  itOneRedis(
    "private chat, a stream broken mid-way (error event): the retried attempt's drafts go on, the answer is sent once, and no draft follows it",
    async () => {
      const tg = stack.telegram;
      const lin = tg.user(95021, "Lin");
      const chat = tg.privateChat(lin);
      stack.model.enqueue(
        { ...text(ANSWER), stream: { chunkChars: 20, totalMs: 1200, breakAfterChars: 200 } },
        { ...text(ANSWER), stream: { chunkChars: 20, totalMs: 1500 } },
      );
      tg.sendUserMessage({ chat, from: lin, text: "下週的天氣如何" });
      const answer = await tg.waitFor(() => sentTo(chat)[0], TIMEOUT_MS, "the answer");
      // Past the draft interval and a draft's refresh: nothing of the first attempt or the retry comes late.
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 4));
      expect(stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("下週的天氣如何"))).toHaveLength(2);
      expect(sentTo(chat)).toHaveLength(1);
      expect(answer.text).toBe(finalChunks(ANSWER)[0]!.text);
      const drafts = tg.drafts.filter((d) => d.chatId === chat.id);
      expect(drafts.length).toBeGreaterThanOrEqual(2);
      expectNoDraftAfter(chat, answer);
    },
  );

  it(
    "private chat that refuses drafts for good (400 TEXTDRAFT_PEER_INVALID): one refused draft " +
      "and one warning, the answer goes on as a message with edits, and the chat gets no drafts " +
      "for an hour on any worker",
    async () => {
      const tg = stack.telegram;
      const ren = tg.user(95012, "Ren");
      const chat = tg.privateChat(ren);
      tg.refuseDrafts(chat.id);
      const warningsBefore = stack.logs().filter((l) => String(l.msg).startsWith("the chat refused a draft")).length;
      stack.model.enqueue({ ...text(ANSWER), stream: { chunkChars: 25, totalMs: 1200 } });
      tg.sendUserMessage({ chat, from: ren, text: "今天會下雨嗎" });
      const live = await tg.waitFor(() => sentTo(chat)[0], TIMEOUT_MS, "the live message");
      const [chunk] = finalChunks(ANSWER);
      await tg.waitFor(() => sentTo(chat)[0]?.text === chunk!.text, TIMEOUT_MS, "the final edit");
      // one refused draft, then the live text was posted at once (plain) and edited as it grew
      const refusedDrafts = () => tg.callsOf("sendMessageDraft").filter((c) => Number(c.payload.chat_id) === chat.id);
      expect(refusedDrafts()).toHaveLength(1);
      expect(live.payload.parse_mode).toBeUndefined();
      // The refused draft's text went on as a posted message: the chat's next message call is the
      // post (no other draft tried). Not timed: a wall-clock bound of one interval failed on a
      // loaded machine (320 ms for a post that did not wait).
      const messageCalls = tg.calls.filter(
        (c) =>
          Number(c.payload.chat_id) === chat.id && /^(sendMessage|sendMessageDraft|editMessageText)$/.test(c.method),
      );
      expect(messageCalls[messageCalls.indexOf(refusedDrafts()[0]!) + 1]?.method).toBe("sendMessage");
      expect(historyOf(live).length).toBeGreaterThanOrEqual(3);
      expect(historyOf(live).at(-1)!.parseMode).toBe("HTML");
      expect(stack.logs().filter((l) => String(l.msg).startsWith("the chat refused a draft")).length).toBe(
        warningsBefore + 1,
      );
      const ttl = await redis.ttl(`drafts-off:{telegram:${chat.id}}`);
      expect(ttl).toBeGreaterThan(3500);
      expect(ttl).toBeLessThanOrEqual(3600);
      // the next answer in that chat does not try a draft at all
      stack.model.enqueue({ ...text("第二個回答：" + "好的。".repeat(30)), stream: { chunkChars: 20, totalMs: 800 } });
      tg.sendUserMessage({ chat, from: ren, text: "再一次" });
      await tg.waitFor(() => sentTo(chat)[1]?.text.startsWith("第二個回答"), TIMEOUT_MS, "the second answer");
      expect(refusedDrafts()).toHaveLength(1);
      expectNoRefusedEdits();
    },
  );

  itOneRedis(
    "a tool call in the middle: its status line shows while it runs, one compact line of it ends the answer; earlier text is not repeated",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150003, "工具群組");
      const bo = tg.user(95003, "Bo");
      const final = "6 × 7 的答案是 **42**。這個數字也是《銀河便車指南》裡生命、宇宙以及一切的終極答案。".repeat(3);
      stack.model.enqueue(
        { ...toolUse("calculate", { expression: "6*7" }, { text: "我來算一下。" }), stream: { firstTokenMs: 50 } },
        { ...text(final), stream: { firstTokenMs: INTERVAL_MS * 2, chunkChars: 20, totalMs: 900 } },
      );
      tg.sendUserMessage({ chat: group, from: bo, text: `@${tg.bot.username} 6*7 是多少？` });
      const [chunk] = finalChunks(`${final}\n\n🔧 計算：6*7`);
      await tg.waitFor(() => sentTo(group)[0]?.text === chunk!.text, TIMEOUT_MS, "the final answer");
      expect(sentTo(group)).toHaveLength(1);
      const shown = historyOf(sentTo(group)[0]!).map((s) => s.text);
      expect(shown.some((t) => t.startsWith("🔧 計算：6*7"))).toBe(true);
      expect(shown.some((t) => /^🔧 計算：6\*7 ✓\n\n\S/.test(t))).toBe(true); // the status line above the answer being written
      expect(shown[shown.length - 1]).toBe(chunk!.html);
      // The status line itself is gone; one compact line of what was done ends the answer.
      expect(sentTo(group)[0]!.text.startsWith("🔧")).toBe(false);
      expect(sentTo(group)[0]!.text.endsWith("\n\n🔧 計算：6*7")).toBe(true);
      expect(sentTo(group)[0]!.text).not.toContain("✓");
      expect(sentTo(group)[0]!.text).not.toContain("我來算一下");
      expectNoRefusedEdits();
    },
  );

  itOneRedis("a tool's input in the answer's last line shows as it is, never as Markdown", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009150013, "輸入群組");
    const di = tg.user(95013, "Di");
    const final = "好了，已經加進清單。".repeat(3);
    stack.model.enqueue(
      { ...toolUse("add_todo", { title: "**milk** _now_ <b>" }), stream: { firstTokenMs: 50 } },
      { ...text(final), stream: { firstTokenMs: INTERVAL_MS * 2, chunkChars: 20, totalMs: 600 } },
    );
    tg.sendUserMessage({ chat: group, from: di, text: `@${tg.bot.username} add milk` });
    const expected = `${final}\n\n🔧 新增待辦：**milk** _now_ <b>`;
    await tg.waitFor(
      () => sentTo(group)[0]?.text === expected,
      TIMEOUT_MS,
      "the final answer, its last line as written",
    );
    expect(sentTo(group)).toHaveLength(1);
    expect(sentTo(group)[0]!.entities).toEqual([]);
    expectNoRefusedEdits();
  });

  itOneRedis(
    "over the length limit: the full part stays in its message, the rest continues in a new one, split exactly as today",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150004, "長文群組");
      const cy = tg.user(95004, "Cy");
      const paragraph = "這是一段很長的說明文字，用來測試超過 Telegram 單則訊息上限時的串流分段。".repeat(6);
      const long = Array.from({ length: 30 }, (_, i) => `${i + 1}. ${paragraph}`).join("\n\n");
      const chunks = finalChunks(long);
      expect(chunks.length).toBeGreaterThanOrEqual(2);
      stack.model.enqueue({ ...text(long), stream: { chunkChars: 200, totalMs: 1200 } });
      tg.sendUserMessage({ chat: group, from: cy, text: `@${tg.bot.username} 寫長一點` });
      await tg.waitFor(
        () => sentTo(group).length === chunks.length && sentTo(group).every((m, i) => m.text === chunks[i]!.text),
        TIMEOUT_MS,
        "the final chunks",
      );
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 2));
      const messages = sentTo(group);
      expect(messages.map((m) => m.text)).toEqual(chunks.map((c) => c.text));
      for (const m of messages) expect(m.text.length).toBeLessThanOrEqual(4096);
      // the second message was posted while the model was still writing (before the final edit of the first)
      const firstFinal = historyOf(messages[0]!).at(-1)!;
      expect(messages[1]!.at).toBeLessThanOrEqual(firstFinal.at);
      expect(tg.deleted.filter((m) => m.chatId === group.id)).toEqual([]);
      expectNoRefusedEdits();
    },
  );

  it("a stream broken mid-way (error event): the retry edits the partial message to the one complete answer", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009150005, "中斷群組");
    const di = tg.user(95005, "Di");
    stack.model.enqueue(
      { ...text(ANSWER), stream: { chunkChars: 20, totalMs: 1200, breakAfterChars: 200 } },
      { ...text(ANSWER), stream: { chunkChars: 40, totalMs: 800 } },
    );
    tg.sendUserMessage({ chat: group, from: di, text: `@${tg.bot.username} 天氣？` });
    const partial = await tg.waitFor(() => sentTo(group)[0], TIMEOUT_MS, "the partial answer");
    const [chunk] = finalChunks(ANSWER);
    await tg.waitFor(() => sentTo(group)[0]?.text === chunk!.text, TIMEOUT_MS, "the complete answer");
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
    expect(sentTo(group)).toHaveLength(1);
    expect(sentTo(group)[0]!.messageId).toBe(partial.messageId); // the partial message became the answer
    expect(stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("天氣？"))).toHaveLength(2);
    expect(await keysEverywhere(redis, "stream:*")).toEqual([]);
    expectNoRefusedEdits();
  });

  itOneRedis(
    "approval with streaming on: the safe call's status message is deleted, the prompt is its own message, the answer follows the approval",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150006, "核准群組");
      const eve = tg.user(95006, "Eve");
      tg.sendUserMessage({ chat: group, from: eve, text: `@${tg.bot.username} add todo 買牛奶` });
      await tg.waitFor(
        () => sentTo(group)[0]?.text === "add_todo: 已新增待辦：#1 買牛奶\n\n🔧 新增待辦：買牛奶",
        TIMEOUT_MS,
        "the todo added",
      );
      expect(sentTo(group)).toHaveLength(1); // the status line's message became the answer
      stack.model.enqueue({
        ...toolUses([
          { name: "list_todos", input: {} },
          { name: "delete_todo", input: { todo_id: 1 } },
        ]),
        stream: { firstTokenMs: 50 },
      });
      tg.sendUserMessage({ chat: group, from: eve, text: `@${tg.bot.username} 看清單然後刪除 #1` });
      const prompt = await tg.waitFor(
        () => sentTo(group).find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("ap:"))),
        TIMEOUT_MS,
        "the approval prompt",
      );
      expect(prompt.text).toContain("刪除待辦 #1「買牛奶」");
      // The status message's deletion may reach Telegram just after the prompt (a loaded machine).
      const live = await tg.waitFor(
        () => {
          const deleted = tg.deleted.filter((m) => m.chatId === group.id);
          return deleted.length > 0 ? deleted : undefined;
        },
        TIMEOUT_MS,
        "the status message deleted",
      );
      expect(live).toHaveLength(1);
      expect(live[0]!.text).toMatch(/^🔧 讀取待辦清單/);
      expect(sentTo(group)).toHaveLength(2);
      const approve = tg.buttons(prompt).find((b) => b.text.includes("確認"))!;
      tg.pressButton({ from: eve, message: prompt, data: approve.callback_data! });
      // The resumed run streams like a fresh one: its live message ends as the answer.
      const result = await tg.waitFor(() => sentTo(group)[2], TIMEOUT_MS, "the answer after the approval");
      await tg.waitFor(
        () => result.text.includes("delete_todo: 已刪除：#1 買牛奶"),
        TIMEOUT_MS,
        "the answer's final edit",
      );
      expect(result.text).toContain("delete_todo: 已刪除：#1 買牛奶");
      await tg.waitFor(() => result.text.endsWith("🔧 刪除待辦 #1"), TIMEOUT_MS, "the line of the approved call");
      expect(sentTo(group)).toHaveLength(3);
      expectNoRefusedEdits();
    },
  );

  it(
    "a run resumed after an approval streams like a fresh one: drafts show the approved call's " +
      "status line and the growing answer, then the formatted answer once",
    async () => {
      const tg = stack.telegram;
      const lin = tg.user(95009, "Lin");
      const chat = tg.privateChat(lin);
      await seedTodos(redis, "telegram", String(lin.id), ["買牛奶"]);
      stack.model.enqueue(
        { ...toolUse("delete_todo", { todo_id: 1 }), stream: { firstTokenMs: 50 } },
        { ...text(ANSWER), stream: { chunkChars: 25, totalMs: 1200 } },
      );
      tg.sendUserMessage({ chat, from: lin, text: "刪除 #1，然後說說天氣" });
      const prompt = await tg.waitFor(
        () => sentTo(chat).find((m) => tg.buttons(m).length > 0),
        TIMEOUT_MS,
        "the approval prompt",
      );
      const draftsBefore = tg.drafts.filter((d) => d.chatId === chat.id).length;
      const typingBefore = tg.chatActions.filter((a) => Number(a.chat_id) === chat.id).length;
      tg.pressButton({
        from: lin,
        message: prompt,
        data: tg.buttons(prompt).find((b) => b.callback_data!.endsWith(":y"))!.callback_data!,
      });
      const answer = await tg.waitFor(() => sentTo(chat).find((m) => m !== prompt), TIMEOUT_MS, "the answer");
      const drafts = tg.drafts.filter((d) => d.chatId === chat.id).slice(draftsBefore);
      expect(drafts.length).toBeGreaterThanOrEqual(3);
      expect(new Set(drafts.map((d) => d.draftId)).size).toBe(1);
      expect(drafts[0]!.text).toMatch(/^🔧 /u); // the approved call, as it ran
      const growing = drafts.map((d) => d.text.split("\n\n").slice(1).join("\n\n")).filter((t) => t !== "");
      expect(growing.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < growing.length; i++) expect(growing[i]!.length).toBeGreaterThan(growing[i - 1]!.length);
      for (let i = 1; i < drafts.length; i++)
        expect(drafts[i]!.at - drafts[i - 1]!.at).toBeGreaterThanOrEqual(INTERVAL_MS - 20);
      const [chunk] = finalChunks(`${ANSWER}\n\n🔧 刪除待辦 #1`);
      expect(answer.text).toBe(chunk!.text);
      expect(answer.payload.parse_mode).toBe("HTML");
      expect(tg.chatActions.filter((a) => Number(a.chat_id) === chat.id).length).toBeGreaterThan(typingBefore);
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 2));
      expect(sentTo(chat)).toEqual([prompt, answer]);
      expect(await todoLines(redis, "telegram", String(lin.id))).toEqual([]);
    },
  );

  itOneRedis(
    "a live message deleted in the chat before the final edit: the final chunk is posted as a new message, one complete answer",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150008, "刪除群組");
      const gus = tg.user(95008, "Gus");
      const streamMs = 1200;
      stack.model.enqueue({ ...text(ANSWER), stream: { chunkChars: 25, totalMs: streamMs } });
      tg.sendUserMessage({ chat: group, from: gus, text: `@${tg.bot.username} 今天天氣如何？` });
      const live = await tg.waitFor(() => sentTo(group)[0], TIMEOUT_MS, "the first streamed piece");
      // Someone deletes the live message (as an admin may): from the bot's side it is simply gone.
      const deleted = await fetch(`${tg.apiRoot}/bot${tg.token}/deleteMessage`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat_id: group.id, message_id: live.messageId }),
      });
      expect(deleted.status).toBe(200);
      const [chunk] = finalChunks(ANSWER);
      const answer = await tg.waitFor(
        () => sentTo(group).find((m) => m.text === chunk!.text),
        TIMEOUT_MS,
        "the final chunk posted anew",
      );
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
      expect(sentTo(group)).toEqual([answer]);
      expect(answer.messageId).not.toBe(live.messageId);
      expect(answer.payload.parse_mode).toBe("HTML");
      expect(answer.payload.text).toBe(chunk!.html);
      // the edits of the deleted message were refused as "not found", each at most once per interval (no retry storm)
      const refused = tg.refusedEdits.filter((r) => r.chatId === group.id);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(
        refused.every((r) => r.messageId === live.messageId && /message to edit not found/.test(r.description)),
      ).toBe(true);
      expect(refused.length).toBeLessThanOrEqual(streamMs / INTERVAL_MS + 3);
    },
  );

  itOneRedis(
    "the final edit falls back to plain text when Telegram rejects its HTML, as a non-streamed answer does",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009150007, "備援群組");
      const fay = tg.user(95007, "Fay");
      const answer = "**重點**：明天記得帶傘。";
      const [chunk] = planChunks(answer);
      stack.model.enqueue({ ...text(answer), stream: { chunkChars: 100 } });
      tg.failNext("editMessageText", {
        error_code: 400,
        description: 'Bad Request: can\'t parse entities: unsupported start tag "b" at byte offset 0',
      });
      tg.sendUserMessage({ chat: group, from: fay, text: `@${tg.bot.username} 明天呢？` });
      await tg.waitFor(
        () => tg.callsOf("editMessageText").some((c) => Number(c.payload.chat_id) === group.id),
        TIMEOUT_MS,
        "the final edit",
      );
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
      // the live message already shows the plain fallback (the Markdown source): no edit that changes nothing
      expect(sentTo(group)).toHaveLength(1);
      expect(sentTo(group)[0]!.text).toBe(chunk!.plain);
      expect(sentTo(group)[0]!.entities).toEqual([]);
      const calls = tg.callsOf("editMessageText").filter((c) => Number(c.payload.chat_id) === group.id);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.payload.parse_mode).toBe("HTML");
    },
  );
});
