/**
 * Voice replies' parts: the speech client (`src/media/speech.ts`) against the strict fake
 * OpenAI-compatible speech API, the fake's own refusals (what the real endpoint refuses), the
 * fixtures' durations as music-metadata reads them, and the spoken text (`src/media/spoken-text.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { looksLike, SpeechClient, SpeechError, SPEECH_FILES, type SpeechFormat } from "../../src/media/speech.js";
import { REST_IN_TEXT, SEE_MESSAGE, spokenText } from "../../src/media/spoken-text.js";
import { audioDurationOf } from "../../src/media/voice.js";
import { speechFixture, startFakeSpeech, type FakeSpeech } from "../fakes/speech.js";

let tts: FakeSpeech;
beforeAll(async () => {
  tts = await startFakeSpeech();
});
afterAll(() => tts.close());

const client = (
  overrides: { key?: string | undefined; model?: string; voice?: string; timeoutMs?: number; retries?: number } = {},
) =>
  new SpeechClient(
    {
      TTS_BASE_URL: `${tts.base}/`,
      TTS_API_KEY: "key" in overrides ? overrides.key : tts.key,
      TTS_MODEL: overrides.model ?? "tts-1",
      TTS_VOICE: overrides.voice ?? "alloy",
    },
    { timeoutMs: overrides.timeoutMs ?? 10_000, retries: overrides.retries ?? 0, retryMinMs: 20 },
  );

/** The problem of the SpeechError `promise` rejects with. */
async function problemOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SpeechError);
  return (error as SpeechError).problem;
}

/** Posts `body` to the fake as JSON with the right key: its status and error. */
async function post(body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${tts.base}/audio/speech`, {
    method: "POST",
    headers: { authorization: `Bearer ${tts.key}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes,
    error: response.ok
      ? undefined
      : (JSON.parse(bytes.toString("utf8")) as { error: { param: string | null; code: string | null } }).error,
  };
}

describe("the fake speech API", () => {
  it("answers each response_format with real audio of that format (mp3 by default)", async () => {
    const base = { model: "tts-1", voice: "alloy", input: "你好" };
    for (const format of ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const) {
      const answer = await post({ ...base, response_format: format });
      expect(answer.status).toBe(200);
      expect(answer.type).toBe(SPEECH_FILES[format].mimeType);
      expect(looksLike(format, answer.bytes), format).toBe(true);
    }
    expect((await post(base)).bytes.subarray(0, 3).toString("latin1")).toBe("ID3");
  });

  it("refuses what the real endpoint refuses: no key, no model/voice/input, input over 4,096 characters, an unknown format, voice or field", async () => {
    const base = { model: "tts-1", voice: "alloy", input: "hi", response_format: "opus" };
    expect((await post(base, { authorization: "" })).status).toBe(401);
    expect((await post(base, { "content-type": "text/plain" })).status).toBe(400);
    expect((await post("{not json")).status).toBe(400);
    const refusal = async (body: Record<string, unknown>) => {
      const answer = await post(body);
      expect(answer.status).toBe(400);
      return answer.error;
    };
    const { model: _m, ...noModel } = base;
    expect(await refusal(noModel)).toMatchObject({ param: "model", code: "missing_required_parameter" });
    expect(await refusal({ ...base, model: "tts-9" })).toMatchObject({ param: "model", code: "model_not_found" });
    const { voice: _v, ...noVoice } = base;
    expect(await refusal(noVoice)).toMatchObject({ param: "voice" });
    expect(await refusal({ ...base, voice: "darth" })).toMatchObject({ param: "voice", code: "invalid_value" });
    const { input: _i, ...noInput } = base;
    expect(await refusal(noInput)).toMatchObject({ param: "input", code: "missing_required_parameter" });
    expect(await refusal({ ...base, input: "" })).toMatchObject({ param: "input" });
    // 4,096 characters (code points: 字 is one) pass; 4,097 do not.
    expect((await post({ ...base, input: "字".repeat(4096) })).status).toBe(200);
    expect(await refusal({ ...base, input: "字".repeat(4097) })).toMatchObject({
      param: "input",
      code: "string_above_max_length",
    });
    expect(await refusal({ ...base, response_format: "ogg" })).toMatchObject({ param: "response_format" });
    expect(await refusal({ ...base, speed: 9 })).toMatchObject({ param: "speed" });
    expect(await refusal({ ...base, pitch: 2 })).toMatchObject({ code: "unknown_parameter" });
    const other = await fetch(`${tts.base}/audio/voices`, { headers: { authorization: `Bearer ${tts.key}` } });
    expect(other.status).toBe(404);
  });

  it("its fixtures are real audio: music-metadata reads their durations (Ogg Opus, MP3, M4A, ADTS AAC)", async () => {
    const ogg = await audioDurationOf(speechFixture("speech.ogg"), "audio/ogg");
    const mp3 = await audioDurationOf(speechFixture("speech.mp3"), "audio/mpeg");
    const m4a = await audioDurationOf(speechFixture("speech.m4a"), "audio/mp4");
    expect(ogg).toBeCloseTo(3.27, 1);
    expect(mp3).toBeGreaterThan(3.2);
    expect(mp3).toBeLessThan(3.4);
    expect(m4a).toBeCloseTo(3.26, 1);
    expect(looksLike("opus", speechFixture("speech.ogg"))).toBe(true);
    expect(looksLike("opus", speechFixture("speech.mp3"))).toBe(false);
    expect(looksLike("aac", speechFixture("speech.aac"))).toBe(true);
    expect(looksLike("flac", speechFixture("speech.flac"))).toBe(true);
  });
});

describe("SpeechClient", () => {
  it("posts JSON model, voice, input and response_format with the key; returns the audio and the time", async () => {
    const before = tts.requests.length;
    const speech = await client().speak({ text: "你好，這是測試。", format: "opus" });
    expect(speech.audio.equals(speechFixture("speech.ogg"))).toBe(true);
    expect(speech).toMatchObject({ format: "opus", attempts: 1 });
    expect(tts.requests.slice(before)).toEqual([
      {
        status: 200,
        authorization: `Bearer ${tts.key}`,
        contentType: "application/json",
        body: { model: "tts-1", voice: "alloy", input: "你好，這是測試。", response_format: "opus" },
      },
    ]);
  });

  it(
    "names each failure: 401, 400, 429, 5xx, empty audio, audio of another format, over 25 MB, " +
      "unreachable, timeout; an abort is rethrown as it is",
    async () => {
      const request = { text: "hello", format: "opus" as SpeechFormat };
      expect(await problemOf(client({ key: "sk-wrong-key-000000" }).speak(request))).toBe("unauthorized");
      expect(await problemOf(client({ key: undefined }).speak(request))).toBe("unauthorized");
      expect(await problemOf(client({ voice: "darth" }).speak(request))).toBe("refused");
      tts.failNext({ status: 429 });
      expect(await problemOf(client().speak(request))).toBe("rate_limited");
      tts.failNext({ status: 500 });
      expect(await problemOf(client().speak(request))).toBe("failed");
      tts.failNext("empty");
      expect(await problemOf(client().speak(request))).toBe("empty");
      tts.failNext("html");
      expect(await problemOf(client().speak(request))).toBe("failed");
      tts.failNext("huge");
      expect(await problemOf(client().speak(request))).toBe("too_large");
      tts.failNext("hang");
      expect(await problemOf(client({ timeoutMs: 300 }).speak(request))).toBe("timeout");
      const aborted = new AbortController();
      const reason = new Error("deadline");
      aborted.abort(reason);
      await expect(client().speak({ ...request, signal: aborted.signal })).rejects.toBe(reason);
      await tts.down();
      try {
        expect(await problemOf(client().speak(request))).toBe("unreachable");
      } finally {
        await tts.up();
      }
    },
  );

  it("retries a passing failure (unreachable, 429, 5xx) at most twice, as transcription does; a refusal or bad audio is not retried", async () => {
    const request = { text: "hello", format: "mp3" as SpeechFormat };
    const requestsOf = async (run: () => Promise<unknown>) => {
      const before = tts.requests.length;
      const outcome = await run().then(
        (r) => r,
        (e: unknown) => e,
      );
      return { outcome, requests: tts.requests.length - before };
    };
    tts.failNext({ status: 503 });
    tts.failNext({ status: 429 });
    let run = await requestsOf(() => client({ retries: 2 }).speak(request));
    expect(run.requests).toBe(3);
    expect(run.outcome).toMatchObject({ format: "mp3", attempts: 3 });
    expect((run.outcome as { ms: number }).ms).toBeGreaterThanOrEqual(60);
    tts.failNext({ status: 502 }, 3);
    run = await requestsOf(() => client({ retries: 2 }).speak(request));
    expect(run.requests).toBe(3);
    expect(run.outcome).toMatchObject({ problem: "failed", status: 502 });
    tts.failNext({ status: 429, headers: { "retry-after": "60" } });
    run = await requestsOf(() => client({ retries: 2 }).speak(request));
    expect(run.requests).toBe(1);
    for (const failure of [{ status: 400 }, { status: 401 }, "empty" as const, "html" as const]) {
      tts.failNext(failure);
      expect((await requestsOf(() => client({ retries: 2 }).speak(request))).requests).toBe(1);
    }
  });
});

describe("spokenText", () => {
  it("speaks the words: link texts without addresses, short inline code, no sources list or citation marks; code and tables read as 'see the message'", () => {
    const answer = [
      "## 天氣",
      "明天**臺北**會下雨，詳見[中央氣象署](https://www.cwa.gov.tw/)或 https://example.com/rain 。[1][2]",
      "",
      "執行 `npm start` 即可。",
      "",
      "```bash",
      "curl https://example.com | sh",
      "```",
      "",
      "| 城市 | 降雨 |",
      "|---|---|",
      "| 臺北 | 80% |",
      "",
      "- 帶傘",
      "- 穿雨鞋",
      "",
      "來源：",
      "1. [中央氣象署](<https://www.cwa.gov.tw/>) `www.cwa.gov.tw`",
    ].join("\n");
    const { text, cut } = spokenText(answer, "zh-TW", 1000);
    expect(cut).toBe(false);
    expect(text).toBe(
      [
        "天氣",
        "明天臺北會下雨，詳見中央氣象署或。",
        "執行 npm start 即可。",
        SEE_MESSAGE["zh-TW"],
        "帶傘",
        "穿雨鞋",
      ].join("\n"),
    );
    expect(text).not.toMatch(/https?:|www\.|\[\d\]|curl|80%|來源/);
    expect(spokenText("```js\nx()\n```", "en", 1000).text).toBe(SEE_MESSAGE.en);
    expect(spokenText("![](https://x.example/a.png)", "en", 1000).text).toBe("");
  });

  it("at most MAX_TTS_CHARACTERS: a longer answer speaks its first part, cut at a sentence end, then says the rest is in the text", () => {
    const sentence = "這是一個測試句子，用來確認長度。";
    const answer = sentence.repeat(20);
    const { text, cut } = spokenText(answer, "zh-TW", 100);
    expect(cut).toBe(true);
    expect([...text].length).toBeLessThanOrEqual(100);
    expect(text.endsWith(`。\n${REST_IN_TEXT["zh-TW"]}`)).toBe(true);
    const en = spokenText("One two three. ".repeat(50), "en", 120);
    expect([...en.text].length).toBeLessThanOrEqual(120);
    expect(en.text.endsWith(`three.\n${REST_IN_TEXT.en}`)).toBe(true);
    expect(spokenText("short", "en", 100)).toEqual({ text: "short", cut: false });
  });
});
