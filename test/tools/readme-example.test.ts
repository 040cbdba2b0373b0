/**
 * "Adding a tool is one file": the `roll_dice` example of docs/tools.md, taken from that page itself (so
 * the two cannot drift), saved exactly as printed into a copy of the project's `tools/` folder —
 * what a newcomer does — loads beside the shipped tools, is listed by `npm run tools`, and can be
 * called. The copy gets the example whether or not `tools/` already holds it (saving overwrites), so
 * a newcomer who saved it into the real `tools/` keeps this test, and `npm test`, green.
 */
import { readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { toolsMain, type ToolListing } from "../../src/cli/tools.js";
import { formatToolList } from "../../src/commands/tools-listing.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { toolboxFor } from "../../src/toolbox/select.js";
import { runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { REPO_ROOT, SHIPPED_TOOLS, TOOLS_DIR } from "./load.js";

/** The code block docs/tools.md introduces with "save it as `tools/<file>`". */
function readmeExample(): { file: string; code: string } {
  const readme = readFileSync(path.join(REPO_ROOT, "docs", "tools.md"), "utf8");
  const match = /save it as `tools\/([\w-]+\.ts)`:\s*\n+```ts\n([\s\S]*?)```/.exec(readme);
  if (!match) throw new Error("docs/tools.md has no tool example introduced by “save it as `tools/<name>.ts`:”");
  return { file: match[1]!, code: match[2]! };
}

// A copy of the project's layout inside the git-ignored .data/: <tmp>/tools, a copy of tools/ with
// the example saved into it, beside a link <tmp>/src → src, so the tools' own `../src/…` imports work unchanged.
await mkdir(path.join(REPO_ROOT, ".data"), { recursive: true });
const project = await mkdtemp(path.join(REPO_ROOT, ".data", "readme-tool-"));
const toolsDir = path.join(project, "tools");
await cp(TOOLS_DIR, toolsDir, { recursive: true });
await symlink(path.join(REPO_ROOT, "src"), path.join(project, "src"), "dir");
const example = readmeExample();
await writeFile(path.join(toolsDir, example.file), example.code);
afterAll(() => rm(project, { recursive: true, force: true }));

describe("the tool example of docs/tools.md", () => {
  it("is the roll_dice tool saved as tools/roll_dice.ts", () => {
    expect(example.file).toBe("roll_dice.ts");
    expect(example.code).toContain('name: "roll_dice"');
  });

  it("saved into tools/, loads beside the shipped tools, is offered in chats, and can be called", async () => {
    const { toolbox, skipped } = await loadTools({
      config: testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }),
      dirs: [toolsDir],
    });
    expect(skipped).toEqual([]);
    expect(toolbox.names()).toEqual(expect.arrayContaining([...SHIPPED_TOOLS, "roll_dice"]));
    expect(toolboxFor(toolbox, { platform: "telegram", chatKind: "dm" }).names()).toContain("roll_dice");

    const rolled = await toolbox.execute("roll_dice", { count: 3, sides: 6 }, testContext());
    expect(rolled.ok).toBe(true);
    const [sum, ...rolls] = /^(\d) \+ (\d) \+ (\d) = (\d+)$/.exec(rolled.content)!.slice(1).map(Number).reverse();
    expect(rolls.every((r) => r >= 1 && r <= 6)).toBe(true);
    expect(sum).toBe(rolls.reduce((a, b) => a + b, 0));

    expect(await toolbox.execute("roll_dice", {}, testContext())).toMatchObject({
      ok: true,
      content: expect.stringMatching(/^[1-6] = [1-6]$/),
    });
    expect(await toolbox.execute("roll_dice", { sides: 13 }, testContext())).toMatchObject({
      ok: false,
      content: "13-sided dice are not allowed here; ask for another size.",
    });
    const invalid = await toolbox.execute("roll_dice", { count: 0 }, testContext());
    expect(invalid.ok).toBe(false);
    expect(invalid.content).toContain("count");
  });

  it("is listed by npm run tools, and by /tools with its title and summary", async () => {
    const env = { ...process.env, LOG_LEVEL: "silent", CWA_API_KEY: "CWA-TEST-KEY-0123456789" };
    const { stdout } = await runCli(toolsMain, ["--json", "--dir", toolsDir], env);
    const listing = JSON.parse(stdout) as ToolListing;
    expect(listing.tools.map((t) => t.name).sort()).toEqual(expect.arrayContaining([...SHIPPED_TOOLS, "roll_dice"]));
    expect(listing.tools.find((t) => t.name === "roll_dice")).toEqual({
      name: "roll_dice",
      tags: ["util"],
      dangerous: false,
      description: "Roll dice when the user asks for a dice roll, e.g. 'roll 2d6'. Not for other random choices.",
      file: path.relative(REPO_ROOT, path.join(toolsDir, "roll_dice.ts")),
      title: { "zh-TW": "擲骰子", en: "Roll dice" },
      summary: { "zh-TW": "擲一顆或幾顆骰子，例如 2d6。", en: "Rolls one or more dice, e.g. 2d6." },
    });
    expect(listing.skipped).toEqual([]);
    expect(listing.notOffered).toEqual([]);

    const { toolbox } = await loadTools({ config: testConfig(), dirs: [toolsDir] });
    expect(formatToolList(toolbox, "zh-TW", "util")).toContain("- `roll_dice` 擲骰子 — 擲一顆或幾顆骰子，例如 2d6。");
  }, 30_000);
});
