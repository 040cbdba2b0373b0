/**
 * `npm run tools` with an MCP config: it connects to the (real, SDK-built) fixture servers once,
 * lists their tools with server, tags and approval, the skipped servers with the reason, and
 * never prints a secret taken from `${VAR}`. The text listing runs the program itself (so what the
 * servers it starts print counts too); the other cases its `toolsMain` in this process (a process
 * loads the whole toolbox again, seconds on a busy machine), server-everything from npm included.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHttpMcpFixture, type HttpMcpFixture } from "../fixtures/mcp/http-server.js";
import { toolsMain } from "../../src/cli/tools.js";
import { runCli, type CliRun } from "../helpers/cli.js";
import { nodeArgs } from "../helpers/compiled.js";
import { stdioEntry, tempDir, writeMcpConfig } from "./support.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);
const STDIO_SECRET = `stdio-secret-${Math.random().toString(36).slice(2, 12)}`;
const HTTP_SECRET = `http-secret-${Math.random().toString(36).slice(2, 12)}`;

let http: HttpMcpFixture;
let configFile: string;

beforeAll(async () => {
  http = await startHttpMcpFixture({ token: HTTP_SECRET });
  configFile = writeMcpConfig(tempDir(), {
    notebook: stdioEntry({
      env: { FIXTURE_TOKEN: "${STDIO_SECRET_VALUE}" },
      include: ["echo", "add_note"],
      tags: ["util", "notes"],
      trustAnnotations: true,
      loaded: ["echo", "add_note"],
    }),
    items: {
      url: "${ITEMS_URL}",
      headers: { Authorization: "Bearer ${HTTP_SECRET_VALUE}" },
      tags: ["info"],
      trustAnnotations: true,
      loaded: ["lookup", "delete_item"],
    },
    broken: stdioEntry({ env: { FIXTURE_TOKEN: "${STDIO_SECRET_VALUE}", FAIL_AT_START: "1" } }),
  });
});
afterAll(async () => {
  await http.close();
});

/** The environment of these runs: a CWA key so the weather tool loads (with the loaded MCP tools a chat gets 11 tools in front of the model). */
function cliEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CWA_API_KEY: "CWA-TOOLS-CLI-TEST-KEY",
    MCP_CONFIG: configFile,
    STDIO_SECRET_VALUE: STDIO_SECRET,
    HTTP_SECRET_VALUE: HTTP_SECRET,
    ITEMS_URL: http.url,
  };
}

/** `npm run tools -- …args` in this process (`toolsMain`). */
function cli(...args: string[]): Promise<CliRun> {
  return runCli(toolsMain, args, cliEnv());
}

/** `npm run tools -- …args` as its own process: what it and the servers it starts print, all of it. */
function cliProcess(...args: string[]) {
  return run(process.execPath, nodeArgs("src/cli/tools.ts", ...args), { cwd: root, env: cliEnv() });
}

describe("npm run tools with MCP servers", () => {
  it("lists the MCP tools with server, tags and approval, and the skipped server with the reason (JSON)", async () => {
    const { stdout, stderr } = await cli("--json");
    const listing = JSON.parse(stdout) as { tools: { name: string }[]; mcp: Record<string, unknown> };
    expect(listing.tools.map((t) => t.name)).not.toContain("notebook__echo");
    expect(listing.mcp.file).toBe(configFile);
    expect(listing.mcp.tools).toEqual([
      {
        name: "notebook__echo",
        server: "notebook",
        tool: "echo",
        tags: ["util", "notes"],
        approval: false,
        why: 'marked read-only by the server ("trustAnnotations")',
        description: "Echo the text back.",
      },
      {
        name: "notebook__add_note",
        server: "notebook",
        tool: "add_note",
        tags: ["util", "notes"],
        approval: true,
        why: 'not listed in "safe"',
        description: "Add a note to the shared notebook.",
      },
      {
        name: "items__lookup",
        server: "items",
        tool: "lookup",
        tags: ["info"],
        approval: false,
        why: 'marked read-only by the server ("trustAnnotations")',
        description: "Look an item up by its name.",
      },
      {
        name: "items__delete_item",
        server: "items",
        tool: "delete_item",
        tags: ["info"],
        approval: true,
        why: 'not listed in "safe"',
        description: "Delete an item by id.",
      },
    ]);
    expect(listing.mcp.skipped).toEqual([
      { server: "broken", reason: expect.stringContaining("fatal: the backend rejected token [redacted]") },
    ]);
    expect(listing.mcp.warnings).toEqual([
      expect.stringContaining('2 from MCP server "notebook", 2 from MCP server "items"'),
    ]);
    expect(stdout + stderr).not.toContain(STDIO_SECRET);
    expect(stdout + stderr).not.toContain(HTTP_SECRET);
    expect(http.unauthorized).toBe(0);
  }, 60_000);

  it("prints the same as text, without secrets", async () => {
    const { stdout, stderr } = await cliProcess();
    expect(stdout).toContain(`4 MCP tools (from ${configFile}):`);
    expect(stdout).toMatch(/notebook__add_note +server notebook +\[util, notes\] +⚠️ asks for approval/);
    expect(stdout).toMatch(/items__lookup +server items +\[info\] +no approval/);
    expect(stdout).toMatch(/1 MCP server skipped:\n {2}broken: .*fatal: the backend rejected token \[redacted\]/);
    expect(stdout + stderr).not.toContain(STDIO_SECRET);
    expect(stdout + stderr).not.toContain(HTTP_SECRET);
  }, 60_000);

  it("warns about tool names in the config that match no tool of the server, and prints a url's credentials nowhere", async () => {
    const dir = tempDir();
    const file = writeMcpConfig(dir, {
      notebook: stdioEntry({ include: ["echo"], noAlwaysAllow: ["ad_note"] }),
      wiki: { url: "http://user:Pa55-in-url@127.0.0.1:9/mcp" },
    });
    const { stdout, stderr } = await runCli(toolsMain, [], { ...process.env, CWA_API_KEY: "", MCP_CONFIG: file });
    expect(stdout).toMatch(
      /warning: MCP server notebook has no tool "ad_note" \(named in its "noAlwaysAllow"; its tools: [a-z_, ]*add_note/,
    );
    expect(stdout).toContain(
      '  wiki: its url contains credentials (user:password@); remove them and send them in "headers" instead',
    );
    expect(stdout + stderr).not.toContain("Pa55-in-url");
  }, 60_000);

  it("server-everything from npm: a tool that needs MCP tasks is skipped with the reason; no sampling, elicitation or roots tools are offered", async () => {
    const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");
    const file = writeMcpConfig(tempDir(), { everything: { command: process.execPath, args: [everything, "stdio"] } });
    const env = { ...process.env, CWA_API_KEY: "", MCP_CONFIG: file };
    const { stdout } = await runCli(toolsMain, ["--json"], env);
    const mcp = (JSON.parse(stdout) as { mcp: { tools: { tool: string }[]; skippedTools: unknown[] } }).mcp;
    expect(mcp.skippedTools).toEqual([
      {
        server: "everything",
        tool: "simulate-research-query",
        reason:
          'it can only be run as an MCP task (its execution.taskSupport is "required"), which the bot does not support',
      },
    ]);
    const offered = mcp.tools.map((t) => t.tool);
    expect(offered).toContain("get-tiny-image");
    expect(offered).not.toContain("simulate-research-query");
    // the bot declares no client capabilities, so the server offers none of the tools that need them
    for (const needsCapability of ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"])
      expect(offered).not.toContain(needsCapability);
    const text = await runCli(toolsMain, [], env);
    expect(text.stdout).toContain(
      "1 MCP tool skipped:\n  everything/simulate-research-query: it can only be run as an MCP task",
    );
  }, 60_000);

  it("a malformed MCP config exits 1 naming the file and the problem", async () => {
    const bad = writeMcpConfig(tempDir(), { x: { command: "node", url: "http://a" } });
    const error = await runCli(toolsMain, [], { ...process.env, MCP_CONFIG: bad });
    expect(error.code).toBe(1);
    expect(error.stderr).toContain(`MCP_CONFIG: ${bad} is not a valid MCP servers file`);
    expect(error.stderr).toContain('mcpServers.x: must have either "command"');
  }, 60_000);
});
