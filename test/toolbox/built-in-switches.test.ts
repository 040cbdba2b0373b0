/**
 * The shipped tools with every documented built-in switch on (WEB_SEARCH, WEB_FETCH, MEMORY; the
 * reminder and task tools are files of `tools/` and always load): every context's request has at
 * most ten tools in front of the model, and nothing warns — not start-up's check, not the MCP
 * check, not `npm run tools` with the example MCP config, not a request. Web fetch is deferred:
 * the model finds it with tool search. An operator's own extra tool does make a chat crowded, and
 * the warning then names the counted tools and the switch of each built-in one.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { offerTools } from "../../src/agent/server-blocks.js";
import { toolsMain } from "../../src/cli/tools.js";
import { warnCrowdedContexts } from "../../src/mcp/source.js";
import { PLATFORMS } from "../../src/queue/incoming.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { MAX_TOOLS_PER_REQUEST, toolboxFor, warnCrowdedChats } from "../../src/toolbox/select.js";
import { runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { REPO_ROOT, SHIPPED_TOOLS } from "../tools/load.js";

/** Every built-in switch on, and a CWA key so the weather tool loads too (the most tools a chat gets). */
const ALL_ON = { WEB_SEARCH: "on", WEB_FETCH: "on", MEMORY: "on", CWA_API_KEY: "CWA-TEST-KEY-1234" };

await mkdir(path.join(REPO_ROOT, ".data"), { recursive: true });
const extraDir = await mkdtemp(path.join(REPO_ROOT, ".data", "crowded-"));
afterAll(() => rm(extraDir, { recursive: true, force: true }));

/** What names a request puts in front of the model (not `defer_loading`). */
function inFront(tools: { name?: string; defer_loading?: boolean }[]): string[] {
  return tools.filter((t) => t.defer_loading !== true).map((t) => t.name ?? "?");
}

describe("the shipped tools with every built-in switch on", () => {
  it("every context's request has at most ten tools in front of the model, web fetch deferred, and nothing warns", async () => {
    const { log, lines } = captureLogger("info");
    const { toolbox } = await loadTools({ config: testConfig(ALL_ON), log });
    expect(toolbox.names()).toEqual(expect.arrayContaining([...SHIPPED_TOOLS, "web_search", "web_fetch", "memory"]));
    expect(warnCrowdedChats(toolbox, log)).toEqual([]);
    expect(warnCrowdedContexts(toolbox, undefined, log)).toEqual([]);
    let contexts = 0;
    for (const platform of PLATFORMS) {
      for (const chatKind of ["dm", "group"] as const) {
        for (const scheduled of [undefined, { taskId: 1 }]) {
          const offered = toolboxFor(toolbox, { platform, chatKind, scheduled });
          const { tools } = offerTools(offered, [], new Set());
          const front = inFront(tools as { name?: string; defer_loading?: boolean }[]);
          expect(
            front.length,
            `${platform} ${chatKind}${scheduled ? " task run" : ""}: ${front.join(", ")}`,
          ).toBeLessThanOrEqual(MAX_TOOLS_PER_REQUEST);
          expect(offered.loadedCount()).toBe(front.length);
          expect(front).toEqual(expect.arrayContaining(["web_search", "memory", "tool_search_tool_bm25"]));
          expect(front).not.toContain("web_fetch");
          expect(tools).toContainEqual(
            expect.objectContaining({ name: "web_fetch", type: "web_fetch_20250910", defer_loading: true }),
          );
          contexts += 1;
        }
      }
    }
    expect(contexts).toBe(PLATFORMS.length * 4);
    expect(lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40)).toEqual([]);
  });

  it("npm run tools with the example MCP config warns about no crowded chat", async () => {
    const env = {
      ...process.env,
      ...ALL_ON,
      LOG_LEVEL: "silent",
      MCP_CONFIG: path.join(REPO_ROOT, "mcp.example.json"),
    };
    const run = await runCli(toolsMain, ["--json"], env);
    expect(run.code).toBe(0);
    const listing = JSON.parse(run.stdout) as {
      tools: { name: string }[];
      mcp: { tools: unknown[]; warnings: string[] };
    };
    expect(listing.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["web_fetch", "memory"]));
    expect(listing.mcp.tools).toHaveLength(2);
    expect(listing.mcp.warnings).toEqual([]);
    expect(run.stdout + run.stderr).not.toContain("tools in front of the model");
  }, 60_000);

  it("an operator's own extra tool makes a chat crowded, and the warning names the counted tools and the built-in switches", async () => {
    const toolModule = path.join(REPO_ROOT, "src/toolbox/tool.ts");
    await writeFile(
      path.join(extraDir, "greet.ts"),
      `import { z } from "zod";\nimport { defineTool } from ${JSON.stringify(toolModule)};\n` +
        `export default defineTool({ name: "greet", description: "Says hello. Use when greeting.", ` +
        `tags: ["util"], input: z.object({}), run: () => "hi" });\n`,
    );
    const { log } = captureLogger("info");
    // The shipped tools and the built-in ones (the default folder), plus the operator's file.
    const { toolbox } = await loadTools({ config: testConfig(ALL_ON), log });
    for (const tool of (await loadTools({ config: testConfig(ALL_ON), dirs: [extraDir] })).toolbox.list())
      toolbox.add(tool);
    const warnings = warnCrowdedChats(toolbox, log);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toBe(
      "a chat would have 11 tools in front of the model (more than 10; models choose worse with more): " +
        "add_todo, calculate, get_current_datetime, get_weather, list_todos, schedule_task, set_reminder, greet; " +
        "built in: web_search (WEB_SEARCH=off removes it), memory (MEMORY=off removes it); and the tool search " +
        "tool (it finds the 7 deferred tools). Mark tools of tools/ needed in few turns deferred: true (the " +
        "model finds them with tool search), give some tools tags that chats do not offer, or turn off a " +
        "built-in tool you do not need",
    );
    expect(warnCrowdedContexts(toolbox, undefined, log)).toEqual(warnings);
  });
});
