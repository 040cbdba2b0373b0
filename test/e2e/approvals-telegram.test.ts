/**
 * Issue 8's approval scenarios on Telegram, end to end: the real grammy client against the fake
 * Bot API, real Redis, the worker and the scripted model. Each scenario has its own user and chat.
 */
import type { RedisClient } from "../../src/redis.js";
import type { Chat, User } from "grammy/types";
import { expect, it } from "vitest";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { deleteTodo } from "../../tools/todo/store.js";
import { freshResults, quietWindow, seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { approvalsModel } from "./scripted-approvals.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: approvalsModel }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 15_000;

/** The approval prompt the bot posted in `chatId` (the first message there with buttons). */
const promptIn = (chatId: number): Promise<FakeSentMessage> => stack.telegram.buttonsMessage(chatId, WAIT);

/** The `callback_data` of the prompt's approve (`y`) or decline (`n`) button. */
const button = (prompt: FakeSentMessage, approve: boolean): string =>
  approve ? stack.telegram.approveData(prompt) : stack.telegram.declineData(prompt);

/** Messages the bot sent in `chatId` whose text contains `needle`. */
function answers(chatId: number, needle: string): FakeSentMessage[] {
  return stack.telegram.sent.filter((m) => m.chatId === chatId && m.text.includes(needle));
}

/** The answer to the callback query `id` (its toast text), once given. */
const toast = (id: string): Promise<string> => stack.telegram.toast(id, WAIT);

const dm = (id: number, name: string): { user: User; chat: Chat } => stack.telegram.dm(id, name);

/** The messages in `chatId` that have buttons now (open approval prompts), except those in `seen`. */
const openPrompts = (chatId: number, seen: FakeSentMessage[] = []): FakeSentMessage[] =>
  stack.telegram.sent.filter((m) => m.chatId === chatId && stack.telegram.buttons(m).length > 0 && !seen.includes(m));

/**
 * The bot's next step in `chatId` after a press: the final answer (a message with `delete_todo:`),
 * or a new prompt (one with buttons not in `seen`), whichever comes first.
 */
const nextStep = (chatId: number, seen: FakeSentMessage[]): Promise<FakeSentMessage> =>
  stack.telegram.waitFor(
    () => answers(chatId, "delete_todo:")[0] ?? openPrompts(chatId, seen)[0],
    WAIT,
    "the final answer or another prompt",
  );

it("approve: the todo is deleted, the prompt shows the outcome without buttons, the answer is sent", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7101, "Alice");
  await seedTodos(redis, "telegram", "7101", ["買牛奶", "繳電費"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1" });
  const prompt = await promptIn(7101);
  expect(prompt.text).toContain("刪除待辦 #1「買牛奶」");
  expect(prompt.text).toContain("只有 Alice 可以決定");
  expect(await todoLines(redis, "telegram", "7101")).toEqual(["#1 買牛奶", "#2 繳電費"]);

  const query = tg.pressButton({ from: user, message: prompt, data: button(prompt, true) });
  expect(await toast(query)).toBe("已確認，處理中…");
  const answer = await tg.waitFor(() => answers(7101, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.text).toBe("delete_todo: 已刪除：#1 買牛奶");
  expect(await todoLines(redis, "telegram", "7101")).toEqual(["#2 繳電費"]);
  await tg.waitFor(() => prompt.text.includes("已確認"), WAIT, "the prompt edited to the outcome");
  expect(prompt.text).toBe("✅ 已確認：刪除待辦 #1「買牛奶」");
  expect(prompt.message.reply_markup).toBeUndefined();
  expect(tg.buttons(prompt)).toEqual([]);
});

it("decline: the todo stays, the prompt says so, the answer says it was not done", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7102, "Ben");
  await seedTodos(redis, "telegram", "7102", ["回信給房東"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1" });
  const prompt = await promptIn(7102);
  const query = tg.pressButton({ from: user, message: prompt, data: button(prompt, false) });
  expect(await toast(query)).toBe("已取消。");
  const answer = await tg.waitFor(() => answers(7102, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.text).toContain("declined");
  expect(answer.text).toContain("not run");
  await tg.waitFor(() => prompt.text.includes("已取消，未執行"), WAIT, "the prompt edited to declined");
  expect(tg.buttons(prompt)).toEqual([]);
  expect(await todoLines(redis, "telegram", "7102")).toEqual(["#1 回信給房東"]);
  const [results] = freshResults(stack, "delete #1").filter((r) => r.some((x) => x.content.includes("declined")));
  expect(results).toEqual([
    { name: "delete_todo", content: expect.stringContaining("The user declined this action") as string, isError: true },
  ]);
});

it("another member's click is refused with a toast naming the requester; then the requester approves", async () => {
  const tg = stack.telegram;
  const group = tg.group(-1007103, "家庭群組");
  const alice = tg.user(7103, "Carol");
  const bob = tg.user(7104, "Dan");
  await seedTodos(redis, "telegram", "7103", ["訂機票"]);
  tg.sendUserMessage({ chat: group, from: alice, text: `@${tg.bot.username} delete #1` });
  const prompt = await promptIn(group.id);
  expect(prompt.text).toContain("只有 Carol 可以決定");
  const editsBefore = tg.edits.length;

  const foreign = tg.pressButton({ from: bob, message: prompt, data: button(prompt, true) });
  expect(await toast(foreign)).toBe("只有 Carol 可以決定。");
  const foreignNo = tg.pressButton({ from: bob, message: prompt, data: button(prompt, false) });
  expect(await toast(foreignNo)).toBe("只有 Carol 可以決定。");
  await quietWindow(400);
  expect(tg.edits.length).toBe(editsBefore);
  expect(tg.buttons(prompt)).toHaveLength(3); // confirm, cancel, always allow
  expect(answers(group.id, "delete_todo:")).toEqual([]);
  expect(await todoLines(redis, "telegram", "7103")).toEqual(["#1 訂機票"]);

  const own = tg.pressButton({ from: alice, message: prompt, data: button(prompt, true) });
  expect(await toast(own)).toBe("已確認，處理中…");
  const answer = await tg.waitFor(() => answers(group.id, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.text).toBe("delete_todo: 已刪除：#1 訂機票");
  expect(await todoLines(redis, "telegram", "7103")).toEqual([]);
  expect(tg.buttons(prompt)).toEqual([]);
});

it("a double click runs the tool once", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7105, "Eve");
  await seedTodos(redis, "telegram", "7105", ["洗車", "買花"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1 (double click)" });
  const prompt = await promptIn(7105);
  const data = button(prompt, true);
  const first = tg.pressButton({ from: user, message: prompt, data });
  const second = tg.pressButton({ from: user, message: prompt, data });
  const notices = [await toast(first), await toast(second)];
  expect(notices[0]).toBe("已確認，處理中…");
  // Decided while the record exists, or after it was deleted (the prompt's expiry is minutes away): the same notice.
  expect(notices[1]).toBe("這個請求已經確認過了。");
  await tg.waitFor(() => answers(7105, "delete_todo:")[0], WAIT, "the final answer");
  await quietWindow(500);
  expect(answers(7105, "delete_todo:").map((m) => m.text)).toEqual(["delete_todo: 已刪除：#1 洗車"]);
  expect(await todoLines(redis, "telegram", "7105")).toEqual(["#2 買花"]);
  const deletions = freshResults(stack, "(double click)")
    .flat()
    .filter((r) => r.name === "delete_todo");
  expect(deletions).toEqual([{ name: "delete_todo", content: "已刪除：#1 洗車", isError: false }]);
});

it("a new message while an approval is pending closes it as not confirmed and is answered", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7106, "Frank");
  await seedTodos(redis, "telegram", "7106", ["整理書桌"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1 (moved on)" });
  const prompt = await promptIn(7106);
  const yes = button(prompt, true);
  tg.sendUserMessage({ chat, from: user, text: "calc 6 * 7" });
  const answer = await tg.waitFor(() => answers(7106, "calculate:")[0], WAIT, "the answer to the new message");
  expect(answer.text).toContain("42");
  await tg.waitFor(() => prompt.text.includes("收到新訊息"), WAIT, "the prompt edited to superseded");
  expect(tg.buttons(prompt)).toEqual([]);
  expect(await todoLines(redis, "telegram", "7106")).toEqual(["#1 整理書桌"]);
  expect(answers(7106, "delete_todo:")).toEqual([]);
  // The history the new message ran on closed the pending call with a tool_result.
  const calcRequest = stack.model.requests.find((r) => JSON.stringify(r.messages).includes("calc 6 * 7"))!;
  expect(JSON.stringify(calcRequest.messages)).toContain(
    "The user sent a new message instead of confirming delete_todo",
  );
  // A click on the old prompt (an old client still showing the buttons) now changes nothing, and
  // says why: the record is gone, but the press is told that a new message closed it.
  const late = tg.pressButton({ from: user, message: prompt, data: yes });
  expect(await toast(late)).toBe("這個請求已經結束了：收到新訊息，未確認，未執行。");
  expect(await todoLines(redis, "telegram", "7106")).toEqual(["#1 整理書桌"]);
});

it("a restart of the worker between the prompt and the click: the run resumes in the new worker", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7107, "Grace");
  await seedTodos(redis, "telegram", "7107", ["退貨"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1" });
  const prompt = await promptIn(7107);
  const oldWorker = stack.worker;
  await stack.restartWorker();
  expect(stack.worker).not.toBe(oldWorker);
  const query = tg.pressButton({ from: user, message: prompt, data: button(prompt, true) });
  expect(await toast(query)).toBe("已確認，處理中…");
  const answer = await tg.waitFor(() => answers(7107, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.text).toBe("delete_todo: 已刪除：#1 退貨");
  expect(await todoLines(redis, "telegram", "7107")).toEqual([]);
});

it("a turn with a safe and a dangerous call: the safe one runs, the dangerous one waits, both results reach the model in order", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7108, "Henry");
  await seedTodos(redis, "telegram", "7108", ["寄包裹", "掛號"]);
  tg.sendUserMessage({ chat, from: user, text: "list todos and delete #2" });
  const prompt = await promptIn(7108);
  expect(prompt.text).toContain("刪除待辦 #2「掛號」");
  expect(freshResults(stack, "list todos and delete #2")).toEqual([]); // nothing sent back to the model yet
  expect(await todoLines(redis, "telegram", "7108")).toEqual(["#1 寄包裹", "#2 掛號"]);

  tg.pressButton({ from: user, message: prompt, data: button(prompt, true) });
  const answer = await tg.waitFor(() => answers(7108, "delete_todo:")[0], WAIT, "the final answer");
  const results = freshResults(stack, "list todos and delete #2");
  expect(results).toHaveLength(1);
  expect(results[0]!.map((r) => r.name)).toEqual(["list_todos", "delete_todo"]);
  expect(results[0]![0]!.content).toContain("#1 寄包裹");
  expect(results[0]![0]!.content).toContain("#2 掛號"); // listed before the deletion ran
  expect(results[0]![1]).toEqual({ name: "delete_todo", content: "已刪除：#2 掛號", isError: false });
  expect(answer.text).toContain("list_todos:");
  expect(await todoLines(redis, "telegram", "7108")).toEqual(["#1 寄包裹"]);
});

it("one turn deletes #1, #2, #999 and #1 again: #1 and #2 are asked in turn, #999 and the repeat are answered without asking", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7109, "Ivy");
  await seedTodos(redis, "telegram", "7109", ["買牛奶", "繳電費"]);
  tg.sendUserMessage({ chat, from: user, text: "delete todos #1 #2 #999 #1" });
  const first = await promptIn(7109);
  expect(first.text).toContain("刪除待辦 #1「買牛奶」");
  tg.pressButton({ from: user, message: first, data: button(first, true) });
  const second = await nextStep(7109, [first]);
  expect(second.text).toContain("刪除待辦 #2「繳電費」");
  tg.pressButton({ from: user, message: second, data: button(second, true) });
  // No third prompt: the repeated #1 is answered with the first #1's result, nobody is asked.
  const answer = await nextStep(7109, [first, second]);
  expect(answer.text).toContain("delete_todo:");
  expect(openPrompts(7109)).toEqual([]);
  expect(tg.sent.filter((m) => m.chatId === 7109 && m.text.includes("todo_id"))).toEqual([]);
  expect(await todoLines(redis, "telegram", "7109")).toEqual([]);
  expect(freshResults(stack, "delete todos #1 #2 #999 #1")).toEqual([
    [
      { name: "delete_todo", content: "已刪除：#1 買牛奶", isError: false },
      { name: "delete_todo", content: "已刪除：#2 繳電費", isError: false },
      { name: "delete_todo", content: expect.stringContaining("你的待辦清單裡沒有 #999") as string, isError: true },
      {
        name: "delete_todo",
        content: expect.stringMatching(
          /^This call repeats an earlier call of this turn .*: 已刪除：#1 買牛奶$/,
        ) as string,
        isError: true,
      },
    ],
  ]);
});

it("the next call of a turn is checked again when its turn comes: a todo deleted meanwhile is not asked about", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7110, "Jack");
  await seedTodos(redis, "telegram", "7110", ["倒垃圾", "澆花"]);
  tg.sendUserMessage({ chat, from: user, text: "delete todos #1 #2 (meanwhile)" });
  const first = await promptIn(7110);
  expect(first.text).toContain("刪除待辦 #1「倒垃圾」");
  // Jack deletes #2 elsewhere (another chat of his: todos are his, not the chat's) while #1 is being asked.
  await deleteTodo(redis, { platform: "telegram", userId: "7110" }, 2);
  tg.pressButton({ from: user, message: first, data: button(first, true) });
  const answer = await nextStep(7110, [first]);
  expect(answer.text).toContain("delete_todo:");
  expect(tg.sent.filter((m) => m.chatId === 7110 && m.text.includes("todo_id"))).toEqual([]);
  expect(freshResults(stack, "(meanwhile)")).toEqual([
    [
      { name: "delete_todo", content: "已刪除：#1 倒垃圾", isError: false },
      { name: "delete_todo", content: expect.stringContaining("你的待辦清單裡沒有 #2") as string, isError: true },
    ],
  ]);
});

it("a declined call's repeat in the same turn is declined with it, not asked again", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7111, "Kate");
  await seedTodos(redis, "telegram", "7111", ["修腳踏車"]);
  tg.sendUserMessage({ chat, from: user, text: "delete todos #1 #1" });
  const first = await promptIn(7111);
  tg.pressButton({ from: user, message: first, data: button(first, false) });
  const answer = await nextStep(7111, [first]);
  expect(answer.text).toContain("delete_todo:");
  expect(await todoLines(redis, "telegram", "7111")).toEqual(["#1 修腳踏車"]);
  const [results] = freshResults(stack, "delete todos #1 #1");
  expect(results!.map((r) => [r.isError, r.content.slice(0, 40)])).toEqual([
    [true, "The user declined this action, so delete"],
    [true, "This call repeats an earlier call of thi"],
  ]);
  expect(results![1]!.content).toContain("The earlier call's result: The user declined this action");
});
