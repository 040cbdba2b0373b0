/**
 * The compact line that ends a streamed answer (`doneLines` in src/worker/pipeline.ts): what the
 * run's successful calls did, in call order, each once; a tool's notice when it declares one
 * (none for a call that needs no word), else its status line's icon and activity; at most
 * MAX_DONE_CALLS named, then `+N`; failed calls and calls without a result left out.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { doneLines, MAX_DONE_CALLS } from "../../src/worker/pipeline.js";

const calc = defineTool({
  name: "calc",
  description: "Calculates.",
  tags: ["util"],
  readOnly: true,
  input: z.object({ expression: z.string() }),
  activity: ({ expression }) => `計算：${expression}`,
  run: () => "42",
});
const note = defineTool({
  name: "note",
  description: "Remembers.",
  tags: ["util"],
  icon: "📝",
  input: z.object({ text: z.string(), view: z.boolean().optional() }),
  notice: ({ text, view }) => (view ? undefined : `📝 記住了：${text}`),
  run: () => "ok",
});
const toolbox = new ToolBox([calc, note] as Tool[]);

/** A run: each call as a `tool_use` and its `tool_result` (an error when `failed`). */
function run(...calls: { name: string; input: unknown; failed?: boolean; unanswered?: boolean }[]): MessageParam[] {
  const uses = calls.map((c, i) => ({ type: "tool_use" as const, id: `toolu_${i}`, name: c.name, input: c.input }));
  const results = calls
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => !c.unanswered)
    .map(({ c, i }) => ({
      type: "tool_result" as const,
      tool_use_id: `toolu_${i}`,
      content: "x",
      is_error: c.failed === true,
    }));
  return [
    { role: "user", content: "q" },
    { role: "assistant", content: uses },
    { role: "user", content: results },
    { role: "assistant", content: "done" },
  ];
}

describe("the line of what a streamed answer's calls did", () => {
  it("names each successful call once, in order: a notice when the tool has one, else icon and activity", () => {
    const messages = run(
      { name: "calc", input: { expression: "6*7" } },
      { name: "note", input: { text: "住在新竹" } },
      { name: "calc", input: { expression: "6*7" } },
      { name: "note", input: { text: "x", view: true } },
      { name: "calc", input: { expression: "1/0" }, failed: true },
      { name: "calc", input: { expression: "2+2" }, unanswered: true },
    );
    expect(doneLines(toolbox, messages, "zh-TW")).toEqual(["🔧 計算：6*7 · 📝 記住了：住在新竹"]);
  });

  it(`names at most ${MAX_DONE_CALLS} calls, then counts the rest`, () => {
    const calls = Array.from({ length: MAX_DONE_CALLS + 2 }, (_, i) => ({
      name: "calc",
      input: { expression: `${i}+1` },
    }));
    const [line] = doneLines(toolbox, run(...calls), "en");
    expect(line!.split(" · ")).toHaveLength(MAX_DONE_CALLS + 1);
    expect(line!.endsWith(" · +2")).toBe(true);
  });

  it("is nothing without a successful call", () => {
    expect(doneLines(toolbox, run({ name: "calc", input: { expression: "1/0" }, failed: true }), "en")).toEqual([]);
    expect(
      doneLines(
        toolbox,
        [
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
        ],
        "en",
      ),
    ).toEqual([]);
  });
});
