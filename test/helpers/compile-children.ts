/**
 * Vitest global setup (`globalSetup` in `vitest.config.ts`): compiles the checkout to JavaScript
 * once per run for the child processes tests start (see `nodeArgs` in `./compiled.ts`). Through
 * tsx every child transpiles and resolves the TypeScript tree again at start-up, seconds each on a
 * busy 2-core machine; here esbuild (the transform tsx itself uses, file by file, no bundling)
 * compiles `src/`, `tools/`, `adapters/` and `test/` (test files themselves left out) in about a
 * second.
 *
 * The output sits in a fresh folder under `.data/` of the checkout, so its imports of packages
 * resolve to the checkout's `node_modules` and its nearest `package.json` is the checkout's
 * (`"type": "module"`, and the project root that `src/mcp/config.ts` looks for).
 */
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { TestProject } from "vitest/node";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The folders compiled for children. */
const COMPILED_DIRS = ["src", "tools", "adapters", "test"];

async function typescriptFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") && !e.name.endsWith(".test.ts"))
    .map((e) => path.join(e.parentPath, e.name));
}

/** The compiled folder and how many projects use it, shared by every project's setup in this vitest process. */
interface Compiled {
  out: Promise<string>;
  users: number;
}
const shared = globalThis as { botChildrenCompiled?: Compiled };

async function compile(): Promise<string> {
  await mkdir(path.join(ROOT, ".data"), { recursive: true });
  const out = await mkdtemp(path.join(ROOT, ".data", "children-"));
  const entryPoints = (await Promise.all(COMPILED_DIRS.map((d) => typescriptFiles(path.join(ROOT, d))))).flat();
  await build({
    entryPoints,
    outdir: out,
    outbase: ROOT,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "inline",
    logLevel: "error",
  });
  return out;
}

/**
 * Compiles the checkout under `.data/children-*` (ESM for Node 20, inline source maps so stack
 * traces name the `.ts` lines) — once per vitest process: the setup runs for each project (the
 * root, `redis`, `cluster`), and they share the folder — provides it as `compiledRoot`, and
 * returns the teardown that removes it once the last project is done.
 * @throws when esbuild cannot transform a file (a syntax error, which typecheck reports too).
 */
export default async function compileForChildren(project: TestProject): Promise<() => Promise<void>> {
  const compiled = (shared.botChildrenCompiled ??= { out: compile(), users: 0 });
  compiled.users += 1;
  const out = await compiled.out;
  project.provide("compiledRoot", out);
  return async () => {
    compiled.users -= 1;
    if (compiled.users > 0) return;
    shared.botChildrenCompiled = undefined;
    await rm(out, { recursive: true, force: true });
  };
}
