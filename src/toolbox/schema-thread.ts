/**
 * The thread side of the JSON Schema checker (`schema-checker.ts`): a worker thread that compiles
 * JSON Schemas with Ajv (https://ajv.js.org) and validates inputs against them, so that neither a
 * large schema (Ajv generates and compiles code for every keyword) nor a slow input check ever
 * holds the bot's event loop.
 *
 * `pattern` and `patternProperties` regular expressions run on RE2JS (a JavaScript port of RE2,
 * https://github.com/le0pard/re2js): matching takes time linear in the input, so a server's
 * `^(a+)+$` cannot make one check take seconds (it doubles per character with backtracking). A
 * pattern RE2 cannot express (lookaround, back-references) falls back to a native `RegExp`; the
 * checker's time limit then bounds it. Ajv's `code.regExp` option: https://ajv.js.org/options.html#code .
 *
 * Drafts: a schema whose `$schema` names draft 2020-12 or 2019-09 is compiled with Ajv's classes
 * for those drafts; any other (draft-07, draft-06, none) with Ajv's default draft-07 class.
 * Formats (`email`, `uri`, `date-time` …) are checked with `ajv-formats`.
 *
 * Protocol: once loaded, the thread posts {@link SCHEMA_THREAD_READY}; then it answers each
 * {@link SchemaTask} with one {@link SchemaAnswer}, in order.
 */
import { parentPort } from "node:worker_threads";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { RegExpEngine } from "ajv/dist/types/index.js";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { RE2JS } from "re2js";

/** The thread's first message: Ajv is loaded and tasks can come. */
export const SCHEMA_THREAD_READY = "ready";

/** Work for the thread: compile a schema under a key, or validate an input against a compiled one. */
export type SchemaTask =
  | { id: number; kind: "compile"; key: string; schema: Record<string, unknown>; dialect?: unknown }
  | { id: number; kind: "validate"; key: string; input: unknown };

/**
 * The answer to a {@link SchemaTask}: compiled; valid or not (with Ajv's errors); or why not
 * (`unknown`: no schema of that key was compiled in this thread).
 */
export type SchemaAnswer =
  | { id: number; ok: true; valid?: boolean; errors?: ErrorObject[] }
  | { id: number; ok: false; problem: "compile" | "unknown"; message: string };

// ajv-formats is CommonJS: under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

/**
 * A regular expression for Ajv: RE2JS (linear time) for what RE2 can express, a native `RegExp`
 * otherwise. Ajv passes `u` (unicode); RE2 always matches code points.
 */
const safeRegExp: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    try {
      return RE2JS.compile(RE2JS.translateRegExp(pattern), flags.includes("i") ? RE2JS.CASE_INSENSITIVE : 0);
    } catch {
      return new RegExp(pattern, flags);
    }
  },
  { code: "re2js" },
);

// addUsedSchema: false: a compiled schema is not kept under its `$id` (two servers' schemas with one `$id` must not meet).
const options = {
  allErrors: true,
  strict: false,
  validateFormats: true,
  addUsedSchema: false,
  code: { regExp: safeRegExp },
} as const;
const validators = {
  draft7: undefined as Ajv | undefined,
  draft2019: undefined as Ajv | undefined,
  draft2020: undefined as Ajv | undefined,
};

function validatorFor(schemaUri: unknown): Ajv {
  const uri = typeof schemaUri === "string" ? schemaUri : "";
  if (uri.includes("2020-12")) return (validators.draft2020 ??= addFormats(new Ajv2020(options) as unknown as Ajv));
  if (uri.includes("2019-09")) return (validators.draft2019 ??= addFormats(new Ajv2019(options) as unknown as Ajv));
  return (validators.draft7 ??= addFormats(new Ajv(options)));
}

/** Most compiled validators kept; the least recently used goes first (the checker compiles it again when needed). */
const MAX_COMPILED = 500;
const compiled = new Map<string, ValidateFunction>();

/**
 * Compiles `schema` on the shared Ajv of its draft and leaves nothing behind in it: Ajv caches every
 * compiled schema object and records the `$id`s found inside it, so without this each compile
 * (every reconnect, every `tools/list_changed`) would add entries for good. The returned function
 * keeps what it needs (references are resolved at compile time).
 */
function compile(schema: Record<string, unknown>, dialect: unknown): ValidateFunction {
  const ajv = validatorFor(dialect);
  const before = new Set(Object.keys(ajv.refs));
  try {
    return ajv.compile(schema);
  } finally {
    ajv.removeSchema(schema);
    for (const key of Object.keys(ajv.refs)) if (!before.has(key)) delete ajv.refs[key];
  }
}

function answer(task: SchemaTask): SchemaAnswer {
  if (task.kind === "compile") {
    if (compiled.has(task.key)) return { id: task.id, ok: true };
    try {
      compiled.set(task.key, compile(task.schema, task.dialect));
    } catch (error) {
      return { id: task.id, ok: false, problem: "compile", message: (error as Error).message };
    }
    if (compiled.size > MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    return { id: task.id, ok: true };
  }
  const validate = compiled.get(task.key);
  if (!validate) return { id: task.id, ok: false, problem: "unknown", message: "no such schema" };
  compiled.delete(task.key);
  compiled.set(task.key, validate);
  const valid = validate(task.input);
  return valid ? { id: task.id, ok: true, valid } : { id: task.id, ok: true, valid, errors: validate.errors ?? [] };
}

parentPort?.on("message", (task: SchemaTask) => parentPort!.postMessage(answer(task)));
parentPort?.postMessage(SCHEMA_THREAD_READY);
