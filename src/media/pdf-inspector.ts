/**
 * Opens PDFs off the main thread, with hard limits, so a hostile PDF can neither freeze the event
 * loop (other chats keep being answered) nor take the worker process's memory.
 *
 * One persistent worker thread (`pdf-worker.ts`) opens one PDF at a time, in arrival order; it is
 * started on the first PDF and kept for the next ones (starting a thread costs more than opening a
 * small PDF), unreferenced while idle so it never keeps the process alive. Limits per PDF:
 * - decoded bytes: the PDF's compressed streams may decode to {@link PDF_MAX_DECODED_BYTES} together
 *   (counted inside pdf-lib's decoder, before the memory is taken);
 * - time: {@link PDF_INSPECT_TIMEOUT_MS} from the moment the thread takes it (a thread being
 *   started takes it once it is ready, and must be ready within 30 s); then the thread is
 *   terminated (its memory goes with it) and a new one takes the next PDF;
 * - heap: the thread runs with {@link PDF_WORKER_HEAP_MB} MB of old-generation heap (Node's
 *   `resourceLimits`); past it Node stops the thread, not the process.
 *
 * Source: https://nodejs.org/api/worker_threads.html#new-workerfilename-options (`resourceLimits`,
 * `eval`), https://nodejs.org/api/worker_threads.html#workerterminate.
 */
import type { Worker } from "node:worker_threads";
import { startModuleThread } from "../threads.js";
import { MediaError } from "./errors.js";
import { PDF_INSPECT_TIMEOUT_MS, PDF_MAX_DECODED_BYTES, PDF_WORKER_HEAP_MB } from "./limits.js";
import type { PdfAnswer, PdfTask } from "./pdf-worker.js";

/** {@link PDF_WORKER_READY} of `pdf-worker.ts`, repeated here: importing it would load pdf-lib in this thread. */
const READY = "ready";

/** Longest wait for a new thread to be ready (loading pdf-lib, and tsx in a development checkout), in ms. */
const START_TIMEOUT_MS = 30_000;

/** What {@link PdfInspector.inspect} finds out about a PDF. */
export interface PdfInspection {
  /** Pages (0 when encrypted: not counted). */
  pages: number;
  encrypted: boolean;
}

/** Limits of a {@link PdfInspector}; the defaults are the ones in `limits.ts`. */
export interface PdfInspectorLimits {
  /** Most bytes a PDF's streams may decode to, together. */
  maxDecodedBytes: number;
  /** Longest time for one PDF once the thread takes it, in ms (not counting the thread's start). */
  timeoutMs: number;
  /** Old-generation heap of the thread, in MB. */
  heapMb: number;
}

interface Pending {
  task: PdfTask;
  resolve(inspection: PdfInspection): void;
  reject(error: MediaError): void;
}

/** The worker thread (`pdf-worker.ts`, see `startModuleThread`), with `heapMb` MB of old-generation heap. */
function startThread(heapMb: number): Worker {
  return startModuleThread(import.meta.url, "pdf-worker", {
    resourceLimits: { maxOldGenerationSizeMb: heapMb },
    stdout: false,
    stderr: false,
  });
}

/** Opens PDFs in a worker thread with limits; see the module comment. */
export class PdfInspector {
  readonly #limits: PdfInspectorLimits;
  readonly #queue: Pending[] = [];
  #thread: Worker | undefined;
  /** Whether {@link #thread} posted {@link READY}. */
  #ready = false;
  #running: (Pending & { timer?: NodeJS.Timeout; clock?: boolean }) | undefined;
  #nextId = 1;

  constructor(limits: Partial<PdfInspectorLimits> = {}) {
    this.#limits = {
      maxDecodedBytes: PDF_MAX_DECODED_BYTES,
      timeoutMs: PDF_INSPECT_TIMEOUT_MS,
      heapMb: PDF_WORKER_HEAP_MB,
      ...limits,
    };
  }

  /**
   * Opens `bytes` as a PDF and counts its pages. The bytes are copied to the thread (the caller's
   * buffer stays usable).
   *
   * @throws {MediaError} `too_complex` when the PDF passes a limit (`limit` says which: decoded
   *   bytes, time or memory); `unreadable` when pdf-lib cannot open it, or the thread cannot start.
   */
  inspect(bytes: Uint8Array): Promise<PdfInspection> {
    return new Promise<PdfInspection>((resolve, reject) => {
      this.#queue.push({
        task: { id: this.#nextId++, bytes: new Uint8Array(bytes), maxDecodedBytes: this.#limits.maxDecodedBytes },
        resolve,
        reject,
      });
      this.#next();
    });
  }

  /** Stops the thread (a PDF being opened or waiting is refused as unreadable). */
  close(): void {
    for (const pending of this.#queue.splice(0))
      pending.reject(new MediaError("unreadable", "the PDF reader was closed", "pdf"));
    this.#fail(new MediaError("unreadable", "the PDF reader was closed", "pdf"));
  }

  /** Hands the next waiting PDF to the thread, starting one when there is none. */
  #next(): void {
    if (this.#running || this.#queue.length === 0) return;
    const pending = this.#queue.shift()!;
    let thread: Worker;
    try {
      thread = this.#thread ?? this.#start();
    } catch (error) {
      pending.reject(
        new MediaError("unreadable", `the PDF reader thread could not start: ${(error as Error).message}`, "pdf", {
          cause: error,
        }),
      );
      return this.#next();
    }
    this.#running = pending;
    thread.ref();
    thread.postMessage(pending.task, [pending.task.bytes.buffer as ArrayBuffer]);
    if (this.#ready) this.#startClock();
    else {
      this.#running.timer = setTimeout(() => {
        this.#fail(
          new MediaError("unreadable", `the PDF reader thread was not ready within ${START_TIMEOUT_MS} ms`, "pdf"),
        );
      }, START_TIMEOUT_MS);
    }
  }

  /** Starts the time limit of the PDF being opened (replacing the wait for the thread's start). */
  #startClock(): void {
    const running = this.#running;
    if (!running || running.clock) return;
    clearTimeout(running.timer);
    running.clock = true;
    running.timer = setTimeout(() => {
      this.#fail(
        new MediaError("too_complex", `opening the PDF took longer than ${this.#limits.timeoutMs} ms`, "pdf", {
          limit: "time",
        }),
      );
    }, this.#limits.timeoutMs);
  }

  #start(): Worker {
    const thread = startThread(this.#limits.heapMb);
    this.#thread = thread;
    this.#ready = false;
    thread.on("message", (message: PdfAnswer | typeof READY) => {
      if (thread !== this.#thread) return;
      if (message !== READY) return this.#answer(message);
      this.#ready = true;
      this.#startClock();
    });
    thread.on("error", (error: Error & { code?: string }) => {
      if (thread !== this.#thread) return;
      const outOfMemory = error.code === "ERR_WORKER_OUT_OF_MEMORY";
      this.#fail(
        outOfMemory
          ? new MediaError(
              "too_complex",
              `opening the PDF needed more than ${this.#limits.heapMb} MB of memory`,
              "pdf",
              { limit: "memory", cause: error },
            )
          : new MediaError("unreadable", `the PDF reader thread failed: ${error.message}`, "pdf", { cause: error }),
      );
    });
    thread.on("exit", (code) => {
      if (thread === this.#thread)
        this.#fail(new MediaError("unreadable", `the PDF reader thread stopped (exit code ${code})`, "pdf"));
    });
    return thread;
  }

  #answer(answer: PdfAnswer): void {
    const running = this.#running;
    if (!running || running.task.id !== answer.id) return;
    clearTimeout(running.timer);
    this.#running = undefined;
    if (answer.ok) running.resolve({ pages: answer.pages, encrypted: answer.encrypted });
    else if (answer.problem === "decoded_too_large") {
      running.reject(
        new MediaError(
          "too_complex",
          `the PDF's streams decode to more than ${this.#limits.maxDecodedBytes} bytes`,
          "pdf",
          { limit: "decoded" },
        ),
      );
    } else running.reject(new MediaError("unreadable", answer.message, "pdf"));
    if (this.#queue.length === 0) this.#thread?.unref();
    this.#next();
  }

  /** Refuses the PDF being opened with `error`, drops the thread (terminated), and goes on with the next. */
  #fail(error: MediaError): void {
    const thread = this.#thread;
    this.#thread = undefined;
    if (thread) void thread.terminate();
    const running = this.#running;
    this.#running = undefined;
    if (running) {
      clearTimeout(running.timer);
      running.reject(error);
    }
    this.#next();
  }
}

let shared: PdfInspector | undefined;

/**
 * Opens a PDF in the process's shared {@link PdfInspector} (started on first use, with the limits
 * of `limits.ts`).
 * @throws {MediaError} as {@link PdfInspector.inspect}.
 */
export function inspectPdf(bytes: Uint8Array): Promise<PdfInspection> {
  shared ??= new PdfInspector();
  return shared.inspect(bytes);
}
