/**
 * The worker's media step, between taking a message and running the agent loop: gathers a
 * Telegram album (`src/media/album.ts`), downloads and converts the message's files through the
 * platform's outbound (`Outbound.media`), and gives the loop the content blocks — or the short
 * refusal to send instead of calling the model. A message without files costs nothing here (no
 * Redis command, no download).
 *
 * Images and documents reach the model only in the run that received them: everything stored
 * (the history, a run's checkpoint, a run paused for an approval) holds their placeholders
 * instead ({@link MessageMedia.strip}), so Redis never holds file data.
 *
 * A voice message or audio file, with `STT_BASE_URL` set, is transcribed instead
 * ({@link readVoice}): the limits are checked from what the platform announced (duration, size)
 * before anything is downloaded, the bytes go to the transcription endpoint and are dropped, and
 * the message to answer becomes a text turn (`[voice 0:07] transcript`, then the caption). Any
 * failure is a short answer without the model. Refusals and the transcription speak the
 * conversation's language (`parts.locale`: its `/settings` language, else `BOT_LOCALE`).
 */
import type { ContentBlockParam, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { RedisClient } from "../redis.js";
import type { AgentOutcome } from "../agent/contract.js";
import type { Config, Locale } from "../config.js";
import type { Logger } from "../log.js";
import { AlbumStore } from "../media/album.js";
import { MediaError } from "../media/errors.js";
import { AUDIO_MAX_BYTES } from "../media/limits.js";
import { prepareMedia } from "../media/prepare.js";
import { mediaRefusal, voiceRefusal, type VoiceProblem } from "../media/refusal.js";
import { TranscriptionClient, TranscriptionError } from "../media/transcription.js";
import { audioDurationOf, audioFormatOf, toTraditional, voiceTurnText } from "../media/voice.js";
import type { Outbound } from "../outbound.js";
import type { IncomingMessage, MediaRef } from "../queue/incoming.js";
import type { Tracer } from "../trace/tracer.js";

/** What the media step found. */
export interface MessageMedia {
  /** The message to answer: as it came, or for an album with every item's files and captions. */
  message: IncomingMessage;
  /** Content blocks for the user turn, before its text; undefined for a message without files. */
  blocks?: ContentBlockParam[];
  /** The answer to send instead of calling the model, when a file cannot be read. */
  refusal?: string;
  /** The transcript of a voice message or audio file (then {@link message}'s text is its turn, `[voice 0:07] …`). */
  voice?: VoiceTranscript;
  /** `messages` with this run's file blocks replaced by their text placeholders (a new list; the same list when there are none). */
  strip(messages: MessageParam[]): MessageParam[];
  /** `outcome` with {@link strip} applied to the paused run's messages (for saving an approval). */
  stripOutcome<T extends AgentOutcome>(outcome: T): T;
}

/** What a transcribed voice message or audio file was. */
export interface VoiceTranscript {
  kind: "voice" | "audio";
  /** The transcript, converted to Traditional characters with the zh-TW locale. */
  transcript: string;
  /** The duration the platform announced, in seconds; undefined when it announced none. */
  seconds?: number;
  /** Bytes downloaded (and sent to the transcription endpoint; never kept). */
  bytes: number;
  /** Time the transcription took, in ms. */
  ms: number;
}

const none = (message: IncomingMessage): MessageMedia => ({
  message,
  strip: (m) => m,
  stripOutcome: <T extends AgentOutcome>(o: T): T => o,
});

/**
 * Reads the files of `message`.
 *
 * @param options.resuming - true when the run resumes from a checkpoint: its saved messages already
 *   hold the files' placeholders and the loop ignores new content blocks, so nothing is downloaded
 *   or converted (a file that can no longer be downloaded must not refuse a run that already changed
 *   data). An album is still gathered — the first attempt recorded what it took, so this costs two
 *   Redis commands and no wait — so that the returned message keeps the album's text (the run's trace
 *   shows it).
 * @throws the signal's reason when the answer's deadline passed; Redis errors (transient: the job retries).
 */
export async function readMedia(
  parts: { config: Config; redis: RedisClient; log: Logger; locale: Locale; tracer?: Tracer },
  message: IncomingMessage,
  outbound: Outbound,
  signal: AbortSignal,
  options: { resuming?: boolean } = {},
): Promise<MessageMedia> {
  if (!message.media && !message.mediaGroupId) return none(message);
  const full = await new AlbumStore(parts.redis).collect(message, { signal, quietMs: parts.config.ALBUM_QUIET_MS });
  const refs = full.media ?? [];
  if (refs.length === 0 || options.resuming) return none(full);
  if (parts.config.STT_BASE_URL && refs.some(isAudio)) return readVoice(parts, full, outbound, signal);
  const maxImages = parts.config.MAX_IMAGES_PER_MESSAGE;
  try {
    const prepared = await prepareMedia(refs, outbound.media, { maxImages, signal });
    parts.log.info(
      { files: prepared.placeholders.length, content: { files: prepared.placeholders } },
      "files read for the model",
    );
    const placeholderOf = new Map<ContentBlockParam, string>(
      prepared.blocks.map((b, i) => [b, prepared.placeholders[i]!]),
    );
    const strip = (messages: MessageParam[]): MessageParam[] =>
      messages.map((m) =>
        m.role === "user" && Array.isArray(m.content) && m.content.some((b) => placeholderOf.has(b))
          ? {
              ...m,
              content: m.content.map((b) =>
                placeholderOf.has(b) ? { type: "text" as const, text: placeholderOf.get(b)! } : b,
              ),
            }
          : m,
      );
    return {
      message: full,
      blocks: prepared.blocks,
      strip,
      stripOutcome: <T extends AgentOutcome>(outcome: T): T =>
        outcome.kind === "approval"
          ? { ...outcome, run: { ...outcome.run, messages: strip(outcome.run.messages) } }
          : outcome,
    };
  } catch (error) {
    if (!(error instanceof MediaError)) throw error;
    parts.log.warn(
      { problem: error.problem, what: error.what, reason: error.message },
      "a file of the message cannot be read; answering without the model",
    );
    return { ...none(full), refusal: mediaRefusal(error, parts.locale, maxImages) };
  }
}

/** True for a voice message or an audio file. */
const isAudio = (ref: MediaRef): boolean => ref.kind === "voice" || ref.kind === "audio";

/**
 * The voice step (`STT_BASE_URL` set): one voice message or audio file is checked against
 * `MAX_VOICE_SECONDS` (the platform's duration) and {@link AUDIO_MAX_BYTES} (its announced size)
 * before the download, downloaded within that size (a file whose platform announced no duration is
 * checked by its own headers now, before the transcription), transcribed, converted to Traditional with the
 * conversation's zh-TW language, and becomes the message's text turn ({@link voiceTurnText}). The trace records the
 * duration, the bytes and the transcription time (or why it was refused).
 *
 * @returns the message with its text turn and {@link MessageMedia.voice}, or a refusal
 *   ({@link voiceRefusal}): the model is not called.
 * @throws the signal's reason when the answer's deadline passed.
 */
async function readVoice(
  parts: { config: Config; log: Logger; locale: Locale; tracer?: Tracer },
  full: IncomingMessage,
  outbound: Outbound,
  signal: AbortSignal,
): Promise<MessageMedia> {
  const { config, log, locale, tracer } = parts;
  const refs = full.media ?? [];
  const ref = refs[0]!;
  const kind = ref.kind === "voice" ? "voice" : "audio";
  const facts = {
    kind,
    ...(ref.duration !== undefined ? { seconds: ref.duration } : {}),
    ...(ref.size !== undefined ? { announcedBytes: ref.size } : {}),
    ...(ref.mimeType ? { type: ref.mimeType } : {}),
  };
  const refuse = (problem: VoiceProblem, reason: string, extra: Record<string, unknown> = {}): MessageMedia => {
    log.warn(
      { problem, ...facts, ...extra, reason },
      "a voice message is not transcribed; answering without the model",
    );
    tracer?.event("transcription", { ok: false, problem, ...facts, ...extra });
    return { ...none(full), refusal: voiceRefusal(problem, locale, config.MAX_VOICE_SECONDS) };
  };
  if (refs.length > 1) return refuse("several", `${refs.length} files in the message, one of them audio`);
  const upload = audioFormatOf(ref);
  if (!upload) return refuse("format", `an audio type that is not transcribed (${ref.mimeType ?? "no type"})`);
  if (ref.duration !== undefined && ref.duration > config.MAX_VOICE_SECONDS)
    return refuse("too_long", `announced ${ref.duration} s, over MAX_VOICE_SECONDS ${config.MAX_VOICE_SECONDS}`);
  if (ref.size !== undefined && ref.size > AUDIO_MAX_BYTES)
    return refuse("too_large", `announced ${ref.size} bytes, over ${AUDIO_MAX_BYTES}`);
  if (!outbound.media) return refuse("download_failed", "this platform's outbound cannot download files");
  let audio: Buffer;
  try {
    audio = await outbound.media.download(ref, { maxBytes: AUDIO_MAX_BYTES, what: kind, signal });
  } catch (error) {
    if (!(error instanceof MediaError)) throw error;
    return refuse(error.problem === "too_large" ? "too_large" : "download_failed", error.message);
  }
  // Without an announced duration (a Discord audio file), the file's own headers tell it.
  const seconds = ref.duration ?? (await audioDurationOf(audio, upload.mimeType));
  if (ref.duration === undefined && seconds !== undefined && seconds > config.MAX_VOICE_SECONDS) {
    return refuse(
      "too_long",
      `the file lasts ${Math.round(seconds)} s by its headers, over MAX_VOICE_SECONDS ${config.MAX_VOICE_SECONDS}`,
      { bytes: audio.length, seconds },
    );
  }
  let transcription;
  try {
    transcription = await new TranscriptionClient(config).transcribe({
      audio,
      fileName: upload.fileName,
      mimeType: upload.mimeType,
      locale,
      signal,
    });
  } catch (error) {
    if (!(error instanceof TranscriptionError)) throw error;
    return refuse("not_understood", error.message, {
      transcription: error.problem,
      bytes: audio.length,
      ...(error.status !== undefined ? { status: error.status } : {}),
    });
  }
  const transcript = locale === "zh-TW" ? await toTraditional(transcription.text) : transcription.text;
  const voice: VoiceTranscript = {
    kind,
    transcript,
    ...(seconds !== undefined ? { seconds } : {}),
    bytes: audio.length,
    ms: transcription.ms,
  };
  const done = {
    ...facts,
    ...(seconds !== undefined ? { seconds } : {}),
    bytes: audio.length,
    ms: transcription.ms,
    attempts: transcription.attempts,
    characters: transcript.length,
    converted: transcript !== transcription.text,
  };
  log.info(done, "voice message transcribed");
  tracer?.event("transcription", { ok: true, ...done, model: config.STT_MODEL });
  return { ...none({ ...full, text: voiceTurnText(kind, transcript, seconds, full.text) }), voice };
}
