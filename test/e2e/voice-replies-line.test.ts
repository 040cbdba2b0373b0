/**
 * Issue 42 (voice replies) on LINE, end to end: the real `@line/bot-sdk` clients against the strict
 * fake LINE platform (which checks audio messages and fetches `originalContentUrl` as LINE does,
 * its public HTTPS base mapped to the bot's local webhook server), the strict fake speech API
 * (real mp3 fixture), real Redis and BullMQ, the bot as an adapter part and a worker part (the audio
 * crosses from the worker to the adapter's server through Redis).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startLineStack, type LineStack } from "./harness.js";
import { freePort } from "../helpers/ports.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { text, type FakeAnthropic } from "../fakes/anthropic.js";
import { speechFixture, type FakeSpeech } from "../fakes/speech.js";
import type { FakeLine, FakeLineUser } from "../fakes/line.js";
import { LINE_VOICE_TTL_SECONDS, voiceKey } from "../../adapters/line/voice.js";

const PUBLIC = "https://bot.example.test";
let stack: LineStack;
let line: FakeLine;
let model: FakeAnthropic;
let redis: RedisClient;
let tts: FakeSpeech;
/** The bot's webhook server base; a test points it elsewhere for a while (LINE cannot fetch). */
let local = "";

beforeAll(async () => {
  stack = await startLineStack({
    line: (base) => {
      local = base;
      return { pushQuota: 1000, rewriteUrl: (url) => url.replace(PUBLIC, local) };
    },
    speech: true,
    env: { LINE_PUBLIC_URL: `${PUBLIC}/` },
    logLevel: "info",
  });
  ({ line, model } = stack);
  tts = stack.tts!;
  redis = connectRedis(stack.redis.url);
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await stack?.stop();
});

const dm = (user: FakeLineUser) => ({ from: user });

it("with LINE_PUBLIC_URL, /settings offers voice replies and an answer goes out as an audio message then its text, in one reply call", async () => {
  const mei = line.user("Mei");
  await line.deliver([line.textEvent(dm(mei), "/settings")]);
  const listing = await line.waitFor(() => line.messagesTo(mei.userId).find((m) => m.text.includes("這個聊天的設定")));
  expect(listing.text).toContain("• 語音回覆：關");
  expect(listing.postbacks).toContain("st:v:when-spoken");
  await line.deliver([line.textEvent(dm(mei), "/settings voice always")]);
  await line.waitFor(() => line.messagesTo(mei.userId).find((m) => m.text.startsWith("好的，語音回覆")));

  const spoken = tts.requests.length;
  const before = line.sent.length;
  model.enqueue(text("台北今天晴天，氣溫二十八度。"));
  await line.deliver([line.textEvent(dm(mei), "天氣如何？")]);
  const answer = await line.waitFor(() => line.messagesTo(mei.userId).find((m) => m.text.includes("氣溫二十八度")));
  const sent = line.sent.slice(before).filter((m) => m.to === mei.userId);
  expect(sent.map((m) => m.message.type)).toEqual(["audio", "text"]);
  expect(sent.every((m) => m.via === "reply")).toBe(true);
  expect(answer.text).not.toContain("🔇");
  const replies = line.calls.filter((c) => c.route === "POST /v2/bot/message/reply" && c.status === 200);
  expect((replies.at(-1)!.body as { messages: unknown[] }).messages).toHaveLength(2);

  // The speech endpoint was asked for mp3; LINE fetched exactly its audio from the public address.
  expect(tts.requests.slice(spoken).map((r) => r.body?.response_format)).toEqual(["mp3"]);
  const audio = sent[0]!.message as { originalContentUrl: string; duration: number };
  expect(audio.originalContentUrl).toMatch(/^https:\/\/bot\.example\.test\/line\/voice\/[0-9a-f]{32}\.mp3$/);
  expect(Number.isInteger(audio.duration) && audio.duration > 0).toBe(true);
  const fetched = line.audios.at(-1)!;
  expect(fetched.url).toBe(audio.originalContentUrl);
  expect(fetched.contentType).toBe("audio/mpeg");
  expect(fetched.bytes.equals(speechFixture("speech.mp3"))).toBe(true);

  // Kept for an hour in Redis, then gone; unknown ids and other paths are 404, no listing.
  const id = /([0-9a-f]{32})\.mp3$/.exec(audio.originalContentUrl)![1]!;
  const ttl = await redis.ttl(voiceKey(id));
  expect(ttl).toBeGreaterThan(LINE_VOICE_TTL_SECONDS - 60);
  expect(ttl).toBeLessThanOrEqual(LINE_VOICE_TTL_SECONDS);
  expect((await fetch(`${local}/line/voice/`)).status).toBe(404);
  expect((await fetch(`${local}/line/voice/${"0".repeat(32)}.mp3`)).status).toBe(404);
  expect((await fetch(`${local}/line/voice/${id}.m4a`)).status).toBe(404);
  expect((await fetch(`${local}/line/voice/${id}.mp3`, { method: "POST" })).status).toBe(405);
  await redis.del(voiceKey(id));
  expect((await fetch(`${local}/line/voice/${id}.mp3`)).status).toBe(404);
});

it("a speech failure leaves the text answer with one short line, and no audio message", async () => {
  const ken = line.user("Ken");
  await line.deliver([line.textEvent(dm(ken), "/settings voice always")]);
  await line.waitFor(() => line.messagesTo(ken.userId).find((m) => m.text.startsWith("好的，語音回覆")));
  tts.failNext({ status: 400 });
  const before = line.sent.length;
  model.enqueue(text("明天會下雨。"));
  await line.deliver([line.textEvent(dm(ken), "明天呢？")]);
  const answer = await line.waitFor(() => line.messagesTo(ken.userId).find((m) => m.text.includes("明天會下雨")));
  expect(answer.text).toContain("🔇");
  expect(line.sent.slice(before).some((m) => m.message.type === "audio")).toBe(false);
});

it("an audio message LINE cannot fetch (the public address unreachable) is refused; the text answer goes out, then the failure line", async () => {
  const lin = line.user("Lin");
  await line.deliver([line.textEvent(dm(lin), "/settings voice always")]);
  await line.waitFor(() => line.messagesTo(lin.userId).find((m) => m.text.startsWith("好的，語音回覆")));
  const reachable = local;
  local = `http://127.0.0.1:${await freePort()}`;
  try {
    const before = line.sent.length;
    const fetched = line.audios.length;
    model.enqueue(text("後天是晴天。"));
    await line.deliver([line.textEvent(dm(lin), "後天呢？")]);
    const answer = await line.waitFor(() => line.messagesTo(lin.userId).find((m) => m.text.includes("後天是晴天")));
    expect(line.sent.slice(before).some((m) => m.message.type === "audio")).toBe(false);
    expect(line.audios.length).toBe(fetched);
    expect(
      line.calls.some(
        (c) => c.status === 400 && (c.body as { messages?: { type: string }[] })?.messages?.[0]?.type === "audio",
      ),
    ).toBe(true);
    expect(answer.text).toBe("後天是晴天。");
    await line.waitFor(() => line.messagesTo(lin.userId).find((m) => m.text.startsWith("🔇")));
  } finally {
    local = reachable;
  }
});
