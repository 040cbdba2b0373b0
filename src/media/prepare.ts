/**
 * From a message's file references to content blocks for the model (and the placeholders the
 * history keeps instead). Everything that can be refused without downloading is refused first
 * (an unsupported kind, too many images, an announced size over its limit); then each file is
 * downloaded through the platform's {@link MediaSource} and converted (`convert.ts`).
 */
import type { ContentBlockParam, DocumentBlockParam, ImageBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { MediaRef } from "../queue/incoming.js";
import { convertImage, convertPdf, convertText } from "./convert.js";
import { MediaError, type MediaWhat } from "./errors.js";
import {
  IMAGE_MAX_DOWNLOAD_BYTES,
  IMAGE_MEDIA_TYPES,
  MESSAGE_MEDIA_MAX_BASE64,
  PDF_MAX_BYTES,
  PDF_MAX_PAGES,
  TEXT_FILE_EXTENSIONS,
  TEXT_MAX_BYTES,
  bareMediaType,
} from "./limits.js";
import type { MediaSource } from "./source.js";

/** Files of one message, ready for the model. */
export interface PreparedMedia {
  /** One block per file, in the message's order (images, `document` blocks, labelled text). */
  blocks: ContentBlockParam[];
  /** The history's stand-in for each block, same order, e.g. `[photo 1280×960]`. */
  placeholders: string[];
}

const IMAGE_EXTENSIONS = new Set(["jpg", "jpeg", "png", "gif", "webp"]);
const TEXT_EXTENSIONS = new Set<string>(TEXT_FILE_EXTENSIONS);
/** `application/*` types that are text. */
const TEXT_APPLICATION_TYPES = new Set([
  "application/json",
  "application/xml",
  "application/x-yaml",
  "application/yaml",
  "application/javascript",
  "application/x-sh",
  "application/sql",
  "application/ld+json",
  "application/x-ndjson",
  "application/toml",
]);

/** Characters of a converted image or PDF block's base64 `data` (what the API counts). */
const base64Of = (block: ImageBlockParam | DocumentBlockParam): number =>
  (block.source as { data: string }).data.length;

/**
 * What a reference is taken to be, from its kind and, for a `file`, its announced type and name
 * (the bytes are checked again when converted).
 */
export function mediaWhat(ref: MediaRef): MediaWhat {
  if (ref.kind !== "file") return ref.kind;
  const type = bareMediaType(ref.mimeType);
  const ext = /\.([a-z0-9]{1,10})$/i.exec(ref.name ?? "")?.[1]?.toLowerCase() ?? "";
  if (type === "application/pdf" || ext === "pdf") return "pdf";
  if (
    (IMAGE_MEDIA_TYPES as readonly string[]).includes(type) ||
    (IMAGE_EXTENSIONS.has(ext) && !type.startsWith("text/"))
  )
    return "image";
  if (type.startsWith("text/") || TEXT_APPLICATION_TYPES.has(type) || TEXT_EXTENSIONS.has(ext)) return "text";
  return "file";
}

/** Most bytes accepted for a file of kind `what` (0 for kinds that are not read). */
function maxBytesOf(what: MediaWhat): number {
  return what === "image"
    ? IMAGE_MAX_DOWNLOAD_BYTES
    : what === "pdf"
      ? PDF_MAX_BYTES
      : what === "text"
        ? TEXT_MAX_BYTES
        : 0;
}

/**
 * Reads every file of a message.
 *
 * @param options.maxImages - `MAX_IMAGES_PER_MESSAGE`.
 * @param options.signal - aborts downloads (the answer's deadline); its reason is rethrown.
 * @throws {MediaError} for the first file that cannot be read (the message is then refused whole):
 *   `unsupported` (voice, video, audio, another file type, or no `source` for the platform),
 *   `too_many_images`, `too_large` (announced or found while downloading), `too_many_pages`,
 *   `unreadable`, `foreign_host`, `download_failed`.
 */
export async function prepareMedia(
  refs: readonly MediaRef[],
  source: MediaSource | undefined,
  options: { maxImages: number; signal?: AbortSignal },
): Promise<PreparedMedia> {
  const planned = refs.map((ref) => ({ ref, what: mediaWhat(ref) }));
  const unreadable = planned.find((p) => maxBytesOf(p.what) === 0);
  if (unreadable)
    throw new MediaError(
      "unsupported",
      `a ${unreadable.what === "file" ? "" : `${unreadable.what} `}file (${unreadable.ref.mimeType ?? "no type"}) is not read`,
      unreadable.what,
    );
  const images = planned.filter((p) => p.what === "image").length;
  if (images > options.maxImages)
    throw new MediaError(
      "too_many_images",
      `${images} images, over MAX_IMAGES_PER_MESSAGE ${options.maxImages}`,
      "image",
      { count: images },
    );
  const oversized = planned.find((p) => p.ref.size !== undefined && p.ref.size > maxBytesOf(p.what));
  if (oversized)
    throw new MediaError(
      "too_large",
      `announced ${oversized.ref.size} bytes, over the ${oversized.what} limit of ${maxBytesOf(oversized.what)}`,
      oversized.what,
    );
  if (!source) throw new MediaError("unsupported", "this platform's outbound cannot download files", planned[0]?.what);

  const prepared: PreparedMedia = { blocks: [], placeholders: [] };
  let pages = 0;
  let base64 = 0;
  for (const { ref, what } of planned) {
    options.signal?.throwIfAborted();
    const bytes = await source.download(ref, { maxBytes: maxBytesOf(what), what, signal: options.signal });
    let converted;
    if (what === "image") {
      converted = await convertImage(bytes, ref.name ? { name: ref.name } : { photo: true });
      base64 += base64Of(converted.block);
    } else if (what === "pdf") {
      converted = await convertPdf(bytes, ref.name);
      pages += converted.pages;
      base64 += base64Of(converted.block);
      // The Messages API counts PDF pages per request.
      if (pages > PDF_MAX_PAGES)
        throw new MediaError(
          "too_many_pages",
          `the message's PDFs have ${pages} pages together, over ${PDF_MAX_PAGES}`,
          "pdf",
        );
    } else {
      converted = convertText(bytes, ref.name);
    }
    if (base64 > MESSAGE_MEDIA_MAX_BASE64)
      throw new MediaError(
        "too_large",
        `the message's files together pass ${MESSAGE_MEDIA_MAX_BASE64} characters of base64`,
        "file",
      );
    prepared.blocks.push(converted.block);
    prepared.placeholders.push(converted.placeholder);
  }
  return prepared;
}
