/**
 * Real media bytes made by the tests: images with sharp, PDFs with pdf-lib. Small and fast,
 * except {@link noisePng}, which is large on purpose (it does not compress).
 */
import { randomBytes } from "node:crypto";
import { PDFDocument } from "pdf-lib";
import sharp from "sharp";

/** A solid-colour image of `width` × `height` px in `format` (GIF: `frames` frames stacked, an animation). */
export async function makeImage(width: number, height: number, format: "jpeg" | "png" | "gif" | "webp", options: { frames?: number; exifOrientation?: number } = {}): Promise<Buffer> {
  const frames = options.frames ?? 1;
  const image = sharp({ create: { width, height: height * frames, channels: 3, background: { r: 200, g: 60, b: 30 } } });
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
  const strip = await sharp({ create: { width, height: height * frames, channels: 3, background: { r: 10, g: 120, b: 200 } } }).raw().toBuffer();
  return sharp(strip, { raw: { width, height: height * frames, channels: 3, pageHeight: height } }).gif({ loop: 0 }).toBuffer();
}

/** A PNG of random pixels (it does not compress: about width × height × 3 bytes). */
export async function noisePng(width: number, height: number): Promise<Buffer> {
  const pixels = randomBytes(width * height * 3);
  return sharp(pixels, { raw: { width, height, channels: 3 } }).png({ compressionLevel: 1 }).toBuffer();
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
