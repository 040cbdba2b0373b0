/**
 * `npm run bench:pdf`: what opening PDFs in the PDF reader thread (`src/media/pdf-inspector.ts`)
 * costs, against pdf-lib on the main thread as the bot did before, and what a decompression bomb
 * does to the event loop either way.
 *
 * Figures:
 * - the reader thread's start (once per process, on the first PDF);
 * - time per PDF (median and p95 of `BENCH_PDF_RUNS` loads, default 100) for a 3-page and a
 *   100-page PDF made with pdf-lib: `PDFDocument.load` + page count on the main thread, and
 *   `inspect` through the thread (the bytes copied over, the answer back);
 * - a bomb (a 1 MB PDF whose object stream inflates to 1 GiB): time to the answer, the longest
 *   event-loop stall seen by a 10 ms timer meanwhile, and the process's peak RSS — through the
 *   thread only unless `BENCH_PDF_BOMB_INLINE=1` (pdf-lib on the main thread: about 16 s and 1.3 GB).
 */
import { PDFDocument } from "pdf-lib";
import { PdfInspector } from "../src/media/pdf-inspector.js";
import { makePdf, pdfBomb } from "../test/media/fixtures.js";

const RUNS = Number(process.env.BENCH_PDF_RUNS ?? 100);
const MB = 1024 * 1024;

function stats(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `median ${at(0.5).toFixed(2)} ms, p95 ${at(0.95).toFixed(2)} ms`;
}

async function timed(run: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  return samples;
}

/** Runs `work` while a 10 ms timer measures the event loop's longest stall; also the peak RSS. */
async function underWatch(
  work: () => Promise<unknown>,
): Promise<{ ms: number; stallMs: number; peakRssMb: number; outcome: string }> {
  let last = performance.now();
  let stall = 0;
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last - 10);
    last = now;
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const start = performance.now();
  const outcome = await work().then(
    (r) => JSON.stringify(r),
    (e: unknown) => `refused: ${(e as Error).message}`,
  );
  const ms = performance.now() - start;
  // A stall that lasted until the work ended is seen here, not by the timer.
  stall = Math.max(stall, performance.now() - last - 10);
  clearInterval(timer);
  return { ms, stallMs: stall, peakRssMb: Math.max(peak, process.memoryUsage().rss) / MB, outcome };
}

const loadInline = async (bytes: Uint8Array) =>
  (
    await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false })
  ).getPageCount();

const inspector = new PdfInspector();
const small = await makePdf(3);
const large = await makePdf(100);
console.log(
  `node ${process.version}, ${RUNS} runs per figure; PDFs: 3 pages ${(small.length / 1024).toFixed(1)} KB, 100 pages ${(large.length / 1024).toFixed(1)} KB`,
);

const started = performance.now();
await inspector.inspect(small);
console.log(`reader thread start (first PDF): ${(performance.now() - started).toFixed(0)} ms`);
for (const [name, bytes] of [
  ["3 pages", small],
  ["100 pages", large],
] as const) {
  await loadInline(bytes); // warm-up
  const inline = await timed(() => loadInline(bytes));
  const thread = await timed(() => inspector.inspect(bytes));
  console.log(`${name}: main thread ${stats(inline)}; reader thread ${stats(thread)}`);
}

const bomb = pdfBomb(1024);
const viaThread = await underWatch(() => inspector.inspect(bomb));
console.log(
  `bomb (${(bomb.length / MB).toFixed(2)} MB → 1 GiB) via the reader thread: ` +
    `${viaThread.ms.toFixed(0)} ms, longest event-loop stall ${viaThread.stallMs.toFixed(0)} ` +
    `ms, peak RSS ${viaThread.peakRssMb.toFixed(0)} MB; ${viaThread.outcome}`,
);
if (process.env.BENCH_PDF_BOMB_INLINE === "1") {
  const inline = await underWatch(() => loadInline(bomb));
  console.log(
    `bomb on the main thread: ${inline.ms.toFixed(0)} ms, longest event-loop stall ` +
      `${inline.stallMs.toFixed(0)} ms, peak RSS ${inline.peakRssMb.toFixed(0)} MB; ` +
      `${inline.outcome}`,
  );
}
inspector.close();
