/**
 * The shipped `mcp.example.json` works on a fresh checkout after `npm ci`: its server (the
 * notebook in `src/mcp/example-server.ts`, built with the official SDK) starts with the command
 * the example gives, lists its tools, and answers; `safe` spares the read, the write asks.
 * The notebook file is moved to a temporary folder so the test leaves the checkout alone.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { readMcpConfig } from "../../src/mcp/config.js";
import { McpToolSource } from "../../src/mcp/source.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testContext } from "../helpers/context.js";
import { tempDir, writeMcpConfig } from "./support.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sources: McpToolSource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
});

it("the example's server starts as the example says, and its two tools work", async () => {
  const example = JSON.parse(readFileSync(path.join(root, "mcp.example.json"), "utf8")) as {
    mcpServers: Record<string, Record<string, unknown>>;
  };
  expect(Object.keys(example.mcpServers)).toEqual(["notes"]);
  const dir = tempDir();
  const notes = { ...example.mcpServers.notes, cwd: root, env: { NOTES_FILE: path.join(dir, "notes.json") } };
  const toolbox = new ToolBox();
  const source = new McpToolSource({ config: readMcpConfig(writeMcpConfig(dir, { notes }), {}), toolbox });
  sources.push(source);
  await source.start();
  expect(source.skipped).toEqual([]);
  expect(source.warnings).toEqual([]);
  expect(toolbox.names()).toEqual(["notes__read_notes", "notes__add_note"]);
  expect(toolbox.get("notes__read_notes")).toMatchObject({ dangerous: false, mcp: { why: 'listed in "safe"' } });
  expect(toolbox.get("notes__add_note")).toMatchObject({ dangerous: true });

  const context = testContext();
  expect(await toolbox.execute("notes__read_notes", {}, context)).toMatchObject({
    ok: true,
    content: "The notebook is empty.",
  });
  expect(await toolbox.execute("notes__add_note", { text: "買牛奶" }, context)).toMatchObject({
    ok: true,
    content: "Noted (1 notes in the notebook).",
  });
  const read = await toolbox.execute("notes__read_notes", { limit: 5 }, context);
  expect(read.content).toMatch(/^- 買牛奶 \(\d{4}-\d\d-\d\dT/);
}, 60_000);
