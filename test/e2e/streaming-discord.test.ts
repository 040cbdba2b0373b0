/**
 * Issue 15 end to end on Discord with `STREAMING=on`: the real discord.js REST client and worker
 * against the fake Discord (which applies its edit rate limit, 5 edits per channel per 5 s) and
 * the strict fake Messages API streaming server-sent events. Also the approval flow with
 * streaming on: the prompt stays a message of its own. `STREAMING=off` is what every other
 * end-to-end file runs (`testConfig`), unchanged.
 */
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { splitMessage, DISCORD_MESSAGE_LIMIT } from "../../adapters/discord/split.js";
import { text, toolUse, toolUses } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import { keysEverywhere } from "../helpers/redis.js";
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

let nextUser = 0;
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `71500000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

const sentIn = (channelId: string): SentMessage[] => stack.discord.messagesIn(channelId);

/** What the message shows now (edits applied). */
const contentOf = (m: SentMessage) => String(m.message.content);

/** Every content a message showed: its creation, then each accepted edit, with times. */
function historyOf(m: SentMessage): { content: string; at: number }[] {
  const edits = stack.discord.edits.filter((e) => e.messageId === m.id && typeof e.payload.content === "string");
  return [{ content: m.content, at: m.at }, ...edits.map((e) => ({ content: String(e.payload.content), at: e.at }))];
}

const mention = () => `<@${stack.discord.bot.id}>`;

/** An approval prompt (its buttons' `custom_id`s begin `ap:`), not a live answer with its Stop button. */
const isPrompt = (m: SentMessage) =>
  ((m.message.components ?? []) as { components: { custom_id?: string }[] }[]).some((r) =>
    r.components.some((c) => c.custom_id?.startsWith("ap:")),
  );

const ANSWER = [
  "**臺北市**今天的天氣：晴時多雲，午後有局部短暫陣雨。",
  "",
  "```",
  "氣溫 22–28 度",
  "```",
  "",
  "出門記得帶把傘，也多喝水。祝你有美好的一天！😀 ".repeat(14),
].join("\n");

describe("streamed answers on Discord", () => {
  it("guild channel: a reply posted at once and edited as the text grows; a 429 on an edit is waited out and the last edit is today's answer", async () => {
    const dc = stack.discord;
    const ann = user("Ann");
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    stack.model.enqueue({ ...text(ANSWER), stream: { chunkChars: 15, totalMs: 3000 } });
    const message = dc.sendUserMessage(ann, `${mention()} 今天天氣如何？`, { channelId });
    const first = await dc.waitFor(() => sentIn(channelId)[before], TIMEOUT_MS, "the first streamed piece");
    expect(first.payload.message_reference).toMatchObject({ message_id: message.id });
    expect(first.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    const [chunk] = splitMessage(ANSWER, DISCORD_MESSAGE_LIMIT);
    await dc.waitFor(() => contentOf(first) === chunk, TIMEOUT_MS, "the final edit");
    expect(sentIn(channelId).length).toBe(before + 1);
    const shown = historyOf(first);
    expect(shown.length).toBeGreaterThanOrEqual(6);
    for (let i = 1; i < shown.length; i++) {
      expect(shown[i]!.content).not.toBe(shown[i - 1]!.content);
      expect(shown[i]!.at - shown[i - 1]!.at).toBeGreaterThanOrEqual(INTERVAL_MS - 20);
    }
    expect(shown[shown.length - 1]!.content).toBe(chunk);
    // More than 5 edits in 5 s: the fake answered 429 and discord.js waited it out.
    expect(dc.editRateLimited.filter((r) => r.channelId === channelId).length).toBeGreaterThanOrEqual(1);
    expect(dc.typing.some((t) => t.channelId === channelId && t.at <= first.at)).toBe(true);
  });

  it("DM with a tool call in the middle: the status line is shown, then one compact line of it ends the answer; earlier text is not repeated", async () => {
    const dc = stack.discord;
    const bo = user("Bo");
    const channelId = dc.dmChannel(bo);
    const final = "6 × 7 的答案是 **42**。這個數字也是生命、宇宙以及一切的終極答案。".repeat(3);
    stack.model.enqueue(
      { ...toolUse("calculate", { expression: "6*7" }, { text: "我來算一下。" }), stream: { firstTokenMs: 50 } },
      { ...text(final), stream: { firstTokenMs: INTERVAL_MS * 2, chunkChars: 20, totalMs: 600 } },
    );
    dc.sendUserMessage(bo, "6*7 是多少？", { dm: true });
    // The status lines are plain text written as Markdown literals: Discord shows `6\*7` as 6*7.
    const [chunk] = splitMessage(`${final}\n\n🔧 計算：6\\*7`, DISCORD_MESSAGE_LIMIT);
    const answer = await dc.waitFor(
      () => sentIn(channelId).find((m) => contentOf(m) === chunk),
      TIMEOUT_MS,
      "the final answer",
    );
    expect(sentIn(channelId)).toHaveLength(1);
    const shown = historyOf(answer).map((s) => s.content);
    expect(shown.some((t) => t.startsWith("🔧 計算：6\\*7"))).toBe(true);
    expect(shown.some((t) => /^🔧 計算：6\\\*7 ✓\n\n\S/.test(t))).toBe(true);
    expect(contentOf(answer).startsWith("🔧")).toBe(false);
    expect(contentOf(answer).endsWith("\n\n🔧 計算：6\\*7")).toBe(true);
    expect(contentOf(answer)).not.toContain("✓");
    expect(contentOf(answer)).not.toContain("我來算一下");
  });

  it("a tool's input shows as it is, never as Markdown: in its live status line and in the answer's last line", async () => {
    const dc = stack.discord;
    const di = user("Di");
    const channelId = dc.dmChannel(di);
    const final = "好了，已經加進清單。".repeat(3);
    stack.model.enqueue(
      { ...toolUse("add_todo", { title: "**milk** <t:0:R> ||x||" }), stream: { firstTokenMs: 50 } },
      { ...text(final), stream: { firstTokenMs: INTERVAL_MS * 2, chunkChars: 20, totalMs: 600 } },
    );
    dc.sendUserMessage(di, "add milk", { dm: true });
    const line = "🔧 新增待辦：\\*\\*milk\\*\\* \\<t:0:R> \\|\\|x\\|\\|";
    const answer = await dc.waitFor(
      () => sentIn(channelId).find((m) => contentOf(m) === `${final}\n\n${line}`),
      TIMEOUT_MS,
      "the final answer",
    );
    const shown = historyOf(answer).map((s) => s.content);
    expect(shown.some((t) => t.startsWith(`${line} ✓\n\n`))).toBe(true);
    expect(shown.every((t) => !t.includes("**milk**"))).toBe(true);
    expect(await todoLines(redis, "discord", di.id)).toEqual(["#1 **milk** <t:0:R> ||x||"]);
  });

  it("over 2000 characters: the full part stays, the rest continues in a new message, split exactly as today", async () => {
    const dc = stack.discord;
    const cy = user("Cy");
    const channelId = dc.dmChannel(cy);
    const paragraph = "這是一段很長的說明文字，用來測試超過 Discord 單則訊息上限時的串流分段。".repeat(3);
    const long = Array.from({ length: 25 }, (_, i) => `${i + 1}. ${paragraph}`).join("\n\n");
    const chunks = splitMessage(long, DISCORD_MESSAGE_LIMIT);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    stack.model.enqueue({ ...text(long), stream: { chunkChars: 150, totalMs: 900 } });
    dc.sendUserMessage(cy, "寫長一點", { dm: true });
    await dc.waitFor(
      () => sentIn(channelId).length === chunks.length && sentIn(channelId).every((m, i) => contentOf(m) === chunks[i]),
      TIMEOUT_MS,
      "the final chunks",
    );
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 2));
    const messages = sentIn(channelId);
    expect(messages.map(contentOf)).toEqual(chunks);
    for (const m of messages) expect([...contentOf(m)].length).toBeLessThanOrEqual(2000);
    expect(dc.deleted.filter((m) => m.channelId === channelId)).toEqual([]);
  });

  it("a live message deleted in the chat before the final edit: the final chunk is posted as a new message, one complete answer", async () => {
    const dc = stack.discord;
    const gus = user("Gus");
    const channelId = dc.dmChannel(gus);
    const answer = "完整的回答：今天天氣晴朗，適合出門走走，記得防曬。".repeat(8);
    stack.model.enqueue({ ...text(answer), stream: { chunkChars: 20, totalMs: 900 } });
    dc.sendUserMessage(gus, "明天會下雨嗎？", { dm: true });
    const live = await dc.waitFor(() => sentIn(channelId)[0], TIMEOUT_MS, "the first streamed piece");
    // The user deletes the live message: from the bot's side it is simply gone (10008 Unknown Message).
    const deleted = await fetch(`${dc.apiUrl}/v10/channels/${channelId}/messages/${live.id}`, {
      method: "DELETE",
      headers: { authorization: `Bot ${dc.token}` },
    });
    expect(deleted.status).toBe(204);
    const final = await dc.waitFor(
      () => sentIn(channelId).find((m) => contentOf(m) === answer),
      TIMEOUT_MS,
      "the final chunk posted anew",
    );
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
    expect(sentIn(channelId)).toEqual([final]);
    expect(final.id).not.toBe(live.id);
    expect(final.content).toBe(answer); // posted with the final text, not edited to it
    expect(dc.edits.filter((e) => e.messageId === final.id)).toEqual([]);
  });

  it("a stream broken mid-way (error event): the retry edits the partial reply to the one complete answer", async () => {
    const dc = stack.discord;
    const di = user("Di");
    const channelId = dc.dmChannel(di);
    const before = sentIn(channelId).length;
    const answer = "完整的回答：今天天氣晴朗，適合出門走走，記得防曬。".repeat(8);
    stack.model.enqueue(
      { ...text(answer), stream: { chunkChars: 20, totalMs: 1000, breakAfterChars: 120 } },
      { ...text(answer), stream: { chunkChars: 40, totalMs: 600 } },
    );
    dc.sendUserMessage(di, "天氣？", { dm: true });
    const partial = await dc.waitFor(() => sentIn(channelId)[before], TIMEOUT_MS, "the partial answer");
    await dc.waitFor(() => contentOf(partial) === answer, TIMEOUT_MS, "the complete answer");
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
    expect(sentIn(channelId).length).toBe(before + 1);
    expect(stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("天氣？"))).toHaveLength(2);
    expect(await keysEverywhere(redis, "stream:*")).toEqual([]);
  });

  it("approval with streaming on: the status line of the safe call is removed, the prompt is its own message, the answer follows the approval", async () => {
    const dc = stack.discord;
    const eve = user("Eve");
    const channelId = dc.dmChannel(eve);
    dc.sendUserMessage(eve, "add todo 買牛奶", { dm: true });
    await dc.waitFor(
      () => sentIn(channelId).find((m) => contentOf(m) === "add_todo: 已新增待辦：#1 買牛奶\n\n🔧 新增待辦：買牛奶"),
      TIMEOUT_MS,
      "the todo added",
    );
    expect(sentIn(channelId)).toHaveLength(1); // the status line's message became the answer
    stack.model.enqueue({
      ...toolUses([
        { name: "list_todos", input: {} },
        { name: "delete_todo", input: { todo_id: 1 } },
      ]),
      stream: { firstTokenMs: 50 },
    });
    dc.sendUserMessage(eve, "看清單然後刪除 #1", { dm: true });
    const prompt = await dc.waitFor(
      () => sentIn(channelId).find((m) => isPrompt(m)),
      TIMEOUT_MS,
      "the approval prompt",
    );
    expect(contentOf(prompt)).toContain("需要確認：刪除待辦 #1「買牛奶」");
    // The live message that showed list_todos' status line was deleted before the prompt. Whether
    // it was posted at all is a race the product may win either way: list_todos runs in a few ms
    // and the pause stops the live answer, so a status line not yet posted is never posted (the
    // first update is a timer; on a loaded machine it may not fire before the pause). Either way
    // nothing of the live answer is left: the chat holds the added todo and the prompt.
    const live = dc.deleted.filter((m) => m.channelId === channelId);
    expect(live.length).toBeLessThanOrEqual(1);
    for (const m of live) expect(m.content).toMatch(/^🔧 讀取待辦清單/);
    expect(sentIn(channelId)).toHaveLength(2);
    const rows = prompt.payload.components as { components: { label: string; custom_id: string }[] }[];
    const approve = rows.flatMap((r) => r.components).find((c) => c.label === "確認")!;
    dc.clickButton(eve, prompt.id, approve.custom_id);
    // The resumed run streams like a fresh one: its live message ends as the answer.
    const result = await dc.waitFor(() => sentIn(channelId)[2], TIMEOUT_MS, "the answer after the approval");
    await dc.waitFor(
      () => contentOf(result).includes("delete_todo: 已刪除：#1 買牛奶"),
      TIMEOUT_MS,
      "the answer's final edit",
    );
    expect(contentOf(result)).toContain("delete_todo: 已刪除：#1 買牛奶");
    expect(sentIn(channelId)).toHaveLength(3);
    await dc.waitFor(() => (contentOf(prompt).startsWith("✅") ? true : undefined), TIMEOUT_MS, "the prompt closed");
  });

  it(
    "a run resumed after an approval streams like a fresh one: a reply posted at once (the " +
      "approved call's status line), edited as the answer grows, ending as today's answer",
    async () => {
      const dc = stack.discord;
      const kim = user("Kim");
      // A channel of its own: the first test's edits there still count against Discord's edit limit.
      const channelId = dc.threadId;
      await seedTodos(redis, "discord", kim.id, ["買牛奶"]);
      stack.model.enqueue(
        { ...toolUse("delete_todo", { todo_id: 1 }), stream: { firstTokenMs: 50 } },
        { ...text(ANSWER), stream: { chunkChars: 15, totalMs: 700 } },
      );
      const asked = Date.now();
      const message = dc.sendUserMessage(kim, `${mention()} 刪除 #1，然後說說天氣`, { channelId });
      const prompt = await dc.waitFor(
        () => sentIn(channelId).find((m) => m.at >= asked && isPrompt(m)),
        TIMEOUT_MS,
        "the approval prompt",
      );
      const rows = prompt.payload.components as { components: { label: string; custom_id: string }[] }[];
      dc.clickButton(kim, prompt.id, rows.flatMap((r) => r.components).find((c) => c.label === "確認")!.custom_id);
      const live = await dc.waitFor(
        () => sentIn(channelId).find((m) => m.at >= asked && m !== prompt),
        TIMEOUT_MS,
        "the live answer",
      );
      expect(live.payload.message_reference).toMatchObject({ message_id: message.id });
      expect(live.content).toMatch(/^🔧 /u); // the approved call, as it ran
      const chunk = `${splitMessage(ANSWER, DISCORD_MESSAGE_LIMIT)[0]}\n\n🔧 刪除待辦 #1`;
      await dc.waitFor(() => contentOf(live) === chunk, TIMEOUT_MS, "the final edit");
      const shown = historyOf(live);
      expect(shown.length).toBeGreaterThanOrEqual(4); // the post, edits while the answer grows, the final edit
      for (let i = 1; i < shown.length; i++) {
        expect(shown[i]!.content).not.toBe(shown[i - 1]!.content);
        expect(shown[i]!.at - shown[i - 1]!.at).toBeGreaterThanOrEqual(INTERVAL_MS - 20);
      }
      expect(dc.typing.some((t) => t.channelId === channelId && t.at >= prompt.at && t.at <= live.at)).toBe(true);
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 2));
      expect(sentIn(channelId).filter((m) => m.at >= asked)).toEqual([prompt, live]);
      expect(await todoLines(redis, "discord", kim.id)).toEqual([]);
    },
  );
});
