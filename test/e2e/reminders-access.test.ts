/**
 * Issue 26 item 9 end to end with `ACCESS_POLICY=allowlist`: reminders stop when access goes.
 * Delivery checks access at every occurrence with the gate's rule (`hasAccess`): a user revoked
 * with the real `npm run access -- revoke` (in this process) gets no more reminders (ended with a log line), a group
 * disabled with `/disable` (real grammy client, fake Bot API) receives none, and a Discord server
 * enabled as a whole (`discord:<guildId>`) gets the reminders set there through the real tool
 * until it is revoked. Each case has a control reminder that is still posted.
 */
import type { Chat } from "grammy/types";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AccessStore } from "../../src/access/store.js";
import type { RedisClient } from "../../src/redis.js";
import { ReminderScheduler } from "../../src/reminders/schedule.js";
import { addReminder, listReminders, type Reminder } from "../../src/reminders/store.js";
import type { FakeUser } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { accessMain } from "../../src/cli/access.js";
import { runCli } from "../helpers/cli.js";
import { bringForward } from "../helpers/jobs.js";
import { useStack, type Stack } from "./harness.js";
import {
  localIso,
  quiet,
  reminderJobId,
  remindersModel,
  remindersQueue,
  schedulerNext,
  secondsAhead,
  ZONE,
} from "./reminders-helpers.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

const ADMIN = 9700;
const WAIT = 30_000;

let stack: Stack;
let redis: RedisClient;
useStack(
  { model: remindersModel, env: { ACCESS_POLICY: "allowlist", ADMIN_USERS: `telegram:${ADMIN}` } },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);
let queue: ReturnType<typeof remindersQueue>;
beforeAll(() => {
  queue = remindersQueue(redis);
});
afterAll(async () => {
  await queue.close();
});

/** `npm run access -- ...args` against the stack's Redis, in this process (`accessMain`); its output. */
async function access(...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    LOG_LEVEL: "silent",
    ...stack.redis.env,
    ACCESS_POLICY: "allowlist",
    ADMIN_USERS: `telegram:${ADMIN}`,
  };
  const run = await runCli(accessMain, args, env);
  expect(run.code).toBe(0);
  return run.stdout;
}

/** Adds a reminder due in about 2 s for `owner` in `where`, schedules it as the tool does, and brings its job forward to now. */
async function remindSoon(
  owner: { platform: "telegram"; userId: string },
  text: string,
  where: Pick<Reminder, "chatId" | "chatKind" | "userName"> & { repeat?: Reminder["repeat"] },
): Promise<Reminder> {
  const due = secondsAhead(2);
  const reminder = (await addReminder(redis, owner, {
    text,
    at: due,
    next: due,
    timezone: ZONE,
    createdAt: Date.now(),
    ...where,
  }))!;
  await new ReminderScheduler(queue).schedule(owner, reminder);
  await bringForward(queue, reminderJobId(owner, reminder, due), 0);
  return reminder;
}

/** Reminder messages (with their done/snooze buttons) the bot posted in Telegram chat `chatId` about `needle`. */
function posted(chatId: number, needle: string): FakeSentMessage[] {
  return stack.telegram.sent.filter(
    (m) =>
      m.chatId === chatId && m.text.includes(needle) && JSON.stringify(m.payload.reply_markup ?? {}).includes("rm:d:"),
  );
}

/** The log line that ended reminder `reminder` (`platform:userId#id`) for lost access. */
async function endedLine(reminder: string): Promise<Record<string, unknown>> {
  return stack.telegram.waitFor(
    () => stack.logs().find((l) => String(l.msg).startsWith("reminder ended: its") && l.reminder === reminder),
    WAIT,
    `the log line ending ${reminder}`,
  );
}

it("a revoked user's reminders stop, with a log line; an allowed user's are still posted", async () => {
  const tg = stack.telegram;
  for (const user of [tg.user(9701, "Ivy"), tg.user(9702, "Jay")]) tg.privateChat(user);
  const grants = new AccessStore(redis);
  await grants.allowUser("telegram:9701");
  await grants.allowUser("telegram:9702");
  expect(await access("revoke", "telegram:9701")).toContain("telegram:9701");
  await remindSoon({ platform: "telegram", userId: "9701" }, "吃藥", {
    chatId: "9701",
    chatKind: "dm",
    userName: "Ivy",
    repeat: "daily",
  });
  await remindSoon({ platform: "telegram", userId: "9702" }, "倒垃圾", {
    chatId: "9702",
    chatKind: "dm",
    userName: "Jay",
  });

  await tg.waitFor(() => posted(9702, "倒垃圾")[0], WAIT, "the allowed user's reminder");
  const line = await endedLine("telegram:9701#1");
  expect(line).toMatchObject({ level: 40, msg: "reminder ended: its owner no longer has access", chatKind: "dm" });
  expect(posted(9701, "吃藥")).toEqual([]);
  expect(await listReminders(redis, { platform: "telegram", userId: "9701" })).toEqual([]);
  expect(await schedulerNext(queue, "telegram", "9701", 1)).toBeUndefined(); // the daily repeat is gone too
}, 90_000);

it("a group disabled with /disable receives no reminder; an enabled group still does", async () => {
  const tg = stack.telegram;
  const admin = tg.user(ADMIN, "Owner");
  const closed: Chat = tg.group(-1009711, "停用的群組");
  const open: Chat = tg.group(-1009712, "啟用的群組");
  const say = async (chat: Chat, text: string): Promise<string> => {
    const before = tg.sent.filter((m) => m.chatId === chat.id).length;
    tg.sendUserMessage({ chat, from: admin, text });
    return (
      await tg.waitFor(
        () => tg.sent.filter((m) => m.chatId === chat.id)[before],
        ANSWER_TIMEOUT_MS,
        `the answer to ${text}`,
      )
    ).text;
  };
  expect(await say(closed, "/enable")).toContain("已在這裡啟用");
  expect(await say(open, "/enable")).toContain("已在這裡啟用");
  // A member's reminders in both groups (the member is served there because the groups are enabled).
  const owner = { platform: "telegram" as const, userId: "9711" };
  expect(await say(closed, "/disable")).toContain("已在這裡停用");
  const seen = tg.sent.filter((m) => m.chatId === closed.id).length;
  await remindSoon(owner, "開會", { chatId: String(closed.id), chatKind: "group", userName: "Kai" });
  await remindSoon(owner, "交作業", { chatId: String(open.id), chatKind: "group", userName: "Kai" });

  await tg.waitFor(() => posted(open.id, "交作業")[0], WAIT, "the reminder in the enabled group");
  const line = await endedLine("telegram:9711#1");
  expect(line).toMatchObject({ msg: "reminder ended: its group is no longer enabled", chatId: String(closed.id) });
  await quiet(300);
  expect(tg.sent.filter((m) => m.chatId === closed.id).slice(seen)).toEqual([]);
  expect((await listReminders(redis, owner)).map((r) => r.text)).toEqual(["交作業"]);
}, 90_000);

it("Discord: a server enabled as a whole gets the reminders set there through the tool, until it is revoked", async () => {
  const dc = stack.discord;
  const lee: FakeUser = { id: "970000000000000021", username: "lee", global_name: "Lee" };
  await new AccessStore(redis).allowChat(`discord:${dc.guildId}`);
  const inChannel = (needle: string) =>
    dc.sent.filter(
      (m) =>
        m.channelId === dc.channelId &&
        m.content.includes(needle) &&
        JSON.stringify(m.payload.components ?? []).includes("rm:d:"),
    );
  const set = async (text: string): Promise<number> => {
    const before = dc.sent.length;
    const at = secondsAhead(60);
    dc.sendUserMessage(lee, `<@${dc.bot.id}> call set_reminder {"text":"${text}","at":"${localIso(at)}"}`, {
      channelId: dc.channelId,
    });
    await dc.waitFor(
      () => dc.sent.slice(before).find((m) => m.channelId === dc.channelId && m.content.startsWith("set_reminder:")),
      ANSWER_TIMEOUT_MS,
      `the reminder "${text}" set`,
    );
    return at;
  };
  const owner = { platform: "discord" as const, userId: lee.id };
  const first = await set("繳報告");
  const second = await set("訂便當");
  const stored = await listReminders(redis, owner);
  expect(stored.map((r) => [r.text, r.guildId])).toEqual([
    ["繳報告", dc.guildId],
    ["訂便當", dc.guildId],
  ]);
  await bringForward(queue, reminderJobId(owner, { id: 1 }, first), 0);
  await dc.waitFor(() => inChannel("繳報告")[0], WAIT, "the first reminder, posted under the server-wide grant");
  await new AccessStore(redis).revokeChat(`discord:${dc.guildId}`);
  await bringForward(queue, reminderJobId(owner, { id: 2 }, second), 0);
  await endedLine(`discord:${lee.id}#2`);
  expect(inChannel("訂便當")).toEqual([]);
}, 90_000);
