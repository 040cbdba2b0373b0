/**
 * Issue 18, "always allow", on Discord end to end: the real discord.js client against the fake
 * gateway and REST, real Redis, the worker and the scripted model; `delete_todo` (dangerous) and a
 * test tool that refuses grants. Each scenario has its own users (and DM channels).
 */
import type { RedisClient } from "../../src/redis.js";
import { expect, it } from "vitest";
import { ApprovalStore } from "../../src/approvals/store.js";
import type { FakeInteraction, FakeUser, SentMessage } from "../fakes/discord.js";
import { quietWindow, seedTodos, todoLines } from "./approvals-helpers.js";
import { approvalEvents, eraseNotes, eventually, grantedTools, grantsModel } from "./grants-helpers.js";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: grantsModel, tools: [eraseNotes] }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 15_000;
const ALWAYS_NOTICE = "已確認，處理中…之後 30 天內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。";

interface Button {
  custom_id: string;
  label: string;
  disabled?: boolean;
  style: number;
}

function user(n: number, name: string): FakeUser {
  return { id: `70300000000000${String(n).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** The buttons of a stored message, row by row. */
function buttonsOf(messageId: string): Button[] {
  const rows = (stack.discord.message(messageId)?.components ?? []) as { components: Button[] }[];
  return rows.flatMap((r) => r.components);
}

/** The `custom_id` of a prompt's button: `y` confirm, `n` cancel, `a` always allow. */
function button(prompt: SentMessage, choice: "y" | "n" | "a"): string {
  const id = buttonsOf(prompt.id)
    .map((b) => b.custom_id)
    .find((c) => c.endsWith(`:${choice}`));
  expect(id).toBeDefined();
  return id!;
}

/** Sends `text` (mentioning the bot outside DMs) in `channelId` and resolves with the bot's first message there after it. */
async function ask(author: FakeUser, text: string, where: { dm: true } | { channelId: string }): Promise<SentMessage> {
  const dc = stack.discord;
  return (await dc.ask(author, "dm" in where ? text : `<@${dc.bot.id}> ${text}`, where, WAIT)).answer;
}

/** The ephemeral text an interaction was answered with (initial reply, or the edit after a deferral). */
async function ephemeral(interaction: FakeInteraction): Promise<string> {
  const dc = stack.discord;
  const response = await dc.waitFor(() => interaction.response, WAIT, "the interaction response");
  expect(Number(response.data?.flags ?? 0) & 64).toBe(64);
  if (response.type === 4) return String(response.data?.content);
  return String((await dc.waitFor(() => interaction.edits[0], WAIT, "the deferred reply")).content);
}

/** The bot's message in `channelId` containing `needle`, posted after `since` messages. */
async function postedWith(channelId: string, needle: string, since = 0): Promise<SentMessage> {
  const dc = stack.discord;
  return dc.waitFor(
    () => dc.sent.slice(since).find((m) => m.channelId === channelId && m.content.includes(needle)),
    WAIT,
    `"${needle}" in ${channelId}`,
  );
}

/** Approval prompts posted in `channelId` (messages sent with buttons). */
function prompts(channelId: string): SentMessage[] {
  return stack.discord.sent.filter(
    (m) => m.channelId === channelId && JSON.stringify(m.payload.components ?? []).includes(":y"),
  );
}

/** Clicks "always allow" on `prompt` as `author`, checks the notice, and waits for the answer containing `needle`. */
async function alwaysAllow(prompt: SentMessage, author: FakeUser, needle: string): Promise<SentMessage> {
  const dc = stack.discord;
  const since = dc.sent.length;
  expect(await ephemeral(dc.clickButton(author, prompt.id, button(prompt, "a")))).toBe(ALWAYS_NOTICE);
  return postedWith(prompt.channelId, needle, since);
}

it("always allow: this call runs, the next call of the tool by that user in that chat runs without a prompt, and the trace says a grant was used", async () => {
  const dc = stack.discord;
  const amy = user(1, "Amy");
  const channel = dc.dmChannel(amy);
  await seedTodos(redis, "discord", amy.id, ["買牛奶", "繳電費", "洗車"]);
  const prompt = await ask(amy, "delete #1", { dm: true });
  expect(buttonsOf(prompt.id).map((b) => [b.label, b.style])).toEqual([
    ["確認", 3],
    ["取消", 4],
    ["一律允許", 1],
  ]);
  expect((await alwaysAllow(prompt, amy, "delete_todo:")).content).toBe("delete_todo: 已刪除：#1 買牛奶");
  await dc.waitFor(() => dc.message(prompt.id)!.content.startsWith("✅"), WAIT, "the prompt edited to the outcome");
  expect(dc.message(prompt.id)!.content).toBe("✅ 已確認，30 天內一律允許：刪除待辦 #1「買牛奶」");
  expect(buttonsOf(prompt.id).every((b) => b.disabled === true)).toBe(true);

  expect((await ask(amy, "delete #2", { dm: true })).content).toBe("delete_todo: 已刪除：#2 繳電費");
  expect(prompts(channel)).toHaveLength(1);
  expect(await todoLines(redis, "discord", amy.id)).toEqual(["#3 洗車"]);
  const granted = await eventually(
    async () => (await approvalEvents(redis, { platform: "discord", chatId: channel }, "granted"))[0],
    WAIT,
    "the trace of the granted call",
  );
  expect(granted.data).toMatchObject({ verdict: "granted", tool: "delete_todo" });
});

it("only the requester may press always allow; another member of the channel is still asked, and the grant does not reach the DM or a thread", async () => {
  const dc = stack.discord;
  const bea = user(2, "Bea");
  const cal = user(3, "Cal");
  await seedTodos(redis, "discord", bea.id, ["訂機票", "訂飯店", "換外幣"]);
  await seedTodos(redis, "discord", cal.id, ["繳學費"]);
  const prompt = await ask(bea, "delete #1", { channelId: dc.channelId });
  expect(prompt.content).toContain("只有 **Bea** 可以決定");
  expect(await ephemeral(dc.clickButton(cal, prompt.id, button(prompt, "a")))).toBe("只有 Bea 可以決定。");
  await quietWindow(300);
  expect(await grantedTools(redis, { platform: "discord", chatId: dc.channelId, userId: bea.id })).toEqual([]);
  expect(await grantedTools(redis, { platform: "discord", chatId: dc.channelId, userId: cal.id })).toEqual([]);
  expect((await alwaysAllow(prompt, bea, "delete_todo:")).content).toBe("delete_todo: 已刪除：#1 訂機票");

  expect((await ask(bea, "delete #2", { channelId: dc.channelId })).content).toBe("delete_todo: 已刪除：#2 訂飯店");
  const calAsked = await ask(cal, "delete #1", { channelId: dc.channelId });
  expect(calAsked.content).toContain("刪除待辦 #1「繳學費」");
  dc.clickButton(cal, calAsked.id, button(calAsked, "n"));
  const inThread = await ask(bea, "delete #3", { channelId: dc.threadId });
  expect(inThread.content).toContain("刪除待辦 #3「換外幣」");
  dc.clickButton(bea, inThread.id, button(inThread, "n"));
  const inDm = await ask(bea, "delete #3", { dm: true });
  expect(inDm.content).toContain("刪除待辦 #3「換外幣」");
  dc.clickButton(bea, inDm.id, button(inDm, "n"));
  await postedWith(dc.dmChannel(bea), "delete_todo:");
  expect(await todoLines(redis, "discord", bea.id)).toEqual(["#3 換外幣"]);
  expect(await todoLines(redis, "discord", cal.id)).toEqual(["#1 繳學費"]);
});

it("/permissions answers ephemerally with a revoke button; the revoke counts at once", async () => {
  const dc = stack.discord;
  const dee = user(4, "Dee");
  const eve = user(5, "Eve");
  await seedTodos(redis, "discord", dee.id, ["還書", "影印", "借教室"]);
  const prompt = await ask(dee, "delete #1", { channelId: dc.channelId });
  await alwaysAllow(prompt, dee, "delete_todo:");

  expect(dc.commandRegistrations.at(-1)?.body.map((c) => c.name)).toContain("permissions");
  const listed = dc.slashCommand(dee, "permissions", { channelId: dc.channelId });
  expect(await ephemeral(listed)).toMatch(/^你在這裡「一律允許」的工具（到期前不再詢問你）：\n• delete_todo — 到 .+$/);
  const rows = listed.response!.data!.components as { components: Button[] }[];
  const revoke = rows.flatMap((r) => r.components);
  expect(revoke.map((b) => b.label)).toEqual(["🚫 撤銷 delete_todo"]);
  expect(await ephemeral(dc.slashCommand(eve, "permissions", { channelId: dc.channelId }))).toBe(
    "你在這裡沒有「一律允許」的工具。需要確認的動作，可以在確認提示上按「一律允許」。",
  );
  // Only the invoker sees an ephemeral reply: the platform itself refuses another member's press.
  expect(() => dc.clickEphemeralButton(eve, listed, revoke[0]!.custom_id)).toThrow(/only the user who invoked/);

  // A press's notice is plain text shown as it is (Markdown escaped): Discord shows delete_todo.
  expect(await ephemeral(dc.clickEphemeralButton(dee, listed, revoke[0]!.custom_id))).toBe(
    "已撤銷：之後使用 delete\\_todo 會再詢問你。",
  );
  expect(await grantedTools(redis, { platform: "discord", chatId: dc.channelId, userId: dee.id })).toEqual([]);
  const asked = await ask(dee, "delete #2", { channelId: dc.channelId });
  expect(asked.content).toContain("刪除待辦 #2「影印」");
  expect(buttonsOf(asked.id)).toHaveLength(3);
  dc.clickButton(dee, asked.id, button(asked, "n"));
  await postedWith(dc.channelId, "declined");
  expect(await todoLines(redis, "discord", dee.id)).toEqual(["#2 影印", "#3 借教室"]);
  // By name, too: /permissions revoke:<tool>.
  expect(
    await ephemeral(dc.slashCommand(dee, "permissions", { channelId: dc.channelId, values: { tool: "delete_todo" } })),
  ).toBe("你在這裡沒有「delete_todo」的一律允許。");
});

it("a tool with alwaysAllow: false has no always-allow button; always allow for it is refused and changes nothing", async () => {
  const dc = stack.discord;
  const fay = user(6, "Fay");
  const channel = dc.dmChannel(fay);
  const prompt = await ask(fay, "call erase_notes", { dm: true });
  expect(prompt.content).toContain("清除所有筆記");
  expect(buttonsOf(prompt.id).map((b) => b.label)).toEqual(["確認", "取消"]);
  const forged = button(prompt, "y").replace(/:y$/, ":a");
  // Discord only sends presses of buttons the message has; the decider refuses it anyway.
  expect(() => dc.clickButton(fay, prompt.id, forged)).toThrow(/no button/);
  const approvalId = forged.split(":")[1]!;
  const decider = new ApprovalStore(redis, { timeoutMs: 60_000 });
  expect(
    await decider.decide({ approvalId, platform: "discord", deciderId: fay.id, approve: true, always: true }),
  ).toEqual({ status: "always_refused" });
  await quietWindow(300);
  expect(await grantedTools(redis, { platform: "discord", chatId: channel, userId: fay.id })).toEqual([]);
  expect(dc.sent.filter((m) => m.channelId === channel && m.content.includes("erase_notes:"))).toEqual([]);

  const since = dc.sent.length;
  expect(await ephemeral(dc.clickButton(fay, prompt.id, button(prompt, "y")))).toBe("已確認，處理中…");
  expect((await postedWith(channel, "erase_notes:", since)).content).toBe("erase_notes: notes erased");
  const again = await ask(fay, "call erase_notes", { dm: true });
  expect(again.content).toContain("清除所有筆記");
  dc.clickButton(fay, again.id, button(again, "n"));
  await dc.waitFor(() => dc.message(again.id)!.content.startsWith("❌"), WAIT, "the second prompt closed");
});
