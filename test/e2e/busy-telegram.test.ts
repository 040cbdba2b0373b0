/**
 * The queue cap's "busy" answer in a Telegram group, end to end: the real grammy adapter and the
 * worker against the fake Bot API and the scripted model, a real Redis, `MAX_QUEUED_PER_CHAT=20`.
 * Forty members mention the bot at once while no worker answers: the first 20 messages are queued,
 * the other 20 are refused with one "busy" answer between them (`BUSY_NOTICE_SECONDS` per
 * conversation), and the 20 queued ones are all answered once a worker runs again.
 */
import type { RedisClient } from "../../src/redis.js";
import { expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
let redis: RedisClient;
useStack({ env: { MAX_QUEUED_PER_CHAT: "20" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 15_000;
const BUSY = "我還在處理這個聊天的訊息";

it("40 members mention the bot at once: 20 are queued and answered, the other 20 get one 'busy' answer between them", async () => {
  const tg = stack.telegram;
  await stack.worker.stop(); // nothing is answered meanwhile: the messages wait in the group's inbox
  const group = tg.group(-1007300, "讀書會");
  const members = Array.from({ length: 40 }, (_, i) => tg.user(7300 + i, `M${i}`));
  for (const [i, member] of members.entries())
    tg.sendUserMessage({ chat: group, from: member, text: `@${tg.bot.username} calc ${i} + 1000` });
  // The adapter handles a conversation's updates in order: once the 20th refusal is logged, all 40 went through the gate.
  const refusals = () => stack.logs().filter((l) => l.msg === "message refused: queue_full");
  await tg.waitFor(() => refusals().length === 20, WAIT, "the 20 refusals");
  const inGroup = () => tg.sent.filter((m) => m.chatId === group.id);
  expect(inGroup().map((m) => m.text.slice(0, BUSY.length))).toEqual([BUSY]);
  expect(refusals().filter((l) => l.answered === true)).toHaveLength(1);
  expect(await redis.llen(conversationKeys({ platform: "telegram", chatId: String(group.id) }).inbox)).toBe(20);

  // Nothing queued is lost: a worker answers the 20 queued messages, in order.
  await stack.restartWorker();
  await tg.waitFor(() => inGroup().length === 21, WAIT, "the 20 answers");
  expect(
    inGroup()
      .slice(1)
      .map((m) => m.text),
  ).toEqual(Array.from({ length: 20 }, (_, i) => `calculate: ${i} + 1000 = ${i + 1000}`));
});
