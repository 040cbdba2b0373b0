/**
 * Issue 25, the model's faults end to end with `STREAMING=on`: a stream that stalls mid-answer or
 * sends nothing at all (`STREAM_IDLE_SECONDS`, short here). Real grammy and discord.js clients and
 * worker against the fake platforms and the strict fake Messages API, whose streams can stall
 * (`stallAfterChars`: nothing more is sent, the connection stays open) or never start (`hang()`).
 */
import type { Chat } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { splitMessage, DISCORD_MESSAGE_LIMIT } from "../../adapters/discord/split.js";
import { htmlToPlain, planChunks } from "../../adapters/telegram/split.js";
import { MODEL_BUSY_NOTICE } from "../../src/i18n.js";
import { hang, overloaded, text } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { keysEverywhere } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import { useStack, type Stack } from "./harness.js";
import { MODEL_RETRIES, requestsFor } from "./scenarios-common.js";
import { scriptedModel } from "./scripted-model.js";

const INTERVAL_MS = 300;
const IDLE_SECONDS = 1;
const DEADLINE_SECONDS = 30;
const TIMEOUT_MS = 20_000;

let stack: Stack;
let redis: RedisClient;
/** Until when (ms since the Unix epoch) a request mentioning "busy" is answered 529 overloaded. */
let busyUntil = 0;
useStack(
  {
    modelRetries: MODEL_RETRIES,
    model: (request) =>
      Date.now() < busyUntil && JSON.stringify(request.messages).includes("busy")
        ? overloaded()
        : scriptedModel(request),
    env: {
      STREAMING: "on",
      STREAM_EDIT_INTERVAL_MS: String(INTERVAL_MS),
      STREAM_IDLE_SECONDS: String(IDLE_SECONDS),
      ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS),
    },
  },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
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

let nextUser = 0;
function discordUser(name: string): FakeUser {
  nextUser += 1;
  return { id: `71525000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

function sentIn(channelId: string): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId);
}

/** Occurrences of `part` in `text`. */
const count = (text: string, part: string) => text.split(part).length - 1;

const ANSWER = [
  "**臺北市**今天的天氣：晴時多雲，午後有局部短暫陣雨。",
  "",
  "- 氣溫：22 到 28 度",
  "",
  "出門記得帶把傘，也多喝水。".repeat(8),
].join("\n");

describe("a stream that stalls (STREAM_IDLE_SECONDS)", () => {
  it(
    "Telegram group: a stream that stops mid-answer is retried at once; the partial message is " +
      "continued into the one complete answer, nothing shown twice",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009250001, "停滯群組");
      const lin = tg.user(95101, "Lin");
      stack.model.enqueue(
        { ...text(ANSWER), stream: { chunkChars: 20, totalMs: 600, stallAfterChars: 60 } },
        { ...text(ANSWER), stream: { chunkChars: 40, totalMs: 400 } },
      );
      const started = Date.now();
      tg.sendUserMessage({ chat: group, from: lin, text: `@${tg.bot.username} 天氣如何？` });
      const partial = await tg.waitFor(() => sentTo(group)[0], TIMEOUT_MS, "the partial answer");
      const [chunk] = planChunks(ANSWER).map((c) => htmlToPlain(c.html));
      await tg.waitFor(() => sentTo(group)[0]?.text === chunk, TIMEOUT_MS, "the complete answer");
      // Retried after about one idle period, far inside the deadline (today's code waited all of it).
      expect(Date.now() - started).toBeLessThan(IDLE_SECONDS * 1000 + 8000);
      await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
      expect(sentTo(group)).toHaveLength(1);
      expect(sentTo(group)[0]!.messageId).toBe(partial.messageId);
      for (const shown of shownOnTelegram(partial)) expect(count(shown, "臺北市今天的天氣")).toBeLessThanOrEqual(1);
      expect(stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("天氣如何？"))).toHaveLength(2);
      await waitFor(() => stack.model.hanging() === 0, 5000, "no model connection left open");
      expect(await keysEverywhere(redis, "stream:*")).toEqual([]);
    },
    40_000,
  );

  it("Discord channel: a model that sends nothing at all (no first byte) is given up after the idle time and asked again; one answer", async () => {
    const dc = stack.discord;
    const mei = discordUser("Mei");
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    const answer = "沒問題，這是回答：今天適合出門。";
    stack.model.enqueue(hang(), { ...text(answer), stream: { chunkChars: 10, totalMs: 200 } });
    const started = Date.now();
    dc.sendUserMessage(mei, `<@${dc.bot.id}> 在嗎？`, { channelId });
    const [chunk] = splitMessage(answer, DISCORD_MESSAGE_LIMIT);
    const reply = await dc.waitFor(
      () =>
        sentIn(channelId)
          .slice(before)
          .find((m) => String(m.message.content) === chunk),
      TIMEOUT_MS,
      "the answer",
    );
    // The SDK's own timeout (10 s in these tests) would have been the first to give up on today's code.
    expect(Date.now() - started).toBeLessThan(IDLE_SECONDS * 1000 + 5000);
    expect(sentIn(channelId).slice(before)).toEqual([reply]);
    expect(stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("在嗎？"))).toHaveLength(2);
    await waitFor(() => stack.model.hanging() === 0, 5000, "the silent call to be closed");
  }, 40_000);
});

describe("529 overloaded while streaming", () => {
  it("Discord channel: the live message shows the busy status line after a while, then the streamed answer in the same message", async () => {
    const dc = stack.discord;
    const an = discordUser("An");
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    const started = Date.now();
    busyUntil = started + TEST_MODEL_RETRY.busyNoticeMs + 1500;
    dc.sendUserMessage(an, `<@${dc.bot.id}> busy now?`, { channelId });
    const live = await dc.waitFor(() => sentIn(channelId)[before], TIMEOUT_MS, "the live status line");
    expect(live.content).toBe(MODEL_BUSY_NOTICE["zh-TW"]);
    expect(live.at - started).toBeGreaterThanOrEqual(TEST_MODEL_RETRY.busyNoticeMs - 500);
    await dc.waitFor(
      () => String(live.message.content) === "You said: busy now?",
      TIMEOUT_MS,
      "the answer in the live message",
    );
    expect(sentIn(channelId).slice(before)).toHaveLength(1);
    expect(requestsFor(stack, "busy now?").length).toBeGreaterThanOrEqual(4);
  }, 40_000);
});
