/**
 * A strict local stand-in for an OpenAI-compatible transcription API
 * (`POST {base}/audio/transcriptions`, https://platform.openai.com/docs/api-reference/audio/createTranscription),
 * on loopback. It refuses what the real endpoint refuses, with OpenAI's error shape
 * (`{ "error": { "message", "type", "param", "code" } }`):
 * - a missing or wrong `Authorization: Bearer <key>` → 401 `invalid_api_key`;
 * - a request that is not `multipart/form-data` → 400;
 * - no `file` part, or a file whose name has no supported extension (flac, mp3, mp4, mpeg, mpga,
 *   m4a, ogg, wav, webm — the API reads the format from the name), or an empty file → 400;
 *   a file part whose content type is not audio (or `video/mp4`, `video/webm`,
 *   `application/octet-stream`) → 400; a file over 25 MB → 413;
 * - no `model`, a model it does not serve, an unknown `response_format`, a `language` that is not
 *   an ISO-639-1 code → 400.
 * Any other path or method is a 404.
 *
 * A request that passes is answered in its `response_format` (`json`: `{ "text": … }`) with the
 * transcript registered for its audio bytes ({@link FakeTranscription.say}), else
 * {@link FakeTranscription.fallback}. Tests can make it fail ({@link FakeTranscription.failNext}),
 * hang, or stop listening ({@link FakeTranscription.down}: connections are refused).
 */
import { readMultipart, type MultipartBody } from "./multipart.js";
import { modelNotFound, startOpenAiFake, type OpenAiFake, type OpenAiFakeRequest } from "./openai-audio.js";

/** File name endings the API accepts. */
const FORMATS = ["flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"];
const RESPONSE_FORMATS = ["json", "text", "srt", "verbose_json", "vtt"];
/** Largest file, bytes (25 MB). */
const MAX_FILE_BYTES = 25 * 1024 * 1024;

/** One request the fake received (whether accepted or not). */
export interface FakeTranscriptionRequest extends OpenAiFakeRequest {
  /** The text fields (`model`, `response_format`, `language`, `prompt`, …). */
  fields: Record<string, string>;
  /** The `file` part, when there was one. */
  file?: { filename: string; mimeType: string; size: number };
}

/** How the next request is failed ({@link FakeTranscription.failNext}). */
export type FakeTranscriptionFailure =
  { status: number; body?: unknown; headers?: Record<string, string> } | "hang" | "not-json";

/** A running fake. */
export interface FakeTranscription extends OpenAiFake<FakeTranscriptionRequest, FakeTranscriptionFailure> {
  /** Models served. */
  models: string[];
  /** Registers the transcript for audio whose bytes are `audio`. */
  say(audio: Buffer, text: string): void;
  /** The transcript of audio without one of its own. */
  fallback: string;
}

/** Starts the fake on a free loopback port. */
export async function startFakeTranscription(
  options: { key?: string; models?: string[] } = {},
): Promise<FakeTranscription> {
  const transcripts = new Map<string, string>();
  const server = await startOpenAiFake<FakeTranscriptionRequest, FakeTranscriptionFailure>({
    path: "/v1/audio/transcriptions",
    key: options.key ?? "sk-fake-stt-key-0123456789abcdef",
    record: (base) => ({ ...base, fields: {} }),
    handle: async ({ req, res, bytes, record, answer, refuse, nextFailure, fail }) => {
      if (!/^multipart\/form-data;\s*boundary=/i.test(req.headers["content-type"] ?? ""))
        return refuse(400, "Invalid Content-Type header: expected multipart/form-data.");
      let form: MultipartBody;
      try {
        form = await readMultipart(req.headers, bytes, { keepFiles: true });
      } catch {
        return refuse(400, "Could not parse multipart form.");
      }
      record.fields = Object.fromEntries(form.fields);
      const file = form.files.find((f) => f.name === "file");
      if (file) record.file = { filename: file.filename, mimeType: file.mimeType, size: file.size };
      const model = form.fields.get("model");
      if (!model) return refuse(400, "you must provide a model parameter", "model");
      if (!fake.models.includes(model)) return refuse(400, modelNotFound(model), "model", "model_not_found");
      if (!file) return refuse(400, "you must provide a file parameter", "file");
      const ext = /\.([a-z0-9]+)$/i.exec(file.filename)?.[1]?.toLowerCase() ?? "";
      if (!FORMATS.includes(ext))
        return refuse(
          400,
          `Invalid file format. Supported formats: ${JSON.stringify(FORMATS)}`,
          "file",
          "invalid_value",
        );
      if (!/^(audio\/[\w.+-]+|video\/(mp4|webm)|application\/octet-stream)$/i.test(file.mimeType))
        return refuse(400, `Invalid file content type ${file.mimeType}.`, "file", "invalid_value");
      if (file.size === 0) return refuse(400, "The audio file is empty.", "file");
      if (file.size > MAX_FILE_BYTES) return refuse(413, "Maximum content size limit (26214400) exceeded.", "file");
      const format = form.fields.get("response_format") ?? "json";
      if (!RESPONSE_FORMATS.includes(format))
        return refuse(400, `Invalid response_format ${format}.`, "response_format");
      const language = form.fields.get("language");
      if (language !== undefined && !/^[a-z]{2}$/.test(language))
        return refuse(400, `Invalid language ${language}: expected ISO-639-1.`, "language");

      const failure = nextFailure();
      if (failure === "not-json")
        return answer(200, () => res.writeHead(200, { "content-type": "text/html" }).end("<html>gateway</html>"));
      if (failure && fail(failure)) return;
      const text = transcripts.get(file.bytes!.toString("base64")) ?? fake.fallback;
      if (format === "text") return answer(200, () => res.writeHead(200, { "content-type": "text/plain" }).end(text));
      const body = JSON.stringify(
        format === "verbose_json"
          ? { task: "transcribe", language: language ?? "english", duration: 1, text, segments: [] }
          : { text },
      );
      return answer(200, () => res.writeHead(200, { "content-type": "application/json" }).end(body));
    },
  });
  const fake: FakeTranscription = Object.assign(server, {
    models: options.models ?? ["whisper-1"],
    fallback: "好的，收到。",
    say: (audio: Buffer, text: string) => void transcripts.set(audio.toString("base64"), text),
  });
  return fake;
}
