/**
 * The transcription client (`src/media/transcription.ts`) against the strict fake
 * OpenAI-compatible transcription API, the fake's own refusals (what the real API refuses), and
 * the voice helpers of `src/media/voice.ts` (formats, the Traditional conversion, the turn and the
 * transcript line).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TranscriptionClient, TranscriptionError, ZH_TW_PROMPT } from "../../src/media/transcription.js";
import {
  audioFormatOf,
  clockDuration,
  toTraditional,
  transcriptLine,
  transcriptOfTurn,
  voiceTurnText,
} from "../../src/media/voice.js";
import { startFakeTranscription, type FakeTranscription } from "../fakes/transcription.js";
import { markdownToPlain } from "../../src/plain-text.js";

let stt: FakeTranscription;
beforeAll(async () => {
  stt = await startFakeTranscription();
});
afterAll(() => stt.close());

const audio = Buffer.from("OggS fake opus bytes for the client test");
const request = { audio, fileName: "voice.ogg", mimeType: "audio/ogg", locale: "zh-TW" as const };
const client = (overrides: { key?: string | undefined; model?: string; timeoutMs?: number; retries?: number } = {}) =>
  new TranscriptionClient(
    {
      STT_BASE_URL: `${stt.base}/`,
      STT_API_KEY: "key" in overrides ? overrides.key : stt.key,
      STT_MODEL: overrides.model ?? "whisper-1",
    },
    { timeoutMs: overrides.timeoutMs ?? 10_000, retries: overrides.retries ?? 0, retryMinMs: 20 },
  );

/** The problem of the TranscriptionError `promise` rejects with. */
async function problemOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TranscriptionError);
  return (error as TranscriptionError).problem;
}

describe("TranscriptionClient", () => {
  it(
    "posts multipart file, model, response_format=json, and with zh-TW language=zh and the " +
      "Traditional prompt; returns the trimmed text and the time",
    async () => {
      stt.say(audio, "  你好，今天天氣很好。 ");
      const before = stt.requests.length;
      const result = await client().transcribe(request);
      expect(result.text).toBe("你好，今天天氣很好。");
      expect(result.ms).toBeGreaterThanOrEqual(0);
      expect(stt.requests.slice(before)).toEqual([
        {
          status: 200,
          authorization: `Bearer ${stt.key}`,
          contentType: expect.stringMatching(/^multipart\/form-data; boundary=/),
          fields: { model: "whisper-1", response_format: "json", language: "zh", prompt: ZH_TW_PROMPT },
          file: { filename: "voice.ogg", mimeType: "audio/ogg", size: audio.length },
        },
      ]);
      await client().transcribe({ ...request, locale: "en" });
      expect(stt.requests.at(-1)!.fields).toEqual({ model: "whisper-1", response_format: "json" });
    },
  );

  it("names each failure: 401, 429, 5xx, not JSON, empty, unreachable, timeout; a caller's abort is rethrown as it is", async () => {
    expect(await problemOf(client({ key: "sk-wrong-key-000000" }).transcribe(request))).toBe("unauthorized");
    expect(await problemOf(client({ key: undefined }).transcribe(request))).toBe("unauthorized");
    expect(await problemOf(client({ model: "whisper-9" }).transcribe(request))).toBe("refused");
    stt.failNext({ status: 429 });
    expect(await problemOf(client().transcribe(request))).toBe("rate_limited");
    stt.failNext({ status: 500 });
    expect(await problemOf(client().transcribe(request))).toBe("failed");
    stt.failNext("not-json");
    expect(await problemOf(client().transcribe(request))).toBe("failed");
    const silence = Buffer.from("OggS silence");
    stt.say(silence, " \n ");
    expect(await problemOf(client().transcribe({ ...request, audio: silence }))).toBe("empty");
    stt.failNext("hang");
    expect(await problemOf(client({ timeoutMs: 300 }).transcribe(request))).toBe("timeout");
    const aborted = new AbortController();
    const reason = new Error("deadline");
    aborted.abort(reason);
    await expect(client().transcribe({ ...request, signal: aborted.signal })).rejects.toBe(reason);
    await stt.down();
    try {
      expect(await problemOf(client().transcribe(request))).toBe("unreachable");
    } finally {
      await stt.up();
    }
  });

  it(
    "retries a passing failure (unreachable, 429, 5xx) at most twice with a growing wait; a " +
      "429's short Retry-After is waited for, a long one is not retried; a refusal, a wrong key, " +
      "a timeout, not-JSON or an empty transcript are not retried",
    async () => {
      const retrying = () => client({ retries: 2 });
      const requestsOf = async (run: () => Promise<unknown>) => {
        const before = stt.requests.length;
        const outcome = await run().then(
          (r) => r,
          (e: unknown) => e,
        );
        return { outcome, requests: stt.requests.length - before };
      };
      stt.say(audio, "好的");
      stt.failNext({ status: 503 });
      stt.failNext({ status: 429 });
      let run = await requestsOf(() => retrying().transcribe(request));
      expect(run.requests).toBe(3);
      expect(run.outcome).toMatchObject({ text: "好的", attempts: 3 });
      // Waits of 20-40 ms, then 40-80 ms (p-retry: doubling, times a random 1-2).
      expect((run.outcome as { ms: number }).ms).toBeGreaterThanOrEqual(60);

      stt.failNext({ status: 500 }, 3);
      run = await requestsOf(() => retrying().transcribe(request));
      expect(run.requests).toBe(3);
      expect((run.outcome as TranscriptionError).problem).toBe("failed");
      expect((run.outcome as TranscriptionError).status).toBe(500);

      stt.failNext({ status: 429, headers: { "retry-after": "1" } });
      const waited = performance.now();
      run = await requestsOf(() => retrying().transcribe(request));
      expect(run.outcome).toMatchObject({ text: "好的", attempts: 2 });
      expect(performance.now() - waited).toBeGreaterThanOrEqual(990);
      stt.failNext({ status: 429, headers: { "retry-after": "60" } });
      run = await requestsOf(() => retrying().transcribe(request));
      expect(run.requests).toBe(1);
      expect(run.outcome).toMatchObject({ problem: "rate_limited", retryAfterMs: 60_000 });

      for (const failure of [{ status: 400 }, { status: 401 }, "not-json" as const]) {
        stt.failNext(failure);
        expect((await requestsOf(() => retrying().transcribe(request))).requests).toBe(1);
      }
      stt.failNext("hang");
      run = await requestsOf(() => client({ retries: 2, timeoutMs: 300 }).transcribe(request));
      expect(run.requests).toBe(1);
      expect((run.outcome as TranscriptionError).problem).toBe("timeout");
      const silence = Buffer.from("OggS silence again");
      stt.say(silence, "  ");
      expect((await requestsOf(() => retrying().transcribe({ ...request, audio: silence }))).requests).toBe(1);

      await stt.down();
      try {
        const downAt = performance.now();
        expect(await problemOf(retrying().transcribe(request))).toBe("unreachable");
        expect(performance.now() - downAt).toBeGreaterThanOrEqual(60); // it waited between the tries
      } finally {
        await stt.up();
      }
      // The answer's deadline ends the wait between two requests: its reason, at once.
      stt.failNext({ status: 429, headers: { "retry-after": "5" } });
      const deadline = new AbortController();
      const reason = new Error("deadline");
      setTimeout(() => deadline.abort(reason), 100);
      const abortedAt = performance.now();
      await expect(retrying().transcribe({ ...request, signal: deadline.signal })).rejects.toBe(reason);
      expect(performance.now() - abortedAt).toBeLessThan(2000);
    },
  );

  it("keeps the key out of every error message", async () => {
    const key = "sk-secret-that-must-not-show-123456";
    const error = await client({ key })
      .transcribe(request)
      .catch((e: unknown) => e as Error);
    expect(String((error as Error).message)).not.toContain(key);
    expect(String((error as Error).message)).toContain("401");
  });
});

describe("the fake transcription API is strict", () => {
  const post = (body: FormData | string | undefined, headers: Record<string, string> = {}) =>
    fetch(`${stt.base}/audio/transcriptions`, {
      method: "POST",
      body,
      headers: { authorization: `Bearer ${stt.key}`, ...headers },
    });
  const form = (fields: Record<string, string>, file?: { name: string; type: string; bytes?: Buffer }) => {
    const f = new FormData();
    for (const [k, v] of Object.entries(fields)) f.append(k, v);
    if (file) f.append("file", new Blob([file.bytes ?? audio], { type: file.type }), file.name);
    return f;
  };
  const ogg = { name: "voice.ogg", type: "audio/ogg" };

  it("refuses a missing model, a missing file, a wrong content type, a bad key, an unsupported file name", async () => {
    const cases: [Promise<Response>, number, RegExp][] = [
      [post(form({}, ogg)), 400, /model/],
      [post(form({ model: "whisper-1" })), 400, /file/],
      [post(JSON.stringify({ model: "whisper-1" }), { "content-type": "application/json" }), 400, /Content-Type/],
      [post(form({ model: "whisper-1" }, { name: "voice.oga", type: "audio/ogg" })), 400, /Invalid file format/],
      [post(form({ model: "whisper-1" }, { name: "voice.ogg", type: "text/plain" })), 400, /content type/],
      [post(form({ model: "whisper-1", response_format: "xml" }, ogg)), 400, /response_format/],
      [post(form({ model: "whisper-1", language: "zh-TW" }, ogg)), 400, /language/],
      [post(form({ model: "whisper-1" }, ogg), { authorization: "Bearer sk-nope-000000" }), 401, /API key/],
      [
        fetch(`${stt.base}/audio/transcriptions`, { method: "POST", body: form({ model: "whisper-1" }, ogg) }),
        401,
        /API key/,
      ],
      [
        fetch(`${stt.base}/audio/translations`, {
          method: "POST",
          body: form({ model: "whisper-1" }, ogg),
          headers: { authorization: `Bearer ${stt.key}` },
        }),
        404,
        /Invalid URL/,
      ],
    ];
    for (const [response, status, message] of cases) {
      const res = await response;
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toMatch(message);
    }
    const ok = await post(form({ model: "whisper-1", response_format: "json" }, ogg));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ text: expect.any(String) });
  });
});

describe("voice helpers", () => {
  it("audioFormatOf: the five formats by type or name, sent under a name the API takes; others undefined", () => {
    expect(audioFormatOf({ kind: "voice", mimeType: "audio/ogg" })).toEqual({
      format: "ogg",
      fileName: "voice.ogg",
      mimeType: "audio/ogg",
    });
    expect(audioFormatOf({ kind: "voice" })).toEqual({ format: "ogg", fileName: "voice.ogg", mimeType: "audio/ogg" });
    expect(audioFormatOf({ kind: "audio", mimeType: "audio/mpeg", name: "song.mp3" })?.fileName).toBe("audio.mp3");
    expect(audioFormatOf({ kind: "audio", mimeType: "audio/x-m4a" })?.format).toBe("m4a");
    expect(audioFormatOf({ kind: "audio", mimeType: "audio/x-wav" })?.format).toBe("wav");
    expect(audioFormatOf({ kind: "audio", mimeType: "audio/webm; codecs=opus" })?.format).toBe("webm");
    expect(audioFormatOf({ kind: "audio", name: "memo.M4A" })?.format).toBe("m4a");
    expect(audioFormatOf({ kind: "audio", mimeType: "application/octet-stream", name: "talk.opus" })?.format).toBe(
      "ogg",
    );
    expect(audioFormatOf({ kind: "audio", mimeType: "audio/flac", name: "song.flac" })).toBeUndefined();
    expect(audioFormatOf({ kind: "audio", name: "song.aiff" })).toBeUndefined();
  });

  it("toTraditional: Simplified to Traditional with Taiwan phrases; Traditional text unchanged", async () => {
    expect(await toTraditional("我们用鼠标下载软件，看视频")).toBe("我們用滑鼠下載軟體，看影片");
    expect(await toTraditional("臺灣的資訊與網路")).toBe("臺灣的資訊與網路");
    expect(await toTraditional("OK, see you at 3pm")).toBe("OK, see you at 3pm");
  });

  it("the turn text and the transcript line", () => {
    expect(clockDuration(7)).toBe("0:07");
    expect(clockDuration(4.6)).toBe("0:05");
    expect(clockDuration(245)).toBe("4:05");
    expect(clockDuration(3723)).toBe("1:02:03");
    expect(voiceTurnText("voice", "你好", 7, "")).toBe("[voice 0:07] 你好");
    expect(voiceTurnText("audio", "你好", undefined, "  重點？ ")).toBe("[audio] 你好\n重點？");
    expect(voiceTurnText("voice", "第一行\n 第二行", 65, "說明")).toBe("[voice 1:05] 第一行 第二行\n說明");
    expect(transcriptOfTurn("[voice 1:05] 第一行 第二行\n說明")).toBe("第一行 第二行");
    expect(transcriptOfTurn("[Ann #a1b2] [audio] 你好")).toBe("你好");
    expect(transcriptOfTurn("[voice 1:02:03] 長的")).toBe("長的");
    expect(transcriptOfTurn("just text")).toBeUndefined();
    expect(transcriptLine("第一行\n第二行  end")).toBe("🎤 「第一行 第二行 end」");
    const long = "語".repeat(199) + "😀" + "音".repeat(50);
    expect(transcriptLine(long)).toBe(`🎤 「${"語".repeat(199)}😀…」`);
    expect(transcriptLine("字".repeat(200))).toBe(`🎤 「${"字".repeat(200)}」`);
    expect(transcriptLine("2*3*4 is <b>_x_</b> [a](b) &#42;", { markdown: true })).toBe(
      "🎤 「2\\*3\\*4 is \\<b>\\_x\\_\\</b> \\[a](b) \\&#42;」",
    );
    // The Markdown line shows as transcribed where answers are read as Markdown (an entity too).
    expect(markdownToPlain(transcriptLine("2*3*4 is <b>_x_</b> [a](b) &#42;", { markdown: true }))).toBe(
      "🎤 「2*3*4 is <b>_x_</b> [a](b) &#42;」",
    );
  });
});
