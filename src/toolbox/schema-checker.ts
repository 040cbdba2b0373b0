/**
 * JSON Schema checks off the event loop: one persistent worker thread (`schema-thread.ts`)
 * compiles the schemas of JSON Schema tool inputs (MCP tools) and validates the model's input
 * against them, one task at a time, each within a time limit: checks of inputs (and compiles a
 * check needs) first, since a call waits for them, then the compiles of newly listed tools; each
 * in arrival order. A schema that
 * takes long to compile, or an input that takes long to check, then delays only the other schema
 * tasks, never a chat, a button or a heartbeat. Measured before this (issue 39 item 4), ten 64 KB
 * schemas held the event loop 1.7–6.0 s and a pattern `^(a+)+$` on 28 characters 2.9 s.
 *
 * Limits: {@link SCHEMA_COMPILE_TIMEOUT_MS} per schema compiled, {@link SCHEMA_VALIDATE_TIMEOUT_MS}
 * per input checked (from the moment the thread takes it), {@link SCHEMA_THREAD_HEAP_MB} MB of
 * heap. Past one of them the thread is terminated (its work and memory go with it) and a new one
 * takes the next task; the schemas it had compiled are compiled again when next used.
 *
 * The thread is started on first use and unreferenced while idle (it never keeps the process alive).
 */
import { createHash } from "node:crypto";
import type { Worker } from "node:worker_threads";
import type { ErrorObject } from "ajv";
import { startModuleThread } from "../threads.js";
import type { SchemaAnswer, SchemaTask } from "./schema-thread.js";

/** {@link SCHEMA_THREAD_READY} of `schema-thread.ts`, repeated here: importing it would load Ajv in this thread. */
const READY = "ready";

/** Longest compile of one schema, in ms; a schema that takes longer is refused (its tool is left out). */
export const SCHEMA_COMPILE_TIMEOUT_MS = 10_000;

/** Longest check of one input, in ms; an input that takes longer is refused (its call is not run). */
export const SCHEMA_VALIDATE_TIMEOUT_MS = 2_000;

/** Old-generation heap of the thread, in MB. */
export const SCHEMA_THREAD_HEAP_MB = 256;

/** Longest wait for a new thread to be ready (loading Ajv, and tsx in a development checkout), in ms. */
const START_TIMEOUT_MS = 30_000;

/** Why a schema task failed: it could not compile, or it passed a limit (time, memory) or the thread failed. */
export class SchemaCheckError extends Error {
  constructor(
    readonly problem: "compile" | "timeout" | "failed",
    message: string,
  ) {
    super(message);
    this.name = "SchemaCheckError";
  }
}

/** Limits of a {@link SchemaChecker}; the defaults are the constants above. */
export interface SchemaCheckerLimits {
  compileTimeoutMs: number;
  validateTimeoutMs: number;
  heapMb: number;
}

/** A compiled schema: its key in the thread, and what to compile again after a new thread started. */
export interface CompiledSchema {
  readonly key: string;
  readonly schema: Record<string, unknown>;
  readonly dialect?: unknown;
}

/** What a check found: valid, or Ajv's errors. */
export type SchemaCheck = { valid: true } | { valid: false; errors: ErrorObject[] };

/** A task before it is handed to the thread (the id is given then). */
type Task = SchemaTask extends infer T ? (T extends SchemaTask ? Omit<T, "id"> & { id?: number } : never) : never;

interface Pending {
  task: Task;
  /** A call waits for it (a check, or a compile the check needs): it goes before the others. */
  urgent: boolean;
  timeoutMs: number;
  resolve(answer: SchemaAnswer): void;
  reject(error: SchemaCheckError): void;
  timer?: NodeJS.Timeout;
  clock?: boolean;
}

/** Compiles and validates JSON Schemas in a worker thread with limits; see the module comment. */
export class SchemaChecker {
  readonly #limits: SchemaCheckerLimits;
  readonly #queue: Pending[] = [];
  #thread: Worker | undefined;
  #ready = false;
  #running: Pending | undefined;
  #nextId = 1;
  /** Keys compiled in the current thread. */
  #compiled = new Set<string>();

  constructor(limits: Partial<SchemaCheckerLimits> = {}) {
    this.#limits = {
      compileTimeoutMs: SCHEMA_COMPILE_TIMEOUT_MS,
      validateTimeoutMs: SCHEMA_VALIDATE_TIMEOUT_MS,
      heapMb: SCHEMA_THREAD_HEAP_MB,
      ...limits,
    };
  }

  /**
   * Compiles `schema` (once per equal schema and draft: kept by the SHA-256 of its JSON text).
   *
   * @param schema - a JSON Schema object (without `$schema`).
   * @param dialect - the schema's `$schema`, which chooses the draft (see `schema-thread.ts`).
   * @throws {SchemaCheckError} `compile` when Ajv cannot compile it (the message says why),
   *   `timeout` past {@link SchemaCheckerLimits.compileTimeoutMs}, `failed` when the thread failed
   *   (e.g. out of memory) or could not start.
   */
  async compile(schema: Record<string, unknown>, dialect?: unknown): Promise<CompiledSchema> {
    const key = createHash("sha256")
      .update(`${typeof dialect === "string" ? dialect : ""}\0${JSON.stringify(schema)}`)
      .digest("hex");
    const compiled = { key, schema, dialect };
    await this.#compileHere(compiled, false);
    return compiled;
  }

  /**
   * Validates `input` against a compiled schema (compiled again first when the thread is new).
   *
   * @throws {SchemaCheckError} `timeout` past {@link SchemaCheckerLimits.validateTimeoutMs};
   *   `failed` when the thread failed; as {@link compile} when the schema must be compiled again.
   */
  async validate(compiled: CompiledSchema, input: unknown): Promise<SchemaCheck> {
    for (let attempt = 0; ; attempt += 1) {
      await this.#compileHere(compiled, true);
      const task: Task = { kind: "validate", key: compiled.key, input };
      const answer = await this.#run(task, this.#limits.validateTimeoutMs, true);
      if (answer.ok) return answer.valid ? { valid: true } : { valid: false, errors: answer.errors ?? [] };
      // The thread dropped the schema (its cache is bounded): compile it again, once.
      this.#compiled.delete(compiled.key);
      if (attempt > 0) throw new SchemaCheckError("failed", answer.message);
    }
  }

  /** Stops the thread; waiting tasks are refused. */
  close(): void {
    for (const pending of this.#queue.splice(0))
      pending.reject(new SchemaCheckError("failed", "the schema checker was closed"));
    this.#fail(new SchemaCheckError("failed", "the schema checker was closed"));
  }

  async #compileHere(compiled: CompiledSchema, urgent: boolean): Promise<void> {
    if (this.#compiled.has(compiled.key)) return;
    const task: Task = { kind: "compile", key: compiled.key, schema: compiled.schema, dialect: compiled.dialect };
    const answer = await this.#run(task, this.#limits.compileTimeoutMs, urgent);
    if (!answer.ok) throw new SchemaCheckError("compile", answer.message);
    this.#compiled.add(compiled.key);
  }

  #run(task: Task, timeoutMs: number, urgent: boolean): Promise<SchemaAnswer> {
    return new Promise<SchemaAnswer>((resolve, reject) => {
      const pending = { task, timeoutMs, urgent, resolve, reject };
      // An urgent task goes before the others waiting, after the urgent ones already waiting.
      const at = urgent ? this.#queue.findIndex((p) => !p.urgent) : -1;
      if (at === -1) this.#queue.push(pending);
      else this.#queue.splice(at, 0, pending);
      this.#next();
    });
  }

  /** Hands the next waiting task to the thread, starting one when there is none. */
  #next(): void {
    if (this.#running || this.#queue.length === 0) return;
    const pending = this.#queue.shift()!;
    let thread: Worker;
    try {
      thread = this.#thread ?? this.#start();
    } catch (error) {
      pending.reject(new SchemaCheckError("failed", `the schema thread could not start: ${(error as Error).message}`));
      return this.#next();
    }
    pending.task.id = this.#nextId++;
    this.#running = pending;
    thread.ref();
    thread.postMessage(pending.task);
    if (this.#ready) this.#startClock();
    else {
      pending.timer = setTimeout(
        () =>
          this.#fail(new SchemaCheckError("failed", `the schema thread was not ready within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
    }
  }

  /** Starts the time limit of the running task (replacing the wait for the thread's start). */
  #startClock(): void {
    const running = this.#running;
    if (!running || running.clock) return;
    clearTimeout(running.timer);
    running.clock = true;
    const what = running.task.kind === "compile" ? "compiling the schema" : "checking the input";
    running.timer = setTimeout(
      () => this.#fail(new SchemaCheckError("timeout", `${what} took longer than ${running.timeoutMs} ms`)),
      running.timeoutMs,
    );
  }

  #start(): Worker {
    const thread = startModuleThread(import.meta.url, "schema-thread", {
      resourceLimits: { maxOldGenerationSizeMb: this.#limits.heapMb },
      stdout: false,
      stderr: false,
    });
    this.#thread = thread;
    this.#ready = false;
    this.#compiled = new Set();
    thread.on("message", (message: SchemaAnswer | typeof READY) => {
      if (thread !== this.#thread) return;
      if (message !== READY) return this.#answer(message);
      this.#ready = true;
      this.#startClock();
    });
    thread.on("error", (error: Error & { code?: string }) => {
      if (thread !== this.#thread) return;
      this.#fail(
        new SchemaCheckError(
          "failed",
          error.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? `the schema thread needed more than ${this.#limits.heapMb} MB of memory`
            : `the schema thread failed: ${error.message}`,
        ),
      );
    });
    thread.on("exit", (code) => {
      if (thread === this.#thread)
        this.#fail(new SchemaCheckError("failed", `the schema thread stopped (exit code ${code})`));
    });
    return thread;
  }

  #answer(answer: SchemaAnswer): void {
    const running = this.#running;
    if (!running || running.task.id !== answer.id) return;
    clearTimeout(running.timer);
    this.#running = undefined;
    running.resolve(answer);
    if (this.#queue.length === 0) this.#thread?.unref();
    this.#next();
  }

  /** Refuses the running task with `error`, drops the thread (terminated), and goes on with the next. */
  #fail(error: SchemaCheckError): void {
    const thread = this.#thread;
    this.#thread = undefined;
    this.#compiled = new Set();
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

let shared: SchemaChecker | undefined;

/** The process's shared {@link SchemaChecker} (its thread is started on first use, with the default limits). */
export function schemaChecker(): SchemaChecker {
  return (shared ??= new SchemaChecker());
}
