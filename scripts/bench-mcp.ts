/**
 * `npm run bench:mcp`: what a hostile MCP server's schemas cost the bot's event loop (issue 39
 * item 4), through the schema checker's thread (`src/toolbox/schema-checker.ts`) as the bot does
 * now, against Ajv on the main thread as it did before.
 *
 * Figures:
 * - connecting a server (the hostile fixture, a real MCP server) that lists ten tools with 64 KiB
 *   input schemas and 64 KiB output schemas: wall time, the event loop's longest stall (a 5 ms
 *   timer) and its busy time;
 * - the same ten input schemas, and the ten output schemas, compiled with Ajv on the main thread
 *   (what the bot and the SDK's default output-schema checker did before);
 * - a field with the pattern `^(a+)+$` and an input of 28 `a` and a `!`: the check through the
 *   thread (RE2JS), and the same pattern with a backtracking `RegExp` for 20 to 28 characters.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { Ajv } from "ajv";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readMcpConfig } from "../src/mcp/config.js";
import { McpToolSource } from "../src/mcp/source.js";
import { ToolBox } from "../src/toolbox/toolbox.js";
import { testContext } from "../test/helpers/context.js";
import { watchEventLoop } from "../test/helpers/event-loop.js";

const FIXTURE = fileURLToPath(new URL("../test/fixtures/mcp/hostile-server.ts", import.meta.url));
const HEAVY = Array.from({ length: 10 }, (_, i) => `heavy_${i}`);

const ms = (n: number) => `${(n / 1000).toFixed(2)} s`;

const dir = mkdtempSync(path.join(tmpdir(), "bench-mcp-"));
const file = path.join(dir, "mcp.json");
const entry = { command: process.execPath, args: ["--import", "tsx", FIXTURE], env: { HEAVY_SCHEMAS: "10" } };
writeFileSync(
  file,
  JSON.stringify({ mcpServers: { hostile: { ...entry, include: [...HEAVY, "redos"], safe: ["redos"] } } }),
);

const toolbox = new ToolBox();
const source = new McpToolSource({ config: readMcpConfig(file), toolbox });
const connect = await watchEventLoop(() => source.start());
console.log(
  `connect + register ten tools (64 KiB input and output schemas), through the thread: ${ms(connect.tookMs)} wall, ` +
    `longest event-loop stall ${ms(connect.stallMs)}, event loop busy ${ms(connect.busyMs)}`,
);

// The same schemas, compiled on the main thread as before.
const client = new Client({ name: "bench", version: "1" }, { capabilities: {} });
await client.connect(new StdioClientTransport({ ...entry, stderr: "pipe" }));
const listed = (await client.listTools()).tools.filter((t) => HEAVY.includes(t.name));
await client.close();
for (const kind of ["inputSchema", "outputSchema"] as const) {
  const ajv = new Ajv({ allErrors: true, strict: false, addUsedSchema: false });
  let longest = 0;
  const all = await watchEventLoop(async () => {
    for (const tool of listed) {
      const started = performance.now();
      ajv.compile(tool[kind] as object);
      longest = Math.max(longest, performance.now() - started);
    }
  });
  console.log(`before: the ten ${kind}s compiled on the main thread: ${ms(all.busyMs)} busy, longest ${ms(longest)}`);
}

const word = `${"a".repeat(28)}!`;
await toolbox.execute("hostile__redos", { word: "aaa" }, testContext());
const check = await watchEventLoop(() => toolbox.execute("hostile__redos", { word }, testContext()));
console.log(
  `^(a+)+$ on 28 characters, through the thread (RE2JS): ${ms(check.tookMs)} wall, longest stall ${ms(check.stallMs)}`,
);
for (const n of [20, 22, 24, 26, 28]) {
  const started = performance.now();
  /^(a+)+$/.test(`${"a".repeat(n)}!`);
  console.log(`before: ^(a+)+$ on ${n} characters with a backtracking RegExp: ${ms(performance.now() - started)}`);
}
await source.close();
process.exit(0);
