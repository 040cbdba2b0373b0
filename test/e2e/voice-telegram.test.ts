/**
 * Issue 29 on Telegram, end to end with `STREAMING=on`: voice notes and audio files served by the
 * strict fake Bot API (`getFile` + the file endpoint), the real grammy adapter and worker, the
 * strict fake transcription API (`test/fakes/transcription.ts`) and the strict fake Messages API.
 * Without `STT_BASE_URL` a voice note keeps today's refusal: `media-telegram.test.ts`.
 */
import type { Chat, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { TraceStore } from "../../src/trace/store.js";
import { overloaded, text, toolUse } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { voiceRefusal } from "../../src/media/refusal.js";
import { ZH_TW_PROMPT } from "../../src/media/transcription.js";
import { eventually } from "./grants-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, MODEL_RETRIES, leakedSecrets, redisDump, textsOf } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack({ transcription: true, env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** Audio bytes of a voice note: an Ogg page header and a marker of its own (the fakes do not decode audio). */
function oggBytes(marker: string): Buffer {
  return Buffer.concat([
    Buffer.from("OggS\x00\x02", "latin1"),
    Buffer.alloc(26),
    Buffer.from(`OpusHead ${marker}`),
    Buffer.alloc(512, 7),
  ]);
}

/** A `voice` object for a message: the bytes stored in the fake as Telegram stores voice notes (`voice/file_N.oga`). */
function voiceNote(bytes: Buffer, seconds: number): Record<string, unknown> {
  return {
    ...stack.telegram.addFile(bytes, { path: `voice/file_${bytes.length}_${seconds}.oga` }),
    duration: seconds,
    mime_type: "audio/ogg",
  };
}

/** Sends a user message and waits for the bot's next message in the chat. */
async function send(
  chat: Chat,
  from: User,
  input: { caption?: string; text?: string; extra: Record<string, unknown> },
): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, ...input }, ANSWER_TIMEOUT_MS)).answer;
}

describe("Telegram: voice messages", () => {
  it(
    "a voice note is transcribed and answered: the transcript line is the first text shown, " +
      "the model gets `[voice 0:07] …`, the history no audio",
    async () => {
      const tg = stack.telegram;
      const stt = stack.stt!;
      const user = tg.user(29001, "Lin");
      const chat = tg.privateChat(user);
      const audio = oggBytes("lin");
      stt.say(audio, "明天早上記得帶傘嗎");
      const before = { model: stack.model.requests.length, stt: stt.requests.length };
      const voice = voiceNote(audio, 7);
      const answer = await send(chat, user, { extra: { voice } });

      // (The scripted model echoes the turn without its leading `[…]` mark.)
      expect(answer.text).toBe("🎤 「明天早上記得帶傘嗎」\n\nYou said: 明天早上記得帶傘嗎");
      // The transcript line was the first visible text (a draft in a private chat), before any of the answer.
      const drafts = tg.drafts.filter((d) => d.chatId === chat.id);
      expect(drafts[0]!.text).toBe("🎤 「明天早上記得帶傘嗎」");
      expect(drafts.every((d) => d.text.startsWith("🎤 「明天早上記得帶傘嗎」"))).toBe(true);

      // One transcription request, as the OpenAI API wants it.
      const requests = stt.requests.slice(before.stt);
      expect(requests).toHaveLength(1);
      expect(requests[0]).toMatchObject({
        status: 200,
        authorization: `Bearer ${stt.key}`,
        fields: { model: "whisper-1", response_format: "json", language: "zh", prompt: ZH_TW_PROMPT },
        file: { filename: "voice.ogg", mimeType: "audio/ogg", size: audio.length },
      });
      expect(tg.callsOf("getFile").filter((c) => c.payload.file_id === voice.file_id)).toHaveLength(1);

      // The model saw the transcript as the user turn.
      const model = stack.model.requests.slice(before.model);
      expect(model).toHaveLength(1);
      expect(textsOf(model[0]!.messages.at(-1)!)).toEqual(["[voice 0:07] 明天早上記得帶傘嗎"]);
      // The history holds the transcript turn and the model's answer (without the 🎤 line); no audio anywhere in Redis.
      const stored = (await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history))!;
      expect(stored).toContain("[voice 0:07] 明天早上記得帶傘嗎");
      const dump = JSON.stringify(await redisDump(stack));
      expect(dump).not.toContain(audio.toString("base64").slice(0, 40));
      expect(dump).not.toContain("OpusHead");

      // The trace records the duration, the bytes and the transcription time.
      const run = await eventually(
        async () =>
          (await new TraceStore(redis).runs({ platform: "telegram", chatId: String(chat.id) })).find((r) =>
            r.events.some((e) => e.type === "transcription"),
          ),
        5000,
        "the voice run's trace",
      );
      const event = run.events.find((e) => e.type === "transcription")!;
      expect(event.data).toMatchObject({
        ok: true,
        kind: "voice",
        seconds: 7,
        bytes: audio.length,
        model: "whisper-1",
      });
      expect(event.data.ms).toEqual(expect.any(Number));
      expect(run.events.map((e) => e.type).indexOf("transcription")).toBeLessThan(
        run.events.map((e) => e.type).indexOf("user_input"),
      );

      // /usage counts the seconds transcribed.
      const usage = await send(chat, user, { text: "/usage", extra: {} });
      expect(usage.text).toContain("語音轉文字 7 秒");
    },
  );

  it("a Simplified transcript arrives in Traditional (Taiwan usage), in the answer and in the model request", async () => {
    const tg = stack.telegram;
    const user = tg.user(29002, "Wang");
    const chat = tg.privateChat(user);
    const audio = oggBytes("wang");
    stack.stt!.say(audio, "我们明天去台北看软件展，这个视频很有意思");
    const before = stack.model.requests.length;
    const answer = await send(chat, user, { extra: { voice: voiceNote(audio, 12) } });
    const traditional = "我們明天去臺北看軟體展，這個影片很有意思";
    expect(answer.text.startsWith(`🎤 「${traditional}」\n\n`)).toBe(true);
    expect(textsOf(stack.model.requests.slice(before)[0]!.messages.at(-1)!)).toEqual([`[voice 0:12] ${traditional}`]);
    expect(JSON.stringify(stack.model.requests.slice(before))).not.toContain("软件");
  });

  it(
    "in a group with a caption: the first posted text is the transcript line, the answer " +
      "streams after it, the caption reaches the model with the transcript",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1002900100, "語音群");
      const ann = tg.user(29003, "Ann");
      const audio = oggBytes("ann");
      stack.stt!.say(audio, "這週末有什麼好玩的");
      const answerText = "週末可以去陽明山走走，天氣好的話還能看到整個台北盆地。".repeat(3);
      stack.model.enqueue({ ...text(answerText), stream: { chunkChars: 20, totalMs: 800 } });
      const before = stack.model.requests.length;
      const first = await send(group, ann, {
        caption: `@${tg.bot.username} 幫我想想`,
        extra: { voice: voiceNote(audio, 65) },
      });
      expect(first.payload.text).toBe("🎤 「這週末有什麼好玩的」");
      await tg.waitFor(
        () => sentTo(group)[0]!.text === `🎤 「這週末有什麼好玩的」\n\n${answerText}`,
        ANSWER_TIMEOUT_MS,
        "the final answer",
      );
      const edits = tg.edits.filter((e) => e.method === "editMessageText" && Number(e.payload.chat_id) === group.id);
      expect(edits.length).toBeGreaterThan(0);
      expect(edits.every((e) => String(e.payload.text).startsWith("🎤 「這週末有什麼好玩的」"))).toBe(true);
      const turn = textsOf(stack.model.requests.slice(before)[0]!.messages.at(-1)!);
      expect(turn).toHaveLength(1);
      expect(turn[0]).toMatch(/^\[Ann #[0-9a-f]{4}\] \[voice 1:05\] 這週末有什麼好玩的\n幫我想想$/);
    },
  );

  it("an audio file (MP3) is transcribed too, sent as audio.mp3 and marked [audio …]; a video note stays refused", async () => {
    const tg = stack.telegram;
    const stt = stack.stt!;
    const user = tg.user(29004, "Kao");
    const chat = tg.privateChat(user);
    const mp3 = Buffer.concat([Buffer.from("ID3\x04\x00\x00", "latin1"), Buffer.alloc(600, 3)]);
    stt.say(mp3, "會議記錄：下週三交報告");
    const before = stt.requests.length;
    const file = tg.addFile(mp3, { path: "music/file_7.mp3" });
    const answer = await send(chat, user, {
      caption: "幫我整理重點",
      extra: { audio: { ...file, duration: 95, mime_type: "audio/mpeg", file_name: "meeting.mp3" } },
    });
    expect(answer.text).toBe("🎤 「會議記錄：下週三交報告」\n\nYou said: 會議記錄：下週三交報告\n幫我整理重點");
    expect(textsOf(stack.model.requests.at(-1)!.messages.at(-1)!)).toEqual([
      "[audio 1:35] 會議記錄：下週三交報告\n幫我整理重點",
    ]);
    expect(stt.requests.slice(before)[0]).toMatchObject({
      status: 200,
      file: { filename: "audio.mp3", mimeType: "audio/mpeg", size: mp3.length },
    });

    const models = stack.model.requests.length;
    const video = await send(chat, user, {
      extra: { video_note: { ...tg.addFile(Buffer.from("mp4")), length: 240, duration: 2 } },
    });
    expect(video.text).toContain("我還看不了影片");
    expect(stack.model.requests.length).toBe(models);
  });

  it(
    "a job retried after a tool changed data resumes its checkpoint: no second download or " +
      "transcription, and the answer still begins with the transcript line",
    async () => {
      const tg = stack.telegram;
      const stt = stack.stt!;
      const user = tg.user(29007, "Hsu");
      const chat = tg.privateChat(user);
      const audio = oggBytes("hsu");
      stt.say(audio, "add todo 繳電費");
      const before = { model: stack.model.requests.length, stt: stt.requests.length };
      // add_todo runs, then the model call after it fails on both SDK attempts: the job retries from the checkpoint.
      stack.model.enqueue(
        toolUse("add_todo", { title: "繳電費" }),
        ...Array.from({ length: MODEL_RETRIES + 1 }, () => overloaded()),
      );
      const voice = voiceNote(audio, 3);
      const answer = await send(chat, user, { extra: { voice } });
      expect(answer.text).toBe("🎤 「add todo 繳電費」\n\nadd_todo: 已新增待辦：#1 繳電費\n\n🔧 新增待辦：繳電費");
      expect(await redis.hlen(`todo:{telegram:${user.id}}:items`)).toBe(1);
      const requests = stack.model.requests.slice(before.model);
      expect(requests).toHaveLength(MODEL_RETRIES + 3);
      expect(textsOf(requests.at(-1)!.messages[0]!)).toEqual(["[voice 0:03] add todo 繳電費"]);
      expect(stt.requests.length - before.stt).toBe(1);
      expect(tg.callsOf("getFile").filter((c) => c.payload.file_id === voice.file_id)).toHaveLength(1);
      expect(sentTo(chat)).toHaveLength(1);
    },
    30_000,
  );

  it(
    "over MAX_VOICE_SECONDS (300): refused from the announced duration, naming the limit, " +
      "before getFile, the download, the transcription or the model",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(29005, "Long");
      const chat = tg.privateChat(user);
      const before = {
        model: stack.model.requests.length,
        stt: stack.stt!.requests.length,
        downloads: tg.fileDownloads.length,
      };
      const voice = voiceNote(oggBytes("long"), 301);
      const answer = await send(chat, user, { extra: { voice } });
      expect(answer.text).toBe("這則語音太長了（上限 300 秒），請分段傳送或改用文字。");
      expect(tg.callsOf("getFile").some((c) => c.payload.file_id === voice.file_id)).toBe(false);
      expect(tg.fileDownloads.length).toBe(before.downloads);
      expect(stack.stt!.requests.length).toBe(before.stt);
      expect(stack.model.requests.length).toBe(before.model);
    },
  );

  it(
    "the transcription endpoint down, 401, 429, a timeout-like failure or an empty transcript: " +
      "a short answer, no model request; the STT key in no log line",
    async () => {
      const tg = stack.telegram;
      const stt = stack.stt!;
      const user = tg.user(29006, "Fail");
      const chat = tg.privateChat(user);
      const before = stack.model.requests.length;
      const notUnderstood = "抱歉，我聽不清楚這則語音訊息，請再傳一次或改用文字。";

      await stt.down();
      try {
        const down = await send(chat, user, { extra: { voice: voiceNote(oggBytes("down"), 3) } });
        expect(down.text).toBe(notUnderstood);
      } finally {
        await stt.up();
      }
      // Passing failures are retried twice (1-2 s, then 2-4 s): a 503 three times in a row fails; a 429 asking for a minute is not waited for.
      for (const [failure, times] of [
        [{ status: 401 }, 1],
        [{ status: 429, headers: { "retry-after": "60" } }, 1],
        [{ status: 503 }, 3],
        ["not-json" as const, 1],
      ] as const) {
        stt.failNext(failure, times);
        const answer = await send(chat, user, {
          extra: { voice: voiceNote(oggBytes(`fail ${JSON.stringify(failure)}`), 3) },
        });
        expect(answer.text).toBe(notUnderstood);
      }
      const silence = oggBytes("silence");
      stt.say(silence, "   ");
      expect((await send(chat, user, { extra: { voice: voiceNote(silence, 2) } })).text).toBe(notUnderstood);
      expect(stack.model.requests.length).toBe(before);
      // Nothing was left in the chat but the short answers (no partial streamed message).
      expect(sentTo(chat).map((m) => m.text)).toEqual(Array.from({ length: 6 }, () => notUnderstood));

      const warnings = stack
        .logs()
        .filter((l) => l.msg === "a voice message is not transcribed; answering without the model");
      expect(warnings.map((l) => l.transcription)).toEqual(
        expect.arrayContaining(["unreachable", "unauthorized", "rate_limited", "failed", "empty"]),
      );
      // One 503, then the transcript: the retry answers the voice message as usual.
      const retried = oggBytes("retried after a 503"); // a size of its own: voiceNote names the file by size and duration
      stt.say(retried, "晚安");
      stt.failNext({ status: 503 });
      const requests = stt.requests.length;
      const retriedAnswer = await send(chat, user, { extra: { voice: voiceNote(retried, 2) } });
      expect(retriedAnswer.text).toBe("🎤 「晚安」\n\nYou said: 晚安");
      expect(stt.requests.slice(requests).map((r) => r.status)).toEqual([503, 200]);
      expect(stack.logs().find((l) => l.msg === "voice message transcribed" && l.attempts === 2)).toBeDefined();
      expect(leakedSecrets(stack)).toEqual([]);
      expect(JSON.stringify(stack.logs())).not.toContain(stt.key);
    },
  );

  it(
    "issue 38 (8): a silent note transcribed as a known hallucination or only non-speech markers gets " +
      "the empty-transcript answer; nothing of it in history",
    async () => {
      const tg = stack.telegram;
      const stt = stack.stt!;
      const user = tg.user(29011, "Quiet");
      const chat = tg.privateChat(user);
      const before = stack.model.requests.length;
      const notUnderstood = voiceRefusal("not_understood", "zh-TW", stack.config.MAX_VOICE_SECONDS);
      const heard = [
        "字幕由Amara.org社区提供",
        "[BLANK_AUDIO]",
        "請不吝點贊 訂閱 轉發 打賞支持明鏡與點點欄目",
        "(音樂) ♪ ♪",
        "Thanks for watching!",
      ];
      for (const [i, transcript] of heard.entries()) {
        const audio = oggBytes(`hallucination ${i}`);
        stt.say(audio, transcript);
        expect((await send(chat, user, { extra: { voice: voiceNote(audio, 2) } })).text).toBe(notUnderstood);
      }
      expect(stack.model.requests.length).toBe(before);
      expect(await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history)).toBeNull();
      const dump = JSON.stringify(await redisDump(stack));
      for (const transcript of ["Amara", "BLANK_AUDIO", "明鏡與點點", "Thanks for watching"])
        expect(dump).not.toContain(transcript);
    },
  );

  it("issue 38 (8): transcription follows the conversation's /settings language, not BOT_LOCALE (language, prompt, refusal)", async () => {
    const tg = stack.telegram;
    const stt = stack.stt!;
    const user = tg.user(29012, "Erin");
    const chat = tg.privateChat(user);
    await send(chat, user, { text: "/settings language en", extra: {} });
    const audio = oggBytes("english settings");
    stt.say(audio, "Is it going to rain tomorrow?");
    const requests = stt.requests.length;
    const answer = await send(chat, user, { extra: { voice: voiceNote(audio, 3) } });
    expect(answer.text).toBe("🎤 「Is it going to rain tomorrow?」\n\nYou said: Is it going to rain tomorrow?");
    const [request] = stt.requests.slice(requests);
    expect(request!.fields).not.toHaveProperty("language");
    expect(request!.fields).not.toHaveProperty("prompt");
    const silent = oggBytes("english silence");
    stt.say(silent, "[BLANK_AUDIO]");
    expect((await send(chat, user, { extra: { voice: voiceNote(silent, 2) } })).text).toBe(
      voiceRefusal("not_understood", "en", stack.config.MAX_VOICE_SECONDS),
    );
    // Back to zh-TW: language=zh and the Traditional prompt again.
    await send(chat, user, { text: "/settings language zh-TW", extra: {} });
    const again = oggBytes("back to chinese");
    stt.say(again, "明天會下雨嗎");
    const next = stt.requests.length;
    await send(chat, user, { extra: { voice: voiceNote(again, 2) } });
    expect(stt.requests[next]!.fields).toMatchObject({ language: "zh", prompt: ZH_TW_PROMPT });
  });

  it("issue 39 (7): ESC, BEL and bidi characters of a hostile transcription endpoint reach neither the model nor the 🎤 line", async () => {
    const tg = stack.telegram;
    const stt = stack.stt!;
    const user = tg.user(29013, "Mallory");
    const chat = tg.privateChat(user);
    const audio = oggBytes("hostile transcript");
    stt.say(audio, "明天\u001b[31m 開會\u0007\u202E嗎\u200B？\n\u2066第二行\u2069");
    const before = stack.model.requests.length;
    const answer = await send(chat, user, { extra: { voice: voiceNote(audio, 4) } });
    const clean = "明天 [31m 開會 嗎？ 第二行";
    expect(answer.text).toBe(`🎤 「${clean}」\n\nYou said: ${clean}`);
    expect(textsOf(stack.model.requests[before]!.messages.at(-1)!)).toEqual([`[voice 0:04] ${clean}`]);
    const shown = [...tg.drafts.filter((d) => d.chatId === chat.id).map((d) => d.text), String(answer.payload.text)];
    expect(shown[0]).toBe(`🎤 「${clean}」`);
    for (const text of shown)
      // eslint-disable-next-line no-control-regex -- looking for control characters is the point
      expect(text).not.toMatch(/[\u0000-\u0009\u000B-\u001F\u007F\u200B\u202A-\u202E\u2066-\u2069]/);
  });
});
