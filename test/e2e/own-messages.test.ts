/**
 * The bot's own messages, end to end on Telegram and Discord (the real grammY and discord.js
 * clients against the strict fakes, real Redis, the worker and the scripted model):
 *
 * - they follow the conversation's `/settings` language, also those the adapters write without
 *   the worker (the "write your question" and "too long" hints) and those the worker writes outside
 *   an answer (a reminder and its buttons, a failing scheduled task's pause notice and its reason, a
 *   closed prompt's buttons), and the Stop button of a live answer;
 * - on Discord, which renders Markdown in every message, what people wrote or chose (a display name,
 *   a task's instruction, a todo's title, a reminder's text) shows as it is inside the bot's own
 *   messages: an approval prompt, a closed prompt, a reminder.
 *
 * Each scenario has its own people and chats; streaming is on, so a live answer carries its Stop button.
 */
import type { Chat, User } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_INCOMING_TEXT } from "../../src/queue/incoming.js";
import type { RedisClient } from "../../src/redis.js";
import { occurrenceJobId } from "../../src/reminders/schedule.js";
import { getReminder } from "../../src/reminders/store.js";
import { getTask } from "../../src/tasks/store.js";
import { text } from "../fakes/anthropic.js";
import type { FakeInteraction, FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { bringForward } from "../helpers/jobs.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { eventually, localIso, remindersQueue, secondsAhead } from "./reminders-helpers.js";
import { addOccurrence, outcomeOf, tasksModel, tasksQueue } from "./tasks-helpers.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: tasksModel, env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 20_000;
let reminderJobs: ReturnType<typeof remindersQueue>;
let taskJobs: ReturnType<typeof tasksQueue>;
beforeAll(() => {
  reminderJobs = remindersQueue(redis);
  taskJobs = tasksQueue(redis);
});
afterAll(async () => {
  await reminderJobs.close();
  await taskJobs.close();
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const WRITTEN = "The first part of the answer, ";
const REST = "and the rest of it, written after the test lets it go.";

describe("Telegram: the conversation's language", () => {
  /** `from` writes `text` in `chat`; resolves with the bot's first message there after it. */
  async function send(chat: Chat, from: User, text: string): Promise<FakeSentMessage> {
    const tg = stack.telegram;
    const seen = tg.sent.length;
    tg.sendUserMessage({ chat, from, text });
    return tg.waitFor(() => tg.sent.slice(seen).find((m) => m.chatId === chat.id), WAIT, `a reply to "${text}"`);
  }

  /** The toast answering callback query `id`. */
  const toast = (id: string): Promise<string> => stack.telegram.toast(id, WAIT);

  it("a group set to English: an empty mention is answered in English, and the live answer's Stop button says Stop", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1006610001, "English group");
    const lea = tg.user(66101, "Lea");
    tg.admins.set(group.id, new Set([lea.id]));
    expect((await send(group, lea, "/settings language en")).text).toBe(
      "Done: my own messages are in English from now on.",
    );
    expect((await send(group, lea, `@${tg.bot.username}`)).text).toBe(
      "How can I help? Write your question in the same message.",
    );

    const hold = deferred();
    stack.model.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: 6, holdAfterChars: WRITTEN.length, hold: hold.promise },
    });
    tg.sendUserMessage({ chat: group, from: lea, text: `@${tg.bot.username} tell me something` });
    const live = await tg.waitFor(
      () => tg.messagesTo(group).find((m) => m.text === WRITTEN.trim()),
      WAIT,
      "the live answer",
    );
    expect(tg.buttons(live).map((b) => b.text)).toEqual(["⏹ Stop"]);
    hold.resolve();
    await tg.waitFor(() => live.text.endsWith(REST) && tg.buttons(live).length === 0, WAIT, "the whole answer");

    // Another group keeps the default language.
    const other = tg.group(-1006610002, "預設群組");
    expect((await send(other, lea, `@${tg.bot.username}`)).text).toBe("有什麼需要幫忙的嗎？請把問題寫在同一則訊息裡。");
  });

  it("a private chat set to English: a message over the limit is refused in English", async () => {
    const tg = stack.telegram;
    const mo = tg.user(66102, "Mo");
    const chat = tg.privateChat(mo);
    await send(chat, mo, "/settings language en");
    expect((await send(chat, mo, "x".repeat(MAX_INCOMING_TEXT + 1))).text).toBe(
      `That message is too long (at most ${MAX_INCOMING_TEXT} characters). Please shorten it.`,
    );
  });

  it("a private chat set to English: its reminder is posted with English buttons, and pressing Done says so in English", async () => {
    const tg = stack.telegram;
    const ned = tg.user(66103, "Ned");
    const chat = tg.privateChat(ned);
    await send(chat, ned, "/settings language en");
    const at = secondsAhead(60);
    tg.sendUserMessage({
      chat,
      from: ned,
      text: `call set_reminder {"text":"water the plants","at":"${localIso(at)}"}`,
    });
    const owner = { platform: "telegram" as const, userId: String(ned.id) };
    await eventually(() => getReminder(redis, owner, 1), "the reminder stored");
    await bringForward(reminderJobs, occurrenceJobId(owner, 1, at));
    const posted = await tg.waitFor(
      () => tg.messagesTo(chat).find((m) => m.text === "⏰ water the plants"),
      WAIT,
      "the reminder",
    );
    expect(tg.buttons(posted).map((b) => b.text)).toEqual(["✅ Done", "💤 Snooze"]);
    const done = tg.buttons(posted).find((b) => b.callback_data?.startsWith("rm:d:"))!.callback_data!;
    expect(await toast(tg.pressButton({ from: ned, message: posted, data: done }))).toBe("Done!");
  });

  it("a private chat set to English: a failing task's pause notice, its reason and its button are in English", async () => {
    const tg = stack.telegram;
    const ora = tg.user(66104, "Ora");
    const chat = tg.privateChat(ora);
    await send(chat, ora, "/settings language en");
    const at = localIso(Date.now() + 3600_000);
    tg.sendUserMessage({
      chat,
      from: ora,
      text: `call schedule_task {"instruction":"FAIL-MODEL report","at":"${at}","repeat":"daily"}`,
    });
    const prompt = await tg.waitFor(
      () => tg.messagesTo(chat).find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("ap:"))),
      WAIT,
      "the task's confirmation prompt",
    );
    const approve = tg.buttons(prompt).find((b) => b.callback_data?.endsWith(":y"))!.callback_data!;
    tg.pressButton({ from: ora, message: prompt, data: approve });
    const owner = { platform: "telegram" as const, userId: String(ora.id) };
    await eventually(() => getTask(redis, owner, 1), "the task stored");
    for (let i = 1; i <= 3; i++)
      expect(await outcomeOf(taskJobs, await addOccurrence(taskJobs, owner, 1, Date.now() - i))).toBe("failed");
    const why =
      "Sorry, this request could not be processed (a service configuration problem); it has been logged for the operator.";
    expect(tg.messagesTo(chat).filter((m) => m.text.startsWith("Sorry"))).toHaveLength(3);
    const notice = await tg.waitFor(
      () => tg.messagesTo(chat).find((m) => m.text.startsWith("⏸️")),
      WAIT,
      "the pause notice",
    );
    // The reason too: the failure's own words, in the conversation's language.
    expect(notice.text).toBe(
      `⏸️ Scheduled task #1 (FAIL-MODEL report) failed 3 times in a row and is paused. Why: ${why}\n` +
        "Press Resume to start it again, or manage it with /tasks.",
    );
    expect(tg.buttons(notice).map((b) => b.text)).toEqual(["▶️ Resume"]);
  });
});

describe("Telegram: what people wrote, inside command replies, shows as they wrote it", () => {
  async function send(chat: Chat, from: User, text: string): Promise<FakeSentMessage> {
    const tg = stack.telegram;
    const seen = tg.sent.length;
    tg.sendUserMessage({ chat, from, text });
    return tg.waitFor(() => tg.sent.slice(seen).find((m) => m.chatId === chat.id), WAIT, `a reply to "${text}"`);
  }

  /** The model's final answer in `chat` that starts with `start` (the scripted model's `tool: result`), if sent. */
  function answerOf(chat: Chat, start: string): FakeSentMessage | undefined {
    return stack.telegram.messagesTo(chat).find((m) => m.text.startsWith(start));
  }

  it("/reminders and /tasks list a reminder's text and a task's instruction; /persona and read-only /settings show the persona", async () => {
    const tg = stack.telegram;
    const uma = tg.user(66105, "Uma");
    const chat = tg.privateChat(uma);
    const far = localIso(Date.now() + 3600_000);
    tg.sendUserMessage({
      chat,
      from: uma,
      text: `call set_reminder {"text":"**drink** water <b>x</b>","at":"${far}"}`,
    });
    const owner = { platform: "telegram" as const, userId: String(uma.id) };
    await eventually(() => getReminder(redis, owner, 1), "the reminder stored");
    // The run's own answer comes after the store; wait for it, or it could be taken for the command's reply.
    await tg.waitFor(() => answerOf(chat, "set_reminder:"), WAIT, "the answer after set_reminder");
    const reminders = await send(chat, uma, "/reminders");
    expect(reminders.text.split("\n")[1]).toMatch(/^#1 \*\*drink\*\* water <b>x<\/b> — /);
    tg.sendUserMessage({ chat, from: uma, text: `call schedule_task {"instruction":"*_check_* ~now~","at":"${far}"}` });
    const prompt = await tg.waitFor(
      () => tg.messagesTo(chat).find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("ap:"))),
      WAIT,
      "the task's confirmation prompt",
    );
    tg.pressButton({
      from: uma,
      message: prompt,
      data: tg.buttons(prompt).find((b) => b.callback_data?.endsWith(":y"))!.callback_data!,
    });
    await eventually(() => getTask(redis, owner, 1), "the task stored");
    await tg.waitFor(() => answerOf(chat, "schedule_task:"), WAIT, "the answer after schedule_task");
    const tasks = await send(chat, uma, "/tasks");
    expect(tasks.text.split("\n")[1]).toMatch(/^#1 \*_check_\* ~now~ — /);

    // A group's persona, set by its admin, read by a member who may not change it (a reply without buttons).
    const group = tg.group(-1006610005, "Persona group");
    const vic = tg.user(66106, "Vic");
    const wes = tg.user(66107, "Wes");
    tg.admins.set(group.id, new Set([vic.id]));
    await send(group, vic, "/persona **Be** _brief_ <i>");
    expect((await send(group, wes, "/persona")).text).toBe("目前的角色設定：\n**Be** _brief_ <i>");
    expect((await send(group, wes, "/settings")).text.split("\n")[1]).toBe("• 角色設定：「**Be** _brief_ <i>」");
  });
});

describe("Discord: the conversation's language, and names and texts shown as they are", () => {
  let nextUser = 0;
  function user(name: string): FakeUser {
    nextUser += 1;
    return { id: `76600000000000${String(nextUser).padStart(4, "0")}`, username: `u${nextUser}`, global_name: name };
  }

  /** The (ephemeral) reply to an interaction, deferred or not. */
  async function ephemeral(i: FakeInteraction): Promise<string> {
    const dc = stack.discord;
    const res = await dc.waitFor(() => i.response, WAIT, "the interaction answered");
    if (res.type === 5) return String((await dc.waitFor(() => i.edits[0], WAIT)).content);
    return String(res.data?.content);
  }

  /** Sets the language of `author`'s DM to English. */
  async function english(author: FakeUser): Promise<void> {
    const set = stack.discord.slashCommand(author, "settings", { dm: true, values: { change: "language en" } });
    expect(await ephemeral(set)).toBe("Done: my own messages are in English from now on.");
  }

  /** The components of a message as it is now (after edits). */
  const buttonsOf = (m: SentMessage) =>
    (
      (m.message.components ?? []) as { components: { custom_id: string; label: string; disabled?: boolean }[] }[]
    ).flatMap((r) => r.components);

  /** The bot's first message in `channelId` after the first `after` that has buttons with `prefix`. */
  const withButtons = (channelId: string, prefix: string, after: number): Promise<SentMessage> =>
    stack.discord.waitFor(
      () =>
        stack.discord
          .messagesIn(channelId)
          .slice(after)
          .find((m) => buttonsOf(m).some((b) => b.custom_id.startsWith(prefix))),
      WAIT,
      `a message with ${prefix} buttons`,
    );

  it("a DM set to English: a blank message and one over the limit are answered in English; the Stop button says Stop", async () => {
    const dc = stack.discord;
    const pia = user("Pia");
    await english(pia);
    expect((await dc.ask(pia, "   ", { dm: true }, WAIT)).answer.content).toBe(
      'Please write your question in the message, e.g. "Will it rain in Taipei tomorrow?"',
    );
    expect((await dc.ask(pia, "y".repeat(MAX_INCOMING_TEXT + 1), { dm: true }, WAIT)).answer.content).toBe(
      `That message is too long (limit ${MAX_INCOMING_TEXT} characters); please shorten it.`,
    );

    const channel = dc.dmChannel(pia);
    const before = dc.messagesIn(channel).length;
    const hold = deferred();
    stack.model.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: 6, holdAfterChars: WRITTEN.length, hold: hold.promise },
    });
    dc.sendUserMessage(pia, "tell me something", { dm: true });
    const live = await withButtons(channel, "sp:", before);
    expect(buttonsOf(live).map((b) => b.label)).toEqual(["⏹ Stop"]);
    hold.resolve();
    await dc.waitFor(
      () => String(live.message.content).endsWith(REST) && buttonsOf(live).length === 0,
      WAIT,
      "the whole answer",
    );
    // Someone who set nothing still gets the default language.
    expect((await dc.ask(user("Quinn"), " ", { dm: true }, WAIT)).answer.content).toBe(
      "請在訊息裡寫下你的問題，例如「明天臺北會下雨嗎？」",
    );
  });

  it("an approval prompt shows a display name full of Markdown as it is; so does the closed prompt's todo title", async () => {
    const dc = stack.discord;
    const eve = user("@everyone **Eve** <@&1> `x`");
    const channel = dc.dmChannel(eve);
    await seedTodos(redis, "discord", eve.id, ["買 **牛奶** _今天_"]);
    dc.sendUserMessage(eve, "delete #1", { dm: true });
    const prompt = await withButtons(channel, "ap:", 0);
    expect(prompt.content).toContain("刪除待辦 #1「買 \\*\\*牛奶\\*\\* \\_今天\\_」");
    expect(prompt.content).toContain("只有 **@everyone \\*\\*Eve\\*\\* \\<@&1> \\`x\\`** 可以決定");
    const decline = buttonsOf(prompt).find((b) => b.custom_id.endsWith(":n"))!.custom_id;
    dc.clickButton(eve, prompt.id, decline);
    await dc.waitFor(() => buttonsOf(prompt).every((b) => b.disabled === true), WAIT, "the prompt closed");
    expect(String(prompt.message.content)).toBe("❌ 已取消，未執行：刪除待辦 #1「買 \\*\\*牛奶\\*\\* \\_今天\\_」");
  });

  it("in an English DM a task's confirmation shows its **instruction** as it is, and the closed prompt keeps English buttons", async () => {
    const dc = stack.discord;
    const rex = user("Rex");
    const channel = dc.dmChannel(rex);
    await english(rex);
    const before = dc.messagesIn(channel).length;
    dc.sendUserMessage(
      rex,
      `call schedule_task {"instruction":"**list my todos**","at":"${localIso(Date.now() + 3600_000)}"}`,
      { dm: true },
    );
    const prompt = await withButtons(channel, "ap:", before);
    expect(prompt.content).toContain("“\\*\\*list my todos\\*\\*”");
    expect(buttonsOf(prompt).map((b) => b.label)).toEqual(["Confirm", "Cancel"]);
    dc.clickButton(rex, prompt.id, buttonsOf(prompt).find((b) => b.custom_id.endsWith(":n"))!.custom_id);
    await dc.waitFor(() => buttonsOf(prompt).every((b) => b.disabled === true), WAIT, "the prompt closed");
    expect(String(prompt.message.content)).toContain("“\\*\\*list my todos\\*\\*”");
    expect(buttonsOf(prompt).map((b) => b.label)).toEqual(["Confirm", "Cancel"]);
  });

  it("in an English DM a reminder's **text** shows as it is, with English buttons; Done closes it, still as it is", async () => {
    const dc = stack.discord;
    const sam = user("Sam");
    const channel = dc.dmChannel(sam);
    await english(sam);
    const at = secondsAhead(60);
    dc.sendUserMessage(sam, `call set_reminder {"text":"**pay rent**","at":"${localIso(at)}"}`, { dm: true });
    const owner = { platform: "discord" as const, userId: sam.id };
    await eventually(() => getReminder(redis, owner, 1), "the reminder stored");
    const before = dc.messagesIn(channel).length;
    await bringForward(reminderJobs, occurrenceJobId(owner, 1, at));
    const posted = await withButtons(channel, "rm:d:", before);
    expect(posted.content).toBe("⏰ \\*\\*pay rent\\*\\*");
    expect(buttonsOf(posted).map((b) => b.label)).toEqual(["✅ Done", "💤 Snooze"]);
    const done = dc.clickButton(
      sam,
      posted.id,
      buttonsOf(posted).find((b) => b.custom_id.startsWith("rm:d:"))!.custom_id,
    );
    expect(await ephemeral(done)).toBe("Done!");
    await dc.waitFor(() => buttonsOf(posted).length === 0, WAIT, "the reminder closed");
    expect(String(posted.message.content)).toBe("✅ \\*\\*pay rent\\*\\*");
  });

  it("/reminders, /tasks and /persona show a reminder's text, a task's instruction and the persona as they were written", async () => {
    const dc = stack.discord;
    const tia = user("Tia");
    const channel = dc.dmChannel(tia);
    const far = localIso(Date.now() + 3600_000);
    dc.sendUserMessage(tia, `call set_reminder {"text":"**drink** water <t:0:R>","at":"${far}"}`, { dm: true });
    const owner = { platform: "discord" as const, userId: tia.id };
    await eventually(() => getReminder(redis, owner, 1), "the reminder stored");
    const reminders = await ephemeral(dc.slashCommand(tia, "reminders", { dm: true }));
    expect(reminders.split("\n")[1]).toMatch(/^#1 \\\*\\\*drink\\\*\\\* water \\<t:0:R> — /);
    const before = dc.messagesIn(channel).length;
    dc.sendUserMessage(tia, `call schedule_task {"instruction":"# *_check_* ||now||","at":"${far}"}`, { dm: true });
    const prompt = await withButtons(channel, "ap:", before);
    dc.clickButton(tia, prompt.id, buttonsOf(prompt).find((b) => b.custom_id.endsWith(":y"))!.custom_id);
    await eventually(() => getTask(redis, owner, 1), "the task stored");
    const tasks = await ephemeral(dc.slashCommand(tia, "tasks", { dm: true }));
    expect(tasks.split("\n")[1]).toMatch(/^#1 \\# \\\*\\_check\\_\\\* \\\|\\\|now\\\|\\\| — /);
    await ephemeral(dc.slashCommand(tia, "persona", { dm: true, values: { text: "**Be** _brief_" } }));
    expect(await ephemeral(dc.slashCommand(tia, "persona", { dm: true }))).toBe(
      "目前的角色設定：\n\\*\\*Be\\*\\* \\_brief\\_",
    );
  });

  it("someone else's press on a prompt in a server is told who decides, that name shown as it is", async () => {
    const dc = stack.discord;
    const owner = user("**Eve** _x_ <t:0:R>");
    const other = user("Ugo");
    dc.addUser(owner);
    dc.addUser(other);
    await seedTodos(redis, "discord", owner.id, ["茶"]);
    const before = dc.messagesIn(dc.channelId).length;
    dc.sendUserMessage(owner, `<@${dc.bot.id}> delete #1`);
    const prompt = await withButtons(dc.channelId, "ap:", before);
    const yes = buttonsOf(prompt).find((b) => b.custom_id.endsWith(":y"))!.custom_id;
    expect(await ephemeral(dc.clickButton(other, prompt.id, yes))).toBe(
      "只有 \\*\\*Eve\\*\\* \\_x\\_ \\<t:0:R> 可以決定。",
    );
    expect(await todoLines(redis, "discord", owner.id)).toEqual(["#1 茶"]);
  });
});
