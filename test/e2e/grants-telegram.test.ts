/**
 * Issue 18, "always allow", on Telegram end to end: the real grammy client against the fake Bot
 * API, real Redis, the worker and the scripted model; `delete_todo` (dangerous) and a test tool
 * that refuses grants. Each scenario has its own users and chats.
 */
import type { RedisClient } from "../../src/redis.js";
import type { Chat, Message, User } from "grammy/types";
import { expect, it } from "vitest";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { quietWindow, seedTodos, todoLines } from "./approvals-helpers.js";
import { approvalEvents, eraseNotes, eventually, grantedTools, grantsModel } from "./grants-helpers.js";
import { registry } from "../../src/metrics.js";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: grantsModel, tools: [eraseNotes] }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 15_000;
const ALWAYS_TOAST = "已確認，處理中…之後 30 天內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。";

const dm = (id: number, name: string): { user: User; chat: Chat } => stack.telegram.dm(id, name);

/** Sends `text` (mentioning the bot in a group) and resolves with the bot's first reply to it: an approval prompt or the answer. */
async function ask(
  chat: Chat,
  from: User,
  text: string,
  topic?: number,
): Promise<{ message: Message; reply: FakeSentMessage }> {
  const tg = stack.telegram;
  const seen = tg.sent.length;
  const message = tg.sendUserMessage({
    chat,
    from,
    text: chat.type === "private" ? text : `@${tg.bot.username} ${text}`,
    ...(topic ? { message_thread_id: topic } : {}),
  });
  return { message, reply: await tg.waitForReply(message, seen, WAIT) };
}

/** The `callback_data` of a prompt's button: `y` confirm, `n` cancel, `a` always allow. */
function data(prompt: FakeSentMessage, choice: "y" | "n" | "a"): string {
  const found = stack.telegram
    .buttons(prompt)
    .map((b) => b.callback_data!)
    .find((d) => d.endsWith(`:${choice}`));
  expect(found).toBeDefined();
  return found!;
}

/** The toast answering callback query `id`. */
const toast = (id: string): Promise<string> => stack.telegram.toast(id, WAIT);

/** The bot's message in `chatId` containing `needle`, once there (after `after` messages were sent). */
async function sentWith(chatId: number, needle: string, after = 0): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () => tg.sent.slice(after).find((m) => m.chatId === chatId && m.text.includes(needle)),
    WAIT,
    `a message with "${needle}" in ${chatId}`,
  );
}

/** Approval prompts the bot posted in `chatId` (messages sent with a confirm button). */
function prompts(chatId: number): FakeSentMessage[] {
  return stack.telegram.sent.filter(
    (m) => m.chatId === chatId && JSON.stringify(m.payload.reply_markup ?? {}).includes(":y"),
  );
}

/** Presses "always allow" on `prompt` as `user`, checks the toast and waits for the answer. */
async function alwaysAllow(prompt: FakeSentMessage, user: User, answerNeedle: string): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  const seen = tg.sent.length;
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: data(prompt, "a") }))).toBe(ALWAYS_TOAST);
  return sentWith(prompt.chatId, answerNeedle, seen);
}

it("always allow: this call runs, the next call of the tool by that user in that chat runs without a prompt, and the trace says a grant was used", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7301, "Amy");
  await seedTodos(redis, "telegram", "7301", ["買牛奶", "繳電費", "洗車"]);
  const approvalsBefore = await approvalCounts();
  const first = await ask(chat, user, "delete #1");
  const prompt = first.reply;
  expect(tg.buttons(prompt).map((b) => b.text)).toEqual(["✅ 確認", "❌ 取消", "🔓 一律允許"]);
  expect(
    (prompt.payload.reply_markup as { inline_keyboard: unknown[][] }).inline_keyboard.map((row) => row.length),
  ).toEqual([2, 1]);

  const answer = await alwaysAllow(prompt, user, "delete_todo:");
  expect(answer.text).toBe("delete_todo: 已刪除：#1 買牛奶");
  await tg.waitFor(() => prompt.text.startsWith("✅"), WAIT, "the prompt edited to the outcome");
  expect(prompt.text).toBe("✅ 已確認，30 天內一律允許：刪除待辦 #1「買牛奶」");
  expect(tg.buttons(prompt)).toEqual([]);
  expect(await grantedTools(redis, { platform: "telegram", chatId: "7301", userId: "7301" })).toEqual(["delete_todo"]);

  const second = await ask(chat, user, "delete #2");
  expect(second.reply.text).toBe("delete_todo: 已刪除：#2 繳電費");
  expect(prompts(7301)).toHaveLength(1);
  expect(await todoLines(redis, "telegram", "7301")).toEqual(["#3 洗車"]);
  const conversation = { platform: "telegram" as const, chatId: "7301" };
  const granted = await eventually(
    async () => (await approvalEvents(redis, conversation, "granted"))[0],
    WAIT,
    "the trace of the granted call",
  );
  expect(granted.data).toMatchObject({ verdict: "granted", tool: "delete_todo" });
  expect(Date.parse(String(granted.data.grantExpiresAt))).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  expect((await approvalEvents(redis, conversation, "always"))[0]!.data).toMatchObject({ tool: "delete_todo" });
  // /metrics: one "always" decision on the prompt, one call run under the grant.
  const approvalsAfter = await approvalCounts();
  expect((approvalsAfter.always ?? 0) - (approvalsBefore.always ?? 0)).toBe(1);
  expect((approvalsAfter.granted ?? 0) - (approvalsBefore.granted ?? 0)).toBe(1);
  expect((approvalsAfter.approved ?? 0) - (approvalsBefore.approved ?? 0)).toBe(0);
});

/** `bot_approvals_total` of this process (the e2e worker runs in it), by verdict. */
async function approvalCounts(): Promise<Record<string, number>> {
  const values = (await registry.getSingleMetric("bot_approvals_total")!.get()).values;
  return Object.fromEntries(values.map((v) => [String(v.labels.verdict), v.value]));
}

it(
  "only the requester may press always allow; another member of the group is still asked, " +
    "and the grant does not reach another chat or another topic",
  async () => {
    const tg = stack.telegram;
    const group = tg.group(-1007302, "家庭群組", true);
    tg.createTopic(group, "採買", 11);
    const bea = tg.user(7302, "Bea");
    const cal = tg.user(7303, "Cal");
    await seedTodos(redis, "telegram", "7302", ["訂機票", "訂飯店", "換外幣", "買保險"]);
    await seedTodos(redis, "telegram", "7303", ["繳學費"]);

    const { reply: prompt } = await ask(group, bea, "delete #1");
    expect(prompt.text).toContain("只有 Bea 可以決定");
    expect(await toast(tg.pressButton({ from: cal, message: prompt, data: data(prompt, "a") }))).toBe(
      "只有 Bea 可以決定。",
    );
    await quietWindow(300);
    expect(await grantedTools(redis, { platform: "telegram", chatId: String(group.id), userId: "7303" })).toEqual([]);
    expect(await grantedTools(redis, { platform: "telegram", chatId: String(group.id), userId: "7302" })).toEqual([]);
    expect(tg.buttons(prompt)).toHaveLength(3);
    expect((await alwaysAllow(prompt, bea, "delete_todo:")).text).toBe("delete_todo: 已刪除：#1 訂機票");

    // Bea again in the group: no prompt.
    expect((await ask(group, bea, "delete #2")).reply.text).toBe("delete_todo: 已刪除：#2 訂飯店");
    // Cal in the same group: asked.
    const calAsked = (await ask(group, cal, "delete #1")).reply;
    expect(calAsked.text).toContain("刪除待辦 #1「繳學費」");
    expect(calAsked.text).toContain("只有 Cal 可以決定");
    tg.pressButton({ from: cal, message: calAsked, data: data(calAsked, "n") });
    // Bea in a topic of the same group (a conversation of its own): asked.
    const inTopic = (await ask(group, bea, "delete #3", 11)).reply;
    expect(inTopic.text).toContain("刪除待辦 #3「換外幣」");
    expect(inTopic.payload.message_thread_id).toBe(11);
    tg.pressButton({ from: bea, message: inTopic, data: data(inTopic, "n") });
    await tg.waitFor(() => inTopic.text.startsWith("❌"), WAIT, "the topic's prompt closed");
    // /permissions in the topic lists the topic's grants (none); in the group's General chat, Bea's one.
    let seen = tg.sent.length;
    tg.sendUserMessage({ chat: group, from: bea, text: "/permissions", message_thread_id: 11 });
    const topicList = await sentWith(group.id, "一律允許", seen);
    expect(topicList.text).toBe("你在這裡沒有「一律允許」的工具。需要確認的動作，可以在確認提示上按「一律允許」。");
    expect(topicList.payload.message_thread_id).toBe(11);
    seen = tg.sent.length;
    tg.sendUserMessage({ chat: group, from: bea, text: "/permissions" });
    expect((await sentWith(group.id, "一律允許", seen)).text).toMatch(
      /^你在這裡「一律允許」的工具（到期前不再詢問你）：\n• delete_todo — 到 /,
    );
    // Bea in her DM: asked.
    const { user: beaDm, chat: beaChat } = { user: bea, chat: tg.privateChat(bea) };
    const inDm = (await ask(beaChat, beaDm, "delete #3")).reply;
    expect(inDm.text).toContain("刪除待辦 #3「換外幣」");
    tg.pressButton({ from: bea, message: inDm, data: data(inDm, "n") });
    await sentWith(beaChat.id, "delete_todo:");
    expect(await todoLines(redis, "telegram", "7302")).toEqual(["#3 換外幣", "#4 買保險"]);
    expect(await todoLines(redis, "telegram", "7303")).toEqual(["#1 繳學費"]);
  },
);

it("/permissions (here in a forum topic) lists the grant with a revoke button; only its owner can revoke; the revoke counts at once", async () => {
  const tg = stack.telegram;
  const group = tg.group(-1007304, "讀書會", true);
  tg.createTopic(group, "報告", 33);
  const dee = tg.user(7304, "Dee");
  const eve = tg.user(7305, "Eve");
  await seedTodos(redis, "telegram", "7304", ["還書", "影印", "借教室"]);
  const { reply: prompt } = await ask(group, dee, "delete #1", 33);
  await alwaysAllow(prompt, dee, "delete_todo:");

  let seen = tg.sent.length;
  tg.sendUserMessage({ chat: group, from: dee, text: "/permissions", message_thread_id: 33 });
  const list = await sentWith(group.id, "一律允許", seen);
  expect(list.text).toMatch(/^你在這裡「一律允許」的工具（到期前不再詢問你）：\n• delete_todo — 到 .+$/);
  expect(tg.buttons(list).map((b) => b.text)).toEqual(["🚫 撤銷 delete_todo"]);
  const revoke = tg.buttons(list)[0]!.callback_data!;
  expect(Buffer.byteLength(revoke)).toBeLessThanOrEqual(64);

  expect(await toast(tg.pressButton({ from: eve, message: list, data: revoke }))).toBe(
    "這是別人的授權，只有本人可以撤銷。",
  );
  expect(
    await grantedTools(redis, { platform: "telegram", chatId: String(group.id), topicId: "33", userId: "7304" }),
  ).toEqual(["delete_todo"]);
  seen = tg.sent.length;
  tg.sendUserMessage({ chat: group, from: eve, text: "/permissions", message_thread_id: 33 });
  expect((await sentWith(group.id, "一律允許", seen)).text).toBe(
    "你在這裡沒有「一律允許」的工具。需要確認的動作，可以在確認提示上按「一律允許」。",
  );

  expect(await toast(tg.pressButton({ from: dee, message: list, data: revoke }))).toBe(
    "已撤銷：之後使用 delete_todo 會再詢問你。",
  );
  await tg.waitFor(() => tg.buttons(list).length === 0, WAIT, "the revoke button removed");
  expect(
    await grantedTools(redis, { platform: "telegram", chatId: String(group.id), topicId: "33", userId: "7304" }),
  ).toEqual([]);
  const asked = (await ask(group, dee, "delete #2", 33)).reply;
  expect(asked.text).toContain("刪除待辦 #2「影印」");
  expect(tg.buttons(asked)).toHaveLength(3);
  expect(await toast(tg.pressButton({ from: dee, message: list, data: revoke }))).toBe("這個授權已經撤銷或過期了。");
  tg.pressButton({ from: dee, message: asked, data: data(asked, "n") });
  await sentWith(group.id, "delete_todo:", seen);
  expect(await todoLines(redis, "telegram", "7304")).toEqual(["#2 影印", "#3 借教室"]);
});

it("a tool with alwaysAllow: false has no always-allow button; a forged always press is refused and changes nothing", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7306, "Fay");
  const { reply: prompt } = await ask(chat, user, "call erase_notes");
  expect(prompt.text).toContain("清除所有筆記");
  expect(tg.buttons(prompt).map((b) => b.text)).toEqual(["✅ 確認", "❌ 取消"]);
  const forged = data(prompt, "y").replace(/:y$/, ":a");
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: forged }))).toBe(
    "這個動作不能設為一律允許，請按「確認」或「取消」。",
  );
  await quietWindow(300);
  expect(tg.buttons(prompt)).toHaveLength(2);
  expect(await grantedTools(redis, { platform: "telegram", chatId: "7306", userId: "7306" })).toEqual([]);
  expect(tg.sent.filter((m) => m.chatId === 7306 && m.text.includes("erase_notes:"))).toEqual([]);

  const seen = tg.sent.length;
  expect(await toast(tg.pressButton({ from: user, message: prompt, data: data(prompt, "y") }))).toBe("已確認，處理中…");
  expect((await sentWith(7306, "erase_notes:", seen)).text).toBe("erase_notes: notes erased");
  const again = (await ask(chat, user, "call erase_notes")).reply;
  expect(again.text).toContain("清除所有筆記");
  tg.pressButton({ from: user, message: again, data: data(again, "n") });
  await tg.waitFor(() => again.text.startsWith("❌"), WAIT, "the second prompt closed");
});
