/* global process, console, performance */
/**
 * `npm test`: the type check, the lint and vitest — one Redis and the Redis Cluster project, see
 * `vitest.config.ts`, whose reporter ends with the slowest files and the summed durations — all
 * three at once, and at the very end each step's wall time and the whole run's. Most of vitest's
 * time is spent waiting (fakes, timers, child processes), so the checks' CPU fits beside it and
 * the run takes about as long as vitest alone instead of the checks' time plus vitest's (the checks
 * run at a lower priority, see `npmRun`).
 *
 * The type check's and the lint's output is printed once vitest is done (so it never interleaves
 * with vitest's); a check that fails says so at once, with its output, and vitest runs on (Ctrl-C
 * stops it; stopping it from here would leave the redis-servers of its running files behind).
 *
 * Usage: node scripts/test.mjs [vitest arguments…]
 * Exit code: 0 when all passed; else the type check's or the lint's, or vitest's.
 */
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const started = performance.now();
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Runs `command` with `args` in the checkout; with `capture`, its output is kept (not printed).
 * Returns the child and a promise of its exit code, wall time in ms and captured output.
 */
function start(command, args, capture) {
  const begun = performance.now();
  const child = spawn(command, args, {
    cwd: root,
    stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
    // `npm` itself is a batch file on Windows: only through a shell there (see npmRun). Elsewhere
    // without one, so the priority npmRun sets is npm's own before it starts the check.
    shell: command === "npm" && process.platform === "win32",
  });
  let output = "";
  if (capture) {
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
  }
  const done = new Promise((resolve) => {
    child.on("error", (error) => {
      output += `${error.message}\n`;
    });
    child.on("close", (code, signal) => {
      resolve({ code: code ?? (signal ? 1 : 0), ms: performance.now() - begun, output });
    });
  });
  return { child, done };
}

/**
 * `npm run -s <script>`, its output kept: with npm's own CLI when npm started this script, else
 * `npm`. Run at a lower priority than vitest (10 steps nicer; the tools it starts inherit it), so
 * the checks take the CPU the test files leave, instead of slowing their start-up, where each test
 * worker loads the bot's modules at once.
 */
function npmRun(script) {
  const npm = process.env.npm_execpath;
  const run = npm?.endsWith(".js")
    ? start(process.execPath, [npm, "run", "-s", script], true)
    : start("npm", ["run", "-s", script], true);
  try {
    if (run.child.pid !== undefined) os.setPriority(run.child.pid, Math.min(19, os.getPriority(run.child.pid) + 10));
  } catch {
    // Not allowed here (some systems): the checks run at vitest's priority, as they did.
  }
  return run;
}

const typecheckRun = npmRun("typecheck");
const lintRun = npmRun("lint");
const vitestCli = path.join(root, "node_modules", "vitest", "vitest.mjs");
const vitestRun = start(process.execPath, [vitestCli, "run", ...process.argv.slice(2)], false);

/** Prints a failed check's output as soon as it ends; a passed check's is printed at the end. */
const early = new Set();
for (const [name, run] of [
  ["typecheck", typecheckRun],
  ["lint", lintRun],
]) {
  void run.done.then((r) => {
    if (r.code === 0) return;
    early.add(r);
    process.stdout.write(`\nnpm test: ${name} failed (vitest runs on; Ctrl-C stops it):\n${r.output}\n`);
  });
}
const [typecheck, lint, vitest] = await Promise.all([typecheckRun.done, lintRun.done, vitestRun.done]);
for (const r of [typecheck, lint]) if (r.output && !early.has(r)) process.stdout.write(r.output);
const checks = `typecheck ${seconds(typecheck.ms)} and lint ${seconds(lint.ms)}`;
if (typecheck.code !== 0 || lint.code !== 0) {
  const failed = [typecheck.code !== 0 && "typecheck", lint.code !== 0 && "lint"].filter(Boolean).join(" and ");
  console.log(
    `\nnpm test: ${failed} failed (${checks}); vitest ${seconds(vitest.ms)}${vitest.code === 0 ? "" : " (failed)"}; ` +
      `${seconds(performance.now() - started)} wall`,
  );
  process.exit(typecheck.code || lint.code);
}
console.log(
  `\nnpm test: ${checks} beside vitest ${seconds(vitest.ms)}; ${seconds(performance.now() - started)} wall` +
    (vitest.code === 0 ? "" : " (vitest failed)"),
);
process.exit(vitest.code);
