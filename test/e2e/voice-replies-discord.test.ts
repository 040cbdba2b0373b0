/**
 * Issue 42 (voice replies) on Discord, end to end: the real discord.js adapter and worker, the
 * strict fake Discord (which checks a voice message: flag IS_VOICE_MESSAGE, one Ogg Opus file,
 * `duration_secs` and `waveform` in its `attachments` metadata, no content), the strict fake
 * speech API (real Ogg Opus), the strict fake transcription API and the strict fake Messages API.
 * The voice setting is written with the real settings store (`/settings` itself: the Telegram test).
 */
import { describe, expect, it } from "vitest";
import type { RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import { VOICE_FAILED } from "../../src/worker/voice-reply.js";
import { IS_VOICE_MESSAGE, type FakeUser } from "../fakes/discord.js";
import { speechFixture } from "../fakes/speech.js";
import { captureLogger } from "../helpers/log.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack({ transcription: true, speech: true }, (started, connection) => {
  stack = started;
  redis = connection;
});

const sentIn = (channelId: string) => stack.discord.messagesIn(channelId);

async function setVoice(chatId: string, value: "when-spoken" | "always"): Promise<void> {
  await new SettingsStore(redis, stack.config, captureLogger().log).set(
    { platform: "discord", chatId },
    "voice",
    value,
  );
}

/** `author` posts; resolves with the bot's next text message in the channel (the voice message, if any, came before it). */
async function post(
  author: FakeUser,
  content: string,
  where: { dm?: boolean; attachments?: unknown[]; flags?: number },
) {
  const dc = stack.discord;
  const channelId = where.dm ? dc.dmChannel(author) : dc.channelId;
  const before = sentIn(channelId).length;
  const message = dc.sendUserMessage(author, content, where);
  const answer = await dc.waitFor(
    () =>
      sentIn(channelId)
        .slice(before)
        .find((m) => m.content !== ""),
    ANSWER_TIMEOUT_MS,
    "the bot's text answer",
  );
  return { message, answer, sent: sentIn(channelId).slice(before) };
}

describe("Discord: voice replies", () => {
  it("when-spoken: a voice message in a DM is answered with a voice message (flag, Ogg Opus, duration and waveform), then the text", async () => {
    const dc = stack.discord;
    const erin: FakeUser = { id: "700000000000042001", username: "erin42", global_name: "Erin" };
    await setVoice(dc.dmChannel(erin), "when-spoken");
    const audio = Buffer.concat([
      Buffer.from("OggS\x00\x02", "latin1"),
      Buffer.alloc(26),
      Buffer.from("OpusHead erin"),
    ]);
    stack.stt!.say(audio, "今天星期幾");
    const attachment = dc.addAttachment(audio, {
      filename: "voice-message.ogg",
      contentType: "audio/ogg",
      extra: { duration_secs: 2, waveform: "AAAAAAAAAAAA" },
    });
    const speechBefore = stack.tts!.requests.length;
    const { answer, sent } = await post(erin, "", { dm: true, attachments: [attachment], flags: IS_VOICE_MESSAGE });
    expect(answer.content).toBe("🎤 「今天星期幾」\n\nYou said: 今天星期幾");
    // Exactly two messages: the voice message, then the text.
    expect(sent.map((m) => m.id)).toEqual([sent[0]!.id, answer.id]);
    const voice = sent[0]!;
    expect(voice.content).toBe("");
    expect(voice.message.flags).toBe(IS_VOICE_MESSAGE);
    expect(voice.files).toHaveLength(1);
    expect(voice.files![0]).toMatchObject({ name: "files[0]", filename: "voice-message.ogg", mimeType: "audio/ogg" });
    expect(voice.files![0]!.bytes.equals(speechFixture("speech.ogg"))).toBe(true);
    const [meta] = voice.payload.attachments as { id: string; duration_secs: number; waveform: string }[];
    expect(meta!.id).toBe("0");
    expect(meta!.duration_secs).toBeCloseTo(3.27, 1);
    // A real waveform: one byte per 100 ms of the decoded audio (33), loudest 255, quiet spans lower.
    const waveform = Buffer.from(meta!.waveform, "base64");
    expect(waveform.length).toBe(33);
    expect(Math.max(...waveform)).toBe(255);
    expect(Math.min(...waveform)).toBeLessThan(128);
    expect(voice.message.attachments).toEqual([
      expect.objectContaining({ filename: "voice-message.ogg", content_type: "audio/ogg", waveform: meta!.waveform }),
    ]);
    expect(stack.tts!.requests.slice(speechBefore).map((r) => r.body)).toEqual([
      { model: "tts-1", voice: "alloy", input: "You said: 今天星期幾", response_format: "opus" },
    ]);
  });

  it("always, in a server: the voice message replies to the question; a failing speech API leaves the text with one line", async () => {
    const dc = stack.discord;
    const finn: FakeUser = { id: "700000000000042002", username: "finn42", global_name: "Finn" };
    await setVoice(dc.channelId, "always");
    const { message, answer, sent } = await post(finn, `<@${dc.bot.id}> 你好`, {});
    expect(answer.content).toBe("You said: 你好");
    const voice = sent[0]!;
    expect(voice.message.flags).toBe(IS_VOICE_MESSAGE);
    expect(voice.payload.message_reference).toMatchObject({ message_id: message.id });

    stack.tts!.failNext({ status: 401 });
    const failed = await post(finn, `<@${dc.bot.id}> 再一次`, {});
    expect(failed.sent).toHaveLength(1);
    expect(failed.answer.content).toBe(`You said: 再一次\n\n${VOICE_FAILED["zh-TW"]}`);
    await setVoice(dc.channelId, "when-spoken");
  });
});
