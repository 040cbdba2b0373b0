/**
 * Bounds on what an MCP server hands the bot (issue 25 item 3), against the hostile fixture
 * server (official SDK): a tool list over the per-server limit. (Schema size, images and
 * descriptions: test/e2e/mcp-hostile.test.ts.)
 */
import { afterEach, expect, it } from "vitest";
import { readMcpConfig } from "../../src/mcp/config.js";
import { MCP_MAX_TOOLS_PER_SERVER } from "../../src/mcp/limits.js";
import { McpToolSource } from "../../src/mcp/source.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { captureLogger } from "../helpers/log.js";
import { hostileEntry, tempDir, writeMcpConfig } from "./support.js";

const sources: McpToolSource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
});

async function start(entry: Record<string, unknown>) {
  const { log, lines } = captureLogger("debug");
  const toolbox = new ToolBox();
  const source = new McpToolSource({
    config: readMcpConfig(writeMcpConfig(tempDir(), { many: entry }), {}),
    toolbox,
    log,
  });
  sources.push(source);
  await source.start();
  return { source, toolbox, lines };
}

it("a server listing more than 100 tools: the first 100 are used, the rest skipped, with one warning naming the server", async () => {
  const { source, toolbox, lines } = await start(
    hostileEntry({ env: { MANY_TOOLS: "120" }, exclude: ["search_pages"] }),
  );
  expect(toolbox.size).toBe(MCP_MAX_TOOLS_PER_SERVER);
  expect(toolbox.get("many__extra_88")).toBeDefined();
  expect(toolbox.get("many__extra_89")).toBeUndefined();
  expect(source.skippedTools).toHaveLength(33); // extra_89 … extra_119, redos, storm
  expect(source.skippedTools[0]).toEqual({
    server: "many",
    tool: "extra_89",
    reason: "its server lists more than 100 tools",
  });
  const warning =
    'MCP server many lists 133 tools; only the first 100 are used. Keep the ones you need with "include" in the MCP config';
  expect(source.warnings).toContain(warning);
  expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg).filter((m) => m === warning)).toHaveLength(1);
}, 60_000);
