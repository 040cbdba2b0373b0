/**
 * What the model sees of an MCP tool's input schema. The Messages API refuses a custom tool whose
 * `input_schema` has `anyOf`, `oneOf` or `allOf` at its top level, or a top-level property key
 * outside `^[a-zA-Z0-9_.-]{1,64}$` — and it refuses the whole request, so one such tool would
 * break every chat it is offered in. MCP servers publish both (a union of argument sets;
 * API-wrapping servers' `filter[bundleId]`). {@link modelInputSchema} makes such a schema
 * acceptable; the server's own schema still validates the input before every call
 * (`JsonSchemaInput`), with the renamed keys mapped back first.
 *
 * Sources: https://docs.anthropic.com/en/docs/build-with-claude/tool-use (custom tools), the
 * API's own 400 messages ("input_schema does not support oneOf, allOf, or anyOf at the top
 * level"; "Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'"), and the MCP tool
 * definition (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool).
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { InputSchema } from "../toolbox/schema.js";

/** The Messages API's rule for the top-level property keys of an `input_schema`. */
export const PROPERTY_KEY_PATTERN = /^[a-zA-Z0-9_.-]{1,64}$/;

/** The top-level keywords the Messages API refuses in an `input_schema`. */
const COMBINATORS = ["anyOf", "oneOf", "allOf"] as const;

/** How deep combinators inside combinators are followed when merging (deeper branches are left out). */
const MAX_MERGE_DEPTH = 4;

/** A schema the model can be given, and how to turn the model's input back into the server's. */
export interface ModelInputSchema {
  /** The `input_schema` sent to the model. */
  schema: InputSchema;
  /** Renamed top-level keys: the model's key → the server's key (empty when nothing was renamed). */
  keys: ReadonlyMap<string, string>;
  /** What was changed, in short English phrases for a debug log (empty when the schema was sent as it is). */
  changes: string[];
}

/** The server's schema cannot be made acceptable; the message says why (the tool is skipped). */
export class UnusableSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnusableSchemaError";
  }
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The input schema to offer the model for an MCP tool's `inputSchema` (`$schema` left out).
 *
 * - A top-level `anyOf` / `oneOf` / `allOf` becomes part of one object schema: the properties of
 *   every branch are merged in (a property that branches declare differently gets an `anyOf` of
 *   their declarations); a property is required when every branch of an `anyOf` / `oneOf`
 *   requires it, or any branch of an `allOf`. Local `$ref`s (`#/$defs/…`, `#/definitions/…`) of
 *   a branch are followed. The schema's `description` then tells the model which sets of fields
 *   go together.
 * - Top-level property keys outside {@link PROPERTY_KEY_PATTERN} are renamed (`filter[bundleId]`
 *   → `filter.bundleId`, other characters → `_`, a name over 64 characters cut with a short
 *   hash), in `properties` and `required`; {@link ModelInputSchema.keys} maps them back.
 *
 * @param serverSchema - the tool's `inputSchema` as the server listed it.
 * @throws {UnusableSchemaError} when it is not a JSON object of `type: "object"`, or a top-level
 *   combinator has no branch an object could satisfy and the schema declares no properties.
 */
export function modelInputSchema(serverSchema: unknown): ModelInputSchema {
  if (!isObject(serverSchema)) throw new UnusableSchemaError("the input schema is not a JSON object");
  const { $schema: _dialect, ...rest } = serverSchema;
  if (rest.type !== "object")
    throw new UnusableSchemaError(`the input schema is not of type "object" (got ${JSON.stringify(rest.type)})`);
  const changes: string[] = [];
  let schema: Json = { ...rest };
  if (COMBINATORS.some((k) => k in schema)) schema = mergeCombinators(schema, changes);
  if (schema.properties !== undefined && !isObject(schema.properties))
    throw new UnusableSchemaError("its properties are not a JSON object");
  const keys = new Map<string, string>();
  const properties = (schema.properties ?? {}) as Json;
  if (Object.keys(properties).some((k) => !PROPERTY_KEY_PATTERN.test(k))) {
    const renamed: Json = {};
    const taken = new Set(Object.keys(properties).filter((k) => PROPERTY_KEY_PATTERN.test(k)));
    for (const [key, value] of Object.entries(properties)) {
      if (PROPERTY_KEY_PATTERN.test(key)) {
        renamed[key] = value;
        continue;
      }
      const name = unusedKey(modelKey(key), taken);
      taken.add(name);
      keys.set(name, key);
      renamed[name] = value;
      changes.push(`property ${JSON.stringify(key)} offered as ${JSON.stringify(name)}`);
    }
    const back = new Map([...keys].map(([model, server]) => [server, model]));
    schema = { ...schema, properties: renamed };
    if (Array.isArray(schema.required))
      schema.required = (schema.required as unknown[]).map((k) => (typeof k === "string" ? (back.get(k) ?? k) : k));
  }
  return { schema: { properties: {}, ...schema } as InputSchema, keys, changes };
}

/**
 * A key the Messages API accepts for `key`: `a[b]` → `a.b`, other characters outside
 * `[a-zA-Z0-9_.-]` → `_`, empty → `_`; over 64 characters, cut to 55 plus `_` and 8 hex digits
 * of the SHA-256 of `key`, so two long keys sharing a prefix stay apart.
 */
function modelKey(key: string): string {
  const base =
    key
      .replace(/\[([^\]]*)\]/g, ".$1")
      .replace(/[^a-zA-Z0-9_.-]/g, "_")
      .replace(/^\.+/, "") || "_";
  return base.length <= 64
    ? base
    : `${base.slice(0, 55)}_${createHash("sha256").update(key).digest("hex").slice(0, 8)}`;
}

/** `name`, or `name_2`, `name_3` … (kept within 64 characters), whichever is not in `taken`. */
function unusedKey(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  for (let n = 2; ; n += 1) {
    const suffix = `_${n}`;
    const candidate = `${name.slice(0, 64 - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** One branch of a combinator, flattened: its properties, the keys it requires, and whether an object can satisfy it. */
interface Branch {
  properties: Json;
  required: string[];
  objectLike: boolean;
}

/** The schema with its top-level combinators merged into `properties` / `required` (see {@link modelInputSchema}). */
function mergeCombinators(schema: Json, changes: string[]): Json {
  const root = schema;
  const merged: Json = {};
  for (const [key, value] of Object.entries(schema))
    if (!(COMBINATORS as readonly string[]).includes(key)) merged[key] = value;
  const properties: Json = isObject(schema.properties) ? { ...schema.properties } : {};
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === "string") : [],
  );
  const variants: string[][] = [];
  let anyObjectBranch = false;
  for (const combinator of COMBINATORS) {
    const list = schema[combinator];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new UnusableSchemaError(`its top-level ${combinator} is not a list`);
    const branches = list.map((b) => flatten(root, b, 0));
    const usable = branches.filter((b) => b.objectLike);
    if (usable.length > 0) anyObjectBranch = true;
    for (const branch of usable) {
      for (const [key, declared] of Object.entries(branch.properties))
        properties[key] = mergeDeclarations(properties[key], declared, combinator);
    }
    if (combinator === "allOf") for (const b of usable) for (const k of b.required) required.add(k);
    else {
      if (usable.length > 0)
        for (const k of usable[0]!.required.filter((k) => usable.every((b) => b.required.includes(k)))) required.add(k);
      const sets = usable
        .map((b) => [...new Set([...b.required, ...Object.keys(b.properties)])])
        .filter((s) => s.length > 0);
      if (sets.length > 1) variants.push(...sets);
    }
    changes.push(`top-level ${combinator} of ${list.length} merged into one object schema`);
  }
  if (!anyObjectBranch && Object.keys(properties).length === 0) {
    throw new UnusableSchemaError("its top-level anyOf/oneOf/allOf has no branch an object input could satisfy");
  }
  merged.properties = properties;
  if (required.size > 0) merged.required = [...required];
  else delete merged.required;
  if (variants.length > 0) {
    const hint = `Give the fields of one of these sets: ${variants.map((v) => `(${v.join(", ")})`).join(" or ")}.`;
    merged.description =
      typeof schema.description === "string" && schema.description.trim()
        ? `${schema.description.trim()} ${hint}`
        : hint;
  }
  return merged;
}

/** Two declarations of one property: the same one kept, different ones as an `anyOf` (or `allOf` under `allOf`). */
function mergeDeclarations(existing: unknown, added: unknown, combinator: (typeof COMBINATORS)[number]): unknown {
  if (existing === undefined || isDeepStrictEqual(existing, added)) return added;
  const word = combinator === "allOf" ? "allOf" : "anyOf";
  const list =
    isObject(existing) && Object.keys(existing).length === 1 && Array.isArray(existing[word])
      ? (existing[word] as unknown[])
      : [existing];
  return list.some((d) => isDeepStrictEqual(d, added)) ? existing : { [word]: [...list, added] };
}

/** A branch's properties and required keys, following local `$ref`s and nested combinators up to {@link MAX_MERGE_DEPTH}. */
function flatten(root: Json, branch: unknown, depth: number): Branch {
  const node = resolve(root, branch);
  if (!isObject(node)) return { properties: {}, required: [], objectLike: node === true };
  const types = node.type === undefined ? undefined : ([] as unknown[]).concat(node.type);
  const objectLike = types === undefined || types.includes("object");
  const properties: Json = isObject(node.properties) ? { ...node.properties } : {};
  const required = Array.isArray(node.required) ? node.required.filter((k): k is string => typeof k === "string") : [];
  if (depth < MAX_MERGE_DEPTH) {
    for (const combinator of COMBINATORS) {
      if (!Array.isArray(node[combinator])) continue;
      const inner = (node[combinator] as unknown[]).map((b) => flatten(root, b, depth + 1)).filter((b) => b.objectLike);
      for (const b of inner)
        for (const [k, v] of Object.entries(b.properties))
          properties[k] = mergeDeclarations(properties[k], v, combinator);
      if (combinator === "allOf") for (const b of inner) required.push(...b.required);
      else if (inner.length > 0)
        required.push(...inner[0]!.required.filter((k) => inner.every((b) => b.required.includes(k))));
    }
  }
  return { properties, required: [...new Set(required)], objectLike };
}

/** Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`, any JSON Pointer into the schema), a few steps at most. */
function resolve(root: Json, node: unknown): unknown {
  let current = node;
  for (
    let step = 0;
    step < 8 && isObject(current) && typeof current.$ref === "string" && current.$ref.startsWith("#");
    step += 1
  ) {
    const target = pointer(root, current.$ref.slice(1));
    if (target === undefined) return current;
    current = target;
  }
  return current;
}

function pointer(root: Json, path: string): unknown {
  if (path === "") return root;
  let node: unknown = root;
  for (const raw of path.replace(/^\//, "").split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}
