/**
 * What the model sees of an MCP tool's input schema (`modelInputSchema`): top-level combinators
 * merged into one object schema, bad property keys renamed and mapped back, and schemas that
 * cannot be made acceptable refused with the reason; the server's schema still validates.
 */
import { describe, expect, it } from "vitest";
import { modelInputSchema, UnusableSchemaError } from "../../src/mcp/schema.js";
import { JsonSchemaInput } from "../../src/toolbox/json-input.js";
import { SchemaChecker } from "../../src/toolbox/schema-checker.js";

describe("modelInputSchema", () => {
  it("sends an acceptable schema as it is (without $schema)", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
    };
    expect(modelInputSchema(schema)).toEqual({
      schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
      keys: new Map(),
      changes: [],
    });
  });

  it("merges an allOf (required from every branch) and follows local $refs", () => {
    const { schema } = modelInputSchema({
      type: "object",
      $defs: { paging: { type: "object", properties: { page: { type: "integer" } }, required: ["page"] } },
      allOf: [{ $ref: "#/$defs/paging" }, { properties: { q: { type: "string" } }, required: ["q"] }],
    });
    expect(schema).toEqual({
      type: "object",
      $defs: { paging: { type: "object", properties: { page: { type: "integer" } }, required: ["page"] } },
      properties: { page: { type: "integer" }, q: { type: "string" } },
      required: ["page", "q"],
    });
  });

  it("a oneOf whose branches declare one property differently offers an anyOf of both; only what every branch requires is required", () => {
    const { schema } = modelInputSchema({
      type: "object",
      description: "Move a card.",
      oneOf: [
        { properties: { id: { type: "string" }, to: { type: "string" } }, required: ["id", "to"] },
        { properties: { id: { type: "integer" }, position: { type: "integer" } }, required: ["id", "position"] },
        { type: "string" },
      ],
    });
    expect(schema.properties).toEqual({
      id: { anyOf: [{ type: "string" }, { type: "integer" }] },
      to: { type: "string" },
      position: { type: "integer" },
    });
    expect(schema.required).toEqual(["id"]);
    expect(schema.description).toBe("Move a card. Give the fields of one of these sets: (id, to) or (id, position).");
  });

  it("renames bad keys (brackets to dots, others to _, long ones cut with a hash), keeps them apart, and maps them back", async () => {
    const long = `${"k".repeat(70)}!`;
    const server = {
      type: "object",
      properties: {
        "filter[bundleId]": { type: "string" },
        "filter.bundleId": { type: "integer" },
        "two words": { type: "string" },
        [long]: { type: "boolean" },
      },
      required: ["filter[bundleId]", "two words"],
      additionalProperties: false,
    };
    const view = modelInputSchema(server);
    const keys = Object.keys(view.schema.properties!);
    expect(keys).toEqual([
      "filter.bundleId_2",
      "filter.bundleId",
      "two_words",
      expect.stringMatching(/^k{55}_[0-9a-f]{8}$/),
    ]);
    expect(view.schema.required).toEqual(["filter.bundleId_2", "two_words"]);
    const input = await JsonSchemaInput.compile(server, view);
    expect(
      await input.parse({ "filter.bundleId_2": "x", "filter.bundleId": 1, two_words: "y", [keys[3]!]: true }),
    ).toEqual({
      ok: true,
      value: { "filter[bundleId]": "x", "filter.bundleId": 1, "two words": "y", [long]: true },
    });
    expect(await input.parse({ "filter.bundleId_2": 5 })).toEqual({
      ok: false,
      problems: ["two_words: is required", "filter.bundleId_2: expected text (a string), got 5"],
    });
  });

  it("refuses what cannot be made acceptable, saying why", () => {
    expect(() => modelInputSchema({ type: "object", anyOf: [{ type: "string" }, { type: "number" }] })).toThrow(
      new UnusableSchemaError("its top-level anyOf/oneOf/allOf has no branch an object input could satisfy"),
    );
    expect(() => modelInputSchema({ type: "array" })).toThrow('the input schema is not of type "object" (got "array")');
    expect(() => modelInputSchema([])).toThrow("the input schema is not a JSON object");
  });
});

describe("compiled validators", () => {
  it("an equal schema is compiled once per checker (kept by its hash)", async () => {
    const checker = new SchemaChecker();
    try {
      const a = await checker.compile({ type: "object", properties: { n: { type: "integer" } } });
      const b = await checker.compile(
        JSON.parse(JSON.stringify({ type: "object", properties: { n: { type: "integer" } } })) as Record<
          string,
          unknown
        >,
      );
      expect(b.key).toBe(a.key);
      expect((await checker.compile({ type: "object", properties: { n: { type: "number" } } })).key).not.toBe(a.key);
    } finally {
      checker.close();
    }
  });
});
