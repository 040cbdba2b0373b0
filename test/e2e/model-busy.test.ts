/**
 * Issue 25 item 7 end to end, without streaming (`STREAMING=off`): a Messages API that answers
 * 529 overloaded for a while. The loop retries with a growing, jittered wait until the answer's
 * deadline; after a while (10 s in the bot, `busyNoticeMs` of `TEST_MODEL_RETRY` here)
 * the user sees one short "the model is busy, still trying" message, which the answer replaces (or
 * which is deleted before the apology when the API never recovers). Real grammy and discord.js
 * clients and worker, the fake platforms, the strict fake Messages API.
 */
import type { Chat } from "grammy/types";
import { describe, expect, it } from "vitest";
import { MODEL_BUSY_NOTICE } from "../../src/i18n.js";
import { overloaded } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { useStack, type Stack } from "./harness.js";
import { requestsFor } from "./scenarios-common.js";
import { scriptedModel } from "./scripted-model.js";

const DEADLINE_SECONDS = 8;
const NOTICE_MS = TEST_MODEL_RETRY.busyNoticeMs;
/** The SDK's own retries per model call: its default in the bot (`createAnthropicClient`). */
const SDK_RETRIES = 2;
const NOTICE = MODEL_BUSY_NOTICE["zh-TW"];
const BUSY_APOLOGY = "抱歉，AI 服務目前忙碌或暫時無法連線，請稍後再試一次。";

let stack: Stack;
useStack(
  {
    modelRetries: SDK_RETRIES,
    env: { ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS) },
    // A request mentioning "outage" is answered 529 for as long as the API stays down.
    model: (request) => (JSON.stringify(request.messages).includes("outage") ? overloaded() : scriptedModel(request)),
  },
  (started) => (stack = started),
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** Every text a Telegram message showed: its first send, then each successful edit. */
function shownOnTelegram(message: FakeSentMessage): string[] {
  const edits = stack.telegram.edits.filter(
    (e) =>
      e.method === "editMessageText" &&
      Number(e.payload.chat_id) === message.chatId &&
      Number(e.payload.message_id) === message.messageId,
  );
  return [String(message.payload.text), ...edits.map((e) => String(e.payload.text))];
}

function sentIn(channelId: string): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId);
}

describe("529 overloaded: retried until the deadline, the user told after a while", () => {
  it("Telegram group: seven 529s in a row, then the API recovers: a short busy message after a while, replaced by the answer", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009260001, "忙碌群組");
    const ho = tg.user(95201, "Ho");
    stack.model.enqueue(...Array.from({ length: 7 }, () => overloaded()));
    const started = Date.now();
    tg.sendUserMessage({ chat: group, from: ho, text: `@${tg.bot.username} are you there?` });
    const notice = await tg.waitFor(() => sentTo(group)[0], DEADLINE_SECONDS * 1000, "the busy message");
    expect(notice.payload.text).toBe(NOTICE);
    expect(notice.at - started).toBeGreaterThanOrEqual(NOTICE_MS - 500);
    await tg.waitFor(() => sentTo(group)[0]?.text.startsWith("You said:"), DEADLINE_SECONDS * 1000, "the answer");
    expect(sentTo(group)).toHaveLength(1); // the busy message became the answer
    expect(sentTo(group)[0]!.text).toBe("You said: are you there?");
    expect(shownOnTelegram(notice)).toEqual([NOTICE, "You said: are you there?"]);
    // every 529 was asked again (none left queued), and the answer came before the deadline
    expect(stack.model.pending()).toBe(0);
    expect(requestsFor(stack, "are you there?")).toHaveLength(8);
    expect(Date.now() - started).toBeLessThan(DEADLINE_SECONDS * 1000);
  }, 60_000);

  it(
    "Discord channel: an API that stays overloaded: the busy message is deleted, the busy " +
      "apology comes near the deadline, and the next message works",
    async () => {
      const dc = stack.discord;
      const ku: FakeUser = { id: "715260000000000001", username: "ku", global_name: "Ku" };
      const channelId = dc.channelId;
      const before = sentIn(channelId).length;
      const started = Date.now();
      dc.sendUserMessage(ku, `<@${dc.bot.id}> outage?`, { channelId });
      const notice = await dc.waitFor(() => sentIn(channelId)[before], DEADLINE_SECONDS * 1000, "the busy message");
      expect(notice.content).toBe(NOTICE);
      const apology = await dc.waitFor(
        () =>
          sentIn(channelId)
            .slice(before)
            .find((m) => m.content === BUSY_APOLOGY),
        DEADLINE_SECONDS * 1000 + 10_000,
        "the apology",
      );
      // the loop kept trying until the next wait would pass the deadline (at most the longest wait early)
      expect(apology.at - started).toBeGreaterThanOrEqual(
        DEADLINE_SECONDS * 1000 - TEST_MODEL_RETRY.longestWaitMs - 1000,
      );
      expect(dc.deleted.map((m) => m.id)).toContain(notice.id);
      expect(
        sentIn(channelId)
          .slice(before)
          .map((m) => m.id),
      ).toEqual([apology.id]); // the busy message is gone
      expect(requestsFor(stack, "outage?").length).toBeGreaterThanOrEqual(3 * (SDK_RETRIES + 1));

      const next = dc.sendUserMessage(ku, `<@${dc.bot.id}> hello again`, { channelId });
      const answer = await dc.waitFor(
        () => sentIn(channelId).find((m) => m.content === "You said: hello again"),
        15_000,
        "the next answer",
      );
      expect((answer.payload.message_reference as { message_id?: string } | undefined)?.message_id).toBe(next.id);
    },
    60_000,
  );
});
