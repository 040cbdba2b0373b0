/**
 * JSON Schema tool inputs (MCP tools): Ajv validation with one line per bad field, in the words
 * of our zod tools, and the same narrow repair of numeric and boolean strings.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { JsonSchemaInput } from "../../src/toolbox/json-input.js";

const schema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    title: { type: "string", minLength: 1, maxLength: 5 },
    count: { type: "integer", minimum: 1, maximum: 10 },
    done: { type: "boolean" },
    color: { enum: ["red", "green"] },
    email: { type: "string", format: "email" },
    tags: { type: "array", items: { type: "string" }, maxItems: 2 },
    nested: {
      type: "object",
      properties: { a: { type: "number", exclusiveMinimum: 0 } },
      required: ["a"],
      additionalProperties: false,
    },
  },
  required: ["title"],
  additionalProperties: false,
};

describe("JsonSchemaInput", () => {
  let input: JsonSchemaInput;
  beforeAll(async () => {
    input = await JsonSchemaInput.compile(schema);
  });

  it("keeps the schema for the model without $schema", async () => {
    expect(input.schema.$schema).toBeUndefined();
    expect(input.schema).toMatchObject({ type: "object", required: ["title"] });
    expect(input.fields).toEqual(["title", "count", "done", "color", "email", "tags", "nested"]);
  });

  it("accepts valid input, and numeric / boolean strings once, like zod tools", async () => {
    expect(await input.parse({ title: "ok", count: 3 })).toEqual({ ok: true, value: { title: "ok", count: 3 } });
    expect(await input.parse({ title: "ok", count: "3", done: "false" })).toEqual({
      ok: true,
      value: { title: "ok", count: 3, done: false },
    });
  });

  it("names every bad field and says what is wrong", async () => {
    const result = await input.parse({
      title: "",
      count: "abc",
      done: "yes",
      color: "blue",
      email: "nope",
      tags: ["a", "b", "c"],
      nested: { b: 1 },
      extra: 1,
    });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems).toEqual(
      expect.arrayContaining([
        "input: unknown field extra; the fields are title, count, done, color, email, tags, nested",
        "title: must be at least 1 character, got 0 characters",
        'count: expected an integer, got "abc"',
        'done: expected true or false, got "yes"',
        'color: must be one of "red", "green", got "blue"',
        'email: must be a valid email, got "nope"',
        "tags: must have at most 2 items, got 3",
        "nested.a: is required",
        "nested: unknown field b; the fields are a",
      ]),
    );
    expect(await input.parse({})).toEqual({ ok: false, problems: ["title: is required"] });
    expect(await input.parse({ title: "x", count: 11, nested: { a: 0 } })).toEqual({
      ok: false,
      problems: ["count: must be at most 10, got 11", "nested.a: must be more than 0, got 0"],
    });
    expect(await input.parse("text")).toEqual({ ok: false, problems: ['input: expected an object, got "text"'] });
  });

  it("compiles draft 2020-12 schemas, and refuses a schema that is not an object schema", async () => {
    const modern = await JsonSchemaInput.compile({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { n: { type: "number" } },
      required: ["n"],
    });
    expect(await modern.parse({ n: 1 })).toEqual({ ok: true, value: { n: 1 } });
    expect(await modern.parse({})).toEqual({ ok: false, problems: ["n: is required"] });
    await expect(JsonSchemaInput.compile({ type: "string" })).rejects.toThrow(
      'the input schema is not of type "object" (got "string")',
    );
    await expect(
      JsonSchemaInput.compile({ type: "object", properties: { a: { type: "nonsense" } } }),
    ).rejects.toThrow();
  });
});

describe("JsonSchemaInput with $id", () => {
  const withId = (id: string, field: string) => ({
    $id: id,
    type: "object",
    properties: {
      [field]: { $ref: "#/definitions/word" },
      inner: { $id: `${id}/inner`, type: "object", properties: { n: { type: "integer" } } },
    },
    required: [field],
    definitions: { word: { type: "string", minLength: 2 } },
  });

  it("compiles the same schema again (a reconnect, tools/list_changed)", async () => {
    const first = await JsonSchemaInput.compile(withId("https://example.test/tool.json", "query"));
    const again = await JsonSchemaInput.compile(withId("https://example.test/tool.json", "query"));
    expect(await again.parse({ query: "ok", inner: { n: "4" } })).toEqual({
      ok: true,
      value: { query: "ok", inner: { n: 4 } },
    });
    expect(await first.parse({ query: "x" })).toEqual({
      ok: false,
      problems: ["query: must be at least 2 characters, got 1 character"],
    });
  });

  it("compiles two different schemas with one $id, each checked by its own", async () => {
    const a = await JsonSchemaInput.compile(withId("https://example.test/shared.json", "a"));
    const b = await JsonSchemaInput.compile(withId("https://example.test/shared.json", "b"));
    expect(await a.parse({ a: "ok" })).toEqual({ ok: true, value: { a: "ok" } });
    expect(await b.parse({ a: "ok" })).toEqual({ ok: false, problems: ["b: is required"] });
    expect(await b.parse({ b: "ok" })).toEqual({ ok: true, value: { b: "ok" } });
  });
});
