/* global process, console, performance */
/**
 * `npm test`: the type check and the lint side by side (each prints its output once it is done, so
 * the two never interleave), then vitest — one Redis and the Redis Cluster project, see
 * `vitest.config.ts`, whose reporter ends with the slowest files and the summed durations — and at
 * the very end each step's wall time and the whole run's.
 *
 * Usage: node scripts/test.mjs [vitest arguments…]
 * Exit code: 0 when all passed; else the type check's or the lint's (vitest is not started then,
 * as with `npm run typecheck && npm run lint && vitest run`), or vitest's.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const started = performance.now();
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Runs `command` with `args` in the checkout; with `capture`, its output is kept and printed when
 * it ends. Resolves with the exit code and the wall time in ms.
 */
function run(command, args, capture) {
  const begun = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
      // `npm` itself is a batch file on Windows: only through a shell there (see npmRun).
      shell: command === "npm",
    });
    let output = "";
    if (capture) {
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
    }
    child.on("error", (error) => {
      output += `${error.message}\n`;
    });
    child.on("close", (code, signal) => {
      if (output) process.stdout.write(output);
      resolve({ code: code ?? (signal ? 1 : 0), ms: performance.now() - begun });
    });
  });
}

/** `npm run -s <script>`, its output printed once it ends: with npm's own CLI when npm started this script, else `npm`. */
function npmRun(script) {
  const npm = process.env.npm_execpath;
  return npm?.endsWith(".js")
    ? run(process.execPath, [npm, "run", "-s", script], true)
    : run("npm", ["run", "-s", script], true);
}

const [typecheck, lint] = await Promise.all([npmRun("typecheck"), npmRun("lint")]);
const checks = `typecheck ${seconds(typecheck.ms)} and lint ${seconds(lint.ms)} side by side`;
if (typecheck.code !== 0 || lint.code !== 0) {
  const failed = [typecheck.code !== 0 && "typecheck", lint.code !== 0 && "lint"].filter(Boolean).join(" and ");
  console.log(
    `\nnpm test: ${failed} failed (${checks}); vitest not started; ${seconds(performance.now() - started)} wall`,
  );
  process.exit(typecheck.code || lint.code);
}
const vitestCli = path.join(root, "node_modules", "vitest", "vitest.mjs");
const vitest = await run(process.execPath, [vitestCli, "run", ...process.argv.slice(2)], false);
console.log(
  `\nnpm test: ${checks}, then vitest ${seconds(vitest.ms)}; ${seconds(performance.now() - started)} wall` +
    (vitest.code === 0 ? "" : " (vitest failed)"),
);
process.exit(vitest.code);
