/**
 * Issue 26 (1): PDFs are opened in the PDF reader thread with hard limits — decoded bytes, time and
 * heap — so a decompression bomb or an object-heavy PDF is refused with the limit it passed, the
 * thread is replaced, and the next PDF is read as usual.
 */
import { inflateSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { convertPdf } from "../../src/media/convert.js";
import { MediaError } from "../../src/media/errors.js";
import { PDF_MAX_DECODED_BYTES } from "../../src/media/limits.js";
import { PdfInspector } from "../../src/media/pdf-inspector.js";
import { mediaRefusal } from "../../src/media/refusal.js";
import { makePdf, objectHeavyPdf, pdfBomb } from "./fixtures.js";

const inspectors: PdfInspector[] = [];
const inspector = (limits: ConstructorParameters<typeof PdfInspector>[0] = {}) => {
  const made = new PdfInspector(limits);
  inspectors.push(made);
  return made;
};
afterAll(() => inspectors.forEach((i) => i.close()));
/** The default limits, shared by the tests that keep them (each new thread costs a start). */
let defaults: PdfInspector | undefined;

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => (error instanceof MediaError ? { problem: error.problem, limit: error.limit } : error),
  );

describe("the PDF reader thread", () => {
  it("the bomb is what it claims: an object stream that inflates about 1000:1 (1024 → a 1 MB file, 1 GiB decoded)", () => {
    expect(pdfBomb(1024).length).toBeLessThan(1.1 * 1024 * 1024);
    const bomb = pdfBomb(64);
    const start = bomb.indexOf("stream\n") + "stream\n".length;
    const inflated = inflateSync(bomb.subarray(start, bomb.lastIndexOf("\nendstream")));
    expect(inflated.length).toBeGreaterThan(64 * 1024 * 1024);
    expect(inflated.length / bomb.length).toBeGreaterThan(1000);
    expect(inflated.subarray(0, 40).toString("latin1")).toBe("2 0 3 34 << /Type /Catalog /Pages 3 0 R ");
  });

  it("refuses a PDF whose streams decode past PDF_MAX_DECODED_BYTES, and reads the next PDF in a new run", async () => {
    const reader = (defaults ??= inspector());
    expect(await reader.inspect(await makePdf(2))).toEqual({ pages: 2, encrypted: false });
    expect(await failure(reader.inspect(pdfBomb(1024)))).toEqual({ problem: "too_complex", limit: "decoded" });
    // Just over the cap is refused; well under it is read (the same bomb, smaller).
    expect(await failure(reader.inspect(pdfBomb(PDF_MAX_DECODED_BYTES / (1024 * 1024) + 1)))).toEqual({
      problem: "too_complex",
      limit: "decoded",
    });
    expect(await reader.inspect(pdfBomb(4))).toEqual({ pages: 1, encrypted: false });
    expect(await reader.inspect(await makePdf(3))).toEqual({ pages: 3, encrypted: false });
  });

  it("a PDF that needs more heap than the thread has is refused (memory); the thread is replaced", async () => {
    const reader = inspector({ heapMb: 32, timeoutMs: 60_000 });
    expect(await reader.inspect(await makePdf(1))).toEqual({ pages: 1, encrypted: false });
    expect(await failure(reader.inspect(objectHeavyPdf(2)))).toEqual({ problem: "too_complex", limit: "memory" });
    expect(await reader.inspect(await makePdf(2))).toEqual({ pages: 2, encrypted: false });
  });

  it("a PDF that takes longer than the time limit is refused (time); the thread is terminated and replaced", async () => {
    // The clock starts once the thread is ready: its start (seconds under tsx on a busy machine) is not counted.
    const reader = inspector({ timeoutMs: 1500 });
    expect(await reader.inspect(await makePdf(1))).toEqual({ pages: 1, encrypted: false });
    expect(await failure(reader.inspect(objectHeavyPdf(8)))).toEqual({ problem: "too_complex", limit: "time" });
    expect(await reader.inspect(await makePdf(2))).toEqual({ pages: 2, encrypted: false });
  });

  it("PDFs sent at once are read one after another, each with its own answer", async () => {
    const reader = (defaults ??= inspector());
    const results = await Promise.all(
      [makePdf(1), makePdf(2), Promise.resolve(pdfBomb(256)), makePdf(4)].map(async (p) =>
        failure(reader.inspect(await p)).then((f) => f ?? "ok"),
      ),
    );
    expect(results).toEqual(["ok", "ok", { problem: "too_complex", limit: "decoded" }, "ok"]);
  });

  it("convertPdf refuses the bomb with the short answer naming the limit", async () => {
    const error = await convertPdf(pdfBomb(1024), "invoice.pdf").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MediaError);
    expect(mediaRefusal(error as MediaError, "zh-TW", 5).split("\n")[0]).toBe(
      "這個 PDF 解壓縮後太大了（壓縮內容解開後上限 32 MB），我讀不了。",
    );
    expect(mediaRefusal(new MediaError("too_complex", "", "pdf", { limit: "time" }), "en", 5).split("\n")[0]).toBe(
      "That PDF is too complex: I couldn't open it within 10 s.",
    );
    expect(mediaRefusal(new MediaError("too_complex", "", "pdf", { limit: "memory" }), "en", 5).split("\n")[0]).toBe(
      "That PDF is too complex: opening it needs more than 256 MB of memory.",
    );
  });
});
