/**
 * The fake Messages API's checks of `image` and `document` blocks, as the real API makes them
 * (https://docs.anthropic.com/en/docs/build-with-claude/vision and
 * https://docs.anthropic.com/en/docs/build-with-claude/pdf-support):
 *
 * - image `source.type` `base64` (or `url` / `file`), `media_type` one of JPEG, PNG, GIF, WebP,
 *   `data` valid base64 of at most 5 MB, whose bytes are an image of that type (the magic number)
 *   no larger than 8000 × 8000 px (2000 × 2000 px when the request has more than 20 images), at
 *   most 100 images per request;
 * - document `source.type` `base64` with `media_type` `application/pdf` whose bytes start with
 *   `%PDF-` (or `text` with `text/plain` data), at most 100 PDF pages per request (counted with
 *   pdf-lib);
 * - the whole request body at most 32 MB (413 `request_too_large`).
 */
import { PDFDocument } from "pdf-lib";

/** The API's per-image limit on the base64 data, in bytes. */
export const FAKE_IMAGE_MAX_BASE64 = 5 * 1024 * 1024;
/** The API's request size limit, in bytes. */
export const FAKE_REQUEST_MAX_BYTES = 32 * 1024 * 1024;

const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A block the API would refuse: the message is the API's style. */
export class InvalidMedia extends Error {}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The type and pixel size of an image from its header; undefined when the bytes are none of the four formats. */
export function sniffImage(bytes: Buffer): { type: string; width: number; height: number } | undefined {
  if (
    bytes.length >= 24 &&
    bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
  ) {
    return { type: "image/png", width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  }
  if (bytes.length >= 10 && /^GIF8[79]a$/.test(bytes.subarray(0, 6).toString("latin1"))) {
    return { type: "image/gif", width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
  }
  if (
    bytes.length >= 30 &&
    bytes.subarray(0, 4).toString("latin1") === "RIFF" &&
    bytes.subarray(8, 12).toString("latin1") === "WEBP"
  ) {
    const chunk = bytes.subarray(12, 16).toString("latin1");
    if (chunk === "VP8 ")
      return { type: "image/webp", width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
    if (chunk === "VP8L") {
      const b = bytes.readUInt32LE(21);
      return { type: "image/webp", width: (b & 0x3fff) + 1, height: ((b >> 14) & 0x3fff) + 1 };
    }
    if (chunk === "VP8X")
      return { type: "image/webp", width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
    return undefined;
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) {
    let i = 2;
    while (i + 9 < bytes.length) {
      if (bytes[i] !== 0xff) return undefined;
      const marker = bytes[i + 1]!;
      const length = bytes.readUInt16BE(i + 2);
      // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC)
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { type: "image/jpeg", height: bytes.readUInt16BE(i + 5), width: bytes.readUInt16BE(i + 7) };
      }
      i += 2 + length;
    }
    return undefined;
  }
  return undefined;
}

/**
 * Checks one `image` block (synchronous part).
 * @returns its pixel size (for the many-images rule).
 * @throws {InvalidMedia}
 */
export function checkImageBlock(
  block: Record<string, unknown>,
  where: string,
): { width: number; height: number } | undefined {
  const source = block.source;
  if (!isObject(source)) throw new InvalidMedia(`${where}.source: Field required`);
  if (source.type === "url" || source.type === "file") return undefined;
  if (source.type !== "base64")
    throw new InvalidMedia(
      `${where}.source.type: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'`,
    );
  if (typeof source.media_type !== "string" || !IMAGE_TYPES.includes(source.media_type)) {
    throw new InvalidMedia(
      `${where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
    );
  }
  if (typeof source.data !== "string" || source.data === "")
    throw new InvalidMedia(`${where}.source.base64.data: Field required`);
  if (source.data.length % 4 !== 0 || !BASE64.test(source.data))
    throw new InvalidMedia(`${where}.source.base64.data: The image data is not valid base64.`);
  if (source.data.length > FAKE_IMAGE_MAX_BASE64)
    throw new InvalidMedia(
      `${where}.source.base64: image exceeds 5 MB maximum: ${source.data.length} bytes > ${FAKE_IMAGE_MAX_BASE64} bytes`,
    );
  const image = sniffImage(Buffer.from(source.data, "base64"));
  if (!image) throw new InvalidMedia(`${where}.source.base64.data: Could not process image`);
  if (image.type !== source.media_type)
    throw new InvalidMedia(
      `${where}.source.base64.media_type: Image does not match the provided media type ${source.media_type}`,
    );
  if (image.width > 8000 || image.height > 8000)
    throw new InvalidMedia(`${where}.source.base64: image dimensions exceed max allowed size: 8000 pixels`);
  return image;
}

/**
 * Checks one `document` block (synchronous part).
 * @returns the PDF bytes to count pages of, if it is a base64 PDF.
 * @throws {InvalidMedia}
 */
export function checkDocumentBlock(block: Record<string, unknown>, where: string): Buffer | undefined {
  const source = block.source;
  if (!isObject(source)) throw new InvalidMedia(`${where}.source: Field required`);
  if (source.type === "text") {
    if (source.media_type !== "text/plain")
      throw new InvalidMedia(`${where}.source.text.media_type: Input should be 'text/plain'`);
    if (typeof source.data !== "string") throw new InvalidMedia(`${where}.source.text.data: Field required`);
    return undefined;
  }
  if (source.type === "url" || source.type === "file" || source.type === "content") return undefined;
  if (source.type !== "base64")
    throw new InvalidMedia(
      `${where}.source.type: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags`,
    );
  if (source.media_type !== "application/pdf")
    throw new InvalidMedia(`${where}.source.base64.media_type: Input should be 'application/pdf'`);
  if (typeof source.data !== "string" || source.data.length % 4 !== 0 || !BASE64.test(source.data))
    throw new InvalidMedia(`${where}.source.base64.data: The PDF data is not valid base64.`);
  const bytes = Buffer.from(source.data, "base64");
  if (!bytes.subarray(0, 1024).includes("%PDF-"))
    throw new InvalidMedia(`${where}.source.base64.data: The PDF specified was not valid.`);
  if (block.title !== undefined && block.title !== null && typeof block.title !== "string")
    throw new InvalidMedia(`${where}.title: Input should be a valid string`);
  return bytes;
}

/** What {@link MediaChecks} collected over a request. */
export class MediaChecks {
  images: { width: number; height: number }[] = [];
  pdfs: { where: string; bytes: Buffer }[] = [];

  /** Checks a block of type `image` or `document` (synchronous part); other blocks are ignored. @throws {InvalidMedia} */
  block(block: Record<string, unknown>, where: string): void {
    if (block.type === "image") {
      const size = checkImageBlock(block, where);
      if (size) this.images.push(size);
    } else if (block.type === "document") {
      const pdf = checkDocumentBlock(block, where);
      if (pdf) this.pdfs.push({ where, bytes: pdf });
    }
  }

  /** The request-wide rules: image count and size, PDF pages (pdf-lib). @throws {InvalidMedia} */
  async finish(): Promise<void> {
    if (this.images.length > 100) throw new InvalidMedia(`messages: Too many images: ${this.images.length} > 100`);
    if (this.images.length > 20 && this.images.some((i) => i.width > 2000 || i.height > 2000)) {
      throw new InvalidMedia("messages: image dimensions exceed max allowed size for many-image requests: 2000 pixels");
    }
    let pages = 0;
    for (const pdf of this.pdfs) {
      try {
        const doc = await PDFDocument.load(pdf.bytes, { ignoreEncryption: true, updateMetadata: false });
        if (doc.isEncrypted) throw new InvalidMedia(`${pdf.where}: PDF is password protected`);
        pages += doc.getPageCount();
      } catch (error) {
        if (error instanceof InvalidMedia) throw error;
        throw new InvalidMedia(`${pdf.where}.source.base64.data: The PDF specified was not valid.`);
      }
    }
    if (pages > 100) throw new InvalidMedia(`messages: A maximum of 100 PDF pages may be provided. Found ${pages}.`);
  }
}
