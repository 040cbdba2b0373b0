/**
 * Issue 26 item 4 end to end: the daily budget is checked before every model call, not only when
 * a message is admitted. The real grammy and discord.js clients against the fake platforms, a
 * real Redis, the worker and the strict fake Messages API (which refuses an invalid history).
 *
 * - a burst of 8 messages on a nearly spent `USER_DAILY_TOKENS` (Telegram and Discord): one model
 *   call in all, every message answered with the budget message, the stopped run's history valid;
 * - 8 runs of one person at once, each in a Telegram topic of its own: none makes a second call;
 * - an approval pressed after the budget ran out: the approved call runs, no model call is made,
 *   the answer is the budget message, and the history stays valid for the next day.
 */
import type { Chat, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import { HistoryStore } from "../../src/history/store.js";
import type { RedisClient } from "../../src/redis.js";
import { periodOf, UsageStore } from "../../src/usage/store.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { FakeUser } from "../fakes/discord.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, textsOf } from "./scenarios-common.js";

const BUDGET = 100_000;

let stack: Stack;
let redis: RedisClient;
useStack({ env: { USER_DAILY_TOKENS: String(BUDGET) } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const USER_BUDGET_TEXT = `你今天的用量已達上限（${BUDGET} tokens）`;

/** Records `tokens` input tokens for the person today, as if earlier answers had used them. */
async function spend(platform: string, userId: string, tokens: number): Promise<void> {
  await new UsageStore(redis, stack.config.TIMEZONE).record(
    { platform, userId, chatId: userId },
    { input_tokens: tokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  );
}

/** Forgets the person's usage of today: the next day, as far as the budget is concerned. */
async function nextDay(platform: string, userId: string): Promise<void> {
  await redis.del(UsageStore.key(`u:${platform}:${userId}`, "d", periodOf(Date.now(), stack.config.TIMEZONE).day));
}

/** Model requests carrying `marker` in any of their messages. */
function requestsWith(marker: string): FakeRequest[] {
  return stack.model.requests.filter((r) => r.messages.some((m) => textsOf(m).some((t) => t.includes(marker))));
}

/** True when a request's last message holds `tool_result` blocks: a second model call of a run. */
function afterTools(request: FakeRequest): boolean {
  const last = request.messages[request.messages.length - 1]!;
  return Array.isArray(last.content) && last.content.some((b) => b.type === "tool_result");
}

/** The stored history of a conversation, and whether every `tool_use` is answered in the next message. */
async function historyOf(conversation: {
  platform: "telegram" | "discord";
  chatId: string;
}): Promise<{ roles: string[]; answered: boolean; texts: string[] }> {
  const messages = await new HistoryStore(redis, { maxMessages: 40, ttlSeconds: 3600 }).load(conversation);
  let answered = true;
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || typeof m.content === "string") return;
    for (const b of m.content) {
      if (b.type !== "tool_use") continue;
      const next = messages[i + 1];
      if (
        !next ||
        typeof next.content === "string" ||
        !next.content.some((r) => r.type === "tool_result" && r.tool_use_id === b.id)
      )
        answered = false;
    }
  });
  const texts = messages.flatMap((m) =>
    typeof m.content === "string" ? [m.content] : m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])),
  );
  return { roles: messages.map((m) => m.role), answered, texts };
}

describe("a burst of 8 messages on a nearly spent budget", () => {
  it("Telegram: one model call in all, 8 budget messages, a valid history the next day", async () => {
    const tg = stack.telegram;
    const user: User = tg.user(7401, "Dana");
    const chat: Chat = tg.privateChat(user);
    await spend("telegram", "7401", BUDGET - 1);
    for (let n = 1; n <= 8; n += 1) tg.sendUserMessage({ chat, from: user, text: `calc 7401 * ${n}` });
    const replies = await tg.waitFor(
      () => {
        const inChat = tg.sent.filter((m) => m.chatId === 7401);
        return inChat.length >= 8 ? inChat : undefined;
      },
      30_000,
      "eight replies",
    );
    expect(replies.map((m) => m.text.startsWith(USER_BUDGET_TEXT))).toEqual(Array(8).fill(true));
    // The first message's first call was allowed (99,999 < 100,000); it spent the budget, so its
    // run stopped before the call that would have answered the tool result, and nothing else ran.
    // The stopped run is kept with its tool call answered; the later messages, like those the gate
    // refused, are not kept.
    expect(requestsWith("calc 7401 *")).toHaveLength(1);
    const history = await historyOf({ platform: "telegram", chatId: "7401" });
    expect(history.answered).toBe(true);
    expect(history.roles).toEqual(["user", "assistant", "user", "assistant"]);
    expect(history.texts.at(-1)).toContain(USER_BUDGET_TEXT);

    await nextDay("telegram", "7401");
    tg.sendUserMessage({ chat, from: user, text: "calc 6 * 7" });
    const next = await tg.waitFor(
      () => tg.sent.filter((m) => m.chatId === 7401)[8],
      ANSWER_TIMEOUT_MS,
      "the next day's answer",
    );
    expect(next.text).toBe("calculate: 6 * 7 = 42");
    // The strict fake accepted the request carrying the stopped run (useStack checks its rejections).
    expect(requestsWith("calc 7401 * 1").length).toBeGreaterThan(1);
  }, 60_000);

  it("Telegram, a chat set to English: the run stopped by the spent budget says so in English", async () => {
    const tg = stack.telegram;
    const user: User = tg.user(7403, "Fern");
    const chat: Chat = tg.privateChat(user);
    tg.sendUserMessage({ chat, from: user, text: "/settings language en" });
    await tg.waitFor(() => tg.sent.find((m) => m.chatId === 7403), ANSWER_TIMEOUT_MS, "the settings reply");
    await spend("telegram", "7403", BUDGET - 1);
    tg.sendUserMessage({ chat, from: user, text: "calc 7403 * 1" });
    const reply = await tg.waitFor(() => tg.sent.filter((m) => m.chatId === 7403)[1], 30_000, "the reply");
    // The first call was allowed (the gate let the message in); the run stopped before the second.
    expect(requestsWith("calc 7403 *")).toHaveLength(1);
    expect(reply.text).toMatch(new RegExp(`^You have used today's budget \\(${BUDGET} tokens\\)\\. It resets at `));
  }, 60_000);

  it("Discord: one model call in all, 8 budget messages", async () => {
    const dc = stack.discord;
    const author: FakeUser = { id: "740200000000000001", username: "erin", global_name: "Erin" };
    await spend("discord", author.id, BUDGET - 1);
    const dm = dc.dmChannel(author);
    for (let n = 1; n <= 8; n += 1) dc.sendUserMessage(author, `calc 7402 * ${n}`, { dm: true });
    const replies = await dc.waitFor(
      () => {
        const inDm = dc.sent.filter((m) => m.channelId === dm);
        return inDm.length >= 8 ? inDm : undefined;
      },
      30_000,
      "eight replies",
    );
    expect(replies.map((m) => String(m.content).startsWith(USER_BUDGET_TEXT))).toEqual(Array(8).fill(true));
    expect(requestsWith("calc 7402 *")).toHaveLength(1);
    const history = await historyOf({ platform: "discord", chatId: dm });
    expect(history.answered).toBe(true);
    expect(history.texts.at(-1)).toContain(USER_BUDGET_TEXT);
  }, 60_000);
});

it("8 runs of one person at once (a Telegram topic each) overshoot by at most one model call each", async () => {
  const tg = stack.telegram;
  const user = tg.user(7403, "Finn");
  const chat = tg.group(-1007403, "預算", true);
  const topics = Array.from({ length: 8 }, (_, i) => tg.createTopic(chat, `題目 ${i + 1}`, 30 + i));
  await spend("telegram", "7403", BUDGET - 1);
  topics.forEach((topic, i) =>
    tg.sendUserMessage({
      chat,
      from: user,
      text: `@${tg.bot.username} calc 7403 * ${i + 1}`,
      message_thread_id: topic,
    }),
  );
  const replies = await tg.waitFor(
    () => {
      const inChat = tg.sent.filter((m) => m.chatId === -1007403);
      return inChat.length >= 8 ? inChat : undefined;
    },
    30_000,
    "a reply in each topic",
  );
  expect(new Set(replies.map((m) => m.payload.message_thread_id))).toEqual(new Set(topics));
  expect(replies.every((m) => m.text.startsWith(USER_BUDGET_TEXT))).toBe(true);
  const calls = requestsWith("calc 7403 *");
  expect(calls.length).toBeLessThanOrEqual(8);
  // No run made the call after its tool result: each stopped once its first call was recorded.
  expect(calls.filter(afterTools)).toEqual([]);
}, 60_000);

it("an approval pressed after the budget ran out runs the call and makes no model call; the history stays valid", async () => {
  const tg = stack.telegram;
  const user = tg.user(7404, "Gail");
  const chat = tg.privateChat(user);
  await seedTodos(redis, "telegram", "7404", ["繳房租", "買菜"]);
  tg.sendUserMessage({ chat, from: user, text: "delete #1" });
  const prompt = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7404 && tg.buttons(m).length > 0),
    ANSWER_TIMEOUT_MS,
    "the approval prompt",
  );
  await spend("telegram", "7404", BUDGET);
  const requests = stack.model.requests.length;
  const approve = tg.approveData(prompt);
  tg.pressButton({ from: user, message: prompt, data: approve });
  const answer = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7404 && m.text.startsWith(USER_BUDGET_TEXT)),
    ANSWER_TIMEOUT_MS,
    "the budget message",
  );
  expect(answer.text).toMatch(/將在 \d{4}-\d\d-\d\d 00:00（Asia\/Taipei）重置。$/);
  expect(stack.model.requests.length).toBe(requests);
  // The requester approved it: the call itself ran (it costs no tokens); only the model call was not made.
  expect(await todoLines(redis, "telegram", "7404")).toEqual(["#2 買菜"]);
  const history = await historyOf({ platform: "telegram", chatId: "7404" });
  expect(history.answered).toBe(true);
  expect(history.roles).toEqual(["user", "assistant", "user", "assistant"]);

  await nextDay("telegram", "7404");
  tg.sendUserMessage({ chat, from: user, text: "list todos" });
  const next = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 7404 && m.text.startsWith("list_todos:")),
    ANSWER_TIMEOUT_MS,
    "the next day's answer",
  );
  expect(next.text).toContain("#2 買菜");
}, 60_000);
