/**
 * The thread side of {@link inspectPdf} (`pdf-inspector.ts`): a worker thread that opens PDFs with
 * pdf-lib and answers how many pages each has and whether it is encrypted. It runs in its own
 * thread, under the memory limits the inspector gives it, so a PDF that takes long or much memory
 * to open never blocks the bot's event loop.
 *
 * Decoded bytes are capped: pdf-lib inflates every object stream and cross-reference stream while
 * it loads, and a stream of a few hundred kilobytes can inflate a thousand times. Every filter of
 * pdf-lib (Flate, LZW, ASCII85, ASCIIHex, RunLength) decodes through `DecodeStream`, whose
 * `ensureBuffer` grows the output buffer before each block; that is where the cap is counted, so a
 * PDF is refused before the memory is taken. pdf-lib is pinned (1.17.1), and the test of the bomb
 * fails should a new version decode elsewhere.
 *
 * Protocol: once loaded, the thread posts {@link PDF_WORKER_READY}; then it receives
 * {@link PdfTask} messages and answers each with one {@link PdfAnswer}, in order.
 */
import { parentPort } from "node:worker_threads";
import { createRequire } from "node:module";
import { PDFDocument } from "pdf-lib";

/** The thread's first message: pdf-lib is loaded and tasks can come. */
export const PDF_WORKER_READY = "ready";

/** A PDF to inspect: the file's bytes and the most bytes its streams may decode to, together. */
export interface PdfTask {
  id: number;
  bytes: Uint8Array;
  maxDecodedBytes: number;
}

/** The answer to a {@link PdfTask}: what the PDF is, or why it could not be opened. */
export type PdfAnswer =
  | { id: number; ok: true; pages: number; encrypted: boolean }
  | { id: number; ok: false; problem: "decoded_too_large" | "unreadable"; message: string };

/** Thrown inside pdf-lib's decoding once a PDF's streams pass the task's cap. */
class DecodedTooLarge extends Error {}

interface DecodeStreamLike {
  buffer: Uint8Array;
  minBufferLength: number;
  ensureBuffer(requested: number): Uint8Array;
}

// pdf-lib writes a console line for every invalid object it skips, which a hostile PDF can make by
// the thousand: the thread stays quiet (its answer says what went wrong).
console.log = console.warn = console.error = () => undefined;

let decodedBudget = Infinity;
/** Set once the current PDF passed its cap (pdf-lib's tolerant parser may swallow the throw and go on). */
let exceeded = false;

// pdf-lib's CommonJS build (the one `import "pdf-lib"` loads in Node): the same module instance its
// parser uses.
const DecodeStream = (
  createRequire(import.meta.url)("pdf-lib/cjs/core/streams/DecodeStream.js") as {
    default: { prototype: DecodeStreamLike };
  }
).default;
const ensureBuffer = DecodeStream.prototype.ensureBuffer;
DecodeStream.prototype.ensureBuffer = function capped(this: DecodeStreamLike, requested: number): Uint8Array {
  if (requested > this.buffer.byteLength) {
    // The new buffer's size, as pdf-lib works it out: its minimum doubled until it holds `requested`.
    let size = this.minBufferLength;
    while (size < requested) size *= 2;
    decodedBudget -= size - this.buffer.byteLength;
    if (decodedBudget < 0) {
      exceeded = true;
      throw new DecodedTooLarge("the PDF's compressed streams decode to more than the limit");
    }
  }
  return ensureBuffer.call(this, requested);
};

const tooLarge = (id: number): PdfAnswer => ({
  id,
  ok: false,
  problem: "decoded_too_large",
  message: "the PDF's compressed streams decode to more than the limit",
});

async function inspect(task: PdfTask): Promise<PdfAnswer> {
  decodedBudget = task.maxDecodedBytes;
  exceeded = false;
  try {
    const doc = await PDFDocument.load(task.bytes, {
      ignoreEncryption: true,
      updateMetadata: false,
      throwOnInvalidObject: false,
    });
    if (exceeded) return tooLarge(task.id);
    if (doc.isEncrypted) return { id: task.id, ok: true, pages: 0, encrypted: true };
    return { id: task.id, ok: true, pages: doc.getPageCount(), encrypted: false };
  } catch (error) {
    if (exceeded || error instanceof DecodedTooLarge) return tooLarge(task.id);
    return {
      id: task.id,
      ok: false,
      problem: "unreadable",
      message: `the PDF could not be read: ${(error as Error).message}`,
    };
  } finally {
    decodedBudget = Infinity;
  }
}

parentPort?.on("message", (task: PdfTask) => {
  void inspect(task).then((answer) => parentPort!.postMessage(answer));
});
parentPort?.postMessage(PDF_WORKER_READY);
