/**
 * Issue 38 item 1 end to end, without streaming (`STREAMING=off`): a model that stays silent (not
 * one byte of an answer). Every call is read as a stream, so it is given up after
 * `STREAM_IDLE_SECONDS` (1 s here) instead of the client's 120-s timeout and asked again; the user
 * sees the busy notice after `busyNoticeMs` (10 s in the bot, 2 s here) and, when the model never
 * answers, the short apology at the silent limit (50 s in the bot, 4 s here), long before the
 * answer's deadline (30 s here). Real grammy and discord.js clients and worker, the fake platforms,
 * the strict fake Messages API (`hang()`: the request is held open, nothing is sent).
 */
import type { Chat } from "grammy/types";
import { describe, expect, it } from "vitest";
import { MODEL_BUSY_NOTICE } from "../../src/i18n.js";
import { hang } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { waitFor } from "../worker/harness.js";
import { useStack, type Stack } from "./harness.js";
import { requestsFor } from "./scenarios-common.js";
import { scriptedModel } from "./scripted-model.js";

const DEADLINE_SECONDS = 30;
const SILENT_LIMIT_MS = 4000;
const NOTICE = MODEL_BUSY_NOTICE["zh-TW"];
const BUSY_APOLOGY = "抱歉，AI 服務目前忙碌或暫時無法連線，請稍後再試一次。";
/** Requests mentioning this are never answered. */
const SILENT = "silent-model";
/** Until when (ms since the Unix epoch) a request mentioning "wake" is not answered. */
let asleepUntil = 0;

let stack: Stack;
useStack(
  {
    env: { STREAMING: "off", STREAM_IDLE_SECONDS: "1", ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS) },
    modelRetry: { ...TEST_MODEL_RETRY, silentLimitMs: SILENT_LIMIT_MS },
    model: (request) => {
      const asked = JSON.stringify(request.messages);
      if (asked.includes(SILENT) || (asked.includes("wake") && Date.now() < asleepUntil)) return hang();
      return scriptedModel(request);
    },
  },
  (started) => (stack = started),
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

function sentIn(channelId: string): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId);
}

describe("issue 38 (1): a model silent without streaming", () => {
  it(
    "Telegram group: a model that never answers: the busy notice after a while, then the short " +
      "apology at the silent limit (not the deadline); the next message works",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(93801, "Lan");
      const group = tg.group(-1009380001, "安靜群組");
      const started = Date.now();
      tg.sendUserMessage({ chat: group, from: user, text: `@${tg.bot.username} are you there, ${SILENT}?` });
      const notice = await tg.waitFor(() => sentTo(group)[0], 10_000, "the busy notice");
      expect(notice.payload.text).toBe(NOTICE);
      expect(notice.at - started).toBeGreaterThanOrEqual(TEST_MODEL_RETRY.busyNoticeMs - 500);
      const apology = await tg.waitFor(() => sentTo(group).find((m) => m.text === BUSY_APOLOGY), 20_000, "the apology");
      // at the silent limit of the model call (plus the message's way to the worker), far from the deadline
      expect(apology.at - started).toBeLessThan(SILENT_LIMIT_MS + 5000);
      expect(requestsFor(stack, SILENT).length).toBeGreaterThanOrEqual(2);
      // the busy notice is gone, the apology stays alone
      await tg.waitFor(() => sentTo(group).length === 1 || undefined, 5000, "the notice deleted");
      await waitFor(() => stack.model.hanging() === 0, 5000, "the silent calls to be closed");
      tg.sendUserMessage({ chat: group, from: user, text: `@${tg.bot.username} hello again` });
      await tg.waitFor(() => sentTo(group).find((m) => m.text === "You said: hello again"), 10_000, "the next answer");
    },
    40_000,
  );

  it("Discord channel: a model silent for a while, then answering: asked again after the idle time, one answer", async () => {
    const dc = stack.discord;
    const mei: FakeUser = { id: "715380000000000001", username: "mei", global_name: "Mei" };
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    asleepUntil = Date.now() + 1500;
    const started = Date.now();
    dc.sendUserMessage(mei, `<@${dc.bot.id}> wake up`, { channelId });
    // The answer is sent, or replaces the busy notice when that came first.
    await dc.waitFor(
      () =>
        sentIn(channelId)
          .slice(before)
          .find((m) => String(m.message.content) === "You said: wake up"),
      15_000,
      "the answer",
    );
    expect(Date.now() - started).toBeLessThan(SILENT_LIMIT_MS + 5000);
    expect(requestsFor(stack, "wake up").length).toBeGreaterThanOrEqual(2);
    expect(sentIn(channelId).slice(before)).toHaveLength(1);
    expect(
      sentIn(channelId)
        .slice(before)
        .filter((m) => m.content === BUSY_APOLOGY),
    ).toHaveLength(0);
  }, 30_000);
});
