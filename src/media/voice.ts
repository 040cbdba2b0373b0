/**
 * Voice messages and audio files as text: which audio is transcribed and under what file name it
 * is sent ({@link audioFormatOf}), the Traditional-Chinese conversion of a transcript
 * ({@link toTraditional}), and the two ways a transcript is written — the user turn the model and
 * the history see (`[voice 0:07] …`, {@link voiceTurnText}) and the line the answer begins with
 * (`🎤 「…」`, {@link transcriptLine}).
 */
import type { MediaRef } from "../queue/incoming.js";
import { markdownLiteral } from "../plain-text.js";
import { bareMediaType } from "./limits.js";

/** The audio containers the bot transcribes: Ogg (Opus, Vorbis), MP3, M4A (AAC in MP4), WAV, WebM (audio). */
export const AUDIO_FORMATS = ["ogg", "mp3", "m4a", "wav", "webm"] as const;
/** One of {@link AUDIO_FORMATS}. */
export type AudioFormat = (typeof AUDIO_FORMATS)[number];

/** The content type sent with each format (the transcription API reads the format from the file name's extension). */
const FORMAT_TYPES: Record<AudioFormat, string> = {
  ogg: "audio/ogg",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  wav: "audio/wav",
  webm: "audio/webm",
};

/** Announced content types of each format. */
const TYPE_FORMATS: Record<string, AudioFormat> = {
  "audio/ogg": "ogg",
  "audio/opus": "ogg",
  "audio/vorbis": "ogg",
  "application/ogg": "ogg",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/mpeg3": "mp3",
  "audio/x-mpeg-3": "mp3",
  "audio/mp4": "m4a",
  "audio/m4a": "m4a",
  "audio/x-m4a": "m4a",
  "audio/wav": "wav",
  "audio/wave": "wav",
  "audio/x-wav": "wav",
  "audio/vnd.wave": "wav",
  "audio/webm": "webm",
};

/** File name endings of each format (Telegram names voice files `.oga`, which the transcription API does not take by that name). */
const EXTENSION_FORMATS: Record<string, AudioFormat> = {
  ogg: "ogg",
  oga: "ogg",
  opus: "ogg",
  mp3: "mp3",
  mpga: "mp3",
  m4a: "m4a",
  wav: "wav",
  webm: "webm",
};

/** File name endings read as audio when no content type says otherwise (a Discord attachment without `content_type`). */
export const AUDIO_FILE_EXTENSIONS = Object.keys(EXTENSION_FORMATS);

/** How one audio file is sent to the transcription API. */
export interface AudioUpload {
  format: AudioFormat;
  /** The `file` part's name, e.g. `voice.ogg` (the extension names the format). */
  fileName: string;
  /** The `file` part's content type. */
  mimeType: string;
}

/**
 * The format of a voice message or audio file from its announced type and name; a Telegram voice
 * message without a type is Ogg Opus (https://core.telegram.org/bots/api#voice). Undefined for a
 * format the bot does not transcribe (FLAC, AMR, a `video/*` type…).
 */
export function audioFormatOf(ref: Pick<MediaRef, "kind" | "mimeType" | "name">): AudioUpload | undefined {
  const type = bareMediaType(ref.mimeType);
  const ext = /\.([a-z0-9]{1,10})$/i.exec(ref.name ?? "")?.[1]?.toLowerCase() ?? "";
  const format =
    type !== "" && type !== "application/octet-stream"
      ? TYPE_FORMATS[type]
      : (EXTENSION_FORMATS[ext] ?? (ref.kind === "voice" ? "ogg" : undefined));
  if (!format) return undefined;
  return { format, fileName: `${ref.kind === "voice" ? "voice" : "audio"}.${format}`, mimeType: FORMAT_TYPES[format] };
}

/**
 * The duration of an audio file from its bytes (the container's headers, with music-metadata), in
 * seconds; undefined when the bytes do not tell it (not a format it reads, broken headers). For a
 * file whose platform announced no duration (a Discord audio attachment that is not a voice
 * message), checked against `MAX_VOICE_SECONDS` after the download and before the transcription.
 * Never throws. Source: https://github.com/Borewit/music-metadata (`parseBuffer`, `format.duration`).
 */
export async function audioDurationOf(bytes: Buffer, mimeType: string): Promise<number | undefined> {
  try {
    const { parseBuffer } = await import("music-metadata");
    const { format } = await parseBuffer(bytes, { mimeType, size: bytes.length }, { duration: true, skipCovers: true });
    return format.duration !== undefined && Number.isFinite(format.duration) && format.duration >= 0
      ? format.duration
      : undefined;
  } catch {
    return undefined;
  }
}

let converter: Promise<(text: string) => string> | undefined;

/**
 * `text` with Simplified characters converted to Traditional with Taiwan usage (OpenCC `cn` → `twp`:
 * characters and Taiwan phrases, e.g. 软件 → 軟體, 视频 → 影片); Traditional text stays as it is.
 * The dictionaries (a few MB) are loaded on the first call, so processes that never convert
 * (adapters) never load them.
 * Source: https://github.com/nk2028/opencc-js (the OpenCC dictionaries).
 */
export async function toTraditional(text: string): Promise<string> {
  converter ??= import("opencc-js/cn2t").then((OpenCC) => OpenCC.Converter({ from: "cn", to: "twp" }));
  return (await converter)(text);
}

/** `m:ss` (or `h:mm:ss`) of a duration in seconds, rounded to the second: `0:07`, `4:05`, `1:02:03`. */
export function clockDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/**
 * The user turn of a transcribed message, as the model and the history see it: the mark (`[voice 0:07]`
 * for a voice message, `[audio 1:23]` for an audio file; without the time when the platform gave
 * none), the transcript, and the caption on a line of its own when there is one.
 */
export function voiceTurnText(
  kind: "voice" | "audio",
  transcript: string,
  seconds: number | undefined,
  caption: string,
): string {
  const mark = `[${kind}${seconds !== undefined ? ` ${clockDuration(seconds)}` : ""}]`;
  const heard = transcript.replace(/\s*\n\s*/g, " ").trim();
  return caption.trim() === "" ? `${mark} ${heard}` : `${mark} ${heard}\n${caption.trim()}`;
}

/**
 * The transcript in a user turn written by {@link voiceTurnText} (after a group's speaker label,
 * `[Name #code] `), or undefined when `text` is not one: how a run resumed from its checkpoint,
 * which holds the turn but not the audio, finds the line its answer begins with.
 */
export function transcriptOfTurn(text: string): string | undefined {
  return /^(?:\[[^\]\n]*\] )?\[(?:voice|audio)(?: \d+(?::\d\d){1,2})?\] ([^\n]+)/.exec(text)?.[1];
}

/** Characters (code points) of a transcript shown in {@link transcriptLine} before it is cut with `…`. */
export const TRANSCRIPT_LINE_CHARS = 200;

/**
 * The line an answer to a voice message begins with: `🎤 「transcript」`, on one line (line breaks
 * and runs of white space become one space), cut with `…` past {@link TRANSCRIPT_LINE_CHARS} code
 * points (never inside a surrogate pair). `markdown: true` writes the transcript as a Markdown
 * literal ({@link markdownLiteral}: the final answer is Markdown; the live text is plain), so what
 * was said shows as it was transcribed.
 */
export function transcriptLine(transcript: string, options: { markdown?: boolean } = {}): string {
  const flat = [...transcript.replace(/\s+/g, " ").trim()];
  let shown =
    flat.length > TRANSCRIPT_LINE_CHARS ? `${flat.slice(0, TRANSCRIPT_LINE_CHARS).join("").trimEnd()}…` : flat.join("");
  if (options.markdown) shown = markdownLiteral(shown);
  return `🎤 「${shown}」`;
}
