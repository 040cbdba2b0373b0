/**
 * Turning downloaded bytes into Messages API content blocks, each with the short text placeholder
 * the history keeps in its place:
 *
 * - images (JPEG, PNG, GIF — its first frame —, WebP; checked by decoding, whatever the name says)
 *   are turned upright (EXIF orientation), scaled down to {@link IMAGE_MAX_EDGE} px on the long
 *   edge and re-encoded (sharp) until the base64 data is within {@link API_IMAGE_MAX_BASE64};
 *   placeholder `[photo 1280×960]` or `[image "chart.png" 1280×960]` (the size as sent by the user);
 * - PDFs (bytes starting `%PDF-`, not encrypted, at most {@link PDF_MAX_PAGES} pages, counted with
 *   pdf-lib in the PDF reader thread, `pdf-inspector.ts`, within its limits) become `document`
 *   blocks; placeholder `[PDF "bill.pdf", 3 pages]`;
 * - text files (valid UTF-8 without NUL characters) become a text block labelled with the file
 *   name; placeholder `[file "notes.md", 1234 characters]`.
 *
 * Sources: https://docs.anthropic.com/en/docs/build-with-claude/vision,
 * https://docs.anthropic.com/en/docs/build-with-claude/pdf-support, https://sharp.pixelplumbing.com/api-resize.
 */
import type { DocumentBlockParam, ImageBlockParam, TextBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { Metadata, OutputInfo, Sharp, SharpOptions } from "sharp";

/**
 * sharp, loaded on the first image: its native library takes about a second to load, which every
 * process that imports the media pipeline (each worker, each CLI) would otherwise pay at start-up
 * whether it ever converts an image or not.
 */
let sharpModule: Promise<(input: Buffer, options: SharpOptions) => Sharp> | undefined;
function loadSharp(): Promise<(input: Buffer, options: SharpOptions) => Sharp> {
  sharpModule ??= import("sharp").then((m) => m.default);
  return sharpModule;
}
import { MediaError } from "./errors.js";
import { plainLine } from "../plain-text.js";
import { escapeBlockText } from "../block-text.js";
import { inspectPdf } from "./pdf-inspector.js";
import {
  API_IMAGE_MAX_BASE64,
  IMAGE_MAX_EDGE,
  IMAGE_MAX_PIXELS,
  PDF_MAX_PAGES,
  type ImageMediaType,
} from "./limits.js";
import { englishCount } from "../i18n.js";

/** A converted file: the block for the model and the placeholder for the history. */
export interface Converted<B> {
  block: B;
  placeholder: string;
}

/** What {@link convertImage} also reports, for logs and tests. */
export interface ConvertedImage extends Converted<ImageBlockParam> {
  /** Pixels of the image as received (after EXIF rotation). */
  original: { width: number; height: number };
  /** Pixels of the image as sent. */
  sent: { width: number; height: number };
}

const SHARP_FORMATS: Record<string, ImageMediaType> = {
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
};

/** Base64 length of `bytes` bytes. */
const base64Length = (bytes: number) => Math.ceil(bytes / 3) * 4;

/**
 * A file name made safe for a placeholder, a label and the logs: one plain line ({@link plainLine}:
 * no controls, bidi or zero-width characters), quotes and angle brackets become spaces, at most 80
 * characters.
 */
function safeName(name: string | undefined): string | undefined {
  const clean = name === undefined ? "" : plainLine(name.replace(/["<>]/g, " "), 80);
  return clean ? clean : undefined;
}

/**
 * Converts an image for the model.
 *
 * @param label - `photo` for a platform photo (`[photo W×H]`), else the file name (`[image "name" W×H]`).
 * @throws {MediaError} `unsupported` for a format other than JPEG, PNG, GIF and WebP; `too_many_pixels`
 *   for an image over {@link IMAGE_MAX_PIXELS} pixels (width × height from its header, checked before
 *   decoding); `unreadable` for bytes sharp cannot decode.
 */
export async function convertImage(bytes: Buffer, label: { photo: true } | { name?: string }): Promise<ConvertedImage> {
  let meta: Metadata;
  try {
    // Header only (no decoding), so no pixel limit here: the size is checked just below.
    const sharp = await loadSharp();
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new MediaError("unreadable", `not a readable image: ${(error as Error).message}`, "image", { cause: error });
  }
  if (meta.width !== undefined && meta.height !== undefined && meta.width * meta.height > IMAGE_MAX_PIXELS) {
    throw new MediaError(
      "too_many_pixels",
      `the image is ${meta.width}×${meta.height} pixels, over ${IMAGE_MAX_PIXELS}`,
      "image",
    );
  }
  const mediaType = SHARP_FORMATS[meta.format ?? ""];
  if (!mediaType)
    throw new MediaError(
      "unsupported",
      `image format ${meta.format ?? "unknown"} is not one of JPEG, PNG, GIF, WebP`,
      "image",
    );
  // Orientations 5-8 swap width and height.
  const swap = (meta.orientation ?? 1) >= 5;
  const original = { width: swap ? meta.height : meta.width, height: swap ? meta.width : meta.height };

  let encoded: { data: Buffer; info: OutputInfo; mediaType: ImageMediaType };
  try {
    // GIF: the first frame, sent as PNG (static, lossless). Everything else keeps its format first.
    const first = mediaType === "image/gif" ? "image/png" : mediaType;
    encoded = await encode(bytes, IMAGE_MAX_EDGE, first, 85);
    // Too big for the API: JPEG at falling quality, then smaller.
    let edge = Math.max(encoded.info.width, encoded.info.height);
    for (const quality of [80, 65, 50]) {
      if (base64Length(encoded.data.length) <= API_IMAGE_MAX_BASE64) break;
      encoded = await encode(bytes, edge, "image/jpeg", quality);
    }
    while (base64Length(encoded.data.length) > API_IMAGE_MAX_BASE64 && edge > 64) {
      edge = Math.floor(edge * 0.75);
      encoded = await encode(bytes, edge, "image/jpeg", 50);
    }
  } catch (error) {
    throw new MediaError("unreadable", `image could not be converted: ${(error as Error).message}`, "image", {
      cause: error,
    });
  }
  const name = "photo" in label ? undefined : safeName(label.name);
  const size = `${original.width}×${original.height}`;
  return {
    block: {
      type: "image",
      source: { type: "base64", media_type: encoded.mediaType, data: encoded.data.toString("base64") },
    },
    placeholder: name ? `[image "${name}" ${size}]` : `[${"photo" in label ? "photo" : "image"} ${size}]`,
    original,
    sent: { width: encoded.info.width, height: encoded.info.height },
  };
}

/** Decodes the first frame, turns it upright, fits it in `edge` px and encodes it as `type`. */
async function encode(
  bytes: Buffer,
  edge: number,
  type: ImageMediaType,
  quality: number,
): Promise<{ data: Buffer; info: OutputInfo; mediaType: ImageMediaType }> {
  const sharp = await loadSharp();
  let image = sharp(bytes, { limitInputPixels: IMAGE_MAX_PIXELS, animated: false })
    .rotate()
    .resize({ width: edge, height: edge, fit: "inside", withoutEnlargement: true });
  if (type === "image/jpeg") image = image.flatten({ background: "#ffffff" }).jpeg({ quality, mozjpeg: true });
  else if (type === "image/png") image = image.png({ compressionLevel: 9 });
  else image = image.webp({ quality });
  const { data, info } = await image.toBuffer({ resolveWithObject: true });
  return { data, info, mediaType: type };
}

/**
 * Converts a PDF into a `document` block (titled with the file name).
 *
 * @throws {MediaError} `unreadable` when the bytes are not a PDF pdf-lib can open, or it is
 *   encrypted (the API refuses those); `too_many_pages` over {@link PDF_MAX_PAGES} pages;
 *   `too_complex` when opening it passes a limit of the PDF reader thread (decoded bytes, time, memory).
 */
export async function convertPdf(
  bytes: Buffer,
  name: string | undefined,
): Promise<Converted<DocumentBlockParam> & { pages: number }> {
  if (bytes.subarray(0, 1024).indexOf("%PDF-") === -1)
    throw new MediaError("unreadable", "not a PDF (no %PDF- header)", "pdf");
  const { pages, encrypted } = await inspectPdf(bytes);
  if (encrypted) throw new MediaError("unreadable", "the PDF is encrypted", "pdf");
  if (pages < 1) throw new MediaError("unreadable", "the PDF has no pages", "pdf");
  if (pages > PDF_MAX_PAGES)
    throw new MediaError("too_many_pages", `the PDF has ${pages} pages, over ${PDF_MAX_PAGES}`, "pdf");
  const title = safeName(name) ?? "document.pdf";
  return {
    block: {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: bytes.toString("base64") },
      title,
    },
    placeholder: `[PDF "${title}", ${englishCount(pages, "page")}]`,
    pages,
  };
}

/**
 * Converts a text file into a text block: `<file name="notes.md">`, the content, `</file>`.
 * Block tags inside the content, however spelled, are neutralised ({@link escapeBlockText}),
 * so a file holding `</file>`, `</ file>`, `＜／ｆｉｌｅ＞` or `<\u200B/file>` cannot close the
 * wrapper early, or open a fake one, and pose as text outside it.
 *
 * @throws {MediaError} `unreadable` when the bytes are not UTF-8 text (invalid UTF-8, or NUL characters).
 */
export function convertText(
  bytes: Buffer,
  name: string | undefined,
): Converted<TextBlockParam> & { characters: number } {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (error) {
    throw new MediaError("unreadable", "the file is not UTF-8 text", "text", { cause: error });
  }
  if (text.includes("\u0000"))
    throw new MediaError("unreadable", "the file holds NUL characters (binary, not text)", "text");
  const title = safeName(name) ?? "file.txt";
  const content = text.trim() === "" ? "(empty file)" : escapeBlockText(text);
  return {
    block: { type: "text", text: `<file name="${title}">\n${content}\n</file>` },
    placeholder: `[file "${title}", ${englishCount(text.length, "character")}]`,
    characters: text.length,
  };
}
