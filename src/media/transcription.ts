/**
 * Speech to text through any OpenAI-compatible transcription endpoint (OpenAI, Groq, a self-hosted
 * whisper server): `POST {STT_BASE_URL}/audio/transcriptions` as `multipart/form-data` with
 * `file`, `model` and `response_format=json` — and, when the bot speaks zh-TW, `language=zh` and a
 * short Traditional-Chinese `prompt` (whisper follows the prompt's script and punctuation) — and
 * the answer's `text`. The body is built with Node's own `FormData` and `Blob` (undici), not by hand.
 * A passing failure (no answer, 429, 5xx) is retried with p-retry (`endpoint.ts`, shared with speech): at most {@link TRANSCRIPTION_RETRIES}
 * times, after a doubling, jittered wait from 1 s (and a 429's `Retry-After`, when it asks for at
 * most {@link MAX_RETRY_AFTER_MS}); a timeout, a refusal, a wrong key or an empty transcript is not.
 *
 * The endpoint is not trusted with what it writes: the transcript is made one plain line, as
 * people's names are (`plainLine`: ESC, BEL and other controls become spaces, bidi and zero-width
 * characters are removed), at most {@link MAX_TRANSCRIPT_CHARS}, before the model or a chat sees
 * it; one that holds no speech — a known Whisper hallucination or only non-speech markers
 * (`字幕由Amara.org社区提供`, `[BLANK_AUDIO]`: `hallucinations.ts`) — is refused as empty.
 *
 * Source: https://platform.openai.com/docs/api-reference/audio/createTranscription (fields, the
 * `{ "text": … }` answer of `response_format=json`, the accepted file types by name: flac, mp3,
 * mp4, mpeg, mpga, m4a, ogg, wav, webm), and https://console.groq.com/docs/speech-to-text (same API).
 */
import { z } from "zod";
import type { Config, Locale } from "../config.js";
import { plainLine } from "../plain-text.js";
import { EndpointError, errorCode, retryAfterOf, retryPassing } from "./endpoint.js";
import { isNonSpeech } from "./hallucinations.js";

/** Longest time one transcription may take, in ms (the answer's deadline may end it sooner). */
export const TRANSCRIPTION_TIMEOUT_MS = 60_000;

/** Retries of a transcription after a passing failure (unreachable, 429, 5xx): at most 3 requests in all. */
export const TRANSCRIPTION_RETRIES = 2;
/** First wait before a retry, in ms; each next one doubles, times a random 1-2 (p-retry's `randomize`). */
export const TRANSCRIPTION_RETRY_MIN_MS = 1000;
/** Longest `Retry-After` of a 429 that is still waited for, in ms; a longer one fails at once (the answer has a deadline). */
export const MAX_RETRY_AFTER_MS = 10_000;

/** Most characters (code points) of a transcript kept: far more than 300 s of speech, far less than a flood. */
export const MAX_TRANSCRIPT_CHARS = 10_000;

/**
 * The `prompt` sent with the zh-TW locale: a short sentence in Traditional characters with
 * full-width punctuation, so the model writes the transcript the same way.
 */
export const ZH_TW_PROMPT = "以下是一則臺灣使用者的語音訊息，以繁體中文和全形標點寫成。";

/**
 * Why a transcription failed:
 * - `unreachable`: no answer (connection refused, DNS, reset);
 * - `unauthorized`: 401 or 403 (a wrong or missing `STT_API_KEY`);
 * - `rate_limited`: 429 (requests or quota);
 * - `timeout`: no answer within {@link TRANSCRIPTION_TIMEOUT_MS};
 * - `refused`: another 4xx (the file or a field was not accepted);
 * - `failed`: a 5xx, or an answer that is not JSON with a `text` string;
 * - `empty`: a transcript with nothing in it, or no speech: a known hallucination of silence or only
 *   non-speech markers (`isNonSpeech`).
 */
export type TranscriptionProblem =
  "unreachable" | "unauthorized" | "rate_limited" | "timeout" | "refused" | "failed" | "empty";

/** A transcription that gave no usable text. Its message is for logs: the status and the API's error code, never the key or the audio. */
export class TranscriptionError extends EndpointError<TranscriptionProblem> {
  /**
   * @param problem - see {@link TranscriptionProblem}.
   * @param options - see {@link EndpointError}.
   */
  constructor(
    problem: TranscriptionProblem,
    message: string,
    options?: { cause?: unknown; status?: number; retryAfterMs?: number },
  ) {
    super(problem, message, options);
    this.name = "TranscriptionError";
  }
}

/** One file to transcribe. */
export interface TranscriptionRequest {
  /** The audio bytes, as downloaded (never stored). */
  audio: Buffer;
  /** The file name sent in the `file` part (its extension tells the API the format, e.g. `voice.ogg`). */
  fileName: string;
  /** The `file` part's content type, e.g. `audio/ogg`. */
  mimeType: string;
  /** The conversation's language (its `/settings` language, else `BOT_LOCALE`): zh-TW adds `language=zh` and {@link ZH_TW_PROMPT}. */
  locale: Locale;
  /** Aborts the request (the answer's deadline); its reason is rethrown as it is. */
  signal?: AbortSignal;
}

/** A transcript and what it took. */
export interface Transcription {
  /** The transcript as the endpoint wrote it, made one plain line (not converted). */
  text: string;
  /** Time from the first request to the parsed answer, in ms (retries and their waits included). */
  ms: number;
  /** Requests it took: 1, or more after retried failures. */
  attempts: number;
}

/** The `response_format=json` answer: `{ "text": "…" }` (other fields ignored). */
const JsonAnswer = z.object({ text: z.string() });

/** Talks to one OpenAI-compatible transcription endpoint; see the module comment. */
export class TranscriptionClient {
  readonly #url: string;
  readonly #key: string | undefined;
  readonly #model: string;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #retryMinMs: number;

  /**
   * @param config - `STT_BASE_URL` (required here), `STT_API_KEY` (sent as `Authorization: Bearer`, when set), `STT_MODEL`.
   * @param options.timeoutMs - of each request, default {@link TRANSCRIPTION_TIMEOUT_MS}.
   * @param options.retries - default {@link TRANSCRIPTION_RETRIES}; `retryMinMs` default {@link TRANSCRIPTION_RETRY_MIN_MS}.
   * @throws {Error} when `STT_BASE_URL` is unset (voice is off: do not build a client).
   */
  constructor(
    config: Pick<Config, "STT_BASE_URL" | "STT_API_KEY" | "STT_MODEL">,
    options: { timeoutMs?: number; retries?: number; retryMinMs?: number } = {},
  ) {
    if (!config.STT_BASE_URL) throw new Error("STT_BASE_URL is not set");
    this.#url = `${config.STT_BASE_URL.replace(/\/+$/, "")}/audio/transcriptions`;
    this.#key = config.STT_API_KEY;
    this.#model = config.STT_MODEL;
    this.#timeoutMs = options.timeoutMs ?? TRANSCRIPTION_TIMEOUT_MS;
    this.#retries = options.retries ?? TRANSCRIPTION_RETRIES;
    this.#retryMinMs = options.retryMinMs ?? TRANSCRIPTION_RETRY_MIN_MS;
  }

  /**
   * Transcribes one file, retrying passing failures (see the module comment).
   * @throws {TranscriptionError} for every failure of the endpoint (see {@link TranscriptionProblem}),
   *   including an empty transcript — the last one when retries ran out; the request signal's
   *   reason when it aborted (also during a wait between two requests).
   */
  async transcribe(request: TranscriptionRequest): Promise<Transcription> {
    const started = performance.now();
    const { value: text, attempts } = await retryPassing(() => this.#once(request), {
      retries: this.#retries,
      minMs: this.#retryMinMs,
      maxRetryAfterMs: MAX_RETRY_AFTER_MS,
      signal: request.signal,
      passing: (error) => (error instanceof TranscriptionError && error.passing ? error : undefined),
      retryAfterMs: (error) => error.retryAfterMs,
    });
    return { text, ms: Math.round(performance.now() - started), attempts };
  }

  /** One request. @returns the transcript as one plain line. @throws as {@link transcribe}. */
  async #once(request: TranscriptionRequest): Promise<string> {
    const form = new FormData();
    form.append("file", new Blob([request.audio], { type: request.mimeType }), request.fileName);
    form.append("model", this.#model);
    form.append("response_format", "json");
    if (request.locale === "zh-TW") {
      form.append("language", "zh");
      form.append("prompt", ZH_TW_PROMPT);
    }
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let response: Response;
    let body: string;
    try {
      response = await fetch(this.#url, {
        method: "POST",
        body: form,
        headers: { accept: "application/json", ...(this.#key ? { authorization: `Bearer ${this.#key}` } : {}) },
        redirect: "error",
        signal,
      });
      body = await response.text();
    } catch (error) {
      if (request.signal?.aborted) throw request.signal.reason;
      if (timeout.aborted) throw new TranscriptionError("timeout", `no answer within ${this.#timeoutMs} ms`);
      const cause = (error as { cause?: { code?: string } }).cause;
      throw new TranscriptionError(
        "unreachable",
        `the transcription endpoint could not be reached (${cause?.code ?? (error as Error).name})`,
      );
    }
    if (!response.ok) {
      const status = response.status;
      const problem: TranscriptionProblem =
        status === 401 || status === 403
          ? "unauthorized"
          : status === 429
            ? "rate_limited"
            : status >= 500
              ? "failed"
              : "refused";
      const retryAfterMs = status === 429 ? retryAfterOf(response.headers.get("retry-after")) : undefined;
      throw new TranscriptionError(problem, `the transcription endpoint answered ${status}${errorCode(body)}`, {
        status,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    let parsed: z.output<typeof JsonAnswer>;
    try {
      parsed = JsonAnswer.parse(JSON.parse(body));
    } catch {
      throw new TranscriptionError(
        "failed",
        `the transcription endpoint answered ${response.status} without a JSON text (${response.headers.get("content-type") ?? "no content type"})`,
        { status: response.status },
      );
    }
    const text = plainLine(parsed.text, MAX_TRANSCRIPT_CHARS);
    if (text === "") throw new TranscriptionError("empty", "the transcript is empty", { status: response.status });
    if (isNonSpeech(text))
      throw new TranscriptionError(
        "empty",
        "the transcript is no speech (a known hallucination or non-speech markers)",
        {
          status: response.status,
        },
      );
    return text;
  }
}
