/**
 * Tools whose tags no chat offers: found by `unofferedTools`, warned about once each at start-up
 * by `warnUnofferedTools`, and listed by `npm run tools` (text and `--json`).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { toolsMain } from "../../src/cli/tools.js";
import { createLogger } from "../../src/log.js";
import { loadTools } from "../../src/toolbox/registry.js";
import {
  CHAT_TAGS,
  toolboxFor,
  unofferedReason,
  unofferedTools,
  warnUnofferedTools,
} from "../../src/toolbox/select.js";
import { runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import { SHIPPED_TOOLS } from "../tools/load.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const toolModule = path.join(root, "src/toolbox/tool.ts");
// Inside the project (git-ignored .data/), so tool files resolve zod from node_modules and are ESM.
await mkdir(path.join(root, ".data"), { recursive: true });
const dir = await mkdtemp(path.join(root, ".data", "offered-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

const tool = (name: string, tags: string[]) =>
  `import { z } from "zod";\nimport { defineTool } from ${JSON.stringify(toolModule)};\n` +
  (`export default defineTool({ name: ${JSON.stringify(name)}, description: "Says hello. Use ` +
    `when greeting.", tags: ${JSON.stringify(tags)}, input: z.object({}), run: () => "hi" });\n`);

await writeFile(path.join(dir, "greet.ts"), tool("greet", ["util"]));
await writeFile(path.join(dir, "typo.ts"), tool("typo_tool", ["utill", "admin"]));
await writeFile(path.join(dir, "bare.ts"), tool("bare_tool", []));
await writeFile(path.join(dir, "mixed.ts"), tool("mixed_tool", ["admin", "info"]));

const { toolbox } = await loadTools({ dirs: [dir], config: testConfig() });

describe("tools no chat offers", () => {
  it("finds the loaded tools whose tags match none of the chat tags", () => {
    expect(toolbox.names().sort()).toEqual(["bare_tool", "greet", "mixed_tool", "typo_tool"]);
    expect(
      unofferedTools(toolbox)
        .map((t) => t.name)
        .sort(),
    ).toEqual(["bare_tool", "typo_tool"]);
    // The same tools are missing from what a chat actually gets.
    const offered = toolboxFor(toolbox, { platform: "telegram", chatKind: "group" }).names().sort();
    expect(offered).toEqual(["greet", "mixed_tool"]);
  });

  it("says why, naming the tool's tags and the offered ones", () => {
    expect(CHAT_TAGS).toEqual(["info", "daily", "todo", "util", "web", "memory"]);
    expect(unofferedReason(toolbox.get("typo_tool")!)).toBe(
      "none of its tags (utill, admin) is offered in chats: info, daily, todo, util, web, memory",
    );
    expect(unofferedReason(toolbox.get("bare_tool")!)).toBe(
      "it has no tags; chats offer tools tagged: info, daily, todo, util, web, memory",
    );
  });

  it("logs one warning per such tool at start-up", () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "info",
      pretty: false,
      destination: new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) }),
    });
    const warned = warnUnofferedTools(toolbox, log);
    expect(warned.map((t) => t.name).sort()).toEqual(["bare_tool", "typo_tool"]);
    const records = lines.map(
      (l) => JSON.parse(l) as { level: number; tool: string; tags: string[]; file: string; msg: string },
    );
    expect(records).toHaveLength(2);
    const typo = records.find((r) => r.tool === "typo_tool")!;
    expect(typo).toMatchObject({
      level: 40,
      tags: ["utill", "admin"],
      file: path.relative(process.cwd(), path.join(dir, "typo.ts")),
    });
    expect(typo.msg).toBe(
      "tool typo_tool is loaded but never offered to the model: none of its tags (utill, admin) is offered in chats: info, daily, todo, util, web, memory",
    );
  });

  it("npm run tools lists them with the reason, as text and as JSON", async () => {
    const env = { ...process.env, LOG_LEVEL: "silent" };
    const json = JSON.parse((await runCli(toolsMain, ["--json", "--dir", dir], env)).stdout) as {
      tools: { name: string }[];
      notOffered: { name: string; file: string; reason: string }[];
    };
    expect(json.tools.map((t) => t.name).sort()).toEqual(["bare_tool", "greet", "mixed_tool", "typo_tool"]);
    expect(json.notOffered).toEqual([
      {
        name: "bare_tool",
        file: path.relative(root, path.join(dir, "bare.ts")),
        reason: "it has no tags; chats offer tools tagged: info, daily, todo, util, web, memory",
      },
      {
        name: "typo_tool",
        file: path.relative(root, path.join(dir, "typo.ts")),
        reason: "none of its tags (utill, admin) is offered in chats: info, daily, todo, util, web, memory",
      },
    ]);
    const text = (await runCli(toolsMain, ["--dir", dir], env)).stdout;
    expect(text).toContain("2 loaded but never offered to the model:");
    expect(text).toMatch(
      / {2}typo_tool +none of its tags \(utill, admin\) is offered in chats: info, daily, todo, util, web, memory \(\.data\/offered-\w+\/typo\.ts\)/,
    );
  }, 30_000);

  it("finds none among the shipped tools", async () => {
    const shipped = await loadTools({ config: testConfig({ CWA_API_KEY: "CWA-TEST-KEY-1234" }) });
    expect(shipped.toolbox.names()).toEqual(expect.arrayContaining(SHIPPED_TOOLS));
    expect(unofferedTools(shipped.toolbox)).toEqual([]);
  });
});
