/**
 * Compiled spec validators kept across test processes. Compiling a validator of a Discord message
 * body costs 0.3-1 s on this machine (more while the suite runs), and every test file runs in a
 * process of its own, so the fakes' spec checks would compile the same validators in each of them.
 * The first process that needs a validator compiles it with Ajv and writes Ajv's standalone code
 * for it (https://ajv.js.org/standalone.html) to `node_modules/.cache/fake-specs/`; the others load
 * that file, which takes milliseconds.
 *
 * A file's name carries a fingerprint of everything the code depends on (the spec file, the
 * checker's source, Ajv's version), so a change to any of them compiles afresh. Files are written
 * under a temporary name and renamed, so a process never reads half a file; when the folder cannot
 * be written, validators are compiled in memory as if there were no cache.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Ajv, ValidateFunction } from "ajv";
import standaloneModule from "ajv/dist/standalone/index.js";

// ajv/dist/standalone is CommonJS: under NodeNext its default import is the module object.
const standaloneCode = ((standaloneModule as unknown as { default?: unknown }).default ??
  standaloneModule) as unknown as (ajv: Ajv, validate: ValidateFunction) => string;
const require = createRequire(import.meta.url);
const CACHE_DIR = new URL("../../node_modules/.cache/fake-specs/", import.meta.url);
const AJV_VERSION = (JSON.parse(readFileSync(require.resolve("ajv/package.json"), "utf8")) as { version: string })
  .version;

/**
 * A fingerprint of files (URLs) and Ajv's version, to name cached validators with.
 * @param files - what the generated code depends on: the spec file and the checker's own source.
 */
export function specFingerprint(files: URL[]): string {
  const hash = createHash("sha256").update(AJV_VERSION);
  for (const file of files) hash.update(readFileSync(file));
  return hash.digest("hex").slice(0, 16);
}

/**
 * The validator named `name`: loaded from the cache when a process compiled it before, else
 * compiled with `compile()` (on an Ajv created with `code: { source: true }`) and cached.
 *
 * @param fingerprint - from {@link specFingerprint}.
 * @param name - unique per validator of that fingerprint (a method, a route).
 * @param compile - compiles it; returns the Ajv instance (for its standalone code) and the function.
 */
export function cachedValidator(
  fingerprint: string,
  name: string,
  compile: () => { ajv: Ajv; validate: ValidateFunction },
): ValidateFunction {
  const file = new URL(`${fingerprint}-${name.replace(/[^A-Za-z0-9_-]+/g, "_")}.cjs`, CACHE_DIR);
  try {
    return require(file.pathname) as ValidateFunction;
  } catch {
    // Not cached yet (or unreadable): compile below.
  }
  const { ajv, validate } = compile();
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    const temporary = new URL(`${file.pathname.split("/").at(-1)}.${process.pid}.tmp`, CACHE_DIR);
    writeFileSync(temporary, standaloneCode(ajv, validate));
    renameSync(temporary, file);
  } catch {
    // A read-only checkout: this process keeps its compiled validator, the next compiles its own.
  }
  return validate;
}
