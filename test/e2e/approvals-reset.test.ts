/**
 * `/reset` and open approvals, end to end on Telegram and Discord (real grammy and discord.js
 * clients against the fakes, real Redis, the worker and the scripted model): a prompt asked
 * before a `/reset` is closed as "the conversation was reset" and never runs its tool, and
 * nothing said before the reset comes back into the history — neither from a decision pressed
 * afterwards, nor from a decision already accepted whose resumed run is still under way when the
 * reset comes (the run's append is refused: its answer is still delivered).
 */
import type { Chat, User } from "grammy/types";
import { z } from "zod";
import { expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { toolUse, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { quietWindow, seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { approvalsModel } from "./scripted-approvals.js";
import { lastUserTyped } from "./scripted-model.js";

const WAIT = 15_000;
const GONE_NOTICE = "這個確認請求已過期或不存在。";

/** A dangerous tool that, once approved, waits until the test lets it finish (`release`). */
const hold = { started: false, release: () => {} };
const holdTool = defineTool({
  name: "e2e_reset_hold",
  description: "Changes something once confirmed, and takes a while (a test tool).",
  tags: ["util"],
  dangerous: true,
  input: z.object({}),
  run: () =>
    new Promise<string>((resolve) => {
      hold.started = true;
      hold.release = () => resolve("held change done");
    }),
});

/** `hold change` → the holding tool; everything else as the approval scenarios' model. */
function model(request: FakeRequest): FakeMessageReply {
  if (lastUserTyped(request)?.includes("hold change")) return toolUse("e2e_reset_hold", {});
  return approvalsModel(request);
}

let stack: Stack;
let redis: RedisClient;
useStack({ model, tools: [holdTool] }, (started, connection) => {
  stack = started;
  redis = connection;
});

/** The stored history value of a conversation ("" when it has none). */
const history = async (platform: "telegram" | "discord", chatId: string) =>
  (await redis.get(conversationKeys({ platform, chatId }).history)) ?? "";

/** The model requests whose messages contain `needle` in a user text. */
function requestsWith(needle: string): FakeRequest[] {
  return stack.model.requests.filter((r) => lastUserTyped(r)?.includes(needle));
}

/** Every text of a request, JSON-encoded (to look for what must not be there). */
const all = (request: FakeRequest) => JSON.stringify(request.messages);

// --- Telegram ---

const dm = (id: number, name: string): { user: User; chat: Chat } => stack.telegram.dm(id, name);

const tgPrompt = (chatId: number): Promise<FakeSentMessage> => stack.telegram.buttonsMessage(chatId, WAIT);

const tgButton = (prompt: FakeSentMessage, approve: boolean): string =>
  approve ? stack.telegram.approveData(prompt) : stack.telegram.declineData(prompt);

const toast = (id: string): Promise<string> => stack.telegram.toast(id, WAIT);

/** Sends `text` in `chat` and resolves with the bot's next message there. */
async function tgAsk(chat: Chat, from: User, text: string): Promise<string> {
  const tg = stack.telegram;
  const before = tg.sent.filter((m) => m.chatId === chat.id).length;
  tg.sendUserMessage({ chat, from, text });
  return (await tg.waitFor(() => tg.sent.filter((m) => m.chatId === chat.id)[before], WAIT, `an answer to "${text}"`))
    .text;
}

it("Telegram: delete → /reset → approve: the prompt is closed as reset, the tool does not run, nothing of before the reset comes back", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7301, "Rita");
  await seedTodos(redis, "telegram", "7301", ["買牛奶", "繳電費"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1 before-reset-tg" });
  const prompt = await tgPrompt(7301);
  expect(await history("telegram", "7301")).toBe("");

  const approve = tgButton(prompt, true);
  // The reply says no more than its own line: the prompt itself says that it was closed (LINE's reply adds a line).
  expect(await tgAsk(chat, user, "/reset")).toBe("好的，我已經忘掉這個聊天之前的對話了。");
  // The /reset itself closes the prompt, as an expired one is closed, saying why.
  await tg.waitFor(() => prompt.text.includes("對話已重設"), WAIT, "the prompt closed as reset");
  expect(prompt.text).toBe("⌛ 對話已重設，未執行：刪除待辦 #1「買牛奶」");
  expect(tg.buttons(prompt)).toEqual([]);
  // A press on the old button (a client that still shows it): the usual notice, and nothing runs.
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: approve }))).toBe(GONE_NOTICE);
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: approve }))).toBe(GONE_NOTICE);

  expect(await todoLines(redis, "telegram", "7301")).toEqual(["#1 買牛奶", "#2 繳電費"]);
  expect(tg.sent.filter((m) => m.chatId === 7301 && m.text.includes("delete_todo:"))).toEqual([]);
  expect(await history("telegram", "7301")).toBe("");
  // Only the one request of the run that asked: no resumed run called the model.
  expect(stack.model.requests.filter((r) => all(r).includes("before-reset-tg"))).toHaveLength(1);

  expect(await tgAsk(chat, user, "hello after-reset-tg")).toBe("You said: hello after-reset-tg");
  const [next] = requestsWith("after-reset-tg");
  expect(next!.messages).toHaveLength(1);
  expect(all(next!)).not.toContain("before-reset-tg");
  const stored = await history("telegram", "7301");
  expect(stored).toContain("after-reset-tg");
  expect(stored).not.toContain("before-reset-tg");
  expect(stored).not.toContain("delete_todo");
});

it("Telegram: a decision accepted before /reset whose run is still under way delivers its answer, but adds nothing to the forgotten history", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7302, "Sam");
  hold.started = false;
  tg.sendUserMessage({ chat, from: user, text: "hold change inflight-tg" });
  const prompt = await tgPrompt(7302);
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: tgButton(prompt, true) }))).toBe(
    "已確認，處理中…",
  );
  await tg.waitFor(() => hold.started, WAIT, "the approved tool running");

  expect(await tgAsk(chat, user, "/reset")).toContain("忘掉");
  hold.release();
  const answer = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7302 && m.text.includes("held change done")),
    WAIT,
    "the resumed run's answer",
  );
  expect(answer.text).toBe("e2e_reset_hold: held change done");
  expect(prompt.text).toContain("已確認");
  await tg.waitFor(
    () => stack.logs().some((l) => String(l.msg).includes("its turns are not added to the history")),
    WAIT,
    "the refused append logged",
  );
  expect(await history("telegram", "7302")).toBe("");

  expect(await tgAsk(chat, user, "hello after-inflight-tg")).toBe("You said: hello after-inflight-tg");
  const [next] = requestsWith("after-inflight-tg");
  expect(next!.messages).toHaveLength(1);
  expect(all(next!)).not.toContain("hold change");
  expect(all(next!)).not.toContain("e2e_reset_hold");
});

// --- Discord ---

function dcUser(n: number, name: string): FakeUser {
  return { id: `70300000000000${String(n).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

interface Button {
  custom_id: string;
  disabled?: boolean;
}

function buttonsOf(messageId: string): Button[] {
  const rows = (stack.discord.message(messageId)?.components ?? []) as { components: Button[] }[];
  return rows.flatMap((r) => r.components);
}

async function dcPrompt(channelId: string): Promise<SentMessage> {
  const dc = stack.discord;
  return dc.waitFor(
    () => dc.sent.find((m) => m.channelId === channelId && buttonsOf(m.id).length > 0),
    WAIT,
    `an approval prompt in ${channelId}`,
  );
}

async function slash(author: FakeUser, name: string): Promise<string> {
  const i = stack.discord.slashCommand(author, name, { dm: true });
  const res = await stack.discord.waitFor(() => i.response, WAIT, `/${name} answered`);
  if (res.type === 5)
    return String((await stack.discord.waitFor(() => i.edits[0], WAIT, `/${name} edited in`)).content);
  return String(res.data?.content);
}

async function dcAsk(author: FakeUser, content: string): Promise<string> {
  const dc = stack.discord;
  const where = dc.dmChannel(author);
  const before = dc.sent.filter((m) => m.channelId === where).length;
  dc.sendUserMessage(author, content, { dm: true });
  return (
    await dc.waitFor(() => dc.sent.filter((m) => m.channelId === where)[before], WAIT, `an answer to "${content}"`)
  ).content;
}

it(
  "Discord: delete → /reset → approve: the prompt is closed as reset (buttons disabled), the " +
    "tool does not run, nothing of before the reset comes back",
  async () => {
    const dc = stack.discord;
    const rita = dcUser(1, "Rita");
    const channel = dc.dmChannel(rita);
    await seedTodos(redis, "discord", rita.id, ["看牙醫", "買菜"]);
    dc.sendUserMessage(rita, "delete #1 before-reset-dc", { dm: true });
    const prompt = await dcPrompt(channel);

    await dc.waitFor(() => dc.reactionUsers(prompt.id, "✅").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
    expect(await slash(rita, "reset")).toBe("好的，我已經忘掉這個聊天之前的對話了。");
    // The /reset itself closes the prompt, as an expired one is closed (buttons disabled, the bot's reactions removed).
    await dc.waitFor(() => dc.message(prompt.id)!.content.includes("對話已重設"), WAIT, "the prompt closed as reset");
    expect(dc.message(prompt.id)!.content).toBe("⌛ 對話已重設，未執行：刪除待辦 #1「看牙醫」");
    expect(buttonsOf(prompt.id).every((b) => b.disabled === true)).toBe(true);
    await dc.waitFor(() => dc.reactionUsers(prompt.id, "✅").length === 0, WAIT, "the bot's reactions removed");
    // A ✅ reaction on the closed prompt is not a decision any more.
    dc.react(rita, prompt.id, "✅");
    await quietWindow(400);

    expect(await todoLines(redis, "discord", rita.id)).toEqual(["#1 看牙醫", "#2 買菜"]);
    expect(dc.sent.filter((m) => m.channelId === channel && m.content.includes("delete_todo:"))).toEqual([]);
    expect(await history("discord", channel)).toBe("");

    expect(await dcAsk(rita, "hello after-reset-dc")).toBe("You said: hello after-reset-dc");
    const [next] = requestsWith("after-reset-dc");
    expect(next!.messages).toHaveLength(1);
    expect(all(next!)).not.toContain("before-reset-dc");
    expect(await history("discord", channel)).not.toContain("before-reset-dc");
  },
);
