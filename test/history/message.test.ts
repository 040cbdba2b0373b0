/**
 * `asStoredMessage` and `asTag`: a history line (a message, a run tag) taken as parsed when it
 * already has the exact form its schema (`MessageParamSchema`, `TagSchema`) outputs; anything else
 * is left to the schema. Whatever they take is what the schema returns, keys in the same order.
 */
import { describe, expect, it } from "vitest";
import { asStoredMessage, MessageParamSchema } from "../../src/history/message.js";
import { asTag, TagSchema } from "../../src/history/store.js";

/** Lines as the bot writes them, and lines it does not write (other versions, damage, hand edits). */
const LINES = [
  '{"role":"user","content":"hello"}',
  '{"role":"assistant","content":[{"type":"text","text":"hi","citations":null}]}',
  '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"weather","input":{"city":"台北"}}]}',
  '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"晴"},{"type":"text","text":"ok"}]}',
  '{"role":"user","content":[]}',
  // not the schema's exact form: the schema decides (strips, copies in its order, or refuses)
  '{"content":"hello","role":"user"}',
  '{"role":"user","content":"hello","extra":1}',
  '{"role":"user","content":"hello","__proto__":{"x":1}}',
  '{"role":"assistant","content":[{"text":"hi","type":"text"}]}',
  '{"role":"assistant","content":[{"1":"one","type":"text","text":"hi"}]}',
  '{"role":"assistant","content":[{"type":"text","__proto__":{"x":1},"text":"hi"}]}',
  '{"role":"system","content":"x"}',
  '{"role":"user","content":[{"type":""}]}',
  '{"role":"user","content":[{"type":1}]}',
  '{"role":"user","content":[null]}',
  '{"role":"user","content":[["type"]]}',
  '{"role":"user","content":{"type":"text"}}',
  '{"role":"user"}',
  '["role","content"]',
  "null",
  '"text"',
];

describe("asStoredMessage", () => {
  it("takes a line only when the schema would return an equal copy, keys in the same order", () => {
    let taken = 0;
    for (const line of LINES) {
      const fast = asStoredMessage(JSON.parse(line));
      if (fast === undefined) continue;
      taken += 1;
      const parsed = MessageParamSchema.safeParse(JSON.parse(line));
      expect([line, parsed.success]).toEqual([line, true]);
      expect([line, JSON.stringify(fast)]).toEqual([line, JSON.stringify(parsed.data)]);
      expect(fast).toEqual(parsed.data);
    }
    expect(taken).toBe(5);
  });

  it("leaves to the schema what it strips or reorders", () => {
    for (const line of LINES.slice(5)) expect([line, asStoredMessage(JSON.parse(line))]).toEqual([line, undefined]);
  });
});

describe("asTag", () => {
  const TAGS = [
    '{"id":"7"}',
    '{"id":"7","text":"好的"}',
    '{"id":"7","n":1200}',
    '{"id":"7","text":"","n":0}',
    '{"id":""}',
    // not the schema's exact form
    '{"n":1200,"id":"7"}',
    '{"text":"a","id":"7"}',
    '{"id":"7","x":1}',
    '{"id":"7","__proto__":{"n":1}}',
    '{"id":7}',
    '{"id":"7","text":null}',
    '{"id":"7","n":-1}',
    '{"id":"7","n":1.5}',
    '{"id":"7","n":9007199254740993}',
    '{"text":"a"}',
    "[]",
    "null",
  ];

  it("takes a tag only when the schema would return an equal copy, keys in the same order", () => {
    let taken = 0;
    for (const line of TAGS) {
      const fast = asTag(JSON.parse(line));
      if (fast === undefined) continue;
      taken += 1;
      const parsed = TagSchema.safeParse(JSON.parse(line));
      expect([line, parsed.success]).toEqual([line, true]);
      expect([line, JSON.stringify(fast)]).toEqual([line, JSON.stringify(parsed.data)]);
    }
    expect(taken).toBe(5);
    for (const line of TAGS.slice(5)) expect([line, asTag(JSON.parse(line))]).toEqual([line, undefined]);
  });
});
