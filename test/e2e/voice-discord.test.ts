/**
 * Issue 29 on Discord, end to end: voice messages (flag IS_VOICE_MESSAGE, an `audio/ogg`
 * attachment with `duration_secs` and `waveform`) and audio attachments served by the strict fake
 * Discord, the real discord.js adapter and worker, the strict fake transcription API and the
 * strict fake Messages API (answers sent whole: `STREAMING=off`).
 * Without `STT_BASE_URL` a voice message keeps today's refusal: `media-discord.test.ts`.
 */
import { describe, expect, it } from "vitest";
import type { FakeUser } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, leakedSecrets, textsOf } from "./scenarios-common.js";

let stack: Stack;
useStack({ transcription: true }, (started) => (stack = started));

/** Discord's message flag of a voice message. */
const IS_VOICE_MESSAGE = 1 << 13;

const sentIn = (channelId: string) => stack.discord.messagesIn(channelId);

/** Audio bytes with a marker of their own (the fakes do not decode audio). */
function oggBytes(marker: string): Buffer {
  return Buffer.concat([
    Buffer.from("OggS\x00\x02", "latin1"),
    Buffer.alloc(26),
    Buffer.from(`OpusHead ${marker}`),
    Buffer.alloc(400, 9),
  ]);
}

/** A real WAV file (8-bit mono PCM, silence) of `seconds` at `rate` Hz: its header tells its duration. */
function wavBytes(seconds: number, rate = 1000): Buffer {
  const data = rate * seconds;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(36 + data, 4);
  header.write("WAVEfmt ", 8, "latin1");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate, 28); // bytes per second
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.write("data", 36, "latin1");
  header.writeUInt32LE(data, 40);
  return Buffer.concat([header, Buffer.alloc(data, 0x80)]);
}

/** A voice message's attachment as Discord sends it. */
function voiceAttachment(bytes: Buffer, seconds: number): Record<string, unknown> {
  return stack.discord.addAttachment(bytes, {
    filename: "voice-message.ogg",
    contentType: "audio/ogg",
    extra: { duration_secs: seconds, waveform: "AAAAAAAAAAAA" },
  });
}

/** `author` posts; resolves with the bot's next message in the channel. */
async function post(
  author: FakeUser,
  content: string,
  attachments: unknown[],
  where: { dm?: boolean; flags?: number; replyTo?: string } = {},
) {
  const dc = stack.discord;
  const channelId = where.dm ? dc.dmChannel(author) : dc.channelId;
  const before = sentIn(channelId).length;
  const message = dc.sendUserMessage(author, content, { ...where, attachments });
  const answer = await dc.waitFor(() => sentIn(channelId)[before], ANSWER_TIMEOUT_MS, "the bot's answer");
  return { message, answer };
}

describe("Discord: voice messages", () => {
  it(
    "a voice message in a DM is transcribed (Simplified → Traditional) and answered with the " +
      "transcript line first; the model gets `[voice 0:04] …`",
    async () => {
      const stt = stack.stt!;
      const carol: FakeUser = { id: "700000000000029001", username: "carol29", global_name: "Carol" };
      const audio = oggBytes("carol");
      stt.say(audio, "帮我记一下，下周三要开会，顺便买牛奶");
      const before = { model: stack.model.requests.length, stt: stt.requests.length };
      const attachment = voiceAttachment(audio, 4.2);
      const { answer } = await post(carol, "", [attachment], { dm: true, flags: IS_VOICE_MESSAGE });
      const heard = "幫我記一下，下週三要開會，順便買牛奶";
      expect(answer.content).toBe(`🎤 「${heard}」\n\nYou said: ${heard}`);
      expect(stt.requests.slice(before.stt)).toEqual([
        expect.objectContaining({
          status: 200,
          fields: expect.objectContaining({ model: "whisper-1", response_format: "json", language: "zh" }),
          file: { filename: "voice.ogg", mimeType: "audio/ogg", size: audio.length },
        }),
      ]);
      const model = stack.model.requests.slice(before.model);
      expect(model).toHaveLength(1);
      expect(textsOf(model[0]!.messages.at(-1)!)).toEqual([`[voice 0:04] ${heard}`]);
      expect(stack.discord.attachmentDownloads.filter((d) => d.path.includes(String(attachment.id)))).toEqual([
        { path: expect.stringContaining("/voice-message.ogg"), status: 200 },
      ]);
    },
  );

  it("a voice message replying to the bot in a server is answered there, with the speaker label before the mark", async () => {
    const dc = stack.discord;
    const dave: FakeUser = { id: "700000000000029002", username: "dave29", global_name: "Dave" };
    const { answer: first } = await post(dave, `<@${dc.bot.id}> 你好`, []);
    const audio = oggBytes("dave");
    stack.stt!.say(audio, "那後天呢");
    const before = stack.model.requests.length;
    const { message, answer } = await post(dave, "", [voiceAttachment(audio, 61)], {
      flags: IS_VOICE_MESSAGE,
      replyTo: first.id,
    });
    expect(answer.payload.message_reference).toMatchObject({ message_id: message.id });
    expect(answer.content.startsWith("🎤 「那後天呢」\n\n")).toBe(true);
    expect(textsOf(stack.model.requests.slice(before)[0]!.messages.at(-1)!)[0]).toMatch(
      /^\[Dave #[0-9a-f]{4}\] \[voice 1:01\] 那後天呢$/,
    );
  });

  it("an audio attachment (M4A) with a text is transcribed, the text kept with it; an unsupported audio format is refused naming the formats", async () => {
    const dc = stack.discord;
    const erin: FakeUser = { id: "700000000000029003", username: "erin29", global_name: "Erin" };
    const m4a = Buffer.concat([Buffer.from("\x00\x00\x00\x20ftypM4A ", "latin1"), Buffer.alloc(300, 1)]);
    stack.stt!.say(m4a, "今天的會議改到下午三點");
    const before = { model: stack.model.requests.length, stt: stack.stt!.requests.length };
    const { answer } = await post(
      erin,
      "幫我記下來",
      [dc.addAttachment(m4a, { filename: "memo.m4a", contentType: "audio/mp4" })],
      { dm: true },
    );
    expect(answer.content.startsWith("🎤 「今天的會議改到下午三點」\n\n")).toBe(true);
    // Discord announces no duration for an audio file that is not a voice message.
    expect(textsOf(stack.model.requests.slice(before.model)[0]!.messages.at(-1)!)).toEqual([
      "[audio] 今天的會議改到下午三點\n幫我記下來",
    ]);
    expect(stack.stt!.requests.slice(before.stt)[0]).toMatchObject({
      status: 200,
      file: { filename: "audio.m4a", mimeType: "audio/mp4" },
    });

    const models = stack.model.requests.length;
    const { answer: flac } = await post(
      erin,
      "",
      [dc.addAttachment(Buffer.from("fLaC....."), { filename: "song.flac", contentType: "audio/flac" })],
      { dm: true },
    );
    expect(flac.content).toBe("這種音訊格式我聽不了（我聽得懂 OGG/Opus、MP3、M4A、WAV 和 WebM）。");
    expect(stack.model.requests.length).toBe(models);
  });

  it("an audio attachment without a duration: a WAV's own header gives it, over MAX_VOICE_SECONDS refused before the transcription", async () => {
    const dc = stack.discord;
    const hank: FakeUser = { id: "700000000000029006", username: "hank29", global_name: "Hank" };
    const short = wavBytes(2);
    stack.stt!.say(short, "短短的錄音");
    const before = { model: stack.model.requests.length, stt: stack.stt!.requests.length };
    const { answer } = await post(
      hank,
      "",
      [dc.addAttachment(short, { filename: "clip.wav", contentType: "audio/x-wav" })],
      { dm: true },
    );
    expect(answer.content.startsWith("🎤 「短短的錄音」\n\n")).toBe(true);
    expect(textsOf(stack.model.requests.slice(before.model)[0]!.messages.at(-1)!)).toEqual(["[audio 0:02] 短短的錄音"]);
    expect(stack.stt!.requests.slice(before.stt)[0]).toMatchObject({
      status: 200,
      file: { filename: "audio.wav", mimeType: "audio/wav", size: short.length },
    });

    const models = stack.model.requests.length;
    const stts = stack.stt!.requests.length;
    const { answer: long } = await post(
      hank,
      "",
      [dc.addAttachment(wavBytes(301), { filename: "lecture.wav", contentType: "audio/wav" })],
      { dm: true },
    );
    expect(long.content).toBe("這則語音太長了（上限 300 秒），請分段傳送或改用文字。");
    expect(stack.stt!.requests.length).toBe(stts);
    expect(stack.model.requests.length).toBe(models);
  });

  it("over MAX_VOICE_SECONDS: refused from duration_secs before the download, the transcription or the model", async () => {
    const frank: FakeUser = { id: "700000000000029004", username: "frank29", global_name: "Frank" };
    const before = { model: stack.model.requests.length, stt: stack.stt!.requests.length };
    const attachment = voiceAttachment(oggBytes("frank"), 300.5);
    const { answer } = await post(frank, "", [attachment], { dm: true, flags: IS_VOICE_MESSAGE });
    expect(answer.content).toBe("這則語音太長了（上限 300 秒），請分段傳送或改用文字。");
    expect(stack.discord.attachmentDownloads.some((d) => d.path.includes(String(attachment.id)))).toBe(false);
    expect(stack.stt!.requests.length).toBe(before.stt);
    expect(stack.model.requests.length).toBe(before.model);
  });

  it("the transcription endpoint down or refusing the key: the short answer, no model request, no key in the logs", async () => {
    const stt = stack.stt!;
    const gina: FakeUser = { id: "700000000000029005", username: "gina29", global_name: "Gina" };
    const before = stack.model.requests.length;
    await stt.down();
    try {
      const { answer } = await post(gina, "", [voiceAttachment(oggBytes("gina down"), 3)], {
        dm: true,
        flags: IS_VOICE_MESSAGE,
      });
      expect(answer.content).toBe("抱歉，我聽不清楚這則語音訊息，請再傳一次或改用文字。");
    } finally {
      await stt.up();
    }
    stt.failNext({ status: 401 });
    const { answer } = await post(gina, "", [voiceAttachment(oggBytes("gina 401"), 3)], {
      dm: true,
      flags: IS_VOICE_MESSAGE,
    });
    expect(answer.content).toBe("抱歉，我聽不清楚這則語音訊息，請再傳一次或改用文字。");
    expect(stack.model.requests.length).toBe(before);
    expect(leakedSecrets(stack)).toEqual([]);
  });
});
