/**
 * LINE end to end: the real `@line/bot-sdk` clients against the strict fake LINE platform
 * (`test/fakes/line.ts`, checked against LINE's OpenAPI description), real Redis and BullMQ, the
 * worker and the scripted model; the bot runs as an adapter part and a worker part, as `npm start`
 * would with `ROLE=adapter` and `ROLE=worker`. Reply tokens expire on the fake's clock, and an
 * old event is made by its timestamp: no test waits for a minute to pass.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLineStack, type LineStack } from "./harness.js";
import type { Config } from "../../src/config.js";
import { registry, resetMetrics } from "../../src/metrics.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { text, type FakeAnthropic } from "../fakes/anthropic.js";
import type { FakeTranscription } from "../fakes/transcription.js";
import type { FakeSpeech } from "../fakes/speech.js";
import { SettingsStore } from "../../src/settings/store.js";
import { memoryKey, MemoryStore } from "../../src/memory/store.js";
import type { FakeLine, FakeLineUser } from "../fakes/line.js";
import { captureLogger } from "../helpers/log.js";
import { listTodos } from "../../tools/todo/store.js";
import { makeImage } from "../media/fixtures.js";
import { seedTodos } from "./approvals-helpers.js";
import { bringForward } from "../helpers/jobs.js";
import { addReminder, listReminders } from "../../src/reminders/store.js";
import { listTasks } from "../../src/tasks/store.js";
import { unknownCommand } from "../../src/commands/runner.js";
import { bringReminderForward, localIso, secondsAhead } from "./reminders-helpers.js";
import { tasksModel, tasksQueue, taskOccurrenceJobId } from "./tasks-helpers.js";

let stack: LineStack;
let line: FakeLine;
let model: FakeAnthropic;
let redis: RedisClient;
let config: Config;
let lines: string[];
let alice: FakeLineUser;
let stt: FakeTranscription;
let tts: FakeSpeech;

beforeAll(async () => {
  stack = await startLineStack({
    model: tasksModel,
    line: () => ({ pushQuota: 1000 }),
    transcription: true,
    speech: true,
  });
  ({ line, model, config, lines } = stack);
  stt = stack.stt!;
  tts = stack.tts!;
  redis = connectRedis(stack.redis.url);
  alice = line.user("Alice");
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await stack?.stop();
});

/** `bot_pushed_messages_total{platform="line"}` of this process. */
async function pushedMetric(): Promise<number> {
  const metric = await registry.getSingleMetric("bot_pushed_messages_total")?.get();
  return metric?.values.find((v) => v.labels.platform === "line")?.value ?? 0;
}

/**
 * Presses 確認 on the newest approval prompt in `chatId` (scheduling a task asks first), as `place`'s
 * user, and waits for the answer starting with `prefix`.
 */
async function approveAndWait(place: { from: FakeLineUser; groupId?: string }, chatId: string, prefix: string) {
  const prompt = await line.waitFor(() =>
    line
      .messagesTo(chatId)
      .filter((m) => m.postbacks.some((d) => d.startsWith("ap:")))
      .at(-1),
  );
  await line.deliver([
    line.postbackEvent(
      place,
      prompt.postbacks.find((d) => d.endsWith(":y"))!,
    ),
  ]);
  return line.waitFor(() => line.messagesTo(chatId).find((m) => m.text.startsWith(prefix) && m.at >= prompt.at));
}

/** A one-to-one chat with `user`. */
const dm = (user: FakeLineUser) => ({ from: user });

it("answers a DM with its reply token: signed webhook, 200 at once, the answer as one reply, loading shown", async () => {
  resetMetrics();
  const event = line.textEvent(dm(alice), "calc (1200 + 800) * 0.05");
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("calculate")));
  expect(answer.via).toBe("reply");
  expect(answer.text).toContain("100");
  expect(line.pushes).toBe(0);
  expect(line.loadings.some((l) => l.chatId === alice.userId && l.loadingSeconds % 5 === 0)).toBe(true);
  expect(await pushedMetric()).toBe(0);
});

it("refuses a forged or unsigned webhook (401) and handles nothing of it", async () => {
  const before = line.sent.length;
  const event = line.textEvent(dm(alice), "forged hello");
  expect(await line.deliver([event], { signature: Buffer.alloc(32).toString("base64") })).toBe(401);
  const response = await fetch(line.webhookUrl, { method: "POST", body: JSON.stringify({ events: [event] }) });
  expect(response.status).toBe(401);
  const big = await fetch(line.webhookUrl, {
    method: "POST",
    headers: { "x-line-signature": "x", "content-length": String(2 * 1024 * 1024) },
    body: "x".repeat(2 * 1024 * 1024),
  }).catch(() => undefined);
  expect(big === undefined || big.status === 413).toBe(true);
  await new Promise((r) => setTimeout(r, 300));
  expect(line.sent.length).toBe(before);
  expect(model.requests.some((r) => JSON.stringify(r).includes("forged hello"))).toBe(false);
});

it("drops a signed event whose ids are malformed (path traversal) with one warning, before any LINE call", async () => {
  const before = line.calls.length;
  const warned = lines.length;
  const traversal = "../../etc/passwd";
  const byUser = line.textEvent(dm(alice), "traversal hello 1");
  (byUser.source as Record<string, unknown>).userId = traversal;
  const group = line.group([alice]);
  const byGroup = line.textEvent({ from: alice, groupId: group }, "/usage");
  (byGroup.source as Record<string, unknown>).groupId = `C${"0".repeat(32)}/../../../v2/bot/info`;
  const byMention = line.textEvent({ from: alice, groupId: group }, "traversal hello 3", { mention: true });
  const mentionees = (byMention.message as { mention: { mentionees: Record<string, unknown>[] } }).mention.mentionees;
  mentionees.push({ index: 0, length: 1, type: "user", userId: traversal });
  expect(await line.deliver([byUser, byGroup, byMention])).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  expect(line.calls.slice(before)).toEqual([]);
  const dropped = lines.slice(warned).filter((l) => l.includes("malformed id dropped"));
  expect(dropped).toHaveLength(3);
  for (const l of dropped) expect(l).not.toContain("etc/passwd");
  expect(model.requests.some((r) => JSON.stringify(r).includes("traversal hello"))).toBe(false);
});

it("skips a signed event without the fields of its type (a message event with no message) with one warning, no stack", async () => {
  const before = line.calls.length;
  const logged = lines.length;
  const event = line.textEvent(dm(alice), "shapeless hello");
  delete (event as Record<string, unknown>).message;
  // Not something LINE sends (the fake's deliver refuses it): posted and signed here, as a sender with the secret could.
  const body = JSON.stringify({ destination: line.botUserId, events: [event] });
  const response = await fetch(line.webhookUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-line-signature": createHmac("sha256", line.secret).update(body).digest("base64"),
    },
    body,
  });
  expect(response.status).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  expect(line.calls.slice(before)).toEqual([]);
  const after = lines.slice(logged);
  const skipped = after.filter((l) => l.includes("malformed event skipped"));
  expect(skipped).toHaveLength(1);
  expect(JSON.parse(skipped[0]!)).toMatchObject({ level: 40, type: "message", field: "message" });
  expect(after.filter((l) => (JSON.parse(l) as { level: number }).level >= 50)).toEqual([]);
  expect(after.join("\n")).not.toMatch(/TypeError|shapeless hello|\n\s+at /);
});

it("answers a redelivered event once", async () => {
  const event = line.textEvent(dm(alice), "redelivery check 42");
  expect(await line.deliver([event])).toBe(200);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("redelivery check 42")));
  expect(await line.deliver([event], { redelivery: true })).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  expect(line.messagesTo(alice.userId).filter((m) => m.text.includes("redelivery check 42"))).toHaveLength(1);
  expect(model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes("redelivery check 42"))).toHaveLength(
    1,
  );
});

it("pushes when the reply token has expired (fake clock), and counts the push", async () => {
  resetMetrics();
  const event = line.textEvent(dm(alice), "late question 7");
  // The event is delivered after its token's minute has passed on LINE's side: the reply is refused, the answer is pushed.
  line.advance(61_000);
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.text.includes("late question 7")),
  );
  expect(answer.via).toBe("push");
  // The fake records the message before its answer reaches the bot, which counts the push then.
  await line.waitFor(async () => (await pushedMetric()) === 1 || undefined);
  expect(await pushedMetric()).toBe(1);
});

it("splits a long answer at 5,000 characters, five messages per call: the reply token first, then a push", async () => {
  const long = Array.from({ length: 7 }, (_, i) => `part ${i} ${"長".repeat(4900)}`).join("\n\n");
  model.enqueue(text(long));
  const event = line.textEvent(dm(alice), "write a lot");
  const pushesBefore = line.pushes;
  expect(await line.deliver([event])).toBe(200);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("part 6")), 30_000);
  const parts = line.messagesTo(alice.userId).filter((m) => /^part \d/.test(m.text));
  expect(parts.map((m) => m.text.slice(0, 6))).toEqual([
    "part 0",
    "part 1",
    "part 2",
    "part 3",
    "part 4",
    "part 5",
    "part 6",
  ]);
  expect(parts.map((m) => m.via)).toEqual(["reply", "reply", "reply", "reply", "reply", "push", "push"]);
  expect(parts.every((m) => m.text.length <= 5000)).toBe(true);
  expect(line.pushes - pushesBefore).toBe(1);
});

it("runs /reset as a command with the reply token, without the model", async () => {
  const before = model.requests.length;
  const event = line.textEvent(dm(alice), "/reset");
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(
    () => line.sent.at(-1)?.to === alice.userId && line.sent.at(-1)?.via === "reply" && line.sent.at(-1),
  );
  expect(answer.text).toMatch(/忘掉|forgot|reset/i);
  expect(model.requests.length).toBe(before);
  // The next question starts a fresh history.
  await line.deliver([line.textEvent(dm(alice), "and tomorrow?")]);
  const next = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.text.includes("no earlier question")),
  );
  expect(next.via).toBe("reply");
});

it("answers an unknown command with the /help list, in a DM and (bare) in a group, without the model; '/usr/bin/x' is a message", async () => {
  const dave = line.user("Dave");
  const expected = unknownCommand("zh-TW", "frobnicate", "line", false);
  const seen = (chatId: string) => line.messagesTo(chatId).length;
  const before = seen(dave.userId);
  await line.deliver([line.textEvent(dm(dave), "/frobnicate now")]);
  const answer = await line.waitFor(() => line.messagesTo(dave.userId).slice(before).at(0));
  expect(answer.text).toBe(expected);
  expect(answer.via).toBe("reply");
  const group = line.group([dave, alice]);
  await line.deliver([line.textEvent({ from: dave, groupId: group }, "/Frobnicate")]);
  const inGroup = await line.waitFor(() => line.messagesTo(group).at(0));
  expect(inGroup.text).toBe(expected);
  expect(model.requests.some((r) => JSON.stringify(r.messages).includes("robnicate"))).toBe(false);
  // Text that only starts with "/" is a message: it reaches the model.
  const after = seen(dave.userId);
  await line.deliver([line.textEvent(dm(dave), "/usr/bin/xyz-path")]);
  const reply = await line.waitFor(() => line.messagesTo(dave.userId).slice(after).at(0));
  expect(reply.text).not.toContain("不認得的指令");
  expect(model.requests.some((r) => JSON.stringify(r.messages).includes("/usr/bin/xyz-path"))).toBe(true);
});

it("in a group answers a mention and a quote of its own message, and ignores the rest", async () => {
  const bob = line.user("Bob");
  const group = line.group([alice, bob]);
  const place = { from: bob, groupId: group };
  await line.deliver([line.textEvent(place, "calc 6 * 7", { mention: true })]);
  const answer = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.includes("calculate")));
  expect(answer.via).toBe("reply");
  expect(answer.text).toContain("42");
  // The speaker's name (from the group member profile) reached the model.
  expect(JSON.stringify(model.requests.at(-1))).toContain("Bob");
  const asked = model.requests.length;
  await line.deliver([line.textEvent(place, "calc 1 + 1")]);
  await new Promise((r) => setTimeout(r, 400));
  expect(model.requests.length).toBe(asked);
  await line.deliver([line.textEvent(place, "calc 2 + 3", { quotedMessageId: answer.id })]);
  const quoted = await line.waitFor(() =>
    line.messagesTo(group).find((m) => m !== answer && m.text.includes("calculate") && m.text.includes("5")),
  );
  expect(quoted.via).toBe("reply");
});

it("in a multi-person chat (room) answers a mention with its reply token, as its own conversation", async () => {
  const kate = line.user("Kate");
  const room = line.room([alice, kate]);
  await line.deliver([line.textEvent({ from: kate, roomId: room }, "calc 3 * 3", { mention: true })]);
  const answer = await line.waitFor(() => line.messagesTo(room).find((m) => m.text.includes("calculate")));
  expect(answer.via).toBe("reply");
  expect(answer.text).toContain("9");
  expect(JSON.stringify(model.requests.at(-1))).toContain("Kate");
});

it("/settings buttons are quick reply postbacks; a press changes the setting and answers with the new listing", async () => {
  const jack = line.user("Jack");
  await line.deliver([line.textEvent(dm(jack), "/settings")]);
  const listing = await line.waitFor(() => line.messagesTo(jack.userId).find((m) => m.postbacks.includes("st:l:en")));
  expect(listing.via).toBe("reply");
  expect(listing.message.quickReply).toBeDefined();
  await line.deliver([line.postbackEvent(dm(jack), "st:l:en")]);
  const changed = await line.waitFor(() =>
    line.messagesTo(jack.userId).find((m) => m !== listing && m.postbacks.includes("st:l:zh-TW")),
  );
  expect(changed.via).toBe("reply");
  expect(listing.text).toContain("這個聊天的設定");
  expect(changed.text).toContain("Settings of this chat:");
});

it("/forget asks first with quick-reply buttons (the /memory delete-all question): Cancel keeps, ⚠️ erases; nothing left is said so", async () => {
  const jill = line.user("Jill");
  const scope = { kind: "personal" as const, platform: "line" as const, userId: jill.userId };
  const memory = new MemoryStore(redis);
  await memory.update(scope, () => ({
    files: new Map([
      ["/memories/home.md", "住在台中"],
      ["/memories/food.md", "不吃辣"],
    ]),
    result: undefined,
  }));
  const key = memoryKey(scope);
  const question = async () => {
    const before = line.messagesTo(jill.userId).length;
    await line.deliver([line.textEvent(dm(jill), "/forget")]);
    return line.waitFor(() =>
      line
        .messagesTo(jill.userId)
        .slice(before)
        .find((m) => m.via === "reply"),
    );
  };
  const pressed = async (data: string) => {
    const before = line.messagesTo(jill.userId).length;
    await line.deliver([line.postbackEvent(dm(jill), data)]);
    return line.waitFor(() =>
      line
        .messagesTo(jill.userId)
        .slice(before)
        .find((m) => m.via === "reply"),
    );
  };
  const asked = await question();
  expect(asked.text).toBe("確定要清除你的全部個人記憶（2 個檔案）嗎？清除後無法復原。");
  const items = (asked.message.quickReply as { items: { action: { label: string; data: string } }[] }).items;
  expect(items.map((i) => i.action.label)).toEqual(["⚠️ 確定全部刪除", "取消"]);
  expect(asked.postbacks[0]).toMatch(/^mm:A:[A-Za-z0-9_-]{16}$/);
  expect(asked.postbacks[1]).toBe("mm:c");
  expect(await redis.exists(key)).toBe(1);
  expect((await pressed("mm:c")).text).toBe("已取消，記憶沒有變更。");
  expect((await memory.read(scope)).map((f) => f.text).sort()).toEqual(["不吃辣", "住在台中"]);
  const again = await question();
  expect((await pressed(again.postbacks[0]!)).text).toBe(
    "已清除你的個人記憶（2 個檔案）。對話紀錄不受影響（要清除請用 /reset）。",
  );
  expect(await redis.exists(key)).toBe(0);
  const nothing = await question();
  expect(nothing.text).toBe("沒有需要清除的記憶。");
  expect(nothing.postbacks).toEqual([]);
});

it("approval by postback: only the requester decides, a replay or forgery changes nothing, a later press (anyone's) is told it was confirmed", async () => {
  const bob = line.user("Bob the second");
  const group = line.group([alice, bob]);
  await seedTodos(redis, "line", alice.userId, ["buy milk"]);
  const todos = async () => (await listTodos(redis, { platform: "line", userId: alice.userId })).map((t) => t.title);
  await line.deliver([line.textEvent({ from: alice, groupId: group }, "delete #1", { mention: true })]);
  const prompt = await line.waitFor(() =>
    line.messagesTo(group).find((m) => m.postbacks.some((d) => d.startsWith("ap:"))),
  );
  expect(prompt.message.type).toBe("template");
  const yes = prompt.postbacks.find((d) => d.endsWith(":y"))!;
  // Bob presses: refused, nothing done.
  await line.deliver([line.postbackEvent({ from: bob, groupId: group }, yes)]);
  await line.waitFor(() =>
    line
      .messagesTo(group)
      .find(
        (m) =>
          m.text.includes("Alice") && m.via === "reply" && m.at >= prompt.at && m !== prompt && !m.postbacks.length,
      ),
  );
  expect(await todos()).toEqual(["buy milk"]);
  // Alice presses: done, and the answer follows with her press's reply token (the prompt used the
  // message's): no push.
  const pushes = line.pushes;
  const press = line.postbackEvent({ from: alice, groupId: group }, yes);
  await line.deliver([press]);
  const answer = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.includes("delete_todo")), 30_000);
  expect(answer.via).toBe("reply");
  expect(line.pushes).toBe(pushes);
  expect(await todos()).toEqual([]);
  // The same press redelivered, and a forged press with the same data: nothing more happens.
  const sent = line.messagesTo(group).length;
  await line.deliver([press], { redelivery: true });
  await line.deliver([line.postbackEvent({ from: alice, groupId: group }, yes)]);
  await new Promise((r) => setTimeout(r, 600));
  expect(line.messagesTo(group).filter((m) => m.text.includes("delete_todo"))).toHaveLength(1);
  expect(line.messagesTo(group).length).toBeLessThanOrEqual(sent + 1);
  // The answer given, the approval's record is deleted; LINE cannot edit the prompt, so it can still
  // be pressed. Until the prompt's expiry a press is told how it was decided, not that it expired.
  const approvalId = /^ap:([^:]+):y$/.exec(yes)![1]!;
  await line.waitFor(
    async () => (await redis.exists(`approval:{approval}:${approvalId}`)) === 0,
    10_000,
    "the deletion",
  );
  const noticeTo = async (from: FakeLineUser) => {
    const before = line.messagesTo(group).length;
    await line.deliver([line.postbackEvent({ from, groupId: group }, yes)]);
    return line.waitFor(
      () =>
        line
          .messagesTo(group)
          .slice(before)
          .find((m) => m.via === "reply"),
      10_000,
      "the notice",
    );
  };
  expect((await noticeTo(alice)).text).toBe("這個請求已經確認過了。");
  // Bob is told the same: it was decided (he was told only Alice may decide while it was open).
  expect((await noticeTo(bob)).text).toBe("這個請求已經確認過了。");
  expect(await todos()).toEqual([]);
  expect(line.messagesTo(group).filter((m) => m.text.includes("delete_todo"))).toHaveLength(1);
});

it("/usage on LINE counts this month's push messages", async () => {
  await line.deliver([line.textEvent(dm(alice), "/usage")]);
  const answer = await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("LINE 推播訊息")));
  const pushes = Number(/LINE 推播訊息（本月，整個機器人）：(\d+)/.exec(answer.text)?.[1]);
  expect(pushes).toBeGreaterThanOrEqual(2);
  expect(pushes).toBe(line.pushes);
  // LINE renders no Markdown: the reply is plain text.
  expect(answer.text).not.toContain("**");
  expect(answer.text).toContain("今天");
});

it("voice: an audio message is fetched from the content host, transcribed and answered", async () => {
  const audio = Buffer.concat([
    Buffer.from("\x00\x00\x00\x18ftypM4A \x00\x00\x00\x00", "latin1"),
    Buffer.alloc(600, 3),
  ]);
  stt.say(audio, "明天台北會下雨嗎");
  const id = line.addContent(audio, "audio/m4a");
  await line.deliver([
    line.messageEvent(dm(alice), { id, type: "audio", duration: 4000, contentProvider: { type: "line" } }),
  ]);
  const answer = await line.waitFor(
    () => line.messagesTo(alice.userId).find((m) => m.text.includes("明天台北會下雨嗎")),
    30_000,
  );
  expect(answer.text).toContain("🎤");
  expect(answer.via).toBe("reply");
  expect(line.calls.some((c) => c.route === "GET /v2/bot/message/{messageId}/content")).toBe(true);
});

it("files as documents: a text file in a DM is read, with its name", async () => {
  const notes = "# 購物清單\n- 牛奶\n- 雞蛋\n";
  const id = line.addContent(Buffer.from(notes), "text/markdown");
  const before = model.requests.length;
  await line.deliver([
    line.messageEvent(dm(alice), { id, type: "file", fileName: "notes.md", fileSize: Buffer.byteLength(notes) }),
  ]);
  const request = await line.waitFor(() =>
    model.requests.slice(before).find((r) => JSON.stringify(r.messages.at(-1)).includes("notes.md")),
  );
  const blocks = request.messages.at(-1)!.content as { type: string; text?: string }[];
  expect(blocks.some((b) => b.text === `<file name="notes.md">\n${notes}\n</file>`)).toBe(true);
});

it("a file whose name is cut inside an emoji is answered, and its conversation answers the next message", async () => {
  // The adapter keeps 255 UTF-16 units of a file name: it cut a name of 254 letters and an emoji
  // between the emoji's halves, and the inbox entry (JSON with the escape \ud83d) could not be
  // decoded by Redis: the worker's finish script put it back and ended the job, so the
  // conversation never answered again.
  const wen = line.user("Wen");
  const notes = "lone surrogate check\n";
  const id = line.addContent(Buffer.from(notes), "text/plain");
  const fileName = `${"a".repeat(254)}😀.txt`;
  const before = model.requests.length;
  await line.deliver([line.messageEvent(dm(wen), { id, type: "file", fileName, fileSize: Buffer.byteLength(notes) })]);
  const request = await line.waitFor(() =>
    model.requests.slice(before).find((r) => JSON.stringify(r.messages.at(-1)).includes("lone surrogate check")),
  );
  const blocks = request.messages.at(-1)!.content as { type: string; text?: string }[];
  // The name was cut before the emoji, not inside it, keeping its extension: the file is read as text.
  const file = blocks.find((b) => b.text?.startsWith('<file name="aaaa'))!.text!;
  expect(file).toContain(`>\n${notes}\n</file>`);
  expect(file).not.toContain("\ufffd");
  await line.waitFor(() => line.messagesTo(wen.userId)[0]);
  await line.deliver([line.textEvent(dm(wen), "still answering 7")]);
  const next = await line.waitFor(
    () => line.messagesTo(wen.userId).find((m) => m.text.includes("still answering 7")),
    30_000,
  );
  expect(next.via).toBe("reply");
  expect(model.rejections).toEqual([]);
});

it("in a group a file waits for its sender's mention and is read with it", async () => {
  const ivy = line.user("Ivy");
  const group = line.group([alice, ivy]);
  const place = { from: ivy, groupId: group };
  const report = "季度報告：營收 1234 萬，成長 5%";
  const id = line.addContent(Buffer.from(report), "text/plain");
  const before = model.requests.length;
  await line.deliver([
    line.messageEvent(place, { id, type: "file", fileName: "report.txt", fileSize: Buffer.byteLength(report) }),
  ]);
  await new Promise((r) => setTimeout(r, 300));
  // The file alone does not address the bot: nothing answered, nothing downloaded yet.
  expect(model.requests.length).toBe(before);
  expect(line.messagesTo(group)).toEqual([]);
  // Someone else's mention does not take Ivy's file.
  await line.deliver([line.textEvent({ from: alice, groupId: group }, "calc 1 + 2", { mention: true })]);
  await line.waitFor(() => line.messagesTo(group).find((m) => m.text.includes("calculate")));
  expect(JSON.stringify(model.requests.at(-1)?.messages.at(-1))).not.toContain("report.txt");
  await line.deliver([line.textEvent(place, "幫我摘要這份報告", { mention: true })]);
  const request = await line.waitFor(() =>
    model.requests.slice(before).find((r) => JSON.stringify(r.messages.at(-1)).includes("report.txt")),
  );
  const turn = JSON.stringify(request.messages.at(-1));
  expect(turn).toContain("季度報告");
  expect(turn).toContain("幫我摘要這份報告");
}, 60_000);

it("in a group a file announced over the limit is refused when its sender mentions the bot, without a download", async () => {
  const nina = line.user("Nina");
  const group = line.group([alice, nina]);
  const place = { from: nina, groupId: group };
  // Announced over the PDF limit: refused when the mention comes, without a download.
  const contentCalls = () => line.calls.filter((c) => c.route.includes("/content")).length;
  const big = line.addContent(Buffer.from("%PDF-1.7 tiny"), "application/pdf");
  await line.deliver([
    line.messageEvent(place, { id: big, type: "file", fileName: "big.pdf", fileSize: 15 * 1024 * 1024 }),
  ]);
  const downloads = contentCalls();
  // The mention follows at once in a request of its own: the adapter handles a chat's events in order.
  await line.deliver([line.textEvent(place, "看一下", { mention: true })]);
  const refused = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.includes("太大了")));
  expect(refused.text).toContain("PDF");
  expect(refused.via).toBe("reply");
  expect(contentCalls()).toBe(downloads);
}, 60_000);

it("images: a picture is fetched from the content host; in a group a mention quoting someone's picture brings it", async () => {
  const leo = line.user("Leo");
  const group = line.group([alice, leo]);
  const id = line.addContent(await makeImage(800, 600, "jpeg"), "image/jpeg");
  await line.deliver([
    line.messageEvent({ from: alice, groupId: group }, { id, type: "image", contentProvider: { type: "line" } }),
  ]);
  const before = model.requests.length;
  await line.deliver([
    line.textEvent({ from: leo, groupId: group }, "這張圖是什麼？", { mention: true, quotedMessageId: id }),
  ]);
  const request = await line.waitFor(() =>
    model.requests.slice(before).find((r) => JSON.stringify(r).includes("這張圖是什麼？")),
  );
  const blocks = request.messages.at(-1)!.content as { type: string; source?: { media_type?: string } }[];
  expect(blocks.map((b) => b.type)).toEqual(["image", "text"]);
  expect(blocks[0]!.source?.media_type).toBe("image/jpeg");
  expect(line.calls.some((c) => c.route === "GET /v2/bot/message/{messageId}/content")).toBe(true);
}, 60_000);

it("a sticker is answered politely; its keywords, when sent, are read", async () => {
  await line.deliver([
    line.messageEvent(dm(alice), { type: "sticker", packageId: "1", stickerId: "2", stickerResourceType: "STATIC" }),
  ]);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("貼圖")));
  await line.deliver([
    line.messageEvent(dm(alice), {
      type: "sticker",
      packageId: "1",
      stickerId: "3",
      stickerResourceType: "STATIC",
      keywords: ["thanks"],
    }),
  ]);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("(LINE sticker: thanks)")));
});

it("a chat set to English is answered in English where the adapter answers by itself (a sticker without keywords)", async () => {
  const lou = line.user("Lou");
  await line.deliver([line.textEvent(dm(lou), "/settings language en")]);
  await line.waitFor(() => line.messagesTo(lou.userId).find((m) => m.text.startsWith("Done: my own messages")));
  await line.deliver([
    line.messageEvent(dm(lou), { type: "sticker", packageId: "1", stickerId: "2", stickerResourceType: "STATIC" }),
  ]);
  const thanks = await line.waitFor(() => line.messagesTo(lou.userId).find((m) => m.text.includes("sticker")));
  expect(thanks.text).toBe("Thanks for the sticker 😊 How can I help?");
});

it("a reminder is pushed at its time with done / snooze postbacks; done is answered with the reply token", async () => {
  const at = secondsAhead(60);
  await line.deliver([line.textEvent(dm(alice), `call set_reminder {"text":"drink water","at":"${localIso(at)}"}`)]);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.startsWith("set_reminder:")));
  const owner = { platform: "line" as const, userId: alice.userId };
  const [reminder] = await listReminders(redis, owner);
  await bringReminderForward(redis, owner, reminder!, at);
  const posted = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.text.includes("drink water") && m.postbacks.length > 0),
  );
  expect(posted.via).toBe("push");
  expect(posted.message.type).toBe("template");
  const done = posted.postbacks.find((d) => d.startsWith("rm:d:"))!;
  await line.deliver([line.postbackEvent(dm(alice), done)]);
  const closed = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.at >= posted.at && m !== posted && m.via === "reply"),
  );
  expect(closed.text).toMatch(/drink water|完成|done/i);
});

it("a reminder's text, a press's notice and people's names in the bot's own words show as they were written (no Markdown read)", async () => {
  const zoe = line.user("*Zoe* <b>");
  const at = secondsAhead(60);
  await line.deliver([
    line.textEvent(dm(zoe), `call set_reminder {"text":"**drink** water _now_","at":"${localIso(at)}"}`),
  ]);
  await line.waitFor(() => line.messagesTo(zoe.userId).find((m) => m.text.startsWith("set_reminder:")));
  const owner = { platform: "line" as const, userId: zoe.userId };
  const [reminder] = await listReminders(redis, owner);
  await bringReminderForward(redis, owner, reminder!, at);
  const posted = await line.waitFor(() =>
    line.messagesTo(zoe.userId).find((m) => m.postbacks.some((d) => d.startsWith("rm:d:"))),
  );
  expect(posted.text).toBe("⏰ **drink** water _now_");
  // Snooze is answered with a notice naming the reminder: as it was written too.
  await line.deliver([
    line.postbackEvent(
      dm(zoe),
      posted.postbacks.find((d) => d.startsWith("rm:s:"))!,
    ),
  ]);
  const snoozed = await line.waitFor(() =>
    line.messagesTo(zoe.userId).find((m) => m.at >= posted.at && m !== posted && m.via === "reply"),
  );
  expect(snoozed.text).toMatch(/^💤 \*\*drink\*\* water _now_（/);
  // A newcomer is welcomed by the name they chose, as it is.
  const group = line.group([alice]);
  await line.deliver([line.memberEvent(group, "memberJoined", [zoe])]);
  const welcome = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.startsWith("歡迎")));
  expect(welcome.text).toBe(`歡迎 *Zoe* <b> 加入！要找我，請提到我（@${line.botName}）或輸入 /help。`);
});

it("/reminders and /persona show a reminder's text and the persona as they were written (their Markdown made plain around them)", async () => {
  const una = line.user("Una");
  const far = localIso(Date.now() + 3600_000);
  await line.deliver([line.textEvent(dm(una), `call set_reminder {"text":"**pay** rent_now_","at":"${far}"}`)]);
  await line.waitFor(() => line.messagesTo(una.userId).find((m) => m.text.startsWith("set_reminder:")));
  const asked = line.messagesTo(una.userId).length;
  await line.deliver([line.textEvent(dm(una), "/reminders")]);
  const listing = await line.waitFor(() =>
    line
      .messagesTo(una.userId)
      .slice(asked)
      .find((m) => m.text.includes("#1")),
  );
  expect(listing.text.split("\n")[1]).toMatch(/^#1 \*\*pay\*\* rent_now_ — /);
  await line.deliver([line.textEvent(dm(una), "/persona *Be* `brief`")]);
  await line.waitFor(() => line.messagesTo(una.userId).find((m) => m.text.includes("角色")));
  const shown = line.messagesTo(una.userId).length;
  await line.deliver([line.textEvent(dm(una), "/persona")]);
  const persona = await line.waitFor(() =>
    line
      .messagesTo(una.userId)
      .slice(shown)
      .find((m) => m.text.startsWith("目前的角色設定")),
  );
  expect(persona.text).toBe("目前的角色設定：\n*Be* `brief`");
});

it(
  "a cancel press on /reminders (LINE cannot edit the list) is answered with the notice and the list as it is now, " +
    "with the buttons of what is left",
  async () => {
    const vic = line.user("Vic");
    const far = localIso(Date.now() + 3600_000);
    for (const text of ["倒垃圾", "繳房租"]) {
      const before = line.messagesTo(vic.userId).length;
      await line.deliver([line.textEvent(dm(vic), `call set_reminder {"text":"${text}","at":"${far}"}`)]);
      // The run's own answer first: the list below must not be read before it.
      await line.waitFor(() =>
        line
          .messagesTo(vic.userId)
          .slice(before)
          .find((m) => m.text.startsWith("set_reminder:")),
      );
    }
    const asked = line.messagesTo(vic.userId).length;
    await line.deliver([line.textEvent(dm(vic), "/reminders")]);
    const listing = await line.waitFor(() =>
      line
        .messagesTo(vic.userId)
        .slice(asked)
        .find((m) => m.text.startsWith("你在這裡的提醒")),
    );
    expect(listing.text).toMatch(/^你在這裡的提醒：\n#1 倒垃圾 — .+，不重複\n#2 繳房租 — .+，不重複$/);
    expect(listing.postbacks).toHaveLength(2);
    const [cancel1, cancel2] = listing.postbacks;
    expect(cancel1).toMatch(/^rm:cl:.+\.1$/);
    const pressed = line.messagesTo(vic.userId).length;
    await line.deliver([line.postbackEvent(dm(vic), cancel1!)]);
    const answered = await line.waitFor(() => line.messagesTo(vic.userId).slice(pressed)[0]);
    expect(answered.via).toBe("reply");
    expect(answered.text).toBe(`已取消提醒 #1。\n\n你在這裡的提醒：\n${listing.text.split("\n")[2]}`);
    expect(answered.postbacks).toEqual([cancel2]);
    expect((await listReminders(redis, { platform: "line", userId: vic.userId })).map((r) => r.text)).toEqual([
      "繳房租",
    ]);
  },
);

it("/reminders with more reminders than LINE's 13 quick-reply buttons gives buttons to the first 13 and says so", async () => {
  const wes = line.user("Wes");
  const owner = { platform: "line" as const, userId: wes.userId };
  const at = Date.now() + 3600_000;
  for (let i = 1; i <= 14; i++)
    await addReminder(redis, owner, {
      text: `第${i}件事`,
      at,
      next: at,
      timezone: "Asia/Taipei",
      chatId: wes.userId,
      chatKind: "dm",
      userName: "Wes",
      createdAt: Date.now(),
    });
  const asked = line.messagesTo(wes.userId).length;
  await line.deliver([line.textEvent(dm(wes), "/reminders")]);
  const listing = await line.waitFor(() =>
    line
      .messagesTo(wes.userId)
      .slice(asked)
      .find((m) => m.text.startsWith("你在這裡的提醒")),
  );
  expect(listing.postbacks).toHaveLength(13);
  expect(listing.text.split("\n").at(-1)).toBe(
    "（按鈕只列出前 13 個；取消一些之後再傳 /reminders，就會出現其餘的按鈕。）",
  );
});

it("a scheduled task's occurrence is answered by push in its chat", async () => {
  const at = secondsAhead(60);
  await line.deliver([
    line.textEvent(dm(alice), `call schedule_task {"instruction":"calc 2 * 21","at":"${localIso(at)}"}`),
  ]);
  const scheduled = await approveAndWait({ from: alice }, alice.userId, "schedule_task:");
  const owner = { platform: "line" as const, userId: alice.userId };
  const [task] = await listTasks(redis, owner);
  const queue = tasksQueue(redis);
  try {
    await bringForward(queue, taskOccurrenceJobId(owner, task!.id, at, false));
  } finally {
    await queue.close();
  }
  // Only what came after the approval's answer: the prompt and that answer (a reply, with the
  // press's token) name the task and its time, which may contain "42" too.
  const ran = await line.waitFor(
    () =>
      line
        .messagesTo(alice.userId)
        .slice(line.messagesTo(alice.userId).indexOf(scheduled) + 1)
        .find((m) => m.text.includes("排程任務") && m.text.includes("42")),
    30_000,
  );
  expect(scheduled.via).toBe("reply");
  expect(ran.via).toBe("push");
});

it("unfollow ends the chat's reminders and tasks; leaving a group ends theirs in it", async () => {
  const carol = line.user("Carol");
  const far = localIso(Date.now() + 3600_000);
  await line.deliver([line.textEvent(dm(carol), `call set_reminder {"text":"stretch","at":"${far}"}`)]);
  await line.waitFor(() => line.messagesTo(carol.userId).find((m) => m.text.startsWith("set_reminder:")));
  await line.deliver([line.textEvent(dm(carol), `call schedule_task {"instruction":"what time is it","at":"${far}"}`)]);
  await approveAndWait({ from: carol }, carol.userId, "schedule_task:");
  const group = line.group([carol]);
  await line.deliver([
    line.textEvent({ from: carol, groupId: group }, `call set_reminder {"text":"team call","at":"${far}"}`, {
      mention: true,
    }),
  ]);
  await line.waitFor(() => line.messagesTo(group).find((m) => m.text.startsWith("set_reminder:")));
  const owner = { platform: "line" as const, userId: carol.userId };
  expect((await listReminders(redis, owner)).map((r) => r.text).sort()).toEqual(["stretch", "team call"]);

  await line.deliver([line.plainEvent({ from: carol, groupId: group }, "leave")]);
  await line.waitFor(async () => (await listReminders(redis, owner)).length === 1 || undefined);
  expect((await listReminders(redis, owner)).map((r) => r.text)).toEqual(["stretch"]);
  expect(await listTasks(redis, owner)).toHaveLength(1);

  await line.deliver([line.plainEvent(dm(carol), "unfollow")]);
  // Reminders end first, then tasks: wait for both.
  await line.waitFor(
    async () =>
      ((await listReminders(redis, owner)).length === 0 && (await listTasks(redis, owner)).length === 0) || undefined,
  );
  expect(await listReminders(redis, owner)).toEqual([]);
  expect(await listTasks(redis, owner)).toEqual([]);
});

it("memberJoined: the newcomers are welcomed by name with the event's reply token", async () => {
  const erin = line.user("Erin");
  const group = line.group([alice]);
  await line.deliver([line.memberEvent(group, "memberJoined", [erin])]);
  const welcome = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.startsWith("歡迎")));
  expect(welcome.via).toBe("reply");
  expect(welcome.text).toContain("Erin");
  expect(welcome.text).toContain(`@${line.botName}`);
  expect(line.isMember(group, erin)).toBe(true);
});

it("memberLeft: the leaver's reminders and tasks in the group end; the others' stay", async () => {
  const frank = line.user("Frank");
  const grace = line.user("Grace");
  const group = line.group([frank, grace]);
  const far = localIso(Date.now() + 3600_000);
  for (const [who, what] of [
    [frank, "frank's call"],
    [grace, "grace's call"],
  ] as const) {
    await line.deliver([
      line.textEvent({ from: who, groupId: group }, `call set_reminder {"text":"${what}","at":"${far}"}`, {
        mention: true,
      }),
    ]);
    await line.waitFor(() =>
      line.messagesTo(group).find((m) => m.text.startsWith("set_reminder:") && m.text.includes(what)),
    );
  }
  await line.deliver([
    line.textEvent({ from: frank, groupId: group }, `call schedule_task {"instruction":"summarise","at":"${far}"}`, {
      mention: true,
    }),
  ]);
  await approveAndWait({ from: frank, groupId: group }, group, "schedule_task:");
  const frankOwner = { platform: "line" as const, userId: frank.userId };
  const graceOwner = { platform: "line" as const, userId: grace.userId };
  expect(await listTasks(redis, frankOwner)).toHaveLength(1);

  await line.deliver([line.memberEvent(group, "memberLeft", [frank])]);
  await line.waitFor(
    async () =>
      ((await listReminders(redis, frankOwner)).length === 0 && (await listTasks(redis, frankOwner)).length === 0) ||
      undefined,
  );
  expect((await listReminders(redis, graceOwner)).map((r) => r.text)).toEqual(["grace's call"]);
});

it("a group reminder whose owner is no longer a member (member profile 404) is paused, not posted", async () => {
  const henry = line.user("Henry");
  const group = line.group([alice, henry]);
  const at = secondsAhead(60);
  await line.deliver([
    line.textEvent(
      { from: henry, groupId: group },
      `call set_reminder {"text":"water the plants","at":"${localIso(at)}"}`,
      {
        mention: true,
      },
    ),
  ]);
  await line.waitFor(() => line.messagesTo(group).find((m) => m.text.startsWith("set_reminder:")));
  // Henry leaves; LINE's memberLeft never reached the bot. The check before posting asks LINE.
  line.setMember(group, henry, false);
  const owner = { platform: "line" as const, userId: henry.userId };
  const [reminder] = await listReminders(redis, owner);
  await bringReminderForward(redis, owner, reminder!, at);
  const notice = await line.waitFor(() => line.messagesTo(group).find((m) => m.text.includes("已不在這個群組")));
  expect(notice.text).toContain("Henry");
  expect(line.messagesTo(group).some((m) => m.text.includes("water the plants") && m.text.startsWith("Henry"))).toBe(
    false,
  );
  expect(
    line.calls.some((c) => c.route === `GET /v2/bot/group/${group}/member/${henry.userId}` && c.status === 404),
  ).toBe(true);
  const [paused] = await listReminders(redis, owner);
  expect(paused?.paused?.by).toBe("left");
});

it("logs no message content and no token", () => {
  const all = lines.join("\n");
  expect(all).not.toContain(line.token);
  expect(all).not.toContain(line.secret);
  expect(all).not.toContain("late question 7");
});

it("issue 42: voice replies are not offered on LINE (its audio messages need a public HTTPS address): /settings says so, answers stay text", async () => {
  const voiceUser = line.user("Vera");
  const spoken = tts.requests.length;
  await line.deliver([line.textEvent(dm(voiceUser), "/settings")]);
  const listing = await line.waitFor(() =>
    line.messagesTo(voiceUser.userId).find((m) => m.text.includes("這個聊天的設定")),
  );
  expect(listing.text).toContain("• 語音回覆：LINE 上無法使用（只回文字）");
  expect(listing.postbacks.some((d) => d.startsWith("st:v:"))).toBe(false);
  await line.deliver([line.textEvent(dm(voiceUser), "/settings voice always")]);
  const refused = await line.waitFor(() =>
    line.messagesTo(voiceUser.userId).find((m) => m.text.startsWith("LINE 的語音訊息")),
  );
  expect(refused.text).toContain("只用文字回答");
  // Even a stored choice (written directly) speaks nothing: LINE's outbound sends no voice.
  await new SettingsStore(redis, config, captureLogger().log).set(
    { platform: "line", chatId: voiceUser.userId },
    "voice",
    "always",
  );
  await line.deliver([line.textEvent(dm(voiceUser), "voice check 42")]);
  const answer = await line.waitFor(() =>
    line.messagesTo(voiceUser.userId).find((m) => m.text.includes("voice check 42")),
  );
  expect(answer.text).not.toContain("🔇");
  expect(tts.requests.length).toBe(spoken);
});

it("/stop stops the answer being written (issue 42): the stopped answer arrives marked, and /stop with nothing running says so", async () => {
  const dana = line.user("Dana");
  let release = () => {};
  const hold = new Promise<void>((resolve) => (release = resolve));
  const written = "臺北市今天晴時多雲，";
  const answered = model.answered.length;
  const cutBefore = model.cutOff.length;
  model.enqueue({
    ...text(`${written}午後有局部短暫陣雨。`),
    stream: { chunkChars: [...written].length, holdAfterChars: [...written].length, hold },
  });
  await line.deliver([line.textEvent(dm(dana), "今天天氣如何？")]);
  // The model has written its first words and holds (LINE shows its loading animation meanwhile).
  await line.waitFor(() => model.answered[answered]?.firstTokenAt);
  const sentAt = Date.now();
  await line.deliver([line.textEvent(dm(dana), "/stop")]);
  const cut = await line.waitFor(() => model.cutOff[cutBefore]);
  expect(cut.at - sentAt).toBeLessThan(1000);
  await line.waitFor(() => line.messagesTo(dana.userId).find((m) => m.text === "正在停止這個回答。"));
  const stopped = await line.waitFor(() => line.messagesTo(dana.userId).find((m) => m.text.includes("⏹ 已停止")));
  expect(stopped.text).toBe(`${written}\n\n⏹ 已停止`);
  await line.deliver([line.textEvent(dm(dana), "/stop")]);
  await line.waitFor(() => line.messagesTo(dana.userId).find((m) => m.text === "目前沒有正在寫的回答可以停止。"));
  release();
});
