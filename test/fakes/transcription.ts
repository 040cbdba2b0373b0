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
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readMultipart, type MultipartBody } from "./multipart.js";

/** File name endings the API accepts. */
const FORMATS = ["flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"];
const RESPONSE_FORMATS = ["json", "text", "srt", "verbose_json", "vtt"];
/** Largest file, bytes (25 MB). */
const MAX_FILE_BYTES = 25 * 1024 * 1024;

/** One request the fake received (whether accepted or not). */
export interface FakeTranscriptionRequest {
  /** The status it was answered with. */
  status: number;
  /** The `Authorization` header, as sent (tests check the key travelled only there). */
  authorization: string | undefined;
  contentType: string | undefined;
  /** The text fields (`model`, `response_format`, `language`, `prompt`, …). */
  fields: Record<string, string>;
  /** The `file` part, when there was one. */
  file?: { filename: string; mimeType: string; size: number };
}

/** How the next request is failed ({@link FakeTranscription.failNext}). */
export type FakeTranscriptionFailure =
  { status: number; body?: unknown; headers?: Record<string, string> } | "hang" | "not-json";

/** A running fake. */
export interface FakeTranscription {
  /** What to use as `STT_BASE_URL` (ends in `/v1`). */
  base: string;
  /** The only key accepted. */
  key: string;
  /** Models served. */
  models: string[];
  /** Every request, in order. */
  requests: FakeTranscriptionRequest[];
  /** Registers the transcript for audio whose bytes are `audio`. */
  say(audio: Buffer, text: string): void;
  /** The transcript of audio without one of its own. */
  fallback: string;
  /** Fails the next `count` requests (default 1) that would have been accepted. */
  failNext(failure: FakeTranscriptionFailure, count?: number): void;
  /** Stops listening (connections are refused) until {@link up}. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

function error(
  res: ServerResponse,
  status: number,
  message: string,
  param: string | null,
  code: string | null,
  type = "invalid_request_error",
): void {
  const text = JSON.stringify({ error: { message, type, param, code } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Starts the fake on a free loopback port. */
export async function startFakeTranscription(
  options: { key?: string; models?: string[] } = {},
): Promise<FakeTranscription> {
  const key = options.key ?? "sk-fake-stt-key-0123456789abcdef";
  const transcripts = new Map<string, string>();
  const failures: FakeTranscriptionFailure[] = [];
  const hanging = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse, fake: FakeTranscription): Promise<void> => {
    const record: FakeTranscriptionRequest = {
      status: 0,
      authorization: req.headers.authorization,
      contentType: req.headers["content-type"],
      fields: {},
    };
    const answer = (status: number, send: () => void) => {
      record.status = status;
      fake.requests.push(record);
      send();
    };
    const url = new URL(req.url ?? "/", "http://fake");
    const bytes = await readBody(req);
    if (req.method !== "POST" || url.pathname !== "/v1/audio/transcriptions") {
      return answer(404, () => error(res, 404, `Invalid URL (${req.method} ${url.pathname})`, null, null));
    }
    if (req.headers.authorization !== `Bearer ${key}`) {
      return answer(401, () =>
        error(
          res,
          401,
          req.headers.authorization ? "Incorrect API key provided." : "You didn't provide an API key.",
          null,
          "invalid_api_key",
        ),
      );
    }
    if (!/^multipart\/form-data;\s*boundary=/i.test(req.headers["content-type"] ?? "")) {
      return answer(400, () =>
        error(res, 400, "Invalid Content-Type header: expected multipart/form-data.", null, null),
      );
    }
    let form: MultipartBody;
    try {
      form = await readMultipart(req.headers, bytes, { keepFiles: true });
    } catch {
      return answer(400, () => error(res, 400, "Could not parse multipart form.", null, null));
    }
    record.fields = Object.fromEntries(form.fields);
    const file = form.files.find((f) => f.name === "file");
    if (file) record.file = { filename: file.filename, mimeType: file.mimeType, size: file.size };
    const model = form.fields.get("model");
    if (!model) return answer(400, () => error(res, 400, "you must provide a model parameter", "model", null));
    if (!fake.models.includes(model))
      return answer(400, () =>
        error(
          res,
          400,
          `The model \`${model}\` does not exist or you do not have access to it.`,
          "model",
          "model_not_found",
        ),
      );
    if (!file) return answer(400, () => error(res, 400, "you must provide a file parameter", "file", null));
    const ext = /\.([a-z0-9]+)$/i.exec(file.filename)?.[1]?.toLowerCase() ?? "";
    if (!FORMATS.includes(ext))
      return answer(400, () =>
        error(res, 400, `Invalid file format. Supported formats: ${JSON.stringify(FORMATS)}`, "file", "invalid_value"),
      );
    if (!/^(audio\/[\w.+-]+|video\/(mp4|webm)|application\/octet-stream)$/i.test(file.mimeType)) {
      return answer(400, () => error(res, 400, `Invalid file content type ${file.mimeType}.`, "file", "invalid_value"));
    }
    if (file.size === 0) return answer(400, () => error(res, 400, "The audio file is empty.", "file", null));
    if (file.size > MAX_FILE_BYTES)
      return answer(413, () => error(res, 413, "Maximum content size limit (26214400) exceeded.", "file", null));
    const format = form.fields.get("response_format") ?? "json";
    if (!RESPONSE_FORMATS.includes(format))
      return answer(400, () => error(res, 400, `Invalid response_format ${format}.`, "response_format", null));
    const language = form.fields.get("language");
    if (language !== undefined && !/^[a-z]{2}$/.test(language))
      return answer(400, () => error(res, 400, `Invalid language ${language}: expected ISO-639-1.`, "language", null));

    const failure = failures.shift();
    if (failure === "hang") {
      record.status = -1;
      fake.requests.push(record);
      hanging.add(res);
      return;
    }
    if (failure === "not-json")
      return answer(200, () => res.writeHead(200, { "content-type": "text/html" }).end("<html>gateway</html>"));
    if (failure) {
      return answer(failure.status, () => {
        const text = JSON.stringify(
          failure.body ?? {
            error: {
              message: `failure ${failure.status}`,
              type: failure.status === 429 ? "rate_limit_exceeded" : "server_error",
              param: null,
              code: null,
            },
          },
        );
        res.writeHead(failure.status, { "content-type": "application/json", ...failure.headers }).end(text);
      });
    }
    const text = transcripts.get(file.bytes!.toString("base64")) ?? fake.fallback;
    if (format === "text") return answer(200, () => res.writeHead(200, { "content-type": "text/plain" }).end(text));
    const body = JSON.stringify(
      format === "verbose_json"
        ? { task: "transcribe", language: language ?? "english", duration: 1, text, segments: [] }
        : { text },
    );
    return answer(200, () => res.writeHead(200, { "content-type": "application/json" }).end(body));
  };

  let server: Server;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer((req, res) => {
        handle(req, res, fake).catch((err: unknown) => {
          if (!res.headersSent) error(res, 500, String(err), null, null, "server_error");
        });
      });
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const port = await listen(0);
  const fake: FakeTranscription = {
    base: `http://127.0.0.1:${port}/v1`,
    key,
    models: options.models ?? ["whisper-1"],
    requests: [],
    fallback: "好的，收到。",
    say: (audio, text) => void transcripts.set(audio.toString("base64"), text),
    failNext: (failure, count = 1) => {
      for (let i = 0; i < count; i += 1) failures.push(failure);
    },
    down: stop,
    up: async () => void (await listen(port)),
    close: stop,
  };
  return fake;
}
