/* global process, console */
/**
 * Runs one of the project's entry points (`npm start`, `npm run chat`, `npm run tools`,
 * `npm run trace`): from its TypeScript source with tsx in a development checkout, or from the
 * compiled JavaScript in `dist/` where the sources or tsx are not there (the Docker runtime image:
 * `dist/` and production dependencies only). In this same process, with the same arguments and
 * signals, so Ctrl-C reaches the entry point directly.
 *
 * Usage: node scripts/run.mjs src/cli/tools.ts [arguments…]
 * Exits 2 with what to do when neither form can run.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const [entry, ...args] = process.argv.slice(2);
if (!entry || !entry.endsWith(".ts")) {
  console.error("usage: node scripts/run.mjs <src/….ts> [arguments…]");
  process.exit(2);
}
const source = path.join(root, entry);
const compiled = path.join(root, "dist", entry.replace(/\.ts$/, ".js"));

let tsx;
if (existsSync(source)) {
  try {
    tsx = await import("tsx/esm/api");
  } catch {
    tsx = undefined; // production dependencies only: run the build
  }
}
const file = tsx ? source : compiled;
if (!tsx && !existsSync(compiled)) {
  console.error(
    `${entry} cannot run: tsx is not installed (npm ci installs it) and ${path.relative(process.cwd(), compiled)} does not exist (npm run build makes it).`,
  );
  process.exit(2);
}
// The entry point reads its own arguments from process.argv.slice(2), as if started directly.
process.argv = [process.argv[0], file, ...args];
if (tsx) tsx.register();
await import(pathToFileURL(file).href);
