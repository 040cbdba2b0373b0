/**
 * A tool input declared as JSON Schema instead of zod: the schema comes from elsewhere (an MCP
 * server's `inputSchema`), is sent to the model (as it is, or in a form the Messages API accepts:
 * see `src/mcp/schema.ts`), and the model's input is validated against the original with Ajv
 * (https://ajv.js.org) before the call, with one line per bad field in the same words as our zod
 * tools (`count: expected an integer, got "abc"`).
 *
 * Compiling and validating happen off the event loop, in the schema checker's worker thread, with
 * time limits and a regular-expression engine without backtracking (`schema-checker.ts`,
 * `schema-thread.ts`); a schema listed again (every reconnect, every `tools/list_changed`) is not
 * compiled again.
 */
import type { ErrorObject } from "ajv";
import { englishCount } from "../i18n.js";
import { formatPath, getAt, got, repairScalarStrings, TYPE_WORDS, type Parsed } from "./input-problems.js";
import { SchemaCheckError, schemaChecker, type CompiledSchema, type SchemaChecker } from "./schema-checker.js";
import type { InputSchema } from "./schema.js";

/** How the model's view of a JSON Schema input differs from the schema that validates it. */
export interface ModelView {
  /** The `input_schema` sent to the model instead of the validating schema. */
  schema: InputSchema;
  /** Top-level keys renamed for the model: the model's key → the schema's key. */
  keys?: ReadonlyMap<string, string>;
}

/** A compiled schema and the checker that compiled it. */
interface Check {
  compiled: CompiledSchema;
  checker: SchemaChecker;
}

/** A tool input schema given as JSON Schema, validated with Ajv in the schema checker's thread. */
export class JsonSchemaInput {
  /** The schema sent to the model as `input_schema` (without `$schema`; `type: "object"`). */
  readonly schema: InputSchema;
  /** The compiled schema and its checker; absent for a listed input (never validated). */
  readonly #check: Check | undefined;
  /** The model's key → the schema's key, for renamed top-level keys. */
  readonly #toSchema: ReadonlyMap<string, string>;
  /** The schema's key → the model's key. */
  readonly #toModel: ReadonlyMap<string, string>;

  private constructor(check: Check | undefined, view: ModelView) {
    this.#check = check;
    this.schema = view.schema;
    this.#toSchema = view.keys ?? new Map();
    this.#toModel = new Map([...this.#toSchema].map(([model, own]) => [own, model]));
  }

  /**
   * Compiles `schema` in the schema checker's thread (or finds it compiled there).
   *
   * @param schema - a JSON Schema object of `type: "object"` (an MCP tool's `inputSchema`).
   * @param view - what the model is shown instead of `schema` (with renamed top-level keys,
   *   mapped back before validating); default `schema` itself.
   * @param checker - the checker to use; default the process's shared one.
   * @throws {Error} when it is not an object schema, Ajv cannot compile it, or compiling passes the
   *   checker's time or memory limit (the message says which).
   */
  static async compile(schema: unknown, view?: ModelView, checker = schemaChecker()): Promise<JsonSchemaInput> {
    const { rest, dialect } = objectSchema(schema);
    const compiled = await checker.compile(rest, dialect);
    return new JsonSchemaInput({ compiled, checker }, view ?? { schema: { properties: {}, ...rest } as InputSchema });
  }

  /**
   * An input that is never validated: `schema` is only listed (an adapter's view of the tools the
   * workers announced). Its {@link parse} accepts any object.
   */
  static listed(schema: unknown): JsonSchemaInput {
    const { rest } = objectSchema(schema);
    return new JsonSchemaInput(undefined, { schema: { properties: {}, ...rest } as InputSchema });
  }

  /** The names of the top-level fields the schema declares. */
  get fields(): string[] {
    return Object.keys(this.schema.properties ?? {});
  }

  /**
   * Validates the model's input (in the schema checker's thread). On failure, numeric strings in
   * number/integer fields and exactly `"true"`/`"false"` in boolean fields are converted once and
   * the input is checked again (as for zod tools); nothing else is coerced. Never throws.
   *
   * Renamed top-level keys (see {@link ModelView}) are mapped back first; problems name the
   * fields as the model knows them.
   *
   * @returns the (possibly converted) input with the schema's own keys, or one sentence per
   *   problem naming the field (an input whose check passed the time limit: one sentence saying so).
   */
  async parse(modelInput: unknown): Promise<Parsed<Record<string, unknown>>> {
    if (!this.#check) return this.shape(modelInput);
    const { compiled, checker } = this.#check;
    const input = this.#fromModel(modelInput);
    try {
      const first = await checker.validate(compiled, input);
      if (first.valid) return { ok: true, value: input as Record<string, unknown> };
      let errors = first.errors;
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
        const second = await checker.validate(compiled, repaired);
        if (second.valid) return { ok: true, value: repaired };
        errors = second.errors;
      }
      const problems = [...new Set(errors.map((e) => this.#describe(e, input)))];
      return { ok: false, problems: problems.length > 0 ? problems : ["input: does not match the schema"] };
    } catch (error) {
      const why =
        error instanceof SchemaCheckError && error.problem === "timeout"
          ? "checking it against the tool's schema took too long"
          : "it could not be checked against the tool's schema";
      return { ok: false, problems: [`input: ${why}, so the call was not run; send a smaller or simpler input`] };
    }
  }

  /**
   * The input as the tool would get it, for showing a call (its status line, the trace), without
   * validating it: renamed keys mapped back; anything but an object is refused. Never throws.
   */
  shape(modelInput: unknown): Parsed<Record<string, unknown>> {
    const input = this.#fromModel(modelInput);
    return input !== null && typeof input === "object" && !Array.isArray(input)
      ? { ok: true, value: input as Record<string, unknown> }
      : { ok: false, problems: [`input: expected an object, got ${got(input)}`] };
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
          `${englishCount(Number(params.limit), "character")}, got ` +
          englishCount(typeof value === "string" ? value.length : 0, "character")
        );
      case "minItems":
      case "maxItems":
        return (
          `${where}: must have ${error.keyword === "minItems" ? "at least" : "at most"} ` +
          `${englishCount(Number(params.limit), "item")}, got ${Array.isArray(value) ? value.length : 0}`
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

/** The schema without `$schema`, which names its dialect. @throws {Error} when it is not a JSON object of `type: "object"`. */
function objectSchema(schema: unknown): { rest: Record<string, unknown>; dialect: unknown } {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    throw new Error("the input schema is not a JSON object");
  const { $schema: dialect, ...rest } = schema as Record<string, unknown>;
  if (rest.type !== "object")
    throw new Error(`the input schema is not of type "object" (got ${JSON.stringify(rest.type)})`);
  return { rest, dialect };
}
