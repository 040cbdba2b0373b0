import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { SHIPPED_TOOLS } from "../tools/load.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
await mkdir(path.join(root, ".data"), { recursive: true });
const out = await mkdtemp(path.join(root, ".data", "build-"));
afterAll(() => rm(out, { recursive: true, force: true }));

it("the compiled build loads every tool from dist/tools, as the Docker image runs it", async () => {
  await run(path.join(root, "node_modules/.bin/tsc"), ["-p", path.join(root, "tsconfig.build.json"), "--outDir", out], { cwd: root });
  const { stdout } = await run(process.execPath, [path.join(out, "src/cli/tools.js"), "--json"], {
    cwd: root,
    env: { ...process.env, CWA_API_KEY: "CWA-BUILD-TEST-KEY" },
  });
  const listing = JSON.parse(stdout) as { tools: { name: string; file: string }[]; skipped: unknown[] };
  expect(listing.tools.map((t) => t.name)).toEqual(expect.arrayContaining(SHIPPED_TOOLS));
  expect(listing.tools.every((t) => t.file.endsWith(".js"))).toBe(true);
  expect(listing.skipped).toEqual([]);
}, 120_000);
