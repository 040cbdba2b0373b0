/**
 * MCP servers as a tool source, against real MCP servers built with the official SDK
 * (test/fixtures/mcp/): a stdio child process and a Streamable HTTP server.
 */
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { readMcpConfig } from "../../src/mcp/config.js";
import { MCP_DROP_GRACE_MS } from "../../src/mcp/connection.js";
import { McpToolSource, warnCrowdedContexts } from "../../src/mcp/source.js";
import type { McpBackedTool } from "../../src/mcp/tools.js";
import { ToolRegistryError } from "../../src/toolbox/registry.js";
import { toolboxFor } from "../../src/toolbox/select.js";
import type { Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { startHttpMcpFixture, type HttpMcpFixture } from "../fixtures/mcp/http-server.js";
import { testContext } from "../helpers/context.js";
import { captureLogger } from "../helpers/log.js";
import { recordedCalls, stdioEntry, tempDir, waitFor, writeMcpConfig } from "./support.js";

const TOKEN = `fixture-secret-${Math.random().toString(36).slice(2, 12)}`;
const HTTP_TOKEN = `http-secret-${Math.random().toString(36).slice(2, 12)}`;
const env = { ...process.env, FIXTURE_TOKEN_VALUE: TOKEN, HTTP_TOKEN_VALUE: HTTP_TOKEN };
const fast = { reconnectDelaysMs: { first: 100, max: 500 } };

let http: HttpMcpFixture;
const sources: McpToolSource[] = [];

beforeAll(async () => {
  http = await startHttpMcpFixture({ token: HTTP_TOKEN });
});
afterAll(async () => {
  await http.close();
});
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
});

function fileTool(name: string, tags = ["util"]): Tool {
  return {
    name,
    description: "a file tool",
    input: z.object({}),
    tags,
    dangerous: false,
    readOnly: true,
    file: `/project/tools/${name}.ts`,
    run: () => "ok",
  };
}

async function start(servers: Record<string, unknown>, toolbox = new ToolBox()) {
  const dir = tempDir();
  const callsFile = path.join(dir, "calls.jsonl");
  const file = writeMcpConfig(dir, servers);
  const { log, lines } = captureLogger("debug");
  const source = new McpToolSource({ config: readMcpConfig(file, env), toolbox, log, connection: fast });
  sources.push(source);
  await source.start();
  return { source, toolbox, lines, callsFile, log };
}

const notes = (callsFile: string) => ({ CALLS_FILE: callsFile, FIXTURE_TOKEN: "${FIXTURE_TOKEN_VALUE}" });

describe("MCP tools in the toolbox", () => {
  it("registers both servers' tools as <server>__<tool> with tags, danger and the server's schema", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox, source } = await start({
      notebook: stdioEntry({
        env: notes(callsFile),
        safe: ["stats"],
        noAlwaysAllow: ["add_note"],
        trustAnnotations: true,
      }),
      "items.api": {
        url: http.url,
        headers: { Authorization: "Bearer ${HTTP_TOKEN_VALUE}" },
        tags: ["info"],
        exclude: ["lookup_other"],
        trustAnnotations: true,
      },
    });
    expect(toolbox.names().sort()).toEqual(
      [
        "notebook__add_note",
        "notebook__big",
        "notebook__crash",
        "notebook__echo",
        "notebook__enable_extra",
        "notebook__fail",
        "notebook__snapshot",
        "notebook__stats",
        "notebook__slow_steps",
        "items_api__delete_item",
        "items_api__lookup",
      ].sort(),
    );
    const echo = toolbox.get("notebook__echo")!;
    expect(echo).toMatchObject({
      tags: ["util"],
      dangerous: false,
      readOnly: true,
      description: "Echo the text back.",
      source: 'MCP server "notebook"',
    });
    expect(toolbox.get("notebook__add_note")).toMatchObject({ dangerous: true, readOnly: false, alwaysAllow: false });
    expect(toolbox.get("notebook__stats")).toMatchObject({ dangerous: false, readOnly: true });
    expect(toolbox.get("items_api__delete_item")).toMatchObject({ tags: ["info"], dangerous: true, alwaysAllow: true });
    expect(toolbox.get("items_api__lookup")).toMatchObject({ dangerous: false, readOnly: true });
    const schema = toolbox.schemas().find((s) => s.name === "notebook__add_note")!;
    expect(schema.input_schema).toMatchObject({
      type: "object",
      properties: {
        text: { type: "string", minLength: 1, maxLength: 100 },
        priority: { type: "integer", minimum: 1, maximum: 5 },
      },
      required: ["text", "priority"],
    });
    expect(source.skipped).toEqual([]);
    // offered in chats (util / info are chat tags)
    expect(toolboxFor(toolbox, { platform: "telegram", chatKind: "group" }).names()).toContain("items_api__lookup");
  });

  it("runs a call and passes the result on; input that breaks the schema gets field errors and makes no call", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox } = await start({
      notebook: stdioEntry({
        env: notes(callsFile),
        include: ["echo", "add_note", "snapshot", "stats", "fail", "big"],
      }),
    });
    expect(toolbox.names()).toEqual([
      "notebook__echo",
      "notebook__add_note",
      "notebook__snapshot",
      "notebook__stats",
      "notebook__fail",
      "notebook__big",
    ]);
    const context = testContext();

    expect(await toolbox.execute("notebook__echo", { text: "hi" }, context)).toMatchObject({
      ok: true,
      content: "echo: hi",
    });

    const bad = await toolbox.execute("notebook__add_note", { text: "", priority: "high", color: "red" }, context);
    expect(bad.ok).toBe(false);
    expect(bad.content).toContain('Invalid input for tool "notebook__add_note"');
    expect(bad.content).toContain("text: must be at least 1 character, got 0 characters");
    expect(bad.content).toContain('priority: expected an integer, got "high"');
    const missing = await toolbox.execute("notebook__add_note", { text: "milk" }, context);
    expect(missing.content).toContain("priority: is required");
    expect(recordedCalls(callsFile).map((c) => c.tool)).toEqual(["echo"]);

    // a numeric string is accepted for an integer field, as for our own tools
    expect(await toolbox.execute("notebook__add_note", { text: "milk", priority: "2" }, context)).toMatchObject({
      ok: true,
      content: "note added: milk (priority 2)",
    });
    expect(recordedCalls(callsFile).at(-1)).toMatchObject({ tool: "add_note", args: { text: "milk", priority: 2 } });

    const image = await toolbox.execute("notebook__snapshot", {}, context);
    expect(image).toMatchObject({ ok: true, content: "the notebook" });
    // the image stands after the text, where the server put it
    expect(image.images).toEqual([{ mediaType: "image/png", data: expect.stringMatching(/^iVBOR/), at: 12 }]);

    const stats = await toolbox.execute("notebook__stats", {}, context);
    expect(stats.ok).toBe(true);
    expect(JSON.parse(stats.content)).toEqual({ notes: 3, oldest: "2026-01-01" });

    expect(await toolbox.execute("notebook__fail", {}, context)).toMatchObject({
      ok: false,
      content: "the backend said no",
    });

    const big = await toolbox.execute("notebook__big", {}, context);
    expect(big.ok).toBe(true);
    expect(big.content.length).toBeLessThanOrEqual(20_000);
    expect(big.content).toContain("[Cut: this tool result was 30000 characters");
  });

  it("the approval prompt shows the server, the tool and the input in readable form", async () => {
    const { toolbox } = await start({
      items: { url: http.url, headers: { Authorization: "Bearer ${HTTP_TOKEN_VALUE}" } },
    });
    const en = await toolbox.prepare("items__delete_item", { id: 7 }, testContext({ locale: "en" }));
    expect(en).toEqual({ ok: true, action: "Use the delete_item tool of MCP server “items”\n• id: 7" });
    const zh = await toolbox.prepare("items__delete_item", { id: 7 }, testContext({ locale: "zh-TW" }));
    expect(zh).toEqual({ ok: true, action: "使用 MCP 伺服器「items」的工具 delete_item\n• id: 7" });
    expect(await toolbox.prepare("items__delete_item", { id: -1 }, testContext())).toEqual({
      ok: false,
      content: expect.stringContaining("id: must be more than 0, got -1"),
    });
    expect(http.calls.filter((c) => c.tool === "delete_item")).toEqual([]);
    expect(http.unauthorized).toBe(0);
  });

  it("a server that exits mid-call: the call gets a tool error, calls meanwhile too, then it is reconnected and works", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox, lines } = await start({ notebook: stdioEntry({ env: notes(callsFile) }) });
    const context = testContext();
    const crashed = await toolbox.execute("notebook__crash", {}, context);
    expect(crashed.ok).toBe(false);
    expect(crashed.content).toMatch(/connection to MCP server "notebook" dropped during the crash call/);
    const meanwhile = await toolbox.execute("notebook__echo", { text: "now?" }, context);
    if (!meanwhile.ok)
      expect(meanwhile.content).toMatch(/unavailable right now: MCP server "notebook" is not connected \(reconnecting/);
    await waitFor(
      async () => (await toolbox.execute("notebook__echo", { text: "again" }, context)).ok,
      30_000,
      "the reconnection",
    );
    const pids = new Set(recordedCalls(callsFile).map((c) => c.pid));
    expect(pids.size).toBe(2); // a new child process
    expect(lines.join("")).toContain("connection lost");
    expect(lines.join("")).toContain("connected again");
  }, 60_000);

  it("an HTTP server that goes away and comes back: tool error, then reconnected", async () => {
    const token = "second-http-token-0123";
    let server = await startHttpMcpFixture({ token });
    const { toolbox } = await start({ items: { url: server.url, headers: { Authorization: `Bearer ${token}` } } });
    const context = testContext();
    expect(await toolbox.execute("items__lookup", { query: "a" }, context)).toMatchObject({
      ok: true,
      content: "found: a",
    });
    const port = server.port;
    await server.close();
    const down = await toolbox.execute("items__lookup", { query: "b" }, context);
    expect(down.ok).toBe(false);
    expect(down.content).toMatch(/MCP server "items"/);
    server = await startHttpMcpFixture({ token, port });
    try {
      await waitFor(
        async () => (await toolbox.execute("items__lookup", { query: "c" }, context)).ok,
        30_000,
        "the reconnection",
      );
    } finally {
      await server.close();
    }
  }, 60_000);

  it("notifications/tools/list_changed refreshes the server's tools", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    let changes = 0;
    const toolbox = new ToolBox();
    const file = writeMcpConfig(dir, { notebook: stdioEntry({ env: notes(callsFile), exclude: ["crash"] }) });
    const source = new McpToolSource({
      config: readMcpConfig(file, env),
      toolbox,
      // The listing after list_changed waits out the interval since start-up's listing: 200 ms,
      // not the bot's 10 s (the interval itself is test/mcp/schema-checker.test.ts's).
      connection: { ...fast, listChangedIntervalMs: 200 },
      onChange: () => (changes += 1),
    });
    sources.push(source);
    await source.start();
    // start() reports its result by returning; changes are reported only after it
    expect(changes).toBe(0);
    expect(toolbox.get("notebook__extra")).toBeUndefined();
    expect(toolbox.get("notebook__crash")).toBeUndefined();
    expect(await toolbox.execute("notebook__enable_extra", {}, testContext())).toMatchObject({ ok: true });
    await waitFor(() => toolbox.get("notebook__extra") !== undefined, 20_000, "the new tool");
    expect(changes).toBeGreaterThanOrEqual(1);
    expect(await toolbox.execute("notebook__extra", {}, testContext())).toMatchObject({
      ok: true,
      content: "extra works",
    });
    expect(source.tools()[0]!.tools.map((t) => t.name)).toContain("notebook__extra");
  });

  it("a server that fails at start-up is skipped with one warning naming it and why; the others load; secrets stay out of the log", async () => {
    const { toolbox, source, lines } = await start({
      broken: stdioEntry({ env: { FIXTURE_TOKEN: "${FIXTURE_TOKEN_VALUE}", FAIL_AT_START: "1" } }),
      nowhere: { url: "http://127.0.0.1:9/mcp" },
      unset: { url: "https://example.invalid/mcp", headers: { Authorization: "Bearer ${NOT_SET_ANYWHERE}" } },
      items: { url: http.url, headers: { Authorization: "Bearer ${HTTP_TOKEN_VALUE}" } },
    });
    expect(toolbox.names().sort()).toEqual(["items__delete_item", "items__lookup"]);
    const skipped = Object.fromEntries(source.skipped.map((s) => [s.server, s.reason]));
    expect(Object.keys(skipped).sort()).toEqual(["broken", "nowhere", "unset"]);
    expect(skipped.broken).toContain("fatal: the backend rejected token [redacted]");
    expect(skipped.unset).toBe("environment variable NOT_SET_ANYWHERE is not set (used as ${…} in its url or headers)");
    const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40);
    // one warning per failed server, and nothing else about it (no reconnection attempts)
    expect(warnings.filter((w) => w.msg.includes("broken")).map((w) => w.msg)).toEqual([
      expect.stringMatching(/^MCP server broken skipped: /),
    ]);
    expect(warnings.filter((w) => w.msg.includes("nowhere")).map((w) => w.msg)).toEqual([
      expect.stringMatching(/^MCP server nowhere skipped: /),
    ]);
    const all = lines.join("\n");
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(HTTP_TOKEN);
    expect(JSON.stringify(source.skipped)).not.toContain(TOKEN);
  });

  it("a name clash with a tools/ file stops start-up naming both sources", async () => {
    const toolbox = new ToolBox([fileTool("notebook__echo")]);
    const error = await start({ notebook: stdioEntry({ include: ["echo"] }) }, toolbox).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolRegistryError);
    expect((error as Error).message).toContain(
      'tool name "notebook__echo" is defined twice: in /project/tools/notebook__echo.ts and in MCP server "notebook" (tool "echo")',
    );
    expect(toolbox.names()).toEqual(["notebook__echo"]);
  });

  it("two servers' tools with one name: start-up goes on, the later one is skipped with a warning naming both", async () => {
    const { toolbox, source, lines } = await start({
      "a.b": stdioEntry({ include: ["echo"] }),
      a_b: stdioEntry({ include: ["echo"] }),
    });
    expect(toolbox.names()).toEqual(["a_b__echo"]);
    const winner = (toolbox.get("a_b__echo") as McpBackedTool).mcp.server;
    const loser = winner === "a.b" ? "a_b" : "a.b";
    expect(source.skippedTools).toEqual([
      {
        server: loser,
        tool: "echo",
        reason: `tool name "a_b__echo" is already taken by MCP server "${winner}" (tool "echo"); leave one out with "exclude" in the MCP config`,
      },
    ]);
    expect(lines.join("\n")).toContain(
      `MCP tool ${loser}/echo skipped: tool name \\"a_b__echo\\" is already taken by MCP server \\"${winner}\\"`,
    );
  });

  it("the start-up warning names the servers and the loaded and include settings when a chat would get more than 10 tools", async () => {
    const files = ["a", "b", "c", "d", "e", "f", "g", "h", "i"].map((n) => fileTool(n));
    const { toolbox, source, log } = await start(
      {
        items: {
          url: http.url,
          headers: { Authorization: "Bearer ${HTTP_TOKEN_VALUE}" },
          loaded: ["lookup", "delete_item"],
        },
      },
      new ToolBox(files),
    );
    const warnings = warnCrowdedContexts(toolbox, source, log);
    expect(warnings).toEqual([
      "a chat would have 11 tools in front of the model (more than 10; models choose worse with " +
        'more): 9 from tools/ and the server tools, and 2 from MCP server "items". Name fewer ' +
        'tools in "loaded" in the MCP config (the others are found with tool search), keep only ' +
        'the tools you need with "include" (e.g. "include": ["lookup"]), or give a server "tags" ' +
        "that chats do not offer",
    ]);
    toolbox.remove("a");
    expect(warnCrowdedContexts(toolbox, source, log)).toEqual([]);
  });

  it("MCP tools are deferred unless named in loaded: they do not count toward the ten, the tool search tool does", async () => {
    const files = ["a", "b", "c", "d", "e", "f", "g", "h", "i"].map((n) => fileTool(n));
    const { toolbox, source, log } = await start(
      { items: { url: http.url, headers: { Authorization: "Bearer ${HTTP_TOKEN_VALUE}" } } },
      new ToolBox(files),
    );
    expect(
      toolbox
        .list()
        .filter((t) => t.deferred)
        .map((t) => t.name),
    ).toEqual(["items__lookup", "items__delete_item"]);
    expect(toolbox.loadedCount()).toBe(10); // 9 files + the tool search tool
    expect(warnCrowdedContexts(toolbox, source, log)).toEqual([]);
    const { deferred } = toolbox.requestTools();
    expect(deferred.map((t) => ("name" in t ? t.name : ""))).toEqual(["items__lookup", "items__delete_item"]);
    toolbox.add(fileTool("j"));
    expect(warnCrowdedContexts(toolbox, source, log)).toEqual([
      "a chat would have 11 tools in front of the model (more than 10; models choose worse with " +
        "more): a, b, c, d, e, f, g, h, i, j; and the tool search tool (it finds the 2 deferred " +
        "tools). Mark tools of tools/ needed in few turns deferred: true (the model finds them " +
        "with tool search), give some tools tags that chats do not offer, or turn off a built-in " +
        "tool you do not need",
    ]);
  });

  it("a stop: a server that exits once the stop has begun (Ctrl-C reaches it too) is neither reported as lost nor reconnected", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox, source, lines } = await start({
      notebook: stdioEntry({ env: notes(callsFile), include: ["echo"] }),
    });
    expect((await toolbox.execute("notebook__echo", { text: "x" }, testContext())).ok).toBe(true);
    const pid = recordedCalls(callsFile)[0]!.pid;
    source.stopping();
    process.kill(pid, "SIGINT"); // the terminal's Ctrl-C goes to the whole process group
    await waitFor(() => !isAlive(pid), 10_000, "the child to exit");
    // longer than the grace and the first reconnection delay (100 ms here): a reconnection would have happened
    await new Promise((r) => setTimeout(r, MCP_DROP_GRACE_MS + 1500));
    await source.close();
    expect(warningsOf(lines)).toEqual([]);
    expect(lines.join("")).not.toMatch(/connection lost|reconnect|connected again/);
    expect(lines.join("")).toContain("connection closed while stopping");
  }, 30_000);

  it("a stop: a server that exits a moment before the stop begins is not reported as lost nor reconnected either", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox, source, lines } = await start({
      notebook: stdioEntry({ env: notes(callsFile), include: ["echo"] }),
    });
    expect((await toolbox.execute("notebook__echo", { text: "x" }, testContext())).ok).toBe(true);
    const pid = recordedCalls(callsFile)[0]!.pid;
    process.kill(pid, "SIGINT"); // reaches the server first; the bot's own handler runs a moment later
    await waitFor(() => !isAlive(pid), 10_000, "the child to exit");
    await new Promise((r) => setTimeout(r, 50));
    source.stopping();
    await source.close();
    await new Promise((r) => setTimeout(r, MCP_DROP_GRACE_MS + 1500));
    expect(warningsOf(lines)).toEqual([]);
    expect(lines.join("")).not.toMatch(/connection lost|reconnect|connected again/);
  }, 30_000);

  it("close() stops the stdio child process and removes the tools", async () => {
    const dir = tempDir();
    const callsFile = path.join(dir, "calls.jsonl");
    const { toolbox, source } = await start({ notebook: stdioEntry({ env: notes(callsFile), include: ["echo"] }) });
    await toolbox.execute("notebook__echo", { text: "x" }, testContext());
    const pid = recordedCalls(callsFile)[0]!.pid;
    expect(isAlive(pid)).toBe(true);
    await source.close();
    await waitFor(() => !isAlive(pid), 10_000, "the child to exit");
    expect(toolbox.size).toBe(0);
  });
});

/** The warnings and errors among the logged JSON lines, as their messages. */
function warningsOf(lines: string[]): string[] {
  return lines
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((r) => r.level >= 40)
    .map((r) => r.msg);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
