import { describe, expect, it } from "vitest";
import { z } from "zod";
import { pino } from "pino";
import { Writable } from "node:stream";
import { DEFAULT_TOOLS_DIR, loadTools } from "../../src/toolbox/registry.js";
import { defineTool, ToolError, type Tool } from "../../src/toolbox/tool.js";
import { MAX_TOOL_RESULT_CHARS, MAX_TOOLS_PER_REQUEST, ToolBox, capToolResult } from "../../src/toolbox/toolbox.js";
import { registerSecrets } from "../../src/log.js";
import type { TraceEvent } from "../../src/trace/tracer.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { fakeDiscordToken, fakeTelegramToken } from "../helpers/fake-tokens.js";

const todo = defineTool({
  name: "complete_item",
  description: "Marks an item done.",
  tags: ["todo", "write"],
  input: z.object({
    todo_id: z.number().int().min(1),
    note: z.string().max(10).optional(),
    notify: z.boolean().default(false),
  }),
  run: ({ todo_id, notify }) => `done #${todo_id} notify=${notify}`,
});
const failing = defineTool({
  name: "failing",
  description: "Fails.",
  tags: ["util"],
  input: z.object({ kind: z.enum(["tool", "bug"]) }),
  run: ({ kind }) => {
    if (kind === "tool") throw new ToolError("No todo #7 in your list.");
    throw new TypeError("cannot read properties of undefined (reading 'x')");
  },
});
const slow = defineTool({
  name: "slow",
  description: "Never finishes on its own.",
  tags: ["util"],
  timeoutMs: 50,
  input: z.object({}),
  run: (_input, ctx) =>
    new Promise<string>((_resolve, reject) => {
      ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
    }),
});
const danger = defineTool({
  name: "delete_item",
  description: "Deletes.",
  tags: ["todo", "write"],
  dangerous: true,
  input: z.object({}),
  run: () => "deleted",
});

function box(...tools: Tool[]) {
  return new ToolBox(tools as Tool[]);
}

describe("ToolBox.execute", () => {
  const toolbox = box(todo as unknown as Tool, failing as unknown as Tool, slow as unknown as Tool);

  it("runs a tool and reports ok with its text and duration", async () => {
    const r = await toolbox.execute("complete_item", { todo_id: 3 }, testContext());
    expect(r).toEqual({ ok: true, content: "done #3 notify=false", durationMs: expect.any(Number) });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("lists the available tools for an unknown one", async () => {
    const r = await toolbox.execute("delete_everything", {}, testContext());
    expect(r.ok).toBe(false);
    expect(r.content).toBe('Unknown tool "delete_everything". Available tools: complete_item, failing, slow.');
  });

  it("names each bad field and why", async () => {
    const r = await toolbox.execute(
      "complete_item",
      { todo_id: "abc", note: "far too long a note", extra: 1 },
      testContext(),
    );
    expect(r.ok).toBe(false);
    expect(r.content).toBe(
      [
        'Invalid input for tool "complete_item":',
        '- todo_id: expected an integer, got "abc"',
        "- note: must be at most 10 characters, got 19 characters",
        "Fix these fields and call the tool again.",
      ].join("\n"),
    );
  });

  it("says a bound in the tool's own words when it gave some (a blank instruction is empty, not 3 characters)", async () => {
    const worded = defineTool({
      name: "worded",
      description: "Worded.",
      tags: [],
      input: z.object({
        instruction: z.string().trim().min(1, { message: "the instruction is empty: say what to do" }),
        note: z.string().max(3),
      }),
      run: () => "ok",
    });
    const r = await box(worded as unknown as Tool).execute(
      "worded",
      { instruction: "   ", note: "four" },
      testContext(),
    );
    expect(r.content).toBe(
      [
        'Invalid input for tool "worded":',
        "- instruction: the instruction is empty: say what to do",
        "- note: must be at most 3 characters, got 4 characters",
        "Fix these fields and call the tool again.",
      ].join("\n"),
    );
  });

  it("refuses unknown fields only when the tool's schema is strict", async () => {
    const strict = defineTool({
      name: "strict",
      description: "Strict.",
      tags: [],
      input: z.strictObject({ a: z.string() }),
      run: () => "ok",
    });
    const r = await box(strict as unknown as Tool).execute("strict", { a: "x", extra: 1 }, testContext());
    expect(r.content).toContain("- input: unknown field extra; the fields are a");
    expect(
      (await box(todo as unknown as Tool).execute("complete_item", { todo_id: 1, extra: 1 }, testContext())).ok,
    ).toBe(true);
  });

  it("says which field is missing, and rejects a fraction for an integer", async () => {
    expect((await toolbox.execute("complete_item", {}, testContext())).content).toContain("- todo_id: is required");
    expect((await toolbox.execute("complete_item", { todo_id: 1.5 }, testContext())).content).toContain(
      "- todo_id: expected an integer, got 1.5",
    );
    expect((await toolbox.execute("complete_item", { todo_id: 0 }, testContext())).content).toContain(
      "- todo_id: must be at least 1, got 0",
    );
    expect((await toolbox.execute("complete_item", null, testContext())).content).toContain(
      "- input: expected an object, got null",
    );
    expect((await toolbox.execute("failing", { kind: "other" }, testContext())).content).toContain(
      '- kind: must be one of "tool", "bug", got "other"',
    );
  });

  it('accepts "5" for an integer field, but never turns "false" into true', async () => {
    expect(await toolbox.execute("complete_item", { todo_id: "5" }, testContext())).toMatchObject({
      ok: true,
      content: "done #5 notify=false",
    });
    expect(await toolbox.execute("complete_item", { todo_id: "5", notify: "false" }, testContext())).toMatchObject({
      ok: true,
      content: "done #5 notify=false",
    });
    expect(await toolbox.execute("complete_item", { todo_id: 5, notify: "true" }, testContext())).toMatchObject({
      ok: true,
      content: "done #5 notify=true",
    });
    const r = await toolbox.execute("complete_item", { todo_id: 5, notify: "no" }, testContext());
    expect(r).toMatchObject({ ok: false });
    expect(r.content).toContain('- notify: expected true or false, got "no"');
    expect((await toolbox.execute("complete_item", { todo_id: "5abc" }, testContext())).ok).toBe(false);
  });

  it("passes a ToolError's message to the model", async () => {
    expect(await toolbox.execute("failing", { kind: "tool" }, testContext())).toMatchObject({
      ok: false,
      content: "No todo #7 in your list.",
    });
  });

  it("logs any other error with its stack; the model sees only its type and message", async () => {
    const lines: string[] = [];
    const log = pino({ level: "info" }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    const r = await toolbox.execute("failing", { kind: "bug" }, testContext({ log }));
    expect(r).toMatchObject({
      ok: false,
      content: "Tool \"failing\" failed with TypeError: cannot read properties of undefined (reading 'x')",
    });
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.level === 50);
    expect(logged.err.stack).toMatch(/TypeError: cannot read properties/);
    expect(r.content).not.toMatch(/at .*toolbox\.test/);
  });

  it("aborts a tool that runs past its timeout; the model is told the outcome is unknown (a read-only tool: safe to retry)", async () => {
    const r = await toolbox.execute("slow", {}, testContext());
    expect(r).toMatchObject({
      ok: false,
      content:
        'Tool "slow" did not finish within 50 ms, so it is unknown whether it took effect. Do not repeat it blindly: ' +
        "check the current state first if you can, and tell the user.",
    });
    const reader = new ToolBox([{ ...slow, name: "slow_reader", readOnly: true } as Tool]);
    expect((await reader.execute("slow_reader", {}, testContext())).content).toBe(
      'Tool "slow_reader" did not finish within 50 ms, so the bot stopped waiting for it. It only reads, so nothing ' +
        "was changed: try again later, or tell the user it is not responding.",
    );
    expect(r.durationMs).toBeGreaterThanOrEqual(45);
    expect(r.durationMs).toBeLessThan(2000);
  });

  it("traces every execution: name, input, ok, duration and a preview", async () => {
    const events: Pick<TraceEvent, "type" | "data">[] = [];
    await toolbox.execute("complete_item", { todo_id: 2 }, testContext(), {
      tracer: { event: (type, data) => events.push({ type, data }) },
      toolUseId: "toolu_1",
    });
    expect(events).toEqual([
      { type: "tool_call", data: { tool: "complete_item", toolUseId: "toolu_1", input: '{"todo_id":2}' } },
      {
        type: "tool_result",
        data: {
          tool: "complete_item",
          toolUseId: "toolu_1",
          ok: true,
          durationMs: expect.any(Number),
          preview: "done #2 notify=false",
        },
      },
    ]);
  });
});

describe("ToolBox.execute: every result is redacted and bounded before the model sees it", () => {
  const huge = defineTool({
    name: "huge",
    description: "Returns a lot.",
    tags: ["util"],
    readOnly: true,
    input: z.object({ n: z.number().int(), fail: z.boolean().default(false) }),
    run: ({ n, fail }) => {
      const text = "好".repeat(n - 1) + "😀"; // n + 1 UTF-16 units, a surrogate pair at the end
      if (fail) throw new ToolError(text);
      return text;
    },
  });
  const leaky = defineTool({
    name: "leaky",
    description: "Leaks secrets in its text.",
    tags: ["util"],
    input: z.object({ where: z.enum(["result", "tool_error", "bug"]) }),
    run: ({ where }) => {
      const text = `key=registered-secret-value-1234 bot=${fakeTelegramToken()} discord=${fakeDiscordToken()}`;
      if (where === "tool_error") throw new ToolError(`upstream said: ${text}`);
      if (where === "bug") throw new Error(`fetch failed for ${text}`);
      return text;
    },
  });
  const toolbox = box(huge as unknown as Tool, leaky as unknown as Tool);

  it(`cuts a result longer than ${MAX_TOOL_RESULT_CHARS} UTF-16 units, with a note, never inside a surrogate pair`, async () => {
    const ok = await toolbox.execute("huge", { n: MAX_TOOL_RESULT_CHARS - 1 }, testContext());
    expect(ok.content.length).toBe(MAX_TOOL_RESULT_CHARS); // exactly at the limit: unchanged
    expect(ok.content.endsWith("😀")).toBe(true);
    const cut = await toolbox.execute("huge", { n: 2_000_000 }, testContext());
    expect(cut.ok).toBe(true);
    expect(cut.content.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    expect(cut.content.length).toBeGreaterThan(MAX_TOOL_RESULT_CHARS - 300);
    expect(cut.content).toMatch(/\[Cut: this tool result was 2000001 characters; only the first part is shown\./);
    // a tool error is bounded the same way
    const error = await toolbox.execute("huge", { n: 50_000, fail: true }, testContext());
    expect(error.ok).toBe(false);
    expect(error.content.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    // the cut never leaves half a surrogate pair: try every cut position near the limit
    for (let max = 300; max < 304; max += 1) {
      const out = capToolResult("😀".repeat(400), max);
      expect(out.length).toBeLessThanOrEqual(max);
      expect(out.startsWith("😀")).toBe(true);
      expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    }
  });

  it("redacts registered secrets and bot token shapes in results, tool errors and bug reports, for the model and the trace", async () => {
    registerSecrets(["registered-secret-value-1234"]);
    for (const where of ["result", "tool_error", "bug"] as const) {
      const events: Pick<TraceEvent, "type" | "data">[] = [];
      const r = await toolbox.execute("leaky", { where }, testContext(), {
        tracer: { event: (type, data) => events.push({ type, data }) },
      });
      expect(r.content).toContain("key=[redacted] bot=[redacted] discord=[redacted]");
      expect(r.content).not.toMatch(/registered-secret|fake_test_token|xxxxxx|yyyyyy/);
      expect(JSON.stringify(events)).not.toMatch(/registered-secret|fake_test_token|xxxxxx|yyyyyy/);
    }
  });

  it("marks tools as writes unless they declare readOnly", () => {
    expect(huge.readOnly).toBe(true);
    expect(leaky.readOnly).toBe(false);
  });
});

describe("ToolBox selection and schemas", () => {
  it("filters by tag into a new toolbox", () => {
    const all = box(todo as unknown as Tool, failing as unknown as Tool, danger as unknown as Tool);
    expect(all.filterByTag("todo").names()).toEqual(["complete_item", "delete_item"]);
    expect(all.filterByTag("util", "nothing").names()).toEqual(["failing"]);
    expect(all.filterByTag().names()).toEqual(["complete_item", "failing", "delete_item"]);
    expect(all.size).toBe(3);
    expect(all.tags()).toEqual(["todo", "util", "write"]);
  });

  it("gives the model's tool definitions, optionally without dangerous tools", () => {
    const all = box(todo as unknown as Tool, danger as unknown as Tool);
    expect(all.schemas({ excludeDangerous: true }).map((s) => s.name)).toEqual(["complete_item"]);
    expect(all.schemas()[0]).toEqual({
      name: "complete_item",
      description: "Marks an item done.",
      input_schema: {
        type: "object",
        properties: {
          todo_id: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
          note: { type: "string", maxLength: 10 },
          notify: { type: "boolean", default: false },
        },
        required: ["todo_id"],
      },
    });
  });

  it(`warns when a request would carry more than ${MAX_TOOLS_PER_REQUEST} tools`, () => {
    const warnings: string[] = [];
    const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as never;
    const many = Array.from({ length: 11 }, (_, i) => ({ ...(todo as unknown as Tool), name: `t${i}` }));
    new ToolBox(many.slice(0, 10), { log }).requestTools();
    expect(warnings).toEqual([]);
    new ToolBox(many, { log }).requestTools();
    expect(warnings).toEqual([
      "a request would carry 11 tools (more than 10): t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10; " +
        "choose fewer with tags, or mark tools needed in few turns deferred: true",
    ]);
  });

  it("puts deferred tools behind the tool search tool, and they do not count toward the ten", () => {
    const warnings: string[] = [];
    const log = { warn: (_o: unknown, msg: string) => warnings.push(msg) } as never;
    const loaded = Array.from({ length: 9 }, (_, i) => ({ ...(todo as unknown as Tool), name: `t${i}` }));
    const deferred = Array.from({ length: 5 }, (_, i) => ({
      ...(todo as unknown as Tool),
      name: `d${i}`,
      deferred: true,
    }));
    const toolbox = new ToolBox([...deferred, ...loaded], { log });
    const { loaded: front, deferred: behind } = toolbox.requestTools();
    expect(front.map((t) => ("name" in t ? t.name : t.type))).toEqual([
      ...loaded.map((t) => t.name),
      "tool_search_tool_bm25",
    ]);
    expect(front.at(-1)).toEqual({ type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" });
    expect(behind.map((t) => ("name" in t ? t.name : t.type))).toEqual(deferred.map((t) => t.name));
    expect(behind.every((t) => "defer_loading" in t && t.defer_loading === true)).toBe(true);
    expect(toolbox.loadedCount()).toBe(10);
    expect(warnings).toEqual([]);
    // a deferred tool called before (without a tool_reference) is loaded; without tool search every tool is
    expect(toolbox.requestTools({ load: new Set(["d1"]) }).loaded.map((t) => ("name" in t ? t.name : ""))).toContain(
      "d1",
    );
    const all = toolbox.requestTools({ toolSearch: false });
    expect(all.deferred).toEqual([]);
    expect(all.loaded).toHaveLength(14);
    const t = "t0, t1, t2, t3, t4, t5, t6, t7, t8";
    const advice = "choose fewer with tags, or mark tools needed in few turns deferred: true";
    expect(warnings).toEqual([
      `a request would carry 11 tools (more than 10): d1, ${t}, tool_search_tool_bm25; ${advice}`,
      `a request would carry 14 tools (more than 10): d0, d1, d2, d3, d4, ${t}; ${advice}`,
    ]);
    // only deferred tools: the tool search tool alone is in front of the model
    expect(new ToolBox(deferred).requestTools().loaded).toEqual([
      { type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" },
    ]);
  });

  it("refuses a second tool with the same name", () => {
    expect(() => box(todo as unknown as Tool, { ...(todo as unknown as Tool), file: "/x/other.ts" })).toThrow(
      /tool name "complete_item" is defined twice/,
    );
  });
});

describe("shipped tools", () => {
  it("every registered tool has a well-formed JSON Schema object", async () => {
    const { toolbox, skipped } = await loadTools({
      dirs: [DEFAULT_TOOLS_DIR],
      config: testConfig({ CWA_API_KEY: "test-key-123" }),
    });
    expect(skipped).toEqual([]);
    for (const schema of toolbox.schemas()) {
      expect(schema.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(schema.description!.trim().length).toBeGreaterThan(20);
      expect(schema.input_schema.type).toBe("object");
      expect(schema.input_schema.properties).toBeTypeOf("object");
      expect(Array.isArray(schema.input_schema.required)).toBe(true);
      for (const name of schema.input_schema.required as string[])
        expect(Object.keys(schema.input_schema.properties!)).toContain(name);
      expect(JSON.parse(JSON.stringify(schema.input_schema))).toEqual(schema.input_schema);
    }
  });
});
