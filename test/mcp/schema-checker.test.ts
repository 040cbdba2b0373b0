/**
 * MCP schemas off the event loop (issue 39 item 4): a server's large schemas are compiled, and the
 * model's input is checked, in the schema checker's worker thread with time limits and a regular
 * expression engine without backtracking; `list_changed` storms are folded into one listing per
 * interval. Against the hostile fixture server (a real MCP server built with the official SDK).
 *
 * The bounds on the event loop are generous (the issue measured 1.7–6.0 s for the ten schemas and
 * 2.9 s for the pattern on the main thread); `npm run bench:mcp` prints the figures.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readMcpConfig } from "../../src/mcp/config.js";
import { McpToolSource } from "../../src/mcp/source.js";
import { JsonSchemaInput } from "../../src/toolbox/json-input.js";
import { SchemaCheckError, SchemaChecker } from "../../src/toolbox/schema-checker.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testContext } from "../helpers/context.js";
import { watchEventLoop } from "../helpers/event-loop.js";
import { hostileEntry, tempDir, waitFor, writeMcpConfig } from "./support.js";

const sources: McpToolSource[] = [];
const checkers: SchemaChecker[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
  for (const c of checkers.splice(0)) c.close();
});

async function start(entry: Record<string, unknown>, connection = {}) {
  const dir = tempDir();
  const toolbox = new ToolBox();
  const source = new McpToolSource({
    config: readMcpConfig(writeMcpConfig(dir, { hostile: entry })),
    toolbox,
    connection,
  });
  sources.push(source);
  return { toolbox, source, dir };
}

describe("MCP schemas off the event loop", () => {
  it("ten 64 KiB input and output schemas are compiled without holding the event loop", async () => {
    const heavy = Array.from({ length: 10 }, (_, i) => `heavy_${i}`);
    const { toolbox, source } = await start(hostileEntry({ env: { HEAVY_SCHEMAS: "10" }, include: heavy }));
    const { stallMs, busyMs } = await watchEventLoop(() => source.start());
    expect(source.skippedTools).toEqual([]);
    expect(toolbox.names()).toEqual(heavy.map((n) => `hostile__${n}`));
    // On the event loop before: about 1.7 s compiling the input schemas (a schema at a time) and
    // 4–5 s for the output schemas (the SDK's, all in one go; 16 s on a loaded machine). What is
    // left is reading the 1.3 MB tool list itself (the SDK parses it in one piece: about 0.5 s,
    // 1.6 s on a loaded machine); output schemas are no longer compiled.
    expect(stallMs).toBeLessThan(3000);
    expect(busyMs).toBeLessThan(4000);
    // the compiled schema checks the input
    const bad = await toolbox.execute("hostile__heavy_3", { f3_7: "x".repeat(101) }, testContext());
    expect(bad.content).toContain("f3_7: must be at most 100 characters, got 101 characters");
  }, 120_000);

  it("a pattern ^(a+)+$ on 28 characters is checked in linear time, off the event loop", async () => {
    const { toolbox, source } = await start(hostileEntry({ include: ["redos"], safe: ["redos"] }));
    await source.start();
    await toolbox.execute("hostile__redos", { word: "aaa" }, testContext()); // the thread is up
    const { result, stallMs, tookMs } = await watchEventLoop(() =>
      toolbox.execute("hostile__redos", { word: `${"a".repeat(28)}!` }, testContext()),
    );
    expect(result).toMatchObject({
      ok: false,
      content: expect.stringContaining("word: must match the pattern ^(a+)+$"),
    });
    expect(tookMs).toBeLessThan(1000);
    expect(stallMs).toBeLessThan(200);
    const long = await toolbox.execute("hostile__redos", { word: `${"a".repeat(5000)}!` }, testContext());
    expect(long.content).toContain("word: must match the pattern");
  }, 60_000);

  it("a check past the time limit is refused and the thread replaced; a pattern RE2 cannot run falls back, bounded", async () => {
    const checker = new SchemaChecker({ validateTimeoutMs: 300 });
    checkers.push(checker);
    // lookahead: RE2 has none, so this pattern runs on a backtracking RegExp in the thread
    const compiled = await checker.compile({
      type: "object",
      properties: { word: { type: "string", pattern: "^(?=a)(a+)+$" } },
    });
    expect(await checker.validate(compiled, { word: "aaaa" })).toEqual({ valid: true });
    const { result, stallMs, tookMs } = await watchEventLoop(() =>
      checker.validate(compiled, { word: `${"a".repeat(40)}!` }).catch((e: unknown) => e),
    );
    expect(result).toBeInstanceOf(SchemaCheckError);
    expect(result).toMatchObject({ problem: "timeout", message: "checking the input took longer than 300 ms" });
    expect(tookMs).toBeLessThan(5000);
    expect(stallMs).toBeLessThan(200);
    // a new thread compiles the schema again and goes on
    expect(await checker.validate(compiled, { word: "b" })).toMatchObject({ valid: false });
  }, 60_000);

  it("the model is told when its input could not be checked in time, and the call is not run", async () => {
    const checker = new SchemaChecker({ validateTimeoutMs: 300 });
    checkers.push(checker);
    const input = await JsonSchemaInput.compile(
      { type: "object", properties: { word: { type: "string", pattern: "^(?=a)(a+)+$" } } },
      undefined,
      checker,
    );
    expect(await input.parse({ word: `${"a".repeat(40)}!` })).toEqual({
      ok: false,
      problems: [
        "input: checking it against the tool's schema took too long, so the call was not run; send a smaller or simpler input",
      ],
    });
  }, 60_000);
});

describe("list_changed", () => {
  it("a server that sends list_changed 20 times in a row is listed once more, after the interval, with its last change", async () => {
    const dir = tempDir();
    const lists = path.join(dir, "lists.txt");
    const { toolbox, source } = await start(
      hostileEntry({ env: { LISTS_FILE: lists }, include: ["storm", "after_storm"] }),
      {
        listChangedIntervalMs: 500,
      },
    );
    await source.start();
    const count = () => readFileSync(lists, "utf8").split("\n").filter(Boolean).length;
    expect(count()).toBe(1);
    expect(await toolbox.execute("hostile__storm", {}, testContext())).toMatchObject({ ok: true, content: "stormed" });
    await waitFor(() => toolbox.get("hostile__after_storm") !== undefined, 20_000, "the tool listed after the storm");
    expect(count()).toBe(2);
    await new Promise((r) => setTimeout(r, 700));
    expect(count()).toBe(2);
  });
});
