/**
 * `npm run tools` options: `--help` prints the usage, an unknown option or argument prints what is
 * wrong and the usage (exit 2, no stack trace), `--json` prints JSON alone on stdout (the program
 * itself; the other cases run its `toolsMain` in this process).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { toolsMain } from "../../src/cli/tools.js";
import { runCli, type CliRun } from "../helpers/cli.js";
import { nodeArgs } from "../helpers/compiled.js";

const exec = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const cli = path.join(root, "src", "cli", "tools.ts");

/** `npm run tools -- …args`, in this process. */
function tools(args: string[]): Promise<CliRun> {
  return runCli(toolsMain, args, { ...process.env, LOG_LEVEL: "info" });
}

/** `npm run tools -- …args` as its own process. */
async function toolsProcess(args: string[]): Promise<CliRun> {
  try {
    const { stdout, stderr } = await exec(process.execPath, nodeArgs(cli, ...args), {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: "info" },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("npm run tools", () => {
  it("--help prints the usage", async () => {
    const out = await tools(["--help"]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^usage: npm run tools/);
    expect(out.stdout).toContain("--json");
    expect(out.stderr).toBe("");
  }, 30_000);

  it("an unknown option or an argument prints what is wrong and the usage, without a stack", async () => {
    for (const args of [["--bogus"], ["extra"], ["--dir"]]) {
      const out = await tools(args);
      expect(out.code).toBe(2);
      expect(out.stdout).toBe("");
      expect(out.stderr).toContain("usage: npm run tools");
      expect(out.stderr).not.toMatch(/\n\s+at /);
    }
  }, 60_000);

  it("--json prints JSON alone on stdout", async () => {
    const out = await toolsProcess(["--json"]);
    expect(out.code).toBe(0);
    const listing = JSON.parse(out.stdout) as { tools: { name: string }[] };
    expect(listing.tools.map((t) => t.name)).toContain("calculate");
  }, 30_000);
});
