/**
 * What the command-line tools (`npm run access`, `npm run trace`, …) share as programs: where they
 * write, and how a tool's `main` becomes the process's entry point. A tool's `main` takes its
 * arguments, environment and {@link CliIo} and returns its exit code, so it runs the same as
 * `npm run …` (the process's stdout and stderr) and inside another program (a test's own process,
 * writing into buffers) without starting a Node.js process per command.
 */
import { realpathSync } from "node:fs";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { ConfigError, loadConfig, secretValues, type Config } from "../config.js";
import { redact, registerSecrets } from "../log.js";

/** Where a command-line tool writes: `out` for its output (stdout), `err` for problems (stderr), one line or block per call. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/** The process's stdout and stderr (`console.log` / `console.error`). */
export const processIo: CliIo = {
  out: (text) => console.log(text),
  err: (text) => console.error(text),
};

/**
 * Where a tool's logger writes (`createLogger`'s `destination`): undefined for {@link processIo}
 * (the logger's own choice, stdout, pretty on a terminal), else a stream handing each line pino
 * writes to `io.out`.
 */
export function logDestination(io: CliIo): NodeJS.WritableStream | undefined {
  if (io === processIo) return undefined;
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      io.out(String(chunk).replace(/\n$/, ""));
      done();
    },
  });
}

/**
 * True when the module at `moduleUrl` (its `import.meta.url`) is the program the process was
 * started with: `node file.js`, or `node scripts/run.mjs file.ts` (which sets `process.argv[1]` to
 * the file it runs). False when another module imported it (a test).
 */
export function isEntryPoint(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return pathToFileURL(realpathSync(entry)).href === moduleUrl;
  } catch {
    return false;
  }
}

/**
 * Runs a tool as the process's program: reads `.env` into `process.env` (`dotenv/config`, as every
 * entry point does), runs `main` with the process's arguments after the script, environment and
 * {@link processIo}, and sets `process.exitCode` to its result. A thrown error is printed as
 * `<name> failed: <message>` (secrets redacted, no stack) with exit code 2.
 *
 * @param name - the tool's name in that line, e.g. `access`.
 */
export async function runAsProgram(
  name: string,
  main: (argv: string[], env: NodeJS.ProcessEnv, io: CliIo) => Promise<number>,
): Promise<void> {
  await import("dotenv/config");
  try {
    process.exitCode = await main(process.argv.slice(2), process.env, processIo);
  } catch (error) {
    console.error(`${name} failed: ${redact(error instanceof Error ? error.message : String(error))}`);
    process.exitCode = 2;
  }
}

/**
 * Reads a command-line tool's configuration from `env` for inspecting (`loadConfig`'s `inspect`
 * purpose: no platform token required) and registers its secrets for redaction. An invalid
 * configuration is written to `io.err` and answered with undefined (the tool then exits with 2).
 *
 * @throws what `loadConfig` throws besides a `ConfigError`.
 */
export function loadCliConfig(env: NodeJS.ProcessEnv, io: CliIo): Config | undefined {
  let config: Config;
  try {
    config = loadConfig(env, { purpose: "inspect" });
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(error.message);
      return undefined;
    }
    throw error;
  }
  registerSecrets(secretValues(config));
  return config;
}
