/**
 * Child processes from compiled JavaScript: {@link nodeArgs} points a child at the checkout's
 * JavaScript compiled once per run by the global setup (`./compile-children.ts`), instead of
 * transpiling the TypeScript tree again in every child with tsx.
 */
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** The folder holding the checkout's compiled JavaScript, in the checkout's layout (`./compile-children.ts`). */
    compiledRoot: string;
  }
}

/** The checkout's root folder. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Node's arguments that run `file` (a `.ts` file of the checkout: relative to its root, or
 * absolute) with `args`: its compiled JavaScript when the global setup provided it, else the
 * source through tsx (its loader by path, so any `cwd` works). For `spawn(process.execPath, nodeArgs(…))` and
 * `execFile(process.execPath, nodeArgs(…))`.
 */
export function nodeArgs(file: string, ...args: string[]): string[] {
  const relative = path.relative(ROOT, path.resolve(ROOT, file));
  const compiledRoot = inject("compiledRoot");
  if (compiledRoot) return [path.join(compiledRoot, relative.replace(/\.ts$/, ".js")), ...args];
  return [
    "--import",
    pathToFileURL(path.join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href,
    path.join(ROOT, relative),
    ...args,
  ];
}

/**
 * The environment of a bot process a test starts from scratch: `PATH`, `DOTENV_CONFIG_PATH` (the
 * test run's `.env` with no variables, set in `vitest.config.ts`, so the child's
 * `import "dotenv/config"` never reads the checkout's own `.env`), then `env`, which may point
 * `DOTENV_CONFIG_PATH` elsewhere.
 */
export function childEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "", DOTENV_CONFIG_PATH: process.env.DOTENV_CONFIG_PATH, ...env };
}
