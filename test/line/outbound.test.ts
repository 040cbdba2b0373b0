/**
 * The LINE outbound half against the strict fake LINE platform, and the fake's spec checks
 * (LINE's OpenAPI description): reply token first, push for the rest or when the token is spent,
 * retried 429s, the retry key that keeps a repeated push from posting twice, the monthly quota,
 * a chat that blocked the bot, approval prompts and reminders within LINE's limits.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createOutbound } from "../../adapters/line/index.js";
import type { LineOutbound } from "../../adapters/line/outbound.js";
import type { Config } from "../../src/config.js";
import { ChatUnreachableError, PlatformRefusedError } from "../../src/outbound-errors.js";
import type { Destination } from "../../src/outbound.js";
import { FakeLine, type FakeLineUser } from "../fakes/line.js";
import { checkLineRequest, checkLineWebhookBody } from "../fakes/line-spec.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";

let line: FakeLine;
let config: Config;
let outbound: LineOutbound;
let bob: FakeLineUser;
let pushedCount = 0;

/** The LINE variables pointing at the fake. */
const configEnv = () => ({
  LINE_CHANNEL_SECRET: line.secret,
  LINE_CHANNEL_ACCESS_TOKEN: line.token,
  LINE_API_URL: line.apiUrl,
  LINE_DATA_API_URL: line.dataUrl,
});

beforeAll(async () => {
  line = await FakeLine.start({ pushQuota: 6 });
  config = testConfig(configEnv());
  outbound = createOutbound(config, captureLogger().log, {}, { onPushed: async () => ++pushedCount });
  bob = line.user("Bob");
});

afterAll(async () => {
  await line.stop();
});

const to = (user: FakeLineUser, replyToken?: string, replyTokenAt = Date.now()): Destination => ({
  conversation: { platform: "line", chatId: user.userId },
  chatKind: "dm",
  replyTo: `m${Math.random()}`,
  reply: replyToken ? { replyToken, replyTokenAt } : {},
});

it("answers with the reply token once; a second answer with the same token is pushed", async () => {
  const event = line.textEvent({ from: bob }, "hi");
  const token = String(event.replyToken);
  await outbound.sendAnswer(to(bob, token), "first");
  await outbound.sendAnswer(to(bob, token), "second");
  expect(line.messagesTo(bob.userId).map((m) => [m.text, m.via])).toEqual([
    ["first", "reply"],
    ["second", "push"],
  ]);
  expect(pushedCount).toBe(1);
});

it("does not try a token older than 50 s: pushes at once", async () => {
  const event = line.textEvent({ from: bob }, "old");
  await outbound.sendAnswer(to(bob, String(event.replyToken), Date.now() - 55_000), "late");
  expect(line.calls.filter((c) => c.route === "POST /v2/bot/message/reply" && c.status === 400)).toHaveLength(0);
  expect(line.messagesTo(bob.userId).at(-1)).toMatchObject({ text: "late", via: "push" });
});

it("retries a rate-limited push (429) and sends it once", async () => {
  line.failNext("POST /v2/bot/message/push", 1);
  const before = line.sent.length;
  await outbound.sendAnswer(to(bob), "after a 429");
  expect(line.sent.length - before).toBe(1);
  expect(line.calls.filter((c) => c.route === "POST /v2/bot/message/push" && c.status === 429)).toHaveLength(1);
});

it("a push repeated with the same answer and place is not sent twice (X-Line-Retry-Key, 409)", async () => {
  const place = to(bob);
  const first = await outbound.sendAnswer(place, "exactly once");
  const again = await outbound.sendAnswer(place, "exactly once");
  expect(line.messagesTo(bob.userId).filter((m) => m.text === "exactly once")).toHaveLength(1);
  expect(again).toHaveLength(first.length);
  expect(line.calls.some((c) => c.status === 409)).toBe(true);
});

it("sends an approval prompt as a buttons template within LINE's limits; a long action goes first as text", async () => {
  const prompt = {
    approvalId: "Ab_12-xy",
    action: "刪除待辦 #3「買牛奶」",
    requesterName: "Bob",
    expiresAt: Date.now() + 300_000,
    alwaysAllow: true,
  };
  await outbound.sendApprovalPrompt(to(bob, String(line.textEvent({ from: bob }, "x").replyToken)), prompt);
  const template = line.messagesTo(bob.userId).at(-1)!;
  expect(template.message.type).toBe("template");
  expect(template.postbacks).toEqual(["ap:Ab_12-xy:y", "ap:Ab_12-xy:n", "ap:Ab_12-xy:a"]);
  await outbound.sendApprovalPrompt(to(bob, String(line.textEvent({ from: bob }, "y").replyToken)), {
    ...prompt,
    action: "執行 ".repeat(200),
  });
  const [long, buttons] = line.messagesTo(bob.userId).slice(-2);
  expect(long!.message.type).toBe("text");
  expect(long!.text).toContain("執行 執行");
  expect(buttons!.postbacks).toHaveLength(3);
});

it("an approval prompt shows the action as it is: a task's **instruction** and an MCP call's *_old_*.log keep their characters", async () => {
  const base = { requesterName: "Bob **B**", expiresAt: Date.now() + 300_000 };
  // Each with a reply token of its own: no push is spent (the fake's monthly quota is for the test below).
  await outbound.sendApprovalPrompt(to(bob, String(line.textEvent({ from: bob }, "t").replyToken)), {
    ...base,
    approvalId: "Md_1",
    action: "排程任務（時間 明天 08:00）：「**list my todos**」",
  });
  const task = line.messagesTo(bob.userId).at(-1)!;
  expect(task.text).toContain("「**list my todos**」");
  expect(task.text).toContain("只有 Bob **B** 可以決定");
  await outbound.sendApprovalPrompt(to(bob, String(line.textEvent({ from: bob }, "m").replyToken)), {
    ...base,
    approvalId: "Md_2",
    action: "使用 MCP 伺服器「fs」的工具 delete\n• pattern: *_old_*.log",
  });
  expect(line.messagesTo(bob.userId).at(-1)!.text).toContain("• pattern: *_old_*.log");
});

it("a group answer's leading name, and a notice with its name and text, show as they are; the answer's own Markdown is made plain", async () => {
  const group = line.group([bob]);
  const place = (text: string): Destination => ({
    conversation: { platform: "line", chatId: group },
    chatKind: "group",
    key: `k${Math.random()}`,
    reply: {
      replyToken: String(line.textEvent({ from: bob, groupId: group }, text).replyToken),
      replyTokenAt: Date.now(),
    },
    mention: { userId: bob.userId, userName: "*Bob* <b>" },
  });
  await outbound.sendAnswer(place("a"), "📅 **排程任務 #1**");
  expect(line.messagesTo(group).at(-1)).toMatchObject({ text: "*Bob* <b> 📅 排程任務 #1", via: "reply" });
  await outbound.sendNotice(place("n"), "⏸️ 排程任務 #1（**list** _todos_）已暫停", [
    { label: "▶️ 繼續", data: "tk:r:x" },
  ]);
  expect(line.messagesTo(group).at(-1)).toMatchObject({
    text: "*Bob* <b> ⏸️ 排程任務 #1（**list** _todos_）已暫停",
    via: "reply",
  });
});

it("near LINE_PUSH_MONTHLY_LIMIT a reply token older than 50 s is still tried (and a log line says so) before pushing", async () => {
  const limited = testConfig({ ...configEnv(), LINE_PUSH_MONTHLY_LIMIT: "10" });
  const quiet = captureLogger();
  const near = captureLogger();
  // 7 of 10 pushes used: not near (80 %); 8 of 10: near.
  const far = createOutbound(limited, quiet.log, {}, { pushesThisMonth: async () => 7, onPushed: async () => 8 });
  const close = createOutbound(limited, near.log, {}, { pushesThisMonth: async () => 8, onPushed: async () => 9 });
  const erin = line.user("Erin");
  const old = () => to(erin, String(line.textEvent({ from: erin }, "q").replyToken), Date.now() - 55_000);

  const pushesBefore = line.pushes;
  await far.sendAnswer(old(), "not near: pushed");
  expect(line.messagesTo(erin.userId).at(-1)).toMatchObject({ text: "not near: pushed", via: "push" });
  expect(quiet.lines.join("\n")).not.toContain("trying the reply token");

  await close.sendAnswer(old(), "near: replied");
  expect(line.messagesTo(erin.userId).at(-1)).toMatchObject({ text: "near: replied", via: "reply" });
  expect(line.pushes - pushesBefore).toBe(1);
  const said = near.lines.find((l) => l.includes("trying the reply token"));
  expect(said).toBeDefined();
  expect(JSON.parse(said!)).toMatchObject({ pushes: 8, limit: 10 });
  // A token older than 5 minutes is not tried even then: the push says why.
  await close.sendAnswer(
    to(erin, String(line.textEvent({ from: erin }, "q").replyToken), Date.now() - 301_000),
    "near, token too old: pushed",
  );
  expect(line.messagesTo(erin.userId).at(-1)).toMatchObject({ text: "near, token too old: pushed", via: "push" });
  expect(near.lines.some((l) => l.includes("too old or used; pushing"))).toBe(true);
  // Not tried at all: no refused reply call.
  expect(line.calls.at(-1)).toMatchObject({ route: "POST /v2/bot/message/push", status: 200 });
});

it("a chat that blocked the bot is unreachable; the used-up monthly quota is refused, not retried", async () => {
  const carol = line.user("Carol");
  line.gone(carol.userId);
  await expect(outbound.sendAnswer(to(carol), "hello?")).rejects.toBeInstanceOf(ChatUnreachableError);
  const dave = line.user("Dave");
  let failure: unknown;
  for (let i = 0; i < 10 && !failure; i++)
    await outbound.sendAnswer(to(dave), `quota ${i}`).catch((error: unknown) => (failure = error));
  expect(failure).toBeInstanceOf(PlatformRefusedError);
  expect((failure as PlatformRefusedError).retryable).toBe(false);
  expect(line.pushes).toBe(6);
});

it("the fake refuses what LINE's OpenAPI description (and its documented limits) refuses", () => {
  const text = (t: string) => ({ type: "text", text: t });
  const push = (body: unknown) =>
    checkLineRequest({ host: "api", method: "POST", path: "/v2/bot/message/push", query: new URLSearchParams(), body });
  expect(push({ to: bob.userId, messages: [text("ok")] }).ok).toBe(true);
  expect(push({ to: bob.userId, messages: Array.from({ length: 6 }, () => text("x")) }).ok).toBe(false);
  expect(push({ to: bob.userId, messages: [text("x".repeat(5001))] }).ok).toBe(false);
  expect(push({ to: bob.userId, messages: [{ ...text("x"), colour: "red" }] }).ok).toBe(false);
  expect(push({ to: bob.userId, messages: [{ type: "telepathy" }] }).ok).toBe(false);
  const postback = { type: "postback", label: "x".repeat(21), data: "d" };
  const template = { type: "template", altText: "a", template: { type: "buttons", text: "t", actions: [postback] } };
  expect(push({ to: bob.userId, messages: [template] }).ok).toBe(false);
  expect(
    checkLineRequest({
      host: "api",
      method: "GET",
      path: "/v2/bot/message/123/content",
      query: new URLSearchParams(),
      body: undefined,
    }).ok,
  ).toBe(false);
  line.takeSpecViolations();
  // The fake's own webhooks are held to webhook.yml as well.
  const event = line.textEvent({ from: bob }, "hi", { mention: true });
  expect(checkLineWebhookBody({ destination: line.botUserId, events: [event] })).toEqual([]);
  expect(checkLineWebhookBody({ destination: "bot", events: [event] })).not.toEqual([]);
  expect(checkLineWebhookBody({ destination: line.botUserId, events: [{ ...event, timestamp: "now" }] })).not.toEqual(
    [],
  );
});

it("isMember asks LINE's member profile API: a member is true, 404 is false, a DM or another failure unknown", async () => {
  const erin = line.user("Erin");
  const group = line.group([bob]);
  const room = line.room([bob, erin]);
  expect(await outbound.isMember({ chatId: group }, bob.userId)).toBe(true);
  expect(await outbound.isMember({ chatId: group }, erin.userId)).toBe(false);
  expect(await outbound.isMember({ chatId: room }, erin.userId)).toBe(true);
  line.setMember(room, erin, false);
  expect(await outbound.isMember({ chatId: room }, erin.userId)).toBe(false);
  expect(await outbound.isMember({ chatId: bob.userId }, bob.userId)).toBeUndefined();
  // Any answer but 200 and 404 (here a 400, not retried): membership cannot be told now.
  line.failNext("GET /v2/bot/group/{groupId}/member/{userId}", 1, 400, {
    message: "The value for the 'groupId' parameter is invalid",
  });
  expect(await outbound.isMember({ chatId: group }, bob.userId)).toBeUndefined();
  expect(line.takeSpecViolations()).toEqual([]);
});

it("the loading animation is renewed at most every 15 s while an answer is computed (one-to-one chats only)", async () => {
  let now = 1_000_000;
  const clocked = createOutbound(config, captureLogger().log, {}, { now: () => now });
  const mia = line.user("Mia");
  const place = { ...to(mia), chatKind: "dm" as const };
  const shown = () => line.loadings.filter((l) => l.chatId === mia.userId).length;
  await clocked.sendTyping(place);
  now += 10_000;
  await clocked.sendTyping(place);
  expect(shown()).toBe(1);
  now += 6_000;
  await clocked.sendTyping(place);
  expect(shown()).toBe(2);
  expect(line.loadings.at(-1)).toMatchObject({ chatId: mia.userId, loadingSeconds: 20 });
  // None in a group: LINE has no loading animation there.
  const group = line.group([mia]);
  await clocked.sendTyping({ conversation: { platform: "line", chatId: group }, chatKind: "group" });
  expect(line.loadings.some((l) => l.chatId === group)).toBe(false);
});
