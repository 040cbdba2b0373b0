/**
 * A tool's `input_schema`, derived once from its zod schema (`z.toJSONSchema`): the schema is
 * declared once, and both the JSON Schema and the parse of the model's input come from it.
 */
import { z } from "zod";
import { JsonSchemaInput } from "./json-input.js";
import type { Tool } from "./tool.js";

/** JSON Schema object sent to the model as `input_schema`, cached per tool. */
export interface InputSchema {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

const schemaCache = new WeakMap<object, InputSchema>();

/**
 * The tool's `input_schema`: `z.toJSONSchema` of its input as the model should write it
 * (`io: "input"`, so fields with defaults are optional), without the `$schema` marker. For a
 * {@link JsonSchemaInput} (an MCP tool), its schema as the server gave it (without `$schema`).
 *
 * @throws when the schema cannot be represented in JSON Schema (e.g. a transform on output only).
 */
export function inputSchemaOf(tool: Pick<Tool, "input">): InputSchema {
  if (tool.input instanceof JsonSchemaInput) return tool.input.schema;
  const cached = schemaCache.get(tool.input);
  if (cached) return cached;
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, {
    io: "input",
    unrepresentable: "throw",
  }) as Record<string, unknown>;
  const result = { properties: {}, required: [], ...schema } as unknown as InputSchema;
  schemaCache.set(tool.input, result);
  return result;
}
