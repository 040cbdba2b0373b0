import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { toolsMain } from "../../src/cli/tools.js";
import { loadTools, ToolRegistryError } from "../../src/toolbox/registry.js";
import { runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const toolModule = path.join(root, "src/toolbox/tool.ts");
// Inside the project (git-ignored .data/), so tool files resolve zod from node_modules and are ESM.
await mkdir(path.join(root, ".data"), { recursive: true });
const scratch = await mkdtemp(path.join(root, ".data", "registry-"));
afterAll(() => rm(scratch, { recursive: true, force: true }));
let n = 0;

/** Writes tool files into a fresh folder; returns its path. */
async function folder(files: Record<string, string>): Promise<string> {
  const dir = path.join(scratch, `case${++n}`);
  for (const [name, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(
      path.join(dir, name),
      `import { z } from "zod";\nimport { defineTool, ToolError } from ${JSON.stringify(toolModule)};\nvoid z; void ToolError;\n${body}\n`,
    );
  }
  return dir;
}

const tool = (name: string, extra = "") =>
  `export default defineTool({ name: ${JSON.stringify(name)}, description: "Says hello. Use ` +
  `when greeting.", tags: ["util"], input: z.object({}), run: () => "hi", ${extra} });`;

async function loadError(dir: string): Promise<ToolRegistryError> {
  const error = await loadTools({ dirs: [dir], config: testConfig() }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ToolRegistryError);
  return error as ToolRegistryError;
}

describe("loadTools", () => {
  it("registers a tool from a new file with no other edit, including files in subfolders", async () => {
    const dir = await folder({
      "hello.ts": tool("hello"),
      "nested/bye.ts": tool("bye"),
      "helper.ts": "export const x = 1;",
    });
    const { toolbox, skipped } = await loadTools({ dirs: [dir], config: testConfig() });
    expect(toolbox.names().sort()).toEqual(["bye", "hello"]);
    expect(toolbox.get("hello")!.file).toBe(path.join(dir, "hello.ts"));
    expect(skipped).toEqual([]);
    // loading the same folder again yields the same tools (modules are cached, registration is not lost)
    expect((await loadTools({ dirs: [dir], config: testConfig() })).toolbox.names().sort()).toEqual(["bye", "hello"]);
  });

  it("takes a file's default export made by defineTool; other exports and files are helpers", async () => {
    const dir = await folder({
      "hello.ts":
        `export const greeting = "hi";\nconst hello = defineTool({ name: "hello", description: ` +
        `"Says hello. Use when greeting.", tags: ["util"], input: z.object({}), run: () => ` +
        `greeting });\nexport default hello;\nexport { hello };`,
      "client/api.ts": `export default class ApiClient { name = "not a tool"; run() { return 1; } }\nexport const description = "helpers";`,
      "plain.ts": `export default { name: "plain_object", description: "Looks like a tool.", tags: [], input: z.object({}), run: () => "x" };`,
    });
    const { toolbox } = await loadTools({ dirs: [dir], config: testConfig() });
    expect(toolbox.names()).toEqual(["hello"]);
    expect(toolbox.get("hello")!.file).toBe(path.join(dir, "hello.ts"));
  });

  it("stops on a tool exported under another name than default, naming the file", async () => {
    const dir = await folder({
      "named.ts": `export const rollDice = defineTool({ name: "roll_dice", description: "Rolls.", tags: ["util"], input: z.object({}), run: () => "4" });`,
    });
    const error = await loadError(dir);
    expect(error.problems).toEqual([
      expect.stringMatching(
        /named\.ts: tool "roll_dice" is exported as `rollDice`; a tool file exports its one tool as default/,
      ),
    ]);
  });

  it("stops on a duplicate name, naming the tool and both files", async () => {
    const dir = await folder({ "a.ts": tool("same_name"), "b.ts": tool("same_name") });
    const error = await loadError(dir);
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toMatch(
      /tool name "same_name" is defined twice: in .*case\d+\/a\.ts and in .*case\d+\/b\.ts/,
    );
  });

  it.each([
    [
      "no name",
      `export default defineTool({ description: "d", tags: [], input: z.object({}), run: () => "x" } as never);`,
      /nameless\.ts: a tool has no name/,
    ],
    ["empty name", tool(""), /nameless\.ts: a tool has no name/],
    [
      "a name the API rejects",
      tool("get weather!"),
      /nameless\.ts: tool name "get weather!" is not allowed by the Messages API/,
    ],
    ["a 65-character name", tool("x".repeat(65)), /is not allowed by the Messages API/],
    [
      "an empty description",
      `export default defineTool({ name: "t", description: "  ", tags: [], input: z.object({}), run: () => "x" });`,
      /nameless\.ts: tool "t" has an empty description/,
    ],
    [
      "a schema that is not a zod object",
      `export default defineTool({ name: "t", description: "d", tags: [], input: z.string() as never, run: () => "x" });`,
      /nameless\.ts: tool "t" has an input schema that is not a zod object/,
    ],
    [
      "a plain object schema",
      `export default defineTool({ name: "t", description: "d", tags: [], input: { type: "object" } as never, run: () => "x" });`,
      /not a zod object/,
    ],
    [
      "a title without an English text",
      tool("t", `title: { "zh-TW": "擲骰子" } as never,`),
      /nameless\.ts: tool "t"'s title needs a text in every locale \(missing: en\)/,
    ],
    [
      "a summary over 140 characters",
      tool("t", `summary: { "zh-TW": "擲".repeat(141), en: "Rolls." },`),
      /nameless\.ts: tool "t"'s summary is longer than 140 characters in zh-TW/,
    ],
  ])("stops on %s, naming the file", async (_label, body, pattern) => {
    const error = await loadError(await folder({ "nameless.ts": body }));
    expect(error.message).toMatch(pattern);
  });

  it("reports every problem at once, and a module that fails to import", async () => {
    const dir = await folder({
      "a.ts": tool("bad name"),
      "b.ts": `throw new Error("boom at import");`,
      "c.ts": tool("fine"),
    });
    const error = await loadError(dir);
    expect(error.problems).toHaveLength(2);
    expect(error.message).toMatch(/a\.ts: tool name "bad name"/);
    expect(error.message).toMatch(/b\.ts: failed to load: boom at import/);
  });

  it("skips a tool whose setup throws, with one warning, and keeps the others", async () => {
    const dir = await folder({
      "keyed.ts": tool("keyed", `setup: () => { throw new Error("CWA_API_KEY is not set"); },`),
      "plain.ts": tool("plain"),
    });
    const warnings: unknown[] = [];
    const log = { warn: (obj: unknown) => warnings.push(obj) } as never;
    const { toolbox, skipped } = await loadTools({ dirs: [dir], config: testConfig(), log });
    expect(toolbox.names()).toEqual(["plain"]);
    expect(skipped).toEqual([
      { name: "keyed", file: expect.stringMatching(/keyed\.ts$/), reason: "CWA_API_KEY is not set" },
    ]);
    expect(warnings).toHaveLength(1);
  });

  it("reports a missing folder", async () => {
    const error = await loadError(path.join(scratch, "does-not-exist"));
    expect(error.message).toMatch(/does-not-exist: cannot read the tools folder \(ENOENT\)/);
  });
});

describe("npm run tools (in this process)", () => {
  const cli = (...args: string[]) => runCli(toolsMain, args, { ...process.env, CWA_API_KEY: "" });

  it("lists a folder's tools as JSON", async () => {
    const dir = await folder({ "hello.ts": tool("hello", `dangerous: true,`) });
    const { stdout } = await cli("--json", "--dir", dir);
    const listing = JSON.parse(stdout);
    expect(listing.tools).toEqual([
      {
        name: "hello",
        tags: ["util"],
        dangerous: true,
        description: "Says hello. Use when greeting.",
        file: expect.stringMatching(/hello\.ts$/),
      },
    ]);
    expect(listing.skipped).toEqual([]);
  });

  it("exits non-zero with the registry's error on a duplicate", async () => {
    const dir = await folder({ "a.ts": tool("twice"), "b.ts": tool("twice") });
    const error = await cli("--dir", dir);
    expect(error.code).toBe(1);
    expect(error.stderr).toMatch(/tool name "twice" is defined twice: in .*a\.ts and in .*b\.ts/);
  });
});
