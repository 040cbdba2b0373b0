/**
 * The short answers to a file the bot does not read: what went wrong, then what is supported and
 * the limits. Sent by the worker instead of calling the model.
 */
import type { Locale } from "../config.js";
import { englishNoun, localize, type Localized } from "../i18n.js";
import type { MediaError } from "./errors.js";
import {
  AUDIO_MAX_BYTES,
  IMAGE_MAX_DOWNLOAD_BYTES,
  IMAGE_MAX_PIXELS,
  PDF_INSPECT_TIMEOUT_MS,
  PDF_MAX_BYTES,
  PDF_MAX_DECODED_BYTES,
  PDF_MAX_PAGES,
  PDF_WORKER_HEAP_MB,
  TEXT_MAX_BYTES,
  megabytes,
} from "./limits.js";

/** The answers' words. */
const MEDIA_TEXT = {
  supported: {
    "zh-TW":
      "我看得懂：圖片（JPEG、PNG、GIF、WebP，每則訊息最多 {images} 張，每張 {imageMb} MB 以內）、PDF（{pdfMb} MB、{pages} 頁以內）和文字檔（.txt、.md、.csv、.json、程式碼，{textKb} KB 以內）。",
    en:
      "I can read images (JPEG, PNG, GIF, WebP; at most {images} per message, {imageMb} MB each)," +
      " PDFs (up to {pdfMb} MB and {pages} pages) and text files (.txt, .md, .csv, .json, source " +
      "code; up to {textKb} KB).",
  },
  voice: {
    "zh-TW": "我還聽不懂語音訊息，請改用文字。",
    en: "I can't listen to voice messages yet: please type it instead.",
  },
  audio: { "zh-TW": "我還聽不了音訊檔。", en: "I can't listen to audio files yet." },
  video: { "zh-TW": "我還看不了影片。", en: "I can't watch videos yet." },
  file: { "zh-TW": "這種檔案我還讀不了。", en: "I can't read this kind of file." },
  imageFormat: { "zh-TW": "這種圖片格式我讀不了。", en: "I can't read this image format." },
  imageTooLarge: { "zh-TW": "這張圖片太大了（上限 {mb} MB）。", en: "That image is too large (at most {mb} MB)." },
  pdfTooLarge: { "zh-TW": "這個 PDF 太大了（上限 {mb} MB）。", en: "That PDF is too large (at most {mb} MB)." },
  textTooLarge: { "zh-TW": "這個文字檔太大了（上限 {kb} KB）。", en: "That text file is too large (at most {kb} KB)." },
  fileTooLarge: { "zh-TW": "這個檔案太大了。", en: "That file is too large." },
  tooManyImages: {
    "zh-TW": "一則訊息最多只能放 {max} 張圖片（這則有 {count} 張）。",
    en: "At most {max} {images} per message, please (this one has {count}).",
  },
  tooManyPixels: {
    "zh-TW": "這張圖片的像素太多了（上限 {megapixels} 百萬像素，即寬 × 高）。請縮小後再傳。",
    en: "That image has too many pixels (at most {megapixels} megapixels, width × height). Please scale it down and send it again.",
  },
  pdfDecodedTooLarge: {
    "zh-TW": "這個 PDF 解壓縮後太大了（壓縮內容解開後上限 {mb} MB），我讀不了。",
    en: "That PDF is too large once decompressed (at most {mb} MB of decompressed content), so I can't read it.",
  },
  pdfTooSlow: {
    "zh-TW": "這個 PDF 太複雜了，{seconds} 秒內讀不完。",
    en: "That PDF is too complex: I couldn't open it within {seconds} s.",
  },
  pdfTooMuchMemory: {
    "zh-TW": "這個 PDF 太複雜了，讀它需要超過 {mb} MB 的記憶體。",
    en: "That PDF is too complex: opening it needs more than {mb} MB of memory.",
  },
  tooManyPages: { "zh-TW": "這個 PDF 超過 {pages} 頁了。", en: "That PDF has more than {pages} pages." },
  unreadable: {
    "zh-TW": "我讀不了這個檔案（可能已損壞、有密碼保護，或不是它看起來的格式）。",
    en: "I couldn't read that file (it may be damaged, password-protected, or not the format it seems).",
  },
  downloadFailed: {
    "zh-TW": "我沒辦法下載這個檔案，請再傳一次。",
    en: "I couldn't download that file; please send it again.",
  },
} satisfies Record<string, Localized>;

/**
 * The answer to `error`: one sentence on what went wrong, then {@link MEDIA_TEXT.supported}.
 * @param maxImages - `MAX_IMAGES_PER_MESSAGE`.
 */
export function mediaRefusal(error: MediaError, locale: Locale, maxImages: number): string {
  const t = (texts: Localized, params: Record<string, string | number> = {}) => localize(locale, texts, params);
  let lead: string;
  switch (error.problem) {
    case "unsupported":
      lead =
        error.what === "voice"
          ? t(MEDIA_TEXT.voice)
          : error.what === "audio"
            ? t(MEDIA_TEXT.audio)
            : error.what === "video" || error.what === "video_note"
              ? t(MEDIA_TEXT.video)
              : error.what === "image"
                ? t(MEDIA_TEXT.imageFormat)
                : t(MEDIA_TEXT.file);
      break;
    case "too_large":
      lead =
        error.what === "image"
          ? t(MEDIA_TEXT.imageTooLarge, { mb: megabytes(IMAGE_MAX_DOWNLOAD_BYTES) })
          : error.what === "pdf"
            ? t(MEDIA_TEXT.pdfTooLarge, { mb: megabytes(PDF_MAX_BYTES) })
            : error.what === "text"
              ? t(MEDIA_TEXT.textTooLarge, { kb: TEXT_MAX_BYTES / 1024 })
              : t(MEDIA_TEXT.fileTooLarge);
      break;
    case "too_many_images":
      lead = t(MEDIA_TEXT.tooManyImages, {
        max: maxImages,
        images: englishNoun(maxImages, "image"),
        count: error.count ?? 0,
      });
      break;
    case "too_many_pages":
      lead = t(MEDIA_TEXT.tooManyPages, { pages: PDF_MAX_PAGES });
      break;
    case "too_many_pixels":
      lead = t(MEDIA_TEXT.tooManyPixels, { megapixels: IMAGE_MAX_PIXELS / 1_000_000 });
      break;
    case "too_complex":
      lead =
        error.limit === "time"
          ? t(MEDIA_TEXT.pdfTooSlow, { seconds: PDF_INSPECT_TIMEOUT_MS / 1000 })
          : error.limit === "memory"
            ? t(MEDIA_TEXT.pdfTooMuchMemory, { mb: PDF_WORKER_HEAP_MB })
            : t(MEDIA_TEXT.pdfDecodedTooLarge, { mb: megabytes(PDF_MAX_DECODED_BYTES) });
      break;
    case "unreadable":
      lead = t(MEDIA_TEXT.unreadable);
      break;
    case "foreign_host":
    case "download_failed":
      lead = t(MEDIA_TEXT.downloadFailed);
      break;
  }
  return `${lead}\n${supportedMedia(locale, maxImages)}`;
}

/** What the bot reads, with the limits ({@link MEDIA_TEXT.supported}); `maxImages` is `MAX_IMAGES_PER_MESSAGE`. */
export function supportedMedia(locale: Locale, maxImages: number): string {
  return localize(locale, MEDIA_TEXT.supported, {
    images: maxImages,
    imageMb: megabytes(IMAGE_MAX_DOWNLOAD_BYTES),
    pdfMb: megabytes(PDF_MAX_BYTES),
    pages: PDF_MAX_PAGES,
    textKb: TEXT_MAX_BYTES / 1024,
  });
}

/** The words of the short answers to a voice message or audio file that is not transcribed (`STT_BASE_URL` set). */
const VOICE_TEXT = {
  tooLong: {
    "zh-TW": "這則語音太長了（上限 {seconds} 秒），請分段傳送或改用文字。",
    en: "That voice message is too long (at most {seconds} s): please send it in parts or type it.",
  },
  tooLarge: { "zh-TW": "這個音訊檔太大了（上限 {mb} MB）。", en: "That audio file is too large (at most {mb} MB)." },
  format: {
    "zh-TW": "這種音訊格式我聽不了（我聽得懂 OGG/Opus、MP3、M4A、WAV 和 WebM）。",
    en: "I can't listen to this audio format (I understand OGG/Opus, MP3, M4A, WAV and WebM).",
  },
  several: {
    "zh-TW": "一則訊息請只放一段語音或一個音訊檔。",
    en: "One voice message or audio file per message, please.",
  },
  notUnderstood: {
    "zh-TW": "抱歉，我聽不清楚這則語音訊息，請再傳一次或改用文字。",
    en: "Sorry, I couldn't understand that voice message: please send it again or type it.",
  },
  downloadFailed: {
    "zh-TW": "我沒辦法下載這則語音，請再傳一次。",
    en: "I couldn't download that voice message; please send it again.",
  },
} satisfies Record<string, Localized>;

/**
 * Why a voice message or audio file is answered without the model (with `STT_BASE_URL` set):
 * `too_long` (over `MAX_VOICE_SECONDS`), `too_large` (over {@link AUDIO_MAX_BYTES}), `format` (not
 * one of the formats of `voice.ts`), `several` (more than one audio file, or audio with other
 * files, in one message), `download_failed`, `not_understood` (the transcription failed or was empty).
 */
export type VoiceProblem = "too_long" | "too_large" | "format" | "several" | "download_failed" | "not_understood";

/**
 * The short answer to a voice message or audio file that is not transcribed: one sentence naming
 * the limit passed, when one was.
 * @param maxSeconds - `MAX_VOICE_SECONDS`.
 */
export function voiceRefusal(problem: VoiceProblem, locale: Locale, maxSeconds: number): string {
  const t = (texts: Localized, params: Record<string, string | number> = {}) => localize(locale, texts, params);
  switch (problem) {
    case "too_long":
      return t(VOICE_TEXT.tooLong, { seconds: maxSeconds });
    case "too_large":
      return t(VOICE_TEXT.tooLarge, { mb: megabytes(AUDIO_MAX_BYTES) });
    case "format":
      return t(VOICE_TEXT.format);
    case "several":
      return t(VOICE_TEXT.several);
    case "download_failed":
      return t(VOICE_TEXT.downloadFailed);
    case "not_understood":
      return t(VOICE_TEXT.notUnderstood);
  }
}
