/**
 * What LINE says about a closed approval prompt, end to end: the real `@line/bot-sdk` clients
 * against the strict fake LINE platform, real Redis and BullMQ, the worker and the scripted model.
 * LINE cannot edit the prompt, so what Telegram and Discord edit into it — an "always allow" grant
 * given, an approval closed by the requester's new message — leads the answer that follows, in
 * the same reply call (no push). Each scenario has its own users and chats.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Config } from "../../src/config.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import type { FakeLine, FakeLineMessage, FakeLinePlace } from "../fakes/line.js";
import { captureLogger } from "../helpers/log.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { approvalsModel } from "./scripted-approvals.js";
import { startLineStack, type LineStack } from "./harness.js";

let stack: LineStack;
let line: FakeLine;
let redis: RedisClient;
let config: Config;

beforeAll(async () => {
  stack = await startLineStack({ model: approvalsModel, line: () => ({ pushQuota: 1000 }) });
  ({ line, config } = stack);
  redis = connectRedis(stack.redis.url);
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await stack?.stop();
});

/** The chat of `place`: its group, else the one-to-one chat with its user. */
const chatOf = (place: FakeLinePlace): string => place.groupId ?? place.from.userId;

/** Sends `text` from `place` (mentioning the bot in a group). */
async function say(place: FakeLinePlace, text: string): Promise<void> {
  await line.deliver([line.textEvent(place, text, { mention: place.groupId !== undefined })]);
}

/** The newest approval prompt in the chat of `place` (a message with `ap:` postbacks). */
function promptIn(place: FakeLinePlace): Promise<FakeLineMessage> {
  return line.waitFor(
    () =>
      line
        .messagesTo(chatOf(place))
        .filter((m) => m.postbacks.some((d) => d.startsWith("ap:")))
        .at(-1),
    30_000,
    "an approval prompt",
  );
}

/** Presses the prompt's button `choice` (`y` confirm, `n` cancel, `a` always allow) as `place`'s user. */
async function press(place: FakeLinePlace, prompt: FakeLineMessage, choice: "y" | "n" | "a"): Promise<void> {
  const data = prompt.postbacks.find((d) => d.endsWith(`:${choice}`));
  expect(data).toBeDefined();
  await line.deliver([line.postbackEvent(place, data!)]);
}

/** The first message to the chat of `place` sent after the first `after` there, containing `needle`. */
function sentAfter(place: FakeLinePlace, after: number, needle: string): Promise<FakeLineMessage> {
  return line.waitFor(
    () =>
      line
        .messagesTo(chatOf(place))
        .slice(after)
        .find((m) => m.text.includes(needle)),
    30_000,
    `a message with "${needle}"`,
  );
}

/** Sets the conversation's language (`/settings`), as stored. */
async function speak(place: FakeLinePlace, language: "zh-TW" | "en"): Promise<void> {
  await new SettingsStore(redis, config, captureLogger().log).set(
    { platform: "line", chatId: chatOf(place) },
    "language",
    language,
  );
}

it("🔓 一律允許: the answer after the press starts with the grant's line, in the press's own reply (no push); the tool is then not asked about", async () => {
  const amy = { from: line.user("Amy") };
  await seedTodos(redis, "line", amy.from.userId, ["買牛奶", "繳電費", "倒垃圾"]);
  await say(amy, "delete #1");
  const prompt = await promptIn(amy);
  expect(prompt.postbacks.some((d) => d.endsWith(":a"))).toBe(true);
  const pushes = line.pushes;
  const before = line.messagesTo(amy.from.userId).length;
  await press(amy, prompt, "a");
  const answer = await sentAfter(amy, before, "delete_todo:");
  expect(answer.text).toBe(
    "✅ 已確認，30 天內一律允許：刪除待辦 #1「買牛奶」（/permissions 可撤銷）\n\ndelete_todo: 已刪除：#1 買牛奶",
  );
  expect(answer.via).toBe("reply");
  expect(line.pushes).toBe(pushes);
  // One message: the grant's line is part of the answer, not a message (or a reply call) of its own.
  expect(line.messagesTo(amy.from.userId).slice(before)).toEqual([answer]);
  // Granted: the next delete runs at once, without a prompt, and its answer has no such line.
  const next = line.messagesTo(amy.from.userId).length;
  await say(amy, "delete #2");
  const again = await sentAfter(amy, next, "delete_todo:");
  expect(again.text).toBe("delete_todo: 已刪除：#2 繳電費");
  expect(line.messagesTo(amy.from.userId).slice(next)).toEqual([again]);
  expect(await todoLines(redis, "line", amy.from.userId)).toEqual(["#3 倒垃圾"]);
});

it("the grant's line speaks the conversation's language; ✅ 確認 and ❌ 取消 answers carry no such line, as before", async () => {
  const ben = { from: line.user("Ben") };
  await speak(ben, "en");
  await seedTodos(redis, "line", ben.from.userId, ["milk"]);
  await say(ben, "delete #1");
  const prompt = await promptIn(ben);
  const before = line.messagesTo(ben.from.userId).length;
  await press(ben, prompt, "a");
  const answer = await sentAfter(ben, before, "delete_todo:");
  expect(answer.text.split("\n\n")[0]).toBe(
    '✅ Confirmed, always allowed for 30 days: Delete todo #1 "milk" (/permissions to revoke)',
  );
  expect(answer.via).toBe("reply");

  const cat = { from: line.user("Cat") };
  await seedTodos(redis, "line", cat.from.userId, ["洗車", "買花"]);
  await say(cat, "delete #1");
  const confirm = await promptIn(cat);
  const confirmedAfter = line.messagesTo(cat.from.userId).length;
  await press(cat, confirm, "y");
  expect((await sentAfter(cat, confirmedAfter, "delete_todo:")).text).toBe("delete_todo: 已刪除：#1 洗車");
  await say(cat, "delete #2");
  const cancel = await line.waitFor(() =>
    line
      .messagesTo(cat.from.userId)
      .filter((m) => m.postbacks.some((d) => d.startsWith("ap:")))
      .find((m) => m !== confirm),
  );
  const cancelledAfter = line.messagesTo(cat.from.userId).length;
  await press(cat, cancel, "n");
  const declined = await sentAfter(cat, cancelledAfter, "delete_todo:");
  expect(declined.text).toMatch(/^delete_todo: /);
  expect(declined.text).not.toContain("一律允許");
  expect(await todoLines(redis, "line", cat.from.userId)).toEqual(["#2 買花"]);
});

it("a new message while an approval is pending: its answer starts with a line saying the earlier request was closed, not done (one reply)", async () => {
  const dan = { from: line.user("Dan") };
  await seedTodos(redis, "line", dan.from.userId, ["整理書桌"]);
  await say(dan, "delete #1");
  const prompt = await promptIn(dan);
  const pushes = line.pushes;
  const before = line.messagesTo(dan.from.userId).length;
  await say(dan, "calc 6 * 7");
  const answer = await sentAfter(dan, before, "calculate:");
  const [lead, rest] = answer.text.split("\n\n");
  expect(lead).toBe("↩️ 先前等你確認的請求已關閉，未執行：刪除待辦 #1「整理書桌」");
  expect(rest).toContain("42");
  expect(answer.via).toBe("reply");
  expect(line.pushes).toBe(pushes);
  expect(line.messagesTo(dan.from.userId).slice(before)).toEqual([answer]);
  expect(await todoLines(redis, "line", dan.from.userId)).toEqual(["#1 整理書桌"]);
  // The old prompt, pressed now, says the same; the next answer has no such line.
  const pressed = line.messagesTo(dan.from.userId).length;
  await press(dan, prompt, "y");
  expect((await sentAfter(dan, pressed, "這個請求")).text).toBe("這個請求已經結束了：收到新訊息，未確認，未執行。");
  const next = line.messagesTo(dan.from.userId).length;
  await say(dan, "calc 1 + 1");
  expect((await sentAfter(dan, next, "calculate:")).text).not.toContain("↩️");
  expect(await todoLines(redis, "line", dan.from.userId)).toEqual(["#1 整理書桌"]);
});

it("a new message that asks again: the line saying the earlier request was closed comes before the new prompt, in the same reply", async () => {
  const ivy = { from: line.user("Ivy") };
  await seedTodos(redis, "line", ivy.from.userId, ["買書", "還筆"]);
  await say(ivy, "delete #1");
  const first = await promptIn(ivy);
  const pushes = line.pushes;
  const before = line.messagesTo(ivy.from.userId).length;
  await say(ivy, "delete #2");
  const second = await line.waitFor(() =>
    line
      .messagesTo(ivy.from.userId)
      .slice(before)
      .find((m) => m.postbacks.some((d) => d.startsWith("ap:"))),
  );
  expect(second).not.toBe(first);
  const sent = line.messagesTo(ivy.from.userId).slice(before);
  expect(sent.map((m) => m.text)).toEqual([
    "↩️ 先前等你確認的請求已關閉，未執行：刪除待辦 #1「買書」",
    expect.stringContaining("刪除待辦 #2「還筆」"),
  ]);
  expect(sent.map((m) => m.via)).toEqual(["reply", "reply"]);
  expect(line.pushes).toBe(pushes);
  // Confirmed, the answer carries no such line again.
  const asked = line.messagesTo(ivy.from.userId).length;
  await press(ivy, second, "y");
  const done = await sentAfter(ivy, asked, "delete_todo:");
  expect(done.text).toBe("delete_todo: 已刪除：#2 還筆");
  expect(await todoLines(redis, "line", ivy.from.userId)).toEqual(["#1 買書"]);
});

it("in a group, only the requester's own new message closes the approval and is told so, in the conversation's language", async () => {
  const eve = line.user("Eve");
  const fay = line.user("Fay");
  const group = line.group([eve, fay]);
  const asEve = { from: eve, groupId: group };
  const asFay = { from: fay, groupId: group };
  await speak(asEve, "en");
  await seedTodos(redis, "line", eve.userId, ["tickets"]);
  await say(asEve, "delete #1");
  await promptIn(asEve);
  // Someone else's message leaves Eve's approval open: no line in its answer.
  const fayAsks = line.messagesTo(group).length;
  await say(asFay, "calc 2 + 3");
  expect((await sentAfter(asFay, fayAsks, "calculate:")).text).not.toContain("↩️");
  const eveAsks = line.messagesTo(group).length;
  await say(asEve, "calc 6 * 7");
  const answer = await sentAfter(asEve, eveAsks, "calculate:");
  expect(answer.text.split("\n\n")[0]).toBe(
    '↩️ Your earlier request that was waiting for confirmation was closed, not done: Delete todo #1 "tickets"',
  );
  expect(answer.via).toBe("reply");
  expect(await todoLines(redis, "line", eve.userId)).toEqual(["#1 tickets"]);
});

it("the action in those lines shows as it was written: a title with Markdown's characters keeps every one of them", async () => {
  const gus = { from: line.user("Gus") };
  await seedTodos(redis, "line", gus.from.userId, ["rm *_old_*.log", "keep"]);
  await say(gus, "delete #1");
  const granted = line.messagesTo(gus.from.userId).length;
  await press(gus, await promptIn(gus), "a");
  expect((await sentAfter(gus, granted, "delete_todo:")).text.split("\n\n")[0]).toBe(
    "✅ 已確認，30 天內一律允許：刪除待辦 #1「rm *_old_*.log」（/permissions 可撤銷）",
  );

  const hal = { from: line.user("Hal") };
  await seedTodos(redis, "line", hal.from.userId, ["**drink** water", "[a](b) <b>"]);
  await say(hal, "delete #2");
  await promptIn(hal);
  const asked = line.messagesTo(hal.from.userId).length;
  await say(hal, "calc 6 * 7");
  expect((await sentAfter(hal, asked, "calculate:")).text.split("\n\n")[0]).toBe(
    "↩️ 先前等你確認的請求已關閉，未執行：刪除待辦 #2「[a](b) <b>」",
  );
  await say(hal, "delete #1");
  await promptIn(hal);
  const again = line.messagesTo(hal.from.userId).length;
  await say(hal, "calc 1 + 1");
  expect((await sentAfter(hal, again, "calculate:")).text.split("\n\n")[0]).toBe(
    "↩️ 先前等你確認的請求已關閉，未執行：刪除待辦 #1「**drink** water」",
  );
  expect(await todoLines(redis, "line", hal.from.userId)).toEqual(["#1 **drink** water", "#2 [a](b) <b>"]);
});

it("/reset while an approval is pending: its reply adds that the pending action was cancelled; a later press finds it gone, nothing runs", async () => {
  const ida = { from: line.user("Ida") };
  await seedTodos(redis, "line", ida.from.userId, ["買菜", "寄信"]);
  await say(ida, "delete #1");
  const prompt = await promptIn(ida);
  const before = line.messagesTo(ida.from.userId).length;
  await say(ida, "/reset");
  const reply = await sentAfter(ida, before, "忘掉");
  expect(reply.text).toBe("好的，我已經忘掉這個聊天之前的對話了。\n待確認的操作已取消。");
  expect(reply.via).toBe("reply");
  // The prompt itself cannot change on LINE: a press on it is told it is gone, and the todo stays.
  const pressed = line.messagesTo(ida.from.userId).length;
  await press(ida, prompt, "y");
  expect((await sentAfter(ida, pressed, "確認請求")).text).toBe("這個確認請求已過期或不存在。");
  expect(await todoLines(redis, "line", ida.from.userId)).toEqual(["#1 買菜", "#2 寄信"]);
  // Nothing pending any more: the next /reset says only its own line.
  const again = line.messagesTo(ida.from.userId).length;
  await say(ida, "/reset");
  expect((await sentAfter(ida, again, "忘掉")).text).toBe("好的，我已經忘掉這個聊天之前的對話了。");
});

it("/reset's line speaks the conversation's language, and in a group says that every member's pending action was cancelled", async () => {
  const jon = { from: line.user("Jon") };
  await speak(jon, "en");
  await seedTodos(redis, "line", jon.from.userId, ["milk"]);
  await say(jon, "delete #1");
  await promptIn(jon);
  const before = line.messagesTo(jon.from.userId).length;
  await say(jon, "/reset");
  expect((await sentAfter(jon, before, "forgotten")).text).toBe(
    "Done: I have forgotten this chat's earlier conversation.\nThe action waiting for confirmation was cancelled.",
  );
  expect(await todoLines(redis, "line", jon.from.userId)).toEqual(["#1 milk"]);

  const kim = line.user("Kim");
  const lou = line.user("Lou");
  const group = line.group([kim, lou]);
  const asKim = { from: kim, groupId: group };
  const asLou = { from: lou, groupId: group };
  await seedTodos(redis, "line", kim.userId, ["雨傘"]);
  await seedTodos(redis, "line", lou.userId, ["鑰匙"]);
  await say(asKim, "delete #1");
  const kimPrompt = await promptIn(asKim);
  await say(asLou, "delete #1");
  await line.waitFor(() =>
    line
      .messagesTo(group)
      .filter((m) => m.postbacks.some((d) => d.startsWith("ap:")))
      .find((m) => m !== kimPrompt),
  );
  const asked = line.messagesTo(group).length;
  // A command in a group is sent without a mention (with one, it is a message for the model).
  await line.deliver([line.textEvent(asLou, "/reset")]);
  expect((await sentAfter(asLou, asked, "忘掉")).text).toBe(
    "好的，我已經忘掉這個聊天之前的對話了。\n待確認的操作都已取消。",
  );
  expect(await todoLines(redis, "line", kim.userId)).toEqual(["#1 雨傘"]);
  expect(await todoLines(redis, "line", lou.userId)).toEqual(["#1 鑰匙"]);
});
