/**
 * Checks a Bot API request against Telegram's published method and type list, so the fake
 * Telegram (`telegram.ts`) refuses what the documentation does not allow.
 *
 * The list is `test/fixtures/specs/telegram-bot-api/api.json`: Bot API 10.1 as scraped from
 * https://core.telegram.org/bots/api (provenance beside it). Each method's field list is
 * translated into a JSON Schema (draft 2020-12) and validated with Ajv:
 * - the method must exist; every parameter must be one of its fields (Telegram itself ignores
 *   unknown parameters: a typo would silently do nothing, so the fake refuses it); `required`
 *   fields present;
 * - types: `Integer`, `Float`, `String`, `Boolean`, `Array of …`, the named types (objects with
 *   exactly their fields, nested to any depth; a type with subtypes is one of them, told apart by
 *   the `type` / `status` / `source` value the docs give, e.g. "Scope type, must be chat"),
 *   `InputFile` (a part of a multipart upload), and unions such as "Integer or String";
 * - limits the field descriptions state: "1-4096 characters after entities parsing" (counted on
 *   the text left after parsing `parse_mode`, in Unicode code points: the Bot API's TDLib refuses a
 *   bot's text when `utf8_length(text)` — code points — exceeds `message_text_length_max`, so 4096
 *   emoji, 8192 UTF-16 units, are accepted), "0-200 characters", "1-64 bytes" (UTF-8 bytes),
 *   integer ranges such as "Values between 1-100 are accepted".
 *
 * How parameters arrive (https://core.telegram.org/bots/api#making-requests): query string, form,
 * JSON or multipart. Telegram reads every top-level parameter from its text, so `"123"` is an
 * Integer and `"{\"inline_keyboard\":…}"` a JSON-serialized object in any of them; inside a
 * JSON-serialized object the JSON types must match.
 *
 * Validators are compiled once per method and kept across test processes (`spec-cache.ts`).
 */
import { readFileSync } from "node:fs";
import { _, Ajv2020, str, type KeywordCxt, type ValidateFunction } from "ajv/dist/2020.js";
import type { KeywordErrorCxt } from "ajv/dist/types/index.js";
import { cachedValidator, specFingerprint } from "./spec-cache.js";
import { formatPath, problemLine, specProblems, type SpecProblem } from "./spec-problems.js";

/** A field (method parameter or type field) as api.json lists it. */
interface TgField {
  name: string;
  types: string[];
  required: boolean;
  description: string;
}

/** A method or type of api.json. */
interface TgEntry {
  name: string;
  href: string;
  fields?: TgField[];
  subtypes?: string[];
  subtype_of?: string[];
}

interface TgSpec {
  version: string;
  release_date: string;
  methods: Record<string, TgEntry>;
  types: Record<string, TgEntry>;
}

/**
 * Where api.json and the official documentation disagree, the documentation wins: each entry
 * replaces (or, with `field: null`, removes) one field of api.json before translation, and says
 * why, with the documentation's URL. `at` is `Method.field` or `Type.field`.
 *
 * None is needed for what the bot sends today: every difference found between the bot's requests
 * and api.json so far was the bot's (fixed in the adapters).
 */
export const TELEGRAM_SPEC_EXCEPTIONS: readonly {
  at: string;
  field: Partial<TgField> | null;
  reason: string;
  docs: string;
}[] = [];

/** The key under which a multipart file part is represented in a request's parameters. */
export const INPUT_FILE = "@inputFile";

/** A file part of a multipart request, as the fake hands it to {@link checkTelegramRequest}. */
export interface InputFilePart {
  [INPUT_FILE]: true;
  filename: string;
  size: number;
  /** The part's content type, as sent. */
  mimeType?: string;
  /** The part's bytes. */
  bytes?: Buffer;
}

/**
 * Turns a request's text into what Telegram shows: the text left after parsing `parseMode`, or `undefined` when it
 * cannot be parsed (the fake then answers "can't parse entities").
 */
export type TextParser = (text: string, parseMode: string | undefined) => string | undefined;

/** The outcome of {@link checkTelegramRequest}. */
export type TelegramCheck =
  | { ok: true }
  | {
      ok: false;
      /** The HTTP status and `error_code` Telegram answers (400, or 404 for an unknown method). */
      status: number;
      /** The answer's `description`, e.g. `Bad Request: message is too long`. */
      description: string;
      /** Every problem found, one line each. */
      problems: string[];
    };

const SPEC_FILE = new URL("../fixtures/specs/telegram-bot-api/api.json", import.meta.url);

let spec: TgSpec | undefined;
let ajv: Ajv2020 | undefined;
let fingerprint: string | undefined;
const validators = new Map<string, ValidateFunction>();

/** api.json with {@link TELEGRAM_SPEC_EXCEPTIONS} applied, read once. */
function loadSpec(): TgSpec {
  if (spec) return spec;
  const loaded = JSON.parse(readFileSync(SPEC_FILE, "utf8")) as TgSpec;
  for (const exception of TELEGRAM_SPEC_EXCEPTIONS) {
    const [owner, name] = exception.at.split(".") as [string, string];
    const entry = loaded.methods[owner] ?? loaded.types[owner];
    if (!entry) throw new Error(`TELEGRAM_SPEC_EXCEPTIONS: no method or type ${owner} in api.json`);
    const fields = (entry.fields ??= []);
    const index = fields.findIndex((f) => f.name === name);
    if (exception.field === null) {
      if (index < 0) throw new Error(`TELEGRAM_SPEC_EXCEPTIONS: ${exception.at} is not in api.json`);
      fields.splice(index, 1);
    } else if (index >= 0) fields[index] = { ...fields[index]!, ...exception.field };
    else fields.push({ name, types: ["String"], required: false, description: "", ...exception.field });
  }
  return (spec = loaded);
}

/** The validator of `method`, compiled on first use; `undefined` when api.json has no such method. */
function validatorOf(method: string): ValidateFunction | undefined {
  const cached = validators.get(method);
  if (cached) return cached;
  if (!Object.hasOwn(loadSpec().methods, method)) return undefined;
  fingerprint ??= specFingerprint([SPEC_FILE, new URL(import.meta.url)]);
  const validate = cachedValidator(fingerprint, `telegram-${method}`, () => {
    const compiled = getAjv().getSchema(`telegram-bot-api#/$defs/${method}`);
    if (!compiled) throw new Error(`telegram-spec: no schema for ${method}`);
    return { ajv: getAjv(), validate: compiled };
  });
  validators.set(method, validate);
  return validate;
}

/** The Ajv instance with api.json translated (for compiling, and for explaining a failure). */
function getAjv(): Ajv2020 {
  return (ajv ??= createAjv(loadSpec()));
}

/**
 * Checks one Bot API call.
 *
 * @param method - the method name from the URL (`sendMessage`).
 * @param params - the parameters as received: query string and body merged; form, query and
 *   multipart values are strings, multipart file parts {@link InputFilePart}s.
 * @param parse - how the fake parses `parse_mode` text (for limits counted after entity parsing).
 * @returns `{ ok: true }`, or the answer Telegram gives and every problem found.
 */
export function checkTelegramRequest(
  method: string,
  params: Record<string, unknown>,
  parse: TextParser,
): TelegramCheck {
  const validate = validatorOf(method);
  if (!validate)
    return {
      ok: false,
      status: 404,
      description: "Not Found: method not found",
      problems: [`${method}: not a method of the ${loadSpec().version}`],
    };
  const fields = new Map((loadSpec().methods[method]!.fields ?? []).map((f) => [f.name, f]));
  const decoded: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(params)) {
    // A file part that a parameter refers to as attach://<name> is the parameter's content, not a parameter.
    if (isInputFile(value) && !fields.has(name) && refersTo(params, `attach://${name}`)) continue;
    decoded[name] = decodeParam(value, fields.get(name)?.types, params);
  }
  if (validate.call({ parse } satisfies ParseContext, decoded)) return { ok: true };
  const problems = specProblems(getAjv(), validate.errors ?? []);
  return {
    ok: false,
    status: 400,
    description: `Bad Request: ${describe(method, problems[0]!)}`,
    problems: problems.map(problemLine),
  };
}

/** The Bot API version of api.json (e.g. `Bot API 10.1`). */
export function telegramSpecVersion(): string {
  return loadSpec().version;
}

/** What Telegram answers for some problems (the fake's tests and the bot's error handling know these texts). */
function describe(method: string, problem: SpecProblem): string {
  const field = problem.path.at(-1);
  if (problem.keyword === "x-tg-bytes" && field === "callback_data") return "BUTTON_DATA_INVALID";
  if (problem.path.length === 1 && field === "text") {
    const empty = problem.keyword === "required" || Number(problem.params.actual) < Number(problem.params.min);
    if (method === "sendMessage" || method === "editMessageText")
      return empty ? "message text is empty" : "message is too long";
    if (method === "sendMessageDraft") return "TEXT_TOO_LONG";
    if (method === "answerCallbackQuery") return "MESSAGE_TOO_LONG";
  }
  return `${formatPath(problem.path)}: ${problem.message}`;
}

function isInputFile(value: unknown): value is InputFilePart {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[INPUT_FILE] === true;
}

function refersTo(value: unknown, reference: string): boolean {
  if (typeof value === "string") return value === reference || value.includes(JSON.stringify(reference));
  if (Array.isArray(value)) return value.some((v) => refersTo(v, reference));
  if (typeof value === "object" && value !== null && !isInputFile(value))
    return Object.values(value).some((v) => refersTo(v, reference));
  return false;
}

/**
 * A top-level parameter as Telegram reads it: `attach://<name>` in an InputFile field is the file
 * part `<name>` (how grammY uploads); a string for a field that cannot be a String is read as JSON
 * (`"42"` → 42, `"true"` → true, a JSON-serialized object → the object). A string that is not
 * JSON stays a string and fails the type check.
 */
function decodeParam(value: unknown, types: string[] | undefined, params: Record<string, unknown>): unknown {
  if (typeof value === "string" && types?.includes("InputFile") && value.startsWith("attach://")) {
    const part = params[value.slice("attach://".length)];
    if (isInputFile(part)) return part;
  }
  if (typeof value !== "string" || types === undefined || types.includes("String")) return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

/** The `this` of a validation: how to parse entity text. */
interface ParseContext {
  parse: TextParser;
}

type Schema = Record<string, unknown>;

function createAjv(api: TgSpec): Ajv2020 {
  // verbose: errors carry their schema and data, so spec-problems.ts can single out a union's
  // closest alternative. No inlined $refs and no code optimiser: compiling is what costs (see
  // discord-spec.ts). code.source: for spec-cache.ts. passContext: `this.parse` in x-tg-parsed-length.
  const instance = new Ajv2020({
    allErrors: true,
    verbose: true,
    passContext: true,
    strictTypes: false,
    inlineRefs: false,
    code: { optimize: false, source: true },
    validateSchema: false,
  });
  // Both keywords generate code (not a validate function), so that standalone code can hold them.
  const limitError = (unit: string) => ({
    message: ({ schema, params }: KeywordErrorCxt) =>
      str`must be ${schema.min}-${schema.max} ${unit} (is ${params.actual!})`,
    params: ({ schema, params }: KeywordErrorCxt) =>
      _`{min: ${schema.min}, max: ${schema.max}, actual: ${params.actual!}}`,
  });
  instance.addKeyword({
    keyword: "x-tg-bytes",
    type: "string",
    schemaType: "object",
    error: limitError("bytes in UTF-8"),
    code(cxt: KeywordCxt) {
      const { min, max } = cxt.schema as { min: number; max: number };
      const n = cxt.gen.const("bytes", _`Buffer.byteLength(${cxt.data}, "utf8")`);
      cxt.setParams({ actual: n });
      cxt.fail(_`${n} < ${min} || ${n} > ${max}`);
    },
  });
  instance.addKeyword({
    keyword: "x-tg-parsed-length",
    type: "string",
    schemaType: "object",
    error: limitError("characters after entity parsing"),
    code(cxt: KeywordCxt) {
      const { min, max, parseMode } = cxt.schema as { min: number; max: number; parseMode?: string };
      const mode = cxt.gen.const(
        "mode",
        parseMode === undefined ? _`undefined` : _`${cxt.it.parentData}[${parseMode}]`,
      );
      const text = cxt.gen.const(
        "parsed",
        _`(this).parse(${cxt.data}, typeof ${mode} == "string" ? ${mode} : undefined)`,
      );
      // Code points (a spread string), as TDLib counts; undefined when the fake cannot parse the text.
      const n = cxt.gen.const("chars", _`${text} === undefined ? undefined : [...${text}].length`);
      cxt.setParams({ actual: n });
      cxt.fail(_`${n} !== undefined && (${n} < ${min} || ${n} > ${max})`);
    },
  });
  const defs: Record<string, Schema> = {
    [`InputFile`]: {
      type: "object",
      properties: { [INPUT_FILE]: { const: true }, filename: { type: "string" }, size: { type: "integer" } },
      required: [INPUT_FILE],
      additionalProperties: false,
    },
  };
  for (const entry of Object.values(api.types)) {
    if (entry.name === "InputFile") continue;
    defs[entry.name] = entry.subtypes
      ? { anyOf: entry.subtypes.map((t) => typeSchema(api, t)) }
      : objectSchema(api, entry);
  }
  for (const entry of Object.values(api.methods)) defs[entry.name] = objectSchema(api, entry);
  instance.addSchema({ $id: "telegram-bot-api", $defs: defs });
  return instance;
}

function objectSchema(api: TgSpec, entry: TgEntry): Schema {
  const fields = entry.fields ?? [];
  return {
    type: "object",
    properties: Object.fromEntries(fields.map((f) => [f.name, fieldSchema(api, entry, f)])),
    required: fields.filter((f) => f.required).map((f) => f.name),
    additionalProperties: false,
  };
}

function fieldSchema(api: TgSpec, owner: TgEntry, field: TgField): Schema {
  // A subtype's discriminator: "Scope type, must be chat", 'Type of the reaction, always "emoji"'.
  if (
    owner.subtype_of &&
    field.required &&
    field.types.join() === "String" &&
    ["type", "status", "source"].includes(field.name)
  ) {
    const value = /(?:must be|always) ["“]?(\w+)/.exec(field.description)?.[1];
    if (value) return { const: value };
  }
  const branches = field.types.map((t) => {
    const schema = typeSchema(api, t);
    if (t === "String") Object.assign(schema, stringLimits(owner, field));
    if (t === "Integer") Object.assign(schema, integerLimits(field));
    return schema;
  });
  return branches.length === 1 ? branches[0]! : { anyOf: branches };
}

function typeSchema(api: TgSpec, type: string): Schema {
  if (type.startsWith("Array of ")) return { type: "array", items: typeSchema(api, type.slice("Array of ".length)) };
  switch (type) {
    case "Integer":
      return { type: "integer" };
    case "Float":
      return { type: "number" };
    case "String":
      return { type: "string" };
    case "Boolean":
      return { type: "boolean" };
  }
  if (!Object.hasOwn(api.types, type)) throw new Error(`api.json names an unknown type ${type}`);
  // Absolute, so that one alternative of a union compiles on its own (spec-problems.ts).
  return { $ref: `telegram-bot-api#/$defs/${type}` };
}

/** "1-4096 characters after entities parsing", "0-200 characters", "1-64 bytes". */
function stringLimits(owner: TgEntry, field: TgField): Schema {
  const bytes = /\b(\d+)-(\d+) bytes\b/i.exec(field.description);
  if (bytes) return { "x-tg-bytes": { min: Number(bytes[1]), max: Number(bytes[2]) } };
  const chars = /\b(\d+)-(\d+) characters( after entit(?:y|ies) parsing)?/.exec(field.description);
  if (!chars) return {};
  const [min, max] = [Number(chars[1]), Number(chars[2])];
  if (!chars[3]) return { minLength: min, maxLength: max };
  // The parse mode of `text` and `caption` is `parse_mode`; of `quote`, `quote_parse_mode`, and so on.
  const names = new Set((owner.fields ?? []).map((f) => f.name));
  const parseMode = [`${field.name}_parse_mode`, "parse_mode"].find((n) => names.has(n));
  return { "x-tg-parsed-length": { min, max, ...(parseMode ? { parseMode } : {}) } };
}

/** "Values between 1-100 are accepted", "1-100. Defaults to 40". */
function integerLimits(field: TgField): Schema {
  const range = /\b(\d+)-(\d+)(?: are accepted|\. Defaults to)/.exec(field.description);
  return range ? { minimum: Number(range[1]), maximum: Number(range[2]) } : {};
}
