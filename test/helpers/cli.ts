/**
 * A command-line tool run in the test's own process: its `main` (e.g. `accessMain` of
 * `src/cli/access.ts`) with its arguments, an environment of the test's choosing and buffers for
 * what it writes, instead of a Node.js process per command (seconds each on a busy machine: a
 * process loads the tool's whole module graph again). What the program adds around `main` (reading
 * `.env`, the exit code) is `runAsProgram` of `src/cli/io.ts`; a test that needs the program itself
 * still starts it (`nodeArgs` in `./compiled.ts`).
 */
import type { CliIo } from "../../src/cli/io.js";

/** What a tool's run gave: its exit code, and what it wrote, as the program would have printed it. */
export interface CliRun {
  code: number;
  /** Everything written to `out`, each write ended by a line break (as `console.log` prints it). */
  stdout: string;
  /** Everything written to `err`, likewise. */
  stderr: string;
}

/**
 * Runs `main(argv, env, io)` and collects its output.
 * @throws what `main` throws (the program would print `<tool> failed: …` and exit 2).
 */
export async function runCli(
  main: (argv: string[], env: NodeJS.ProcessEnv, io: CliIo) => Promise<number>,
  argv: string[],
  env: NodeJS.ProcessEnv,
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, env, {
    out: (text) => (stdout += `${text}\n`),
    err: (text) => (stderr += `${text}\n`),
  });
  return { code, stdout, stderr };
}
