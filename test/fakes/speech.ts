/**
 * A strict local stand-in for an OpenAI-compatible speech API (`POST {base}/audio/speech`,
 * https://platform.openai.com/docs/api-reference/audio/createSpeech), on loopback. It refuses what
 * the real endpoint refuses, with OpenAI's error shape (`{ "error": { "message", "type", "param", "code" } }`):
 * - a missing or wrong `Authorization: Bearer <key>` → 401 `invalid_api_key`;
 * - a body that is not JSON (`Content-Type: application/json`) or not an object → 400;
 * - no `model` or a model it does not serve, no `voice` or a voice it does not have, no `input`
 *   (or an empty one), an `input` over 4,096 characters (`string_above_max_length`), a
 *   `response_format` that is not one of mp3, opus, aac, flac, wav, pcm, a `speed` outside
 *   0.25-4, an unknown field → 400.
 * Any other path or method is a 404.
 *
 * A request that passes is answered with real audio of its `response_format` (default mp3): the
 * files of `test/fixtures/speech/` (made with espeak-ng, ffmpeg and opusenc; see its README), and
 * for `wav` / `pcm` 16-bit mono 24 kHz samples of silence (with a RIFF header for `wav`). Tests can
 * make requests fail ({@link FakeSpeech.failNext}: a status, an empty answer, audio of another
 * format, more than 25 MB, a hang) or stop listening ({@link FakeSpeech.down}).
 */
import { readFileSync } from "node:fs";
import { modelNotFound, startOpenAiFake, type OpenAiFake, type OpenAiFakeRequest } from "./openai-audio.js";

/** The `response_format`s of the real endpoint. */
export const FAKE_SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
/** Voices of OpenAI's speech models. */
const VOICES = ["alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse"];
const FIELDS = ["model", "input", "voice", "instructions", "response_format", "speed", "stream_format"];
/** Longest `input`, in characters (code points). */
export const FAKE_SPEECH_MAX_INPUT = 4096;

const FIXTURES = new URL("../fixtures/speech/", import.meta.url);

/** The fixture bytes of `name` in `test/fixtures/speech/`. */
export function speechFixture(name: "speech.ogg" | "speech.mp3" | "speech.aac" | "speech.m4a" | "speech.flac"): Buffer {
  return readFileSync(new URL(name, FIXTURES));
}

/** One second of 16-bit mono 24 kHz silence, raw (`pcm`) or with a RIFF/WAVE header (`wav`). */
function silence(wav: boolean): Buffer {
  const samples = Buffer.alloc(24_000 * 2);
  if (!wav) return samples;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "latin1");
  header.writeUInt32LE(36 + samples.length, 4);
  header.write("WAVEfmt ", 8, "latin1");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(24_000, 24);
  header.writeUInt32LE(48_000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "latin1");
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}

/** The audio bytes and content type of each format. */
function audioOf(format: (typeof FAKE_SPEECH_FORMATS)[number]): { bytes: Buffer; type: string } {
  switch (format) {
    case "mp3":
      return { bytes: speechFixture("speech.mp3"), type: "audio/mpeg" };
    case "opus":
      return { bytes: speechFixture("speech.ogg"), type: "audio/ogg" };
    case "aac":
      return { bytes: speechFixture("speech.aac"), type: "audio/aac" };
    case "flac":
      return { bytes: speechFixture("speech.flac"), type: "audio/flac" };
    case "wav":
      return { bytes: silence(true), type: "audio/wav" };
    case "pcm":
      return { bytes: silence(false), type: "audio/pcm" };
  }
}

/** One request the fake received (whether accepted or not). */
export interface FakeSpeechRequest extends OpenAiFakeRequest {
  /** The JSON body, when it was one. */
  body?: Record<string, unknown>;
}

/** How the next request is failed ({@link FakeSpeech.failNext}). */
export type FakeSpeechFailure =
  { status: number; headers?: Record<string, string> } | "hang" | "empty" | "html" | "huge";

/** A running fake. */
export interface FakeSpeech extends OpenAiFake<FakeSpeechRequest, FakeSpeechFailure> {
  /** Models served. */
  models: string[];
}

/** Starts the fake on a free loopback port. */
export async function startFakeSpeech(options: { key?: string; models?: string[] } = {}): Promise<FakeSpeech> {
  const server = await startOpenAiFake<FakeSpeechRequest, FakeSpeechFailure>({
    path: "/v1/audio/speech",
    key: options.key ?? "sk-fake-tts-key-0123456789abcdef",
    record: (base) => base,
    handle: ({ req, res, bytes, record, answer, refuse, nextFailure, fail }) => {
      if (!/^application\/json\b/i.test(req.headers["content-type"] ?? ""))
        return refuse(400, "Invalid Content-Type header: expected application/json.");
      let body: unknown;
      try {
        body = JSON.parse(bytes.toString("utf8"));
      } catch {
        return refuse(400, "We could not parse the JSON body of your request.");
      }
      if (typeof body !== "object" || body === null || Array.isArray(body))
        return refuse(400, "The body of your request must be a JSON object.");
      const b = body as Record<string, unknown>;
      record.body = b;
      const unknown = Object.keys(b).find((k) => !FIELDS.includes(k));
      if (unknown)
        return refuse(400, `Unrecognized request argument supplied: ${unknown}`, unknown, "unknown_parameter");
      if (typeof b.model !== "string" || b.model === "")
        return refuse(400, "you must provide a model parameter", "model", "missing_required_parameter");
      if (!fake.models.includes(b.model)) return refuse(400, modelNotFound(b.model), "model", "model_not_found");
      if (typeof b.voice !== "string" || b.voice === "")
        return refuse(400, "you must provide a voice parameter", "voice", "missing_required_parameter");
      if (!VOICES.includes(b.voice))
        return refuse(
          400,
          `Invalid value for 'voice': '${b.voice}'. Supported values are: ${VOICES.join(", ")}.`,
          "voice",
          "invalid_value",
        );
      if (typeof b.input !== "string" || b.input === "")
        return refuse(400, "you must provide an input parameter", "input", "missing_required_parameter");
      const characters = [...b.input].length;
      if (characters > FAKE_SPEECH_MAX_INPUT)
        return refuse(
          400,
          `Invalid 'input': string too long. Expected a string with maximum length ${FAKE_SPEECH_MAX_INPUT}, ` +
            `but got a string with length ${characters} instead.`,
          "input",
          "string_above_max_length",
        );
      const format = b.response_format ?? "mp3";
      if (typeof format !== "string" || !(FAKE_SPEECH_FORMATS as readonly string[]).includes(format))
        return refuse(
          400,
          `Invalid value for 'response_format': '${String(format)}'. Supported values are: ${FAKE_SPEECH_FORMATS.join(", ")}.`,
          "response_format",
          "invalid_value",
        );
      if (b.speed !== undefined && (typeof b.speed !== "number" || b.speed < 0.25 || b.speed > 4))
        return refuse(400, "Invalid 'speed': expected a number from 0.25 to 4.", "speed", "invalid_value");

      const failure = nextFailure();
      if (failure === "empty") return answer(200, () => res.writeHead(200, { "content-type": "audio/ogg" }).end());
      if (failure === "html")
        return answer(200, () => res.writeHead(200, { "content-type": "text/html" }).end("<html>gateway</html>"));
      if (failure === "huge") {
        // 26 MB of audio, sent without a Content-Length (chunked): the client must stop reading at 25 MB.
        return answer(200, () => {
          res.writeHead(200, { "content-type": "audio/ogg" });
          const chunk = Buffer.alloc(1024 * 1024, 1);
          let left = 26;
          const pump = () => {
            while (left > 0) {
              left -= 1;
              if (!res.write(chunk)) return void res.once("drain", pump);
            }
            res.end();
          };
          res.on("error", () => {});
          pump();
        });
      }
      if (failure && fail(failure)) return;
      const audio = audioOf(format as (typeof FAKE_SPEECH_FORMATS)[number]);
      return answer(200, () =>
        res.writeHead(200, { "content-type": audio.type, "content-length": audio.bytes.length }).end(audio.bytes),
      );
    },
  });
  const fake: FakeSpeech = Object.assign(server, {
    models: options.models ?? ["tts-1", "tts-1-hd", "gpt-4o-mini-tts"],
  });
  return fake;
}
