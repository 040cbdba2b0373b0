/**
 * A tool input declared as JSON Schema instead of zod: the schema comes from elsewhere (an MCP
 * server's `inputSchema`), is sent to the model (as it is, or in a form the Messages API accepts:
 * see `src/mcp/schema.ts`), and the model's input is validated against the original with Ajv
 * (https://ajv.js.org) before the call, with one line per bad field in the same words as our zod
 * tools (`count: expected an integer, got "abc"`).
 *
 * Compiled validators are kept by the schema's hash ({@link compileJsonSchema}), so a schema
 * listed again (every reconnect, every `tools/list_changed`) is not compiled again.
 *
 * Drafts: a schema whose `$schema` names draft 2020-12 or 2019-09 is compiled with Ajv's classes
 * for those drafts; any other (draft-07, draft-06, none) with Ajv's default draft-07 class.
 * Formats (`email`, `uri`, `date-time` …) are checked with `ajv-formats`.
 */
import { createHash } from "node:crypto";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { formatPath, getAt, got, repairScalarStrings, TYPE_WORDS, type Parsed } from "./input-problems.js";
import type { InputSchema } from "./schema.js";

// ajv-formats is CommonJS: under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

const validators = {
  draft7: undefined as Ajv | undefined,
  draft2019: undefined as Ajv | undefined,
  draft2020: undefined as Ajv | undefined,
};

function validatorFor(schemaUri: unknown): Ajv {
  // addUsedSchema: false — a compiled schema is not kept under its `$id` (two servers' schemas with
  // one `$id` must not meet); see compileOnce. Equal schemas are reused by hash: compileJsonSchema.
  const options = { allErrors: true, strict: false, validateFormats: true, addUsedSchema: false } as const;
  const uri = typeof schemaUri === "string" ? schemaUri : "";
  if (uri.includes("2020-12")) return (validators.draft2020 ??= addFormats(new Ajv2020(options) as unknown as Ajv));
  if (uri.includes("2019-09")) return (validators.draft2019 ??= addFormats(new Ajv2019(options) as unknown as Ajv));
  return (validators.draft7 ??= addFormats(new Ajv(options)));
}

/**
 * Compiles `schema` on the shared `ajv` and leaves nothing behind in it: Ajv caches every compiled
 * schema object and records the `$id`s found inside it, so without this each compile (every
 * reconnect, every `tools/list_changed`) would add entries for good. The returned function keeps
 * what it needs (references are resolved at compile time).
 */
function compileOnce(ajv: Ajv, schema: Record<string, unknown>): ValidateFunction {
  const before = new Set(Object.keys(ajv.refs));
  try {
    return ajv.compile(schema);
  } finally {
    ajv.removeSchema(schema);
    for (const key of Object.keys(ajv.refs)) if (!before.has(key)) delete ajv.refs[key];
  }
}

/** Most compiled validators kept ({@link compileJsonSchema}); the least recently used goes first. */
const MAX_COMPILED = 500;

const compiled = new Map<string, ValidateFunction>();

/**
 * The Ajv validator of `schema`, compiled at most once per process for equal schemas: kept by the
 * SHA-256 of its JSON text and dialect, for the last {@link MAX_COMPILED} schemas used.
 *
 * @param schema - a JSON Schema object (without `$schema`).
 * @param dialect - the schema's `$schema`, which chooses the draft (see the module comment).
 * @throws {Error} when Ajv cannot compile it.
 */
export function compileJsonSchema(schema: Record<string, unknown>, dialect?: unknown): ValidateFunction {
  const ajv = validatorFor(dialect);
  const key =
    `${ajv === validators.draft2020 ? "2020" : ajv === validators.draft2019 ? "2019" : "7"}:` +
    `${createHash("sha256").update(JSON.stringify(schema)).digest("hex")}`;
  const hit = compiled.get(key);
  if (hit) {
    compiled.delete(key);
    compiled.set(key, hit);
    return hit;
  }
  const validate = compileOnce(ajv, schema);
  compiled.set(key, validate);
  if (compiled.size > MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  return validate;
}

/** How the model's view of a JSON Schema input differs from the schema that validates it. */
export interface ModelView {
  /** The `input_schema` sent to the model instead of the validating schema. */
  schema: InputSchema;
  /** Top-level keys renamed for the model: the model's key → the schema's key. */
  keys?: ReadonlyMap<string, string>;
}

/** A tool input schema given as JSON Schema, validated with Ajv. */
export class JsonSchemaInput {
  /** The schema sent to the model as `input_schema` (without `$schema`; `type: "object"`). */
  readonly schema: InputSchema;
  readonly #validate: ValidateFunction;
  /** The model's key → the schema's key, for renamed top-level keys. */
  readonly #toSchema: ReadonlyMap<string, string>;
  /** The schema's key → the model's key. */
  readonly #toModel: ReadonlyMap<string, string>;

  /**
   * Compiles `schema` (or takes its compiled validator from the cache, see {@link compileJsonSchema}).
   *
   * @param schema - a JSON Schema object of `type: "object"` (an MCP tool's `inputSchema`).
   * @param view - what the model is shown instead of `schema` (with renamed top-level keys,
   *   mapped back before validating); default `schema` itself.
   * @throws {Error} when it is not an object schema or Ajv cannot compile it (the message says why).
   */
  constructor(schema: unknown, view?: ModelView) {
    if (schema === null || typeof schema !== "object" || Array.isArray(schema))
      throw new Error("the input schema is not a JSON object");
    const { $schema, ...rest } = schema as Record<string, unknown>;
    if (rest.type !== "object")
      throw new Error(`the input schema is not of type "object" (got ${JSON.stringify(rest.type)})`);
    this.schema = view?.schema ?? ({ properties: {}, ...rest } as InputSchema);
    this.#toSchema = view?.keys ?? new Map();
    this.#toModel = new Map([...this.#toSchema].map(([model, own]) => [own, model]));
    this.#validate = compileJsonSchema(rest, $schema);
  }

  /** The names of the top-level fields the schema declares. */
  get fields(): string[] {
    return Object.keys(this.schema.properties ?? {});
  }

  /**
   * Validates the model's input. On failure, numeric strings in number/integer fields and exactly
   * `"true"`/`"false"` in boolean fields are converted once and the input is checked again (as
   * for zod tools); nothing else is coerced. Never throws.
   *
   * Renamed top-level keys (see {@link ModelView}) are mapped back first; problems name the
   * fields as the model knows them.
   *
   * @returns the (possibly converted) input with the schema's own keys, or one sentence per
   *   problem naming the field.
   */
  parse(modelInput: unknown): Parsed<Record<string, unknown>> {
    const input = this.#fromModel(modelInput);
    if (this.#validate(input)) return { ok: true, value: input as Record<string, unknown> };
    let errors = this.#validate.errors ?? [];
    const repaired = repairScalarStrings(
      input,
      errors.flatMap((e) =>
        e.keyword === "type"
          ? [
              {
                path: pointerParts(e.instancePath),
                expected: ([] as string[]).concat(e.params.type as string | string[]),
              },
            ]
          : [],
      ),
    );
    if (repaired) {
      if (this.#validate(repaired)) return { ok: true, value: repaired };
      errors = this.#validate.errors ?? [];
    }
    const problems = [...new Set(errors.map((e) => this.#describe(e, input)))];
    return { ok: false, problems: problems.length > 0 ? problems : ["input: does not match the schema"] };
  }

  /** The input with renamed top-level keys mapped back to the schema's own; anything else as it is. */
  #fromModel(input: unknown): unknown {
    if (this.#toSchema.size === 0 || input === null || typeof input !== "object" || Array.isArray(input)) return input;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(input)) out[this.#toSchema.get(key) ?? key] = value;
    return out;
  }

  /** A path of the schema's keys in the model's words (a renamed top-level key as the model knows it). */
  #modelPath(path: (string | number)[]): (string | number)[] {
    if (path.length === 0 || typeof path[0] !== "string") return path;
    return [this.#toModel.get(path[0]) ?? path[0], ...path.slice(1)];
  }

  #describe(error: ErrorObject, input: unknown): string {
    const own = pointerParts(error.instancePath);
    const path = this.#modelPath(own);
    const where = formatPath(path);
    const value = getAt(input, own);
    const params = error.params as Record<string, unknown>;
    switch (error.keyword) {
      case "required":
        return `${formatPath(this.#modelPath([...own, String(params.missingProperty)]))}: is required`;
      case "type": {
        const wanted = ([] as string[]).concat(params.type as string | string[]).map((t) => TYPE_WORDS[t] ?? t);
        return `${where}: expected ${wanted.join(" or ")}, got ${got(value)}`;
      }
      case "minimum":
      case "exclusiveMinimum":
      case "maximum":
      case "exclusiveMaximum": {
        const word = {
          minimum: "at least",
          exclusiveMinimum: "more than",
          maximum: "at most",
          exclusiveMaximum: "less than",
        }[error.keyword];
        return `${where}: must be ${word} ${String(params.limit)}, got ${got(value)}`;
      }
      case "minLength":
      case "maxLength":
        return (
          `${where}: must be ${error.keyword === "minLength" ? "at least" : "at most"} ` +
          `${String(params.limit)} characters, got ${typeof value === "string" ? value.length : 0} ` +
          `characters`
        );
      case "minItems":
      case "maxItems":
        return (
          `${where}: must have ${error.keyword === "minItems" ? "at least" : "at most"} ` +
          `${String(params.limit)} items, got ${Array.isArray(value) ? value.length : 0}`
        );
      case "enum":
        return `${where}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}, got ${got(value)}`;
      case "const":
        return `${where}: must be ${JSON.stringify(params.allowedValue)}, got ${got(value)}`;
      case "additionalProperties":
        return `${where}: unknown field ${String(params.additionalProperty)}; the fields are ${this.#fieldsAt(path).join(", ") || "(none)"}`;
      case "format":
        return `${where}: must be a valid ${String(params.format)}, got ${got(value)}`;
      case "pattern":
        return `${where}: must match the pattern ${String(params.pattern)}, got ${got(value)}`;
      case "anyOf":
        return `${where}: must match at least one of the allowed sets of fields (see the input's description)`;
      case "oneOf":
        return (
          `${where}: must match exactly one of the allowed sets of fields (see the input's ` +
          `description)${params.passingSchemas ? "; it matches more than one" : ""}`
        );
      default:
        return `${where}: ${error.message ?? "is not valid"}`;
    }
  }

  #fieldsAt(path: readonly (string | number)[]): string[] {
    let node: unknown = this.schema;
    for (const key of path) {
      const n = node as { properties?: Record<string, unknown>; items?: unknown } | undefined;
      node = typeof key === "number" ? n?.items : n?.properties?.[key];
    }
    return Object.keys((node as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
  }
}

/** `/a/0/b` → `["a", 0, "b"]` (JSON Pointer, RFC 6901 escapes undone). */
function pointerParts(pointer: string): (string | number)[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}
