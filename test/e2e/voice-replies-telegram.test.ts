/**
 * Issue 42 (voice replies) on Telegram, end to end with `STREAMING=on`: the real grammy adapter and
 * worker, the strict fake Bot API (which checks the `sendVoice` multipart upload: an Ogg Opus file
 * becomes a voice message, anything else a document), the strict fake speech API
 * (`test/fakes/speech.ts`, real audio fixtures), the strict fake transcription API and the strict
 * fake Messages API.
 */
import type { Chat, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { REST_IN_TEXT, SEE_MESSAGE } from "../../src/media/spoken-text.js";
import { VOICE_FAILED } from "../../src/worker/voice-reply.js";
import { TraceStore } from "../../src/trace/store.js";
import { text } from "../fakes/anthropic.js";
import { speechFixture } from "../fakes/speech.js";
import type { FakeSentMessage, FakeSentVoice } from "../fakes/telegram.js";
import { eventually } from "./grants-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack(
  { transcription: true, speech: true, env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" } },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);
function voicesTo(chat: Chat): FakeSentVoice[] {
  return stack.telegram.voices.filter((v) => v.chatId === chat.id);
}

/** Sends a user message and waits for the bot's next text message in the chat. */
async function send(
  chat: Chat,
  from: User,
  input: { caption?: string; text?: string; extra?: Record<string, unknown> },
): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, ...input, extra: input.extra ?? {} }, ANSWER_TIMEOUT_MS)).answer;
}

/** A voice note whose audio the fake transcription API hears as `said`. */
function voiceNote(said: string, seconds: number): Record<string, unknown> {
  const audio = Buffer.concat([
    Buffer.from("OggS\x00\x02", "latin1"),
    Buffer.alloc(26),
    Buffer.from(`OpusHead ${said}`),
  ]);
  stack.stt!.say(audio, said);
  return {
    voice: {
      ...stack.telegram.addFile(audio, { path: `voice/file_${audio.length}_${seconds}.oga` }),
      duration: seconds,
      mime_type: "audio/ogg",
    },
  };
}

describe("Telegram: voice replies", () => {
  it("/settings offers voice replies (off by default) with a button; `/settings voice when-spoken` turns them on", async () => {
    const tg = stack.telegram;
    const user = tg.user(42001, "Mei");
    const chat = tg.privateChat(user);
    const listing = await send(chat, user, { text: "/settings" });
    expect(listing.text).toContain("• 語音回覆：關");
    expect(tg.buttons(listing)).toContainEqual({ text: "語音回覆：回覆語音訊息時", callback_data: "st:v:when-spoken" });
    const set = await send(chat, user, { text: "/settings voice when-spoken" });
    expect(set.text).toBe("好的，語音回覆：回覆語音訊息時。文字回答照常送出，在語音之後。");
    expect((await send(chat, user, { text: "/settings voice loud" })).text).toBe(
      "「loud」不是語音回覆的選項。可用：off、when-spoken、always，例如 /settings voice when-spoken。",
    );

    // when-spoken: a typed message gets text only.
    const speechBefore = stack.tts!.requests.length;
    const typed = await send(chat, user, { text: "早安" });
    expect(typed.text).toBe("You said: 早安");
    expect(voicesTo(chat)).toHaveLength(0);
    expect(stack.tts!.requests.length).toBe(speechBefore);

    // A voice note: the voice reply first (a real voice message, Ogg Opus), then the text, not streamed.
    const draftsBefore = tg.drafts.filter((d) => d.chatId === chat.id).length;
    const answer = await send(chat, user, { extra: voiceNote("明天會下雨嗎", 4) });
    expect(answer.text).toBe("🎤 「明天會下雨嗎」\n\nYou said: 明天會下雨嗎");
    const [voice] = voicesTo(chat);
    expect(voice).toBeDefined();
    expect(voice!.shownAs).toBe("voice");
    expect(voice!.messageId).toBeLessThan(answer.messageId);
    expect(voice!.file.filename).toBe("voice.ogg");
    expect(voice!.file.bytes.equals(speechFixture("speech.ogg"))).toBe(true);
    // The duration is read from the Ogg Opus file (3.27 s), whole seconds.
    expect(voice!.payload.duration).toBe("3");
    expect(voice!.message.voice).toMatchObject({ duration: 3, mime_type: "audio/ogg" });
    // Not streamed: no drafts for this answer (the text came whole, after the voice).
    expect(tg.drafts.filter((d) => d.chatId === chat.id)).toHaveLength(draftsBefore);
    // The speech request: the answer's words (not the 🎤 line), Ogg Opus, the configured model and voice.
    expect(stack.tts!.requests.slice(speechBefore)).toEqual([
      {
        status: 200,
        authorization: `Bearer ${stack.tts!.key}`,
        contentType: "application/json",
        body: { model: "tts-1", voice: "alloy", input: "You said: 明天會下雨嗎", response_format: "opus" },
      },
    ]);
    // The trace records it; /usage counts the characters spoken for this person.
    const run = await eventually(
      async () =>
        (await new TraceStore(redis).runs({ platform: "telegram", chatId: String(chat.id) })).find((r) =>
          r.events.some((e) => e.type === "speech"),
        ),
      5000,
      "the voice reply's trace",
    );
    expect(run.events.find((e) => e.type === "speech")!.data).toMatchObject({
      ok: true,
      format: "opus",
      characters: 16,
      model: "tts-1",
    });
    const usage = await send(chat, user, { text: "/usage" });
    expect(usage.text).toContain("語音回覆 16 字");
  });

  it("always: every answer is spoken without links, code, tables or sources; in a group the voice replies to the message", async () => {
    const tg = stack.telegram;
    const admin = tg.user(42002, "Chen");
    const group = tg.group(-42002, "Voice group");
    tg.admins.set(group.id, new Set([admin.id]));
    await send(group, admin, { text: "/settings@" + tg.bot.username + " voice always" });
    stack.model.enqueue(
      text(
        "臺北明天**會下雨**，請看[氣象署](https://www.cwa.gov.tw/)。\n\n```bash\ncurl https://x.example\n```\n\n| 城市 | 雨 |\n|---|---|\n| 臺北 | 80% |",
      ),
    );
    const speechBefore = stack.tts!.requests.length;
    const question = tg.sendUserMessage({ chat: group, from: admin, text: `@${tg.bot.username} 明天天氣`, extra: {} });
    const answer = await tg.waitFor(
      () => sentTo(group).find((m) => m.text.startsWith("臺北明天")),
      ANSWER_TIMEOUT_MS,
      "the group answer",
    );
    const voice = voicesTo(group).at(-1)!;
    expect(voice.messageId).toBeLessThan(answer.messageId);
    expect(voice.message.reply_to_message?.message_id).toBe(question.message_id);
    expect(stack.tts!.requests.slice(speechBefore).map((r) => r.body?.input)).toEqual([
      `臺北明天會下雨，請看氣象署。\n${SEE_MESSAGE["zh-TW"]}`,
    ]);
    // The text answer is whole: link, code and table as they were.
    expect(answer.text).toContain("curl https://x.example");
    expect(answer.entities.some((e) => e.type === "text_link" && e.url === "https://www.cwa.gov.tw/")).toBe(true);
  });

  it("a long answer speaks its first MAX_TTS_CHARACTERS and says the rest is in the text", async () => {
    const tg = stack.telegram;
    const user = tg.user(42003, "Hsu");
    const chat = tg.privateChat(user);
    await send(chat, user, { text: "/settings voice always" });
    const long = "這是一段很長的回答，用來確認語音只念前面的部分。".repeat(60);
    stack.model.enqueue(text(long));
    const speechBefore = stack.tts!.requests.length;
    const answer = await send(chat, user, { text: "說長一點" });
    expect(answer.text.startsWith("這是一段很長的回答")).toBe(true);
    const input = String(stack.tts!.requests.slice(speechBefore)[0]!.body!.input);
    expect([...input].length).toBeLessThanOrEqual(stack.config.MAX_TTS_CHARACTERS);
    expect([...input].length).toBeGreaterThan(stack.config.MAX_TTS_CHARACTERS / 2);
    expect(input.endsWith(`。\n${REST_IN_TEXT["zh-TW"]}`)).toBe(true);
    expect(voicesTo(chat)).toHaveLength(1);
  });

  it("a failed voice reply (refused, empty audio, unreachable after retries) leaves the text as it is with one short line; a 503 once is retried", async () => {
    const tg = stack.telegram;
    const tts = stack.tts!;
    const user = tg.user(42004, "Lai");
    const chat = tg.privateChat(user);
    await send(chat, user, { text: "/settings voice always" });
    const failureLine = VOICE_FAILED["zh-TW"];

    tts.failNext({ status: 400 });
    let answer = await send(chat, user, { text: "第一題" });
    expect(answer.text).toBe(`You said: 第一題\n\n${failureLine}`);
    tts.failNext("empty");
    answer = await send(chat, user, { text: "第二題" });
    expect(answer.text).toBe(`You said: 第二題\n\n${failureLine}`);
    expect(voicesTo(chat)).toHaveLength(0);

    // One 503, then audio: retried (after a 1-2 s wait), the voice goes out.
    tts.failNext({ status: 503 });
    const before = tts.requests.length;
    answer = await send(chat, user, { text: "第三題" });
    expect(answer.text).toBe("You said: 第三題");
    expect(tts.requests.slice(before).map((r) => r.status)).toEqual([503, 200]);
    expect(voicesTo(chat)).toHaveLength(1);

    // The history holds the answer without the failure line.
    const logs = stack.logs().filter((l) => l.msg === "the voice reply failed; the text answer goes alone");
    expect(logs.map((l) => l.speech)).toEqual(["refused", "empty"]);
    expect(JSON.stringify(logs)).not.toContain(tts.key);
  });
});
