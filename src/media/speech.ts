/**
 * Text to speech through any OpenAI-compatible speech endpoint (OpenAI, a self-hosted
 * openedai-speech or Kokoro server): `POST {TTS_BASE_URL}/audio/speech` with the JSON body
 * `{ model, voice, input, response_format }` and the audio bytes as the answer. The bytes are
 * checked before anyone hears them: not empty, at most {@link MAX_SPEECH_BYTES}, and of the
 * format asked for (by their first bytes: `OggS` for opus, an ID3 tag or an MPEG frame for mp3, …).
 *
 * A passing failure (no answer, 429, 5xx) is retried as a transcription is (`endpoint.ts`): at
 * most {@link SPEECH_RETRIES} times, after a doubling, jittered wait from 1 s (and a 429's
 * `Retry-After` of at most 10 s first); a timeout, a refusal, a wrong key or bad audio is not.
 *
 * Source: https://platform.openai.com/docs/api-reference/audio/createSpeech (the fields; `input`
 * at most 4096 characters; `response_format` mp3 (default), opus, aac, flac, wav, pcm).
 */
import type { Config } from "../config.js";
import { EndpointError, errorCode, retryAfterOf, retryPassing } from "./endpoint.js";

/** Longest time one speech request may take, in ms (the answer's deadline may end it sooner). */
export const SPEECH_TIMEOUT_MS = 60_000;
/** Retries of a speech request after a passing failure (unreachable, 429, 5xx): at most 3 requests in all. */
export const SPEECH_RETRIES = 2;
/** First wait before a retry, in ms; each next one doubles, times a random 1-2. */
export const SPEECH_RETRY_MIN_MS = 1000;
/** Longest `Retry-After` of a 429 that is still waited for, in ms. */
export const MAX_SPEECH_RETRY_AFTER_MS = 10_000;
/** Largest audio taken from the endpoint, in bytes (25 MB, the OpenAI audio limit; far above 1,000 characters of speech). */
export const MAX_SPEECH_BYTES = 25 * 1024 * 1024;
/** Longest `input` the OpenAI endpoint takes, in characters (the API reference). */
export const MAX_SPEECH_INPUT = 4096;

/** The `response_format`s of the speech endpoint. */
export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
/** One of {@link SPEECH_FORMATS}. */
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/** The file name ending and content type of each format's bytes (opus comes in an Ogg container; aac as ADTS). */
export const SPEECH_FILES: Record<SpeechFormat, { extension: string; mimeType: string }> = {
  mp3: { extension: "mp3", mimeType: "audio/mpeg" },
  opus: { extension: "ogg", mimeType: "audio/ogg" },
  aac: { extension: "aac", mimeType: "audio/aac" },
  flac: { extension: "flac", mimeType: "audio/flac" },
  wav: { extension: "wav", mimeType: "audio/wav" },
  pcm: { extension: "pcm", mimeType: "audio/pcm" },
};

/**
 * Whether `bytes` begin as a file of `format` does: Ogg pages holding an `OpusHead`, an ID3 tag or
 * an MPEG audio frame header (mp3), an ADTS header (aac), `fLaC`, RIFF/WAVE. Raw pcm has no header
 * (any even length passes).
 */
export function looksLike(format: SpeechFormat, bytes: Buffer): boolean {
  const ascii = (from: number, to: number) => bytes.subarray(from, to).toString("latin1");
  switch (format) {
    case "opus":
      return ascii(0, 4) === "OggS" && bytes.subarray(0, 512).includes("OpusHead");
    case "mp3":
      return ascii(0, 3) === "ID3" || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0);
    case "aac":
      return bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xf6) === 0xf0;
    case "flac":
      return ascii(0, 4) === "fLaC";
    case "wav":
      return ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE";
    case "pcm":
      return bytes.length % 2 === 0;
  }
}

/**
 * Why a speech request gave no audio:
 * - `unreachable`: no answer (connection refused, DNS, reset);
 * - `unauthorized`: 401 or 403 (a wrong or missing `TTS_API_KEY`);
 * - `rate_limited`: 429;
 * - `timeout`: no answer within {@link SPEECH_TIMEOUT_MS};
 * - `refused`: another 4xx (the text, the voice or the model was not accepted);
 * - `failed`: a 5xx, or audio that is not of the format asked for;
 * - `empty`: an answer without a byte;
 * - `too_large`: more than {@link MAX_SPEECH_BYTES}.
 */
export type SpeechProblem =
  "unreachable" | "unauthorized" | "rate_limited" | "timeout" | "refused" | "failed" | "empty" | "too_large";

/** A speech request that gave no usable audio. Its message is for logs: the status and the API's error code, never the key. */
export class SpeechError extends EndpointError<SpeechProblem> {
  /**
   * @param problem - see {@link SpeechProblem}.
   * @param options - see {@link EndpointError}.
   */
  constructor(
    problem: SpeechProblem,
    message: string,
    options?: { cause?: unknown; status?: number; retryAfterMs?: number },
  ) {
    super(problem, message, options);
    this.name = "SpeechError";
  }
}

/** One text to speak. */
export interface SpeechRequest {
  /** What to say, at most {@link MAX_SPEECH_INPUT} characters (the caller shortens it: `spokenText`). */
  text: string;
  /** The audio format asked for (Telegram and Discord voice messages: `opus`). */
  format: SpeechFormat;
  /** Aborts the request (the answer's deadline); its reason is rethrown as it is. */
  signal?: AbortSignal;
}

/** Spoken audio and what it took. */
export interface Speech {
  audio: Buffer;
  format: SpeechFormat;
  /** Time from the first request to the last byte, in ms (retries and their waits included). */
  ms: number;
  /** Requests it took: 1, or more after retried failures. */
  attempts: number;
}

/** Talks to one OpenAI-compatible speech endpoint; see the module comment. */
export class SpeechClient {
  readonly #url: string;
  readonly #key: string | undefined;
  readonly #model: string;
  readonly #voice: string;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #retryMinMs: number;

  /**
   * @param config - `TTS_BASE_URL` (required here), `TTS_API_KEY` (sent as `Authorization: Bearer`, when set), `TTS_MODEL`, `TTS_VOICE`.
   * @param options.timeoutMs - of each request, default {@link SPEECH_TIMEOUT_MS}; `retries` default
   *   {@link SPEECH_RETRIES}; `retryMinMs` default {@link SPEECH_RETRY_MIN_MS}.
   * @throws {Error} when `TTS_BASE_URL` is unset (voice replies are off: do not build a client).
   */
  constructor(
    config: Pick<Config, "TTS_BASE_URL" | "TTS_API_KEY" | "TTS_MODEL" | "TTS_VOICE">,
    options: { timeoutMs?: number; retries?: number; retryMinMs?: number } = {},
  ) {
    if (!config.TTS_BASE_URL) throw new Error("TTS_BASE_URL is not set");
    this.#url = `${config.TTS_BASE_URL.replace(/\/+$/, "")}/audio/speech`;
    this.#key = config.TTS_API_KEY;
    this.#model = config.TTS_MODEL;
    this.#voice = config.TTS_VOICE;
    this.#timeoutMs = options.timeoutMs ?? SPEECH_TIMEOUT_MS;
    this.#retries = options.retries ?? SPEECH_RETRIES;
    this.#retryMinMs = options.retryMinMs ?? SPEECH_RETRY_MIN_MS;
  }

  /**
   * Speaks `request.text`, retrying passing failures (see the module comment).
   * @throws {SpeechError} for every failure of the endpoint (see {@link SpeechProblem}) — the last
   *   one when retries ran out; the request signal's reason when it aborted.
   */
  async speak(request: SpeechRequest): Promise<Speech> {
    const started = performance.now();
    const { value: audio, attempts } = await retryPassing(() => this.#once(request), {
      retries: this.#retries,
      minMs: this.#retryMinMs,
      maxRetryAfterMs: MAX_SPEECH_RETRY_AFTER_MS,
      signal: request.signal,
      passing: (error) => (error instanceof SpeechError && error.passing ? error : undefined),
      retryAfterMs: (error) => error.retryAfterMs,
    });
    return { audio, format: request.format, ms: Math.round(performance.now() - started), attempts };
  }

  /** One request. @returns the audio bytes. @throws as {@link speak}. */
  async #once(request: SpeechRequest): Promise<Buffer> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let response: Response;
    let audio: Buffer;
    try {
      response = await fetch(this.#url, {
        method: "POST",
        body: JSON.stringify({
          model: this.#model,
          voice: this.#voice,
          input: request.text,
          response_format: request.format,
        }),
        headers: {
          "content-type": "application/json",
          ...(this.#key ? { authorization: `Bearer ${this.#key}` } : {}),
        },
        redirect: "error",
        signal,
      });
      audio = await readAtMost(response, MAX_SPEECH_BYTES);
    } catch (error) {
      if (request.signal?.aborted) throw request.signal.reason;
      if (error instanceof SpeechError) throw error;
      if (timeout.aborted) throw new SpeechError("timeout", `no answer within ${this.#timeoutMs} ms`);
      const cause = (error as { cause?: { code?: string } }).cause;
      throw new SpeechError(
        "unreachable",
        `the speech endpoint could not be reached (${cause?.code ?? (error as Error).name})`,
      );
    }
    const status = response.status;
    if (!response.ok) {
      const problem: SpeechProblem =
        status === 401 || status === 403
          ? "unauthorized"
          : status === 429
            ? "rate_limited"
            : status >= 500
              ? "failed"
              : "refused";
      const retryAfterMs = status === 429 ? retryAfterOf(response.headers.get("retry-after")) : undefined;
      throw new SpeechError(problem, `the speech endpoint answered ${status}${errorCode(audio.toString("utf8"))}`, {
        status,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    if (audio.length === 0) throw new SpeechError("empty", "the speech endpoint answered without audio", { status });
    if (!looksLike(request.format, audio))
      throw new SpeechError(
        "failed",
        `the speech endpoint answered ${status} with something that is not ${request.format} audio ` +
          `(${response.headers.get("content-type") ?? "no content type"})`,
        { status },
      );
    return audio;
  }
}

/**
 * The body of `response`, read until `max` bytes.
 * @throws {SpeechError} `too_large` as soon as it passes `max` (the rest is not read).
 */
async function readAtMost(response: Response, max: number): Promise<Buffer> {
  const announced = Number(response.headers.get("content-length") ?? NaN);
  if (response.ok && announced > max) {
    await response.body?.cancel().catch(() => {});
    throw new SpeechError("too_large", `the speech endpoint announced ${announced} bytes, over ${max}`, {
      status: response.status,
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new SpeechError("too_large", `the speech endpoint sent more than ${max} bytes`, {
        status: response.status,
      });
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}
