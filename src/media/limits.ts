/**
 * What the bot reads from files, and how much. One place for every limit, so the worker, the
 * refusal texts and the README say the same numbers.
 *
 * Sources: images — https://docs.anthropic.com/en/docs/build-with-claude/vision (JPEG, PNG, GIF,
 * WebP; images with a long edge over 1568 px are scaled down by the API anyway; 5 MB per image;
 * 8000 × 8000 px at most); PDFs — https://docs.anthropic.com/en/docs/build-with-claude/pdf-support
 * (100 pages, 32 MB per request); Telegram — https://core.telegram.org/bots/api#getfile (bots
 * download files of at most 20 MB).
 */

/** Longest edge of an image sent to the model, in pixels (larger ones are scaled down first). */
export const IMAGE_MAX_EDGE = 1568;

/**
 * Most bytes of one image's base64 `data` the Messages API accepts (5 MB per image). The bot
 * counts the base64 text, not the decoded bytes, so it stays within the limit however the API
 * counts it; a converted image is re-encoded smaller until it fits.
 */
export const API_IMAGE_MAX_BASE64 = 5 * 1024 * 1024;

/** Most bytes of an image file the bot downloads (Telegram's own download limit for bots, 20 MB). */
export const IMAGE_MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;

/** Most pixels (width × height) of an image the bot decodes; larger ones are refused (a decompression bomb guard). */
export const IMAGE_MAX_PIXELS = 100_000_000;

/** Most bytes of a PDF (10 MB). */
export const PDF_MAX_BYTES = 10 * 1024 * 1024;

/**
 * Most bytes the compressed streams of one PDF may decode to, together, while it is opened to
 * count its pages (object and cross-reference streams; page contents are not decoded). Real PDFs
 * need a few hundred kilobytes at most; a decompression bomb inflates a thousand times its size.
 */
export const PDF_MAX_DECODED_BYTES = 32 * 1024 * 1024;

/** Longest time opening one PDF may take, in ms (in the PDF reader thread, `pdf-inspector.ts`). */
export const PDF_INSPECT_TIMEOUT_MS = 10_000;

/** Old-generation heap of the PDF reader thread, in MB (Node's `resourceLimits.maxOldGenerationSizeMb`). */
export const PDF_WORKER_HEAP_MB = 256;

/** Most pages of a PDF (the Messages API's limit per request). */
export const PDF_MAX_PAGES = 100;

/**
 * Most base64 characters of all files of one message together: the Messages API takes 32 MB per
 * request, and the history, system prompt and tools need room too.
 */
export const MESSAGE_MEDIA_MAX_BASE64 = 24 * 1024 * 1024;

/**
 * Most bytes of a voice message or audio file the bot downloads and transcribes: Telegram's
 * download limit for bots (20 MB), the same for Discord; OpenAI's transcription endpoint takes
 * files of at most 25 MB (https://platform.openai.com/docs/guides/speech-to-text).
 */
export const AUDIO_MAX_BYTES = 20 * 1024 * 1024;

/** Most bytes of a text file (200 KB). */
export const TEXT_MAX_BYTES = 200 * 1024;

/** Image media types the Messages API accepts in `image` blocks. */
export const IMAGE_MEDIA_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;
/** One of {@link IMAGE_MEDIA_TYPES}. */
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/**
 * The bare media type of a type a platform announced (`Content-Type` style): lower case, without
 * parameters (`Text/Plain; charset=utf-8` → `text/plain`); `""` when none was announced.
 */
export function bareMediaType(announced: string | null | undefined): string {
  return (announced ?? "").toLowerCase().split(";")[0]!.trim();
}

/**
 * File name endings read as text (besides any `text/*` type): Markdown, CSV, JSON and common source
 * code and configuration files.
 */
export const TEXT_FILE_EXTENSIONS = [
  "txt",
  "md",
  "markdown",
  "csv",
  "tsv",
  "json",
  "jsonl",
  "ndjson",
  "xml",
  "yaml",
  "yml",
  "toml",
  "ini",
  "cfg",
  "conf",
  "env",
  "log",
  "html",
  "htm",
  "css",
  "scss",
  "js",
  "mjs",
  "cjs",
  "jsx",
  "ts",
  "tsx",
  "py",
  "rb",
  "go",
  "rs",
  "java",
  "kt",
  "kts",
  "swift",
  "c",
  "h",
  "cc",
  "cpp",
  "hpp",
  "cs",
  "php",
  "sh",
  "bash",
  "zsh",
  "ps1",
  "sql",
  "r",
  "lua",
  "pl",
  "dart",
  "scala",
  "vue",
  "svelte",
  "tex",
  "srt",
  "vtt",
] as const;

/** Megabytes with at most one decimal, for messages to users (`10`, `0.2`). */
export function megabytes(bytes: number): string {
  return String(Math.round((bytes / (1024 * 1024)) * 10) / 10);
}
