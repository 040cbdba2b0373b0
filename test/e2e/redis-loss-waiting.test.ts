/**
 * Issue 38 item 3, the last piece: when Redis loses its data mid-flight, the chats waiting for an
 * answer are told once, in their language, that the bot lost its state and asked to send again
 * (`src/waiting-chats.ts`: the adapter process remembers the chats it queued messages for).
 *
 * The real grammy and discord.js adapters and a worker as separate parts on one real Redis, the
 * fake platforms and the strict fake Messages API. Two workers' worth of answers are in progress
 * (slow model replies), more messages wait behind them, then the test's own connection sends
 * `FLUSHALL`: no reconnection, so the adapter part's check of its waiting chats is what notices.
 */
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { readMarker } from "../../src/redis-marker.js";
import { SettingsStore } from "../../src/settings/store.js";
import { LOST_STATE_TEXT } from "../../src/waiting-chats.js";
import { text, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeUser } from "../fakes/discord.js";
import { waitFor } from "../worker/harness.js";
import { useStack, type Stack } from "./harness.js";
import { requestsFor } from "./scenarios-common.js";
import { lastUserTyped, scriptedModel } from "./scripted-model.js";

/** How long a `#slow` answer takes (ms): long enough to be in flight when the data goes, on a loaded machine too. */
const SLOW_MS = 6000;

let stack: Stack;
let redis: RedisClient;
useStack(
  {
    env: { WORKER_CONCURRENCY: "2" },
    waitingSweepMs: 100,
    model: (request: FakeRequest) => {
      const typed = lastUserTyped(request) ?? "";
      return typed.includes("#slow")
        ? { ...text(`slow answer: ${typed.trim()}`), stream: { firstTokenMs: SLOW_MS } }
        : scriptedModel(request);
    },
  },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

describe("Redis loses its data while messages wait (FLUSHALL mid-flight)", () => {
  it("each waiting chat is told once in its language to send again; an answered chat is not; the lost messages never reach the model", async () => {
    const tg = stack.telegram;
    const dc = stack.discord;
    const waiting = stack.adapters.waitingChats!;

    // An answered chat: forgotten once its inbox is gone.
    const carol = tg.user(38301, "Carol");
    const carolDm = tg.privateChat(carol);
    tg.sendUserMessage({ chat: carolDm, from: carol, text: "hello before" });
    await tg.waitFor(() => tg.sent.find((m) => m.chatId === carolDm.id), 15_000, "Carol's answer");
    await waitFor(() => waiting.size === 0, 5000, "the answered chat forgotten");

    // Telegram (zh-TW): an answer in progress and a message queued behind it.
    const amy = tg.user(38302, "Amy");
    const amyDm = tg.privateChat(amy);
    tg.sendUserMessage({ chat: amyDm, from: amy, text: "#slow first" });
    await waitFor(() => requestsFor(stack, "#slow first").length === 1, 10_000, "Amy's answer started");
    tg.sendUserMessage({ chat: amyDm, from: amy, text: "second, queued" });
    // Discord (zh-TW): an answer in progress.
    const ben: FakeUser = { id: "738300000000000001", username: "ben", global_name: "Ben" };
    const benDm = dc.dmChannel(ben);
    dc.sendUserMessage(ben, "#slow from discord", { dm: true });
    await waitFor(() => requestsFor(stack, "#slow from discord").length === 1, 10_000, "Ben's answer started");
    // Telegram, the conversation's language set to English: its message waits for a free worker (both are busy).
    const dan = tg.user(38303, "Dan");
    const danDm = tg.privateChat(dan);
    await new SettingsStore(redis, stack.config, silentLogger).set(
      { platform: "telegram", chatId: String(danDm.id) },
      "language",
      "en",
    );
    tg.sendUserMessage({ chat: danDm, from: dan, text: "#slow waiting for a worker" });
    await waitFor(() => waiting.size === 3, 5000, "three chats waiting");
    await waiting.sweep(); // the waiting chats' languages are read while Redis still has them
    const before = (await readMarker(redis))!;

    await redis.flushall();

    const told = (chatId: number) => tg.sent.filter((m) => m.chatId === chatId && m.text === LOST_STATE_TEXT["zh-TW"]);
    await waitFor(
      () =>
        told(amyDm.id).length === 1 &&
        tg.sent.some((m) => m.chatId === danDm.id && m.text === LOST_STATE_TEXT.en) &&
        dc.sent.some((m) => m.channelId === benDm && m.content === LOST_STATE_TEXT["zh-TW"]),
      10_000,
      "the three waiting chats told",
    );
    // The error naming the cause, from both parts (each process checks its own connection).
    const lost = stack.logs().filter((l) => l.level === 50 && String(l.msg).includes("Redis lost its data"));
    expect(lost.length).toBeGreaterThanOrEqual(1);
    const after = await readMarker(redis);
    expect(after?.id).not.toBe(before.id);
    expect(after?.lostAt).toBeGreaterThan(0);

    // The answers in progress still arrive; the queued and waiting messages never reach the model.
    await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === amyDm.id && m.text.startsWith("slow answer")),
      15_000,
      "Amy's answer in progress",
    );
    await waitFor(() => stack.model.hanging() === 0 && waiting.size === 0, 10_000, "the runs in progress done");
    for (let i = 0; i < 3; i += 1) await waiting.sweep();
    expect(requestsFor(stack, "second, queued")).toEqual([]);
    expect(requestsFor(stack, "#slow waiting for a worker")).toEqual([]);

    // Once each, and nothing for the chat answered before.
    const notices = (sent: { text: string }[]) => sent.filter((m) => Object.values(LOST_STATE_TEXT).includes(m.text));
    expect(notices(tg.sent.filter((m) => m.chatId === amyDm.id))).toHaveLength(1);
    expect(notices(tg.sent.filter((m) => m.chatId === danDm.id))).toHaveLength(1);
    expect(notices(tg.sent.filter((m) => m.chatId === carolDm.id))).toHaveLength(0);
    expect(
      dc.sent.filter((m) => m.channelId === benDm && Object.values(LOST_STATE_TEXT).includes(String(m.content))),
    ).toHaveLength(1);
    // The bot goes on: a new message is answered on the empty Redis.
    tg.sendUserMessage({ chat: carolDm, from: carol, text: "hello after" });
    await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === carolDm.id && m.text.includes("hello after")),
      15_000,
      "an answer after the loss",
    );
  }, 120_000); // its waits add up to 95 s on a loaded machine; about 10 s on a quiet one
});
