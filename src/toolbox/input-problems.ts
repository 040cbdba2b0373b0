/**
 * What both input parsers share — zod tools (`parseInput` in `toolbox.ts`) and JSON Schema tools
 * (`JsonSchemaInput` in `json-input.ts`): the one narrow repair of the model's input (numeric
 * strings in number fields, exactly `"true"`/`"false"` in boolean fields) and the words of a
 * problem line (`count: expected an integer, got "abc"`), so both kinds of tool answer alike.
 */
import { sliceUnits } from "../cut.js";

/** The outcome of parsing a tool's input: the value, or one sentence per bad field. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/** A field whose value has the wrong type: where it is, and the type name(s) the schema wants there. */
export interface TypeMismatch {
  /** The field's path from the input's root (object keys, array indexes); never empty. */
  path: readonly PropertyKey[];
  /** zod's `expected` (`number`, `int`, `boolean` …) or JSON Schema's `type` (`integer` …). */
  expected: readonly string[];
}

const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/;

/**
 * The input with, at each mismatched field holding a string, a numeric string converted to a
 * number (where `number`, `int` or `integer` is wanted) or exactly `"true"`/`"false"` converted
 * to a boolean (where `boolean` is wanted); nothing else is coerced, so `"false"` never becomes
 * true and `"abc"` is never a number. `input` itself is not changed.
 *
 * @returns the repaired copy, or undefined when `input` is not a plain object or nothing was converted.
 */
export function repairScalarStrings(
  input: unknown,
  mismatches: Iterable<TypeMismatch>,
): Record<string, unknown> | undefined {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return undefined;
  const repaired = structuredClone(input) as Record<string, unknown>;
  let changed = false;
  for (const { path, expected } of mismatches) {
    if (path.length === 0) continue;
    const value = getAt(repaired, path);
    if (typeof value !== "string") continue;
    const numeric = expected.includes("number") || expected.includes("int") || expected.includes("integer");
    if (numeric && NUMERIC.test(value)) {
      setAt(repaired, path, Number(value));
      changed = true;
    } else if (expected.includes("boolean") && (value === "true" || value === "false")) {
      setAt(repaired, path, value === "true");
      changed = true;
    }
  }
  return changed ? repaired : undefined;
}

/** The value at `path` in `root`; undefined when a step is missing or not an object. */
export function getAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function setAt(root: Record<PropertyKey, unknown>, path: readonly PropertyKey[], value: unknown): void {
  let node: Record<PropertyKey, unknown> = root;
  for (const key of path.slice(0, -1)) node = node[key] as Record<PropertyKey, unknown>;
  node[path[path.length - 1]!] = value;
}

/** A field's path as the model reads it: `input` for the root, else `tags[0].name`. */
export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "input";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

/** Type names (zod's and JSON Schema's) in the words of a problem line: `integer` → `an integer`. */
export const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: "text (a string)",
  number: "a number",
  int: "an integer",
  integer: "an integer",
  boolean: "true or false",
  object: "an object",
  array: "a list",
  date: "a date",
  null: "null",
};

/** `JSON.stringify(value)`, or `String(value)` when that fails or gives nothing (a function, a cycle, a BigInt). */
export function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The value the model sent, as a problem line quotes it: JSON, cut to 60 UTF-16 units (57 and
 * `...`; never inside a surrogate pair, as the line goes back to the model).
 */
export function got(value: unknown): string {
  const text = safeJson(value);
  return text.length > 60 ? `${sliceUnits(text, 57)}...` : text;
}
