/**
 * Issue 8's approval scenarios on Discord, end to end: the real discord.js client against the
 * fake gateway and REST, real Redis, the worker and the scripted model. Each scenario has its own
 * user (and DM channel, or the guild channel for the group scenarios).
 */
import type { RedisClient } from "../../src/redis.js";
import { expect, it } from "vitest";
import type { FakeInteraction, FakeUser, SentMessage } from "../fakes/discord.js";
import { Queue } from "bullmq";
import { DECISIONS_QUEUE, decisionJobId } from "../../src/approvals/jobs.js";
import { bullPrefix } from "../../src/queue/keys.js";
import { bringForward } from "../helpers/jobs.js";
import { eventually } from "./reminders-helpers.js";
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
/** Discord's `EPHEMERAL` message flag (https://discord.com/developers/docs/resources/message#message-object-message-flags). */
const EPHEMERAL = 1 << 6;

interface Button {
  custom_id: string;
  disabled?: boolean;
  style: number;
}

function user(n: number, name: string): FakeUser {
  return { id: `70200000000000${String(n).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** The buttons of a stored message, row by row. */
function buttonsOf(messageId: string): Button[] {
  const rows = (stack.discord.message(messageId)?.components ?? []) as { components: Button[] }[];
  return rows.flatMap((r) => r.components);
}

/** The approval prompt the bot posted in `channelId` after `since` (ms): a message with buttons. */
async function promptIn(channelId: string, since = 0): Promise<SentMessage> {
  const dc = stack.discord;
  return dc.waitFor(
    () => dc.sent.find((m) => m.channelId === channelId && m.at >= since && buttonsOf(m.id).length > 0),
    WAIT,
    `an approval prompt in ${channelId}`,
  );
}

/** The `custom_id` of the prompt's approve (`y`) or decline (`n`) button. */
function button(prompt: SentMessage, approve: boolean): string {
  const id = buttonsOf(prompt.id)
    .map((b) => b.custom_id)
    .find((c) => c.endsWith(approve ? ":y" : ":n"));
  expect(id).toBeDefined();
  return id!;
}

/** Messages the bot posted in `channelId` whose content contains `needle`. */
function answers(channelId: string, needle: string): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId && m.content.includes(needle));
}

/** The ephemeral reply to a button press (initial reply, or the edit after a deferral). */
async function ephemeralReply(interaction: FakeInteraction): Promise<string> {
  const response = await stack.discord.waitFor(() => interaction.response, WAIT, "the interaction response");
  expect([4, 5]).toContain(response.type);
  expect(Number(response.data?.flags ?? 0) & EPHEMERAL).toBe(EPHEMERAL);
  if (response.type === 4) return String(response.data?.content);
  const edit = await stack.discord.waitFor(() => interaction.edits[0], WAIT, "the deferred reply");
  return String(edit.content);
}

/** Waits until the prompt shows `outcome` text with both buttons disabled. */
async function closed(prompt: SentMessage, outcome: string): Promise<string> {
  const dc = stack.discord;
  await dc.waitFor(() => dc.message(prompt.id)!.content.includes(outcome), WAIT, `the prompt edited to "${outcome}"`);
  const buttons = buttonsOf(prompt.id);
  expect(buttons).toHaveLength(2);
  expect(buttons.every((b) => b.disabled === true)).toBe(true);
  return dc.message(prompt.id)!.content;
}

it("approve by button: the todo is deleted, the prompt shows the outcome with disabled buttons, the answer is sent", async () => {
  const dc = stack.discord;
  const alice = user(1, "Alice");
  const channel = dc.dmChannel(alice);
  await seedTodos(redis, "discord", alice.id, ["買牛奶", "繳電費"]);
  dc.sendUserMessage(alice, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  expect(prompt.content).toContain("刪除待辦 #1「買牛奶」");
  expect(prompt.content).toContain("只有 **Alice** 可以決定");
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  expect(dc.reactionUsers(prompt.id, "✅")).toEqual([dc.bot.id]);
  expect(await todoLines(redis, "discord", alice.id)).toEqual(["#1 買牛奶", "#2 繳電費"]);

  const click = dc.clickButton(alice, prompt.id, button(prompt, true));
  expect(await ephemeralReply(click)).toBe("已確認，處理中…");
  const answer = await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.content).toBe("delete_todo: 已刪除：#1 買牛奶");
  expect(await todoLines(redis, "discord", alice.id)).toEqual(["#2 繳電費"]);
  expect(await closed(prompt, "已確認")).toBe("✅ 已確認：刪除待辦 #1「買牛奶」");
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "✅").length === 0, WAIT, "the bot's reactions removed");
});

it("decline by ❌ reaction: the todo stays, the prompt says so, the answer says it was not done", async () => {
  const dc = stack.discord;
  const ben = user(2, "Ben");
  const channel = dc.dmChannel(ben);
  await seedTodos(redis, "discord", ben.id, ["回信給房東"]);
  dc.sendUserMessage(ben, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  dc.react(ben, prompt.id, "❌");
  const answer = await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.content).toContain("The user declined this action");
  expect(await closed(prompt, "已取消")).toBe("❌ 已取消，未執行：刪除待辦 #1「回信給房東」");
  expect(await todoLines(redis, "discord", ben.id)).toEqual(["#1 回信給房東"]);
});

it("decline by button", async () => {
  const dc = stack.discord;
  const cleo = user(3, "Cleo");
  const channel = dc.dmChannel(cleo);
  await seedTodos(redis, "discord", cleo.id, ["看牙醫"]);
  dc.sendUserMessage(cleo, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  const click = dc.clickButton(cleo, prompt.id, button(prompt, false));
  expect(await ephemeralReply(click)).toBe("已取消。");
  await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  await closed(prompt, "已取消");
  expect(await todoLines(redis, "discord", cleo.id)).toEqual(["#1 看牙醫"]);
});

it("another member's click and reaction are refused (ephemeral reply naming the requester); then the requester approves", async () => {
  const dc = stack.discord;
  const carol = user(4, "Carol");
  const dan = user(5, "Dan");
  dc.addUser(dan);
  await seedTodos(redis, "discord", carol.id, ["訂機票"]);
  const since = Date.now();
  dc.sendUserMessage(carol, `<@${dc.bot.id}> delete #1`);
  const prompt = await promptIn(dc.channelId, since);
  expect(prompt.content).toContain("只有 **Carol** 可以決定");
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  const editsBefore = dc.edits.length;

  const foreign = dc.clickButton(dan, prompt.id, button(prompt, true));
  expect(await ephemeralReply(foreign)).toBe("只有 Carol 可以決定。");
  dc.react(dan, prompt.id, "✅");
  // Someone else's ✅ is taken away so the prompt does not look decided.
  await dc.waitFor(() => !dc.reactionUsers(prompt.id, "✅").includes(dan.id), WAIT, "Dan's ✅ removed");
  await quietWindow(400);
  expect(dc.edits.length).toBe(editsBefore);
  expect(buttonsOf(prompt.id).some((b) => b.disabled)).toBe(false);
  expect(answers(dc.channelId, "delete_todo:")).toEqual([]);
  expect(await todoLines(redis, "discord", carol.id)).toEqual(["#1 訂機票"]);

  const own = dc.clickButton(carol, prompt.id, button(prompt, true));
  expect(await ephemeralReply(own)).toBe("已確認，處理中…");
  const answer = await dc.waitFor(
    () => answers(dc.channelId, "delete_todo: 已刪除：#1 訂機票")[0],
    WAIT,
    "the final answer",
  );
  expect(answer.content).toBe("delete_todo: 已刪除：#1 訂機票");
  await closed(prompt, "已確認");
  expect(await todoLines(redis, "discord", carol.id)).toEqual([]);
});

it("a double click runs the tool once", async () => {
  const dc = stack.discord;
  const eve = user(6, "Eve");
  const channel = dc.dmChannel(eve);
  await seedTodos(redis, "discord", eve.id, ["洗車", "買花"]);
  dc.sendUserMessage(eve, "delete #1 (double click)", { dm: true });
  const prompt = await promptIn(channel);
  const yes = button(prompt, true);
  const first = dc.clickButton(eve, prompt.id, yes);
  const second = dc.clickButton(eve, prompt.id, yes);
  const notices = [await ephemeralReply(first), await ephemeralReply(second)].sort();
  expect(notices).toContain("已確認，處理中…");
  expect(notices.filter((n) => n === "已確認，處理中…")).toHaveLength(1);
  await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  await quietWindow(500);
  expect(answers(channel, "delete_todo:").map((m) => m.content)).toEqual(["delete_todo: 已刪除：#1 洗車"]);
  expect(await todoLines(redis, "discord", eve.id)).toEqual(["#2 買花"]);
  const deletions = freshResults(stack, "delete #1 (double click)")
    .flat()
    .filter((r) => r.name === "delete_todo");
  expect(deletions).toEqual([{ name: "delete_todo", content: "已刪除：#1 洗車", isError: false }]);
});

it("a click plus a ✅ reaction runs the tool once", async () => {
  const dc = stack.discord;
  const fay = user(7, "Fay");
  const channel = dc.dmChannel(fay);
  await seedTodos(redis, "discord", fay.id, ["修腳踏車", "買米"]);
  dc.sendUserMessage(fay, "delete #1 (click and reaction)", { dm: true });
  const prompt = await promptIn(channel);
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  const click = dc.clickButton(fay, prompt.id, button(prompt, true));
  dc.react(fay, prompt.id, "✅");
  await ephemeralReply(click);
  await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  await quietWindow(500);
  expect(answers(channel, "delete_todo:").map((m) => m.content)).toEqual(["delete_todo: 已刪除：#1 修腳踏車"]);
  expect(await todoLines(redis, "discord", fay.id)).toEqual(["#2 買米"]);
  const deletions = freshResults(stack, "(click and reaction)")
    .flat()
    .filter((r) => r.name === "delete_todo");
  expect(deletions).toEqual([{ name: "delete_todo", content: "已刪除：#1 修腳踏車", isError: false }]);
  await closed(prompt, "已確認");
});

it("a new message while an approval is pending closes it as not confirmed and is answered", async () => {
  const dc = stack.discord;
  const gus = user(8, "Gus");
  const channel = dc.dmChannel(gus);
  await seedTodos(redis, "discord", gus.id, ["整理書桌"]);
  dc.sendUserMessage(gus, "delete #1 (moved on)", { dm: true });
  const prompt = await promptIn(channel);
  dc.sendUserMessage(gus, "calc 6 * 7", { dm: true });
  const answer = await dc.waitFor(() => answers(channel, "calculate:")[0], WAIT, "the answer to the new message");
  expect(answer.content).toContain("42");
  expect(await closed(prompt, "收到新訊息")).toContain("刪除待辦 #1「整理書桌」");
  expect(await todoLines(redis, "discord", gus.id)).toEqual(["#1 整理書桌"]);
  expect(answers(channel, "delete_todo:")).toEqual([]);
  const calcRequest = stack.model.requests.find((r) => JSON.stringify(r.messages).includes("calc 6 * 7"))!;
  expect(JSON.stringify(calcRequest.messages)).toContain(
    "The user sent a new message instead of confirming delete_todo",
  );
  // The old approval is gone: a late reaction changes nothing, a follow-up still works.
  dc.react(gus, prompt.id, "✅");
  dc.sendUserMessage(gus, "and tomorrow?", { dm: true });
  const followUp = await dc.waitFor(() => answers(channel, "Earlier you asked")[0], WAIT, "the follow-up answer");
  expect(followUp.content).toBe("Earlier you asked: calc 6 * 7");
  expect(await todoLines(redis, "discord", gus.id)).toEqual(["#1 整理書桌"]);
});

it("a restart of the worker between the prompt and the click: the run resumes in the new worker", async () => {
  const dc = stack.discord;
  const hal = user(9, "Hal");
  const channel = dc.dmChannel(hal);
  await seedTodos(redis, "discord", hal.id, ["退貨"]);
  dc.sendUserMessage(hal, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  const oldWorker = stack.worker;
  await stack.restartWorker();
  expect(stack.worker).not.toBe(oldWorker);
  const click = dc.clickButton(hal, prompt.id, button(prompt, true));
  expect(await ephemeralReply(click)).toBe("已確認，處理中…");
  const answer = await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.content).toBe("delete_todo: 已刪除：#1 退貨");
  await closed(prompt, "已確認");
  expect(await todoLines(redis, "discord", hal.id)).toEqual([]);
});

it("a restart of the adapter between the prompt and a ✅ in a DM: the reaction still decides", async () => {
  const dc = stack.discord;
  const jo = user(11, "Jo");
  const channel = dc.dmChannel(jo);
  await seedTodos(redis, "discord", jo.id, ["換燈泡", "買菜"]);
  dc.sendUserMessage(jo, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  const readyBefore = dc.identifies.length;
  await stack.restartAdapters();
  expect(dc.identifies.length).toBe(readyBefore + 1); // a new gateway session: nothing cached from the old one
  dc.react(jo, prompt.id, "✅");
  const answer = await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  expect(answer.content).toBe("delete_todo: 已刪除：#1 換燈泡");
  expect(await closed(prompt, "已確認")).toBe("✅ 已確認：刪除待辦 #1「換燈泡」");
  expect(await todoLines(redis, "discord", jo.id)).toEqual(["#2 買菜"]);
});

it("a turn with a safe and a dangerous call: the safe one runs, the dangerous one waits, both results reach the model in order", async () => {
  const dc = stack.discord;
  const ivy = user(10, "Ivy");
  const channel = dc.dmChannel(ivy);
  await seedTodos(redis, "discord", ivy.id, ["寄包裹", "掛號"]);
  dc.sendUserMessage(ivy, "list todos and delete #2 please", { dm: true });
  const prompt = await promptIn(channel);
  expect(prompt.content).toContain("刪除待辦 #2「掛號」");
  expect(freshResults(stack, "list todos and delete #2 please")).toEqual([]);
  dc.clickButton(ivy, prompt.id, button(prompt, true));
  await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer");
  const results = freshResults(stack, "list todos and delete #2 please");
  expect(results).toHaveLength(1);
  expect(results[0]!.map((r) => r.name)).toEqual(["list_todos", "delete_todo"]);
  expect(results[0]![0]!.content).toContain("#2 掛號");
  expect(results[0]![1]).toEqual({ name: "delete_todo", content: "已刪除：#2 掛號", isError: false });
  expect(await todoLines(redis, "discord", ivy.id)).toEqual(["#1 寄包裹"]);
});

it("a prompt whose edit failed: the requester's later press and reaction are told how it was decided (ephemeral, and one reply to the prompt)", async () => {
  const dc = stack.discord;
  const kim = user(12, "Kim");
  const channel = dc.dmChannel(kim);
  await seedTodos(redis, "discord", kim.id, ["掃地", "拖地"]);
  dc.sendUserMessage(kim, "delete #1", { dm: true });
  const prompt = await promptIn(channel);
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  // Discord refuses the edit that would close the prompt (Missing Permissions): it keeps its buttons and reactions.
  dc.failNext({ method: "PATCH", path: new RegExp(`/messages/${prompt.id}$`) }, 403, 1, {
    message: "Missing Permissions",
    code: 50013,
  });
  const click = dc.clickButton(kim, prompt.id, button(prompt, true));
  expect(await ephemeralReply(click)).toBe("已確認，處理中…");
  expect((await dc.waitFor(() => answers(channel, "delete_todo:")[0], WAIT, "the final answer")).content).toBe(
    "delete_todo: 已刪除：#1 掃地",
  );
  const approvalId = /^ap:([^:]+):y$/.exec(button(prompt, true))![1]!;
  // FakeDiscord.waitFor does not await its predicate (a promise is truthy at once): Redis is polled here.
  await eventually(
    async () => (await redis.exists(`approval:{approval}:${approvalId}`)) === 0,
    "the approval's record deleted (its decided marker left)",
    WAIT,
  );
  expect(buttonsOf(prompt.id).every((b) => b.disabled !== true)).toBe(true);

  // A press: the ephemeral notice says how it was decided, as Telegram's toast does.
  const again = dc.clickButton(kim, prompt.id, button(prompt, false));
  expect(await ephemeralReply(again)).toBe("這個請求已經確認過了。");
  // A reaction has no interaction to answer: one reply to the prompt says it, in the DM without a mention.
  const before = dc.sent.length;
  dc.react(kim, prompt.id, "❌");
  const told = await dc.waitFor(
    () => dc.sent.slice(before).find((m) => m.channelId === channel && m.content.includes("這個請求")),
    WAIT,
    "the notice replying to the reaction",
  );
  expect(told.content).toBe("這個請求已經確認過了。");
  expect(told.payload.message_reference).toMatchObject({ message_id: prompt.id });
  expect(await todoLines(redis, "discord", kim.id)).toEqual(["#2 拖地"]);
  expect(answers(channel, "delete_todo:")).toHaveLength(1);
});

it("a prompt in a server that expired while its edit failed: the requester's reaction is told it expired, in one reply mentioning only them", async () => {
  const dc = stack.discord;
  const kai = user(13, "Kai");
  const lou = user(14, "Lou");
  dc.addUser(kai);
  dc.addUser(lou);
  await seedTodos(redis, "discord", kai.id, ["澆花"]);
  const since = Date.now();
  dc.sendUserMessage(kai, `<@${dc.bot.id}> delete #1`);
  const prompt = await promptIn(dc.channelId, since);
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  // Discord refuses the edit that would close the prompt (Missing Permissions): it keeps its buttons and reactions.
  dc.failNext({ method: "PATCH", path: new RegExp(`/messages/${prompt.id}$`) }, 403, 1, {
    message: "Missing Permissions",
    code: 50013,
  });
  const approvalId = /^ap:([^:]+):y$/.exec(button(prompt, true))![1]!;
  const decisions = new Queue(DECISIONS_QUEUE, {
    connection: redis,
    prefix: bullPrefix(redis, DECISIONS_QUEUE, "e2e"),
  });
  try {
    await bringForward(decisions, decisionJobId({ approvalId, verdict: "expired" }));
  } finally {
    await decisions.close();
  }
  // The expiry's answer (after the prompt; earlier scenarios answered in this channel too), then the record deleted.
  await dc.waitFor(
    () => answers(dc.channelId, "delete_todo:").find((m) => m.at >= prompt.at && m.content.includes("expired")),
    WAIT,
    "the expiry's answer",
  );
  await eventually(
    async () => (await redis.exists(`approval:{approval}:${approvalId}`)) === 0,
    "the approval's record deleted",
    WAIT,
  );
  expect(buttonsOf(prompt.id).every((b) => b.disabled !== true)).toBe(true);

  const before = dc.sent.length;
  const replies = () =>
    dc.sent
      .slice(before)
      .filter((m) => (m.payload.message_reference as { message_id?: string } | undefined)?.message_id === prompt.id);
  const reactions = () => stack.logs().filter((l) => l.msg === "approval reaction: not_found").length;
  const seen = reactions();
  dc.react(lou, prompt.id, "✅"); // not the requester: nothing is said to anyone
  dc.react(kai, prompt.id, "✅");
  const told = await dc.waitFor(() => replies()[0], WAIT, "the notice replying to the reaction");
  expect(told.content).toBe(`<@${kai.id}> 這個確認請求已過期或不存在。`);
  expect(told.payload.allowed_mentions).toMatchObject({ users: [kai.id], replied_user: false });
  dc.react(kai, prompt.id, "❌");
  await dc.waitFor(() => reactions() === seen + 3, WAIT, "the three reactions handled");
  await quietWindow(200);
  expect(replies()).toHaveLength(1);
  expect(await todoLines(redis, "discord", kai.id)).toEqual(["#1 澆花"]);
});
