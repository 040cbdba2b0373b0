/**
 * Real media bytes made by the tests: images with sharp, PDFs with pdf-lib (and two hostile PDFs
 * written by hand). Small and fast, except {@link noisePng}, which is large on purpose (it does not
 * compress).
 */
import { randomBytes } from "node:crypto";
import { constants, deflateRawSync } from "node:zlib";
import { PDFDocument } from "pdf-lib";
import sharp from "sharp";

/** A solid-colour image of `width` × `height` px in `format` (GIF: `frames` frames stacked, an animation). */
export async function makeImage(
  width: number,
  height: number,
  format: "jpeg" | "png" | "gif" | "webp",
  options: { frames?: number; exifOrientation?: number } = {},
): Promise<Buffer> {
  const frames = options.frames ?? 1;
  const image = sharp({
    create: { width, height: height * frames, channels: 3, background: { r: 200, g: 60, b: 30 } },
  });
  if (format === "gif") return image.gif(frames > 1 ? { loop: 0 } : {}).toBuffer();
  const encoded = format === "jpeg" ? image.jpeg({ quality: 80 }) : format === "png" ? image.png() : image.webp();
  if (options.exifOrientation) return encoded.withMetadata({ orientation: options.exifOrientation }).toBuffer();
  return encoded.toBuffer();
}

/**
 * An animated GIF of `frames` frames of `width` × `height` px (sharp writes an animation when the
 * input is a vertical strip with `pageHeight`).
 */
export async function makeAnimatedGif(width: number, height: number, frames: number): Promise<Buffer> {
  const strip = await sharp({
    create: { width, height: height * frames, channels: 3, background: { r: 10, g: 120, b: 200 } },
  })
    .raw()
    .toBuffer();
  return sharp(strip, { raw: { width, height: height * frames, channels: 3, pageHeight: height } })
    .gif({ loop: 0 })
    .toBuffer();
}

/** A PNG of random pixels (it does not compress: about width × height × 3 bytes). */
export async function noisePng(width: number, height: number): Promise<Buffer> {
  const pixels = randomBytes(width * height * 3);
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** A PDF of `pages` pages, each with one line of text. */
export async function makePdf(pages: number): Promise<Buffer> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pages; i += 1) doc.addPage([200, 200]).drawText(`page ${i + 1}`, { x: 20, y: 100, size: 12 });
  return Buffer.from(await doc.save());
}

/** Pixel size of an image given as base64. */
export async function sizeOfBase64(data: string): Promise<{ width: number; height: number; format: string }> {
  const meta = await sharp(Buffer.from(data, "base64")).metadata();
  return { width: meta.width, height: meta.height, format: meta.format };
}

const MIB = 1024 * 1024;
/** One MiB of spaces, deflated and sync-flushed: a block that can be repeated (about 1 KB, 1000:1). */
let spacesBlock: Buffer | undefined;

/**
 * A decompression bomb: a valid one-page PDF whose object stream (`/Type /ObjStm`, FlateDecode)
 * holds the catalog and the page tree followed by `mib` MiB of spaces, so it inflates about 1000
 * times its size (`mib` 1024 → a 1 MB file that decodes to 1 GiB). Built without compressing that
 * much: the zlib data is one deflated MiB of spaces repeated `mib` times (each copy decodes on its
 * own), then the final block and the Adler-32 of the whole (worked out, not computed byte by byte).
 */
export function pdfBomb(mib: number): Buffer {
  spacesBlock ??= deflateRawSync(Buffer.alloc(MIB, 0x20), { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  const objects = "<< /Type /Catalog /Pages 3 0 R >>\n<< /Type /Pages /Kids [4 0 R] /Count 1 >>\n";
  const header = `2 0 3 ${objects.indexOf("<< /Type /Pages")} `;
  const decoded = Buffer.from(header + objects, "latin1");
  // Adler-32 of `decoded` followed by n spaces: a = 1 + Σ bytes, b = Σ of the running a's (mod 65521).
  const M = 65521n;
  let a = 1n;
  let b = 0n;
  for (const byte of decoded) {
    a = (a + BigInt(byte)) % M;
    b = (b + a) % M;
  }
  const n = BigInt(mib) * BigInt(MIB);
  b = (b + n * a + 32n * ((n * (n + 1n)) / 2n)) % M;
  a = (a + 32n * n) % M;
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE(Number((b << 16n) | a));
  const head = deflateRawSync(decoded, { finishFlush: constants.Z_SYNC_FLUSH });
  const stream = Buffer.concat([
    Buffer.from([0x78, 0xda]),
    head,
    ...Array.from({ length: mib }, () => spacesBlock!),
    deflateRawSync(Buffer.alloc(0)),
    adler,
  ]);
  return Buffer.concat([
    Buffer.from(
      `%PDF-1.7\n1 0 obj\n<< /Type /ObjStm /N 2 /First ${header.length} /Filter /FlateDecode /Length ${stream.length} >>\nstream\n`,
      "latin1",
    ),
    stream,
    Buffer.from(
      "\nendstream\nendobj\n4 0 obj\n<< /Type /Page /Parent 3 0 R /MediaBox [0 0 200 200] >>\nendobj\ntrailer\n<< /Size 5 /Root 2 0 R >>\n%%EOF\n",
      "latin1",
    ),
  ]);
}

/**
 * A valid one-page PDF with one array of `mib` MiB of zeros (`[0 0 0 …]`): no compression, but
 * about half a million objects per MiB for the parser to build (memory and time, not decoded bytes).
 */
export function objectHeavyPdf(mib: number): Buffer {
  const array = "0 ".repeat((mib * MIB) / 2);
  return Buffer.from(
    "%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n" +
      `3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>\nendobj\n4 0 obj\n[${array}]\nendobj\ntrailer\n<< /Size 5 /Root 1 0 R >>\n%%EOF\n`,
    "latin1",
  );
}
