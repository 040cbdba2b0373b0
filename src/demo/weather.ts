/**
 * The demo's weather (`npm run chat -- --demo`), offline: the weather tool runs unchanged against
 * the demo server, which answers with a recorded CWA response shipped with the project
 * (`test/fixtures/cwa/`, real responses of dataset F-C0032-001 under the Government Open Data
 * License; see the README there). Where the recording is not there (the Docker image has no
 * `test/`), the demo leaves the weather tool out, as it did before.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The recorded response the demo serves, relative to the checkout's root. */
export const DEMO_FORECAST = path.join("test", "fixtures", "cwa", "F-C0032-001.2026-03-01.json");

/**
 * The recorded forecast's path: looked for above this module's folder (the checkout's `src/demo/`,
 * or a compiled copy inside the checkout), up to the file system's root.
 * @returns its absolute path, or undefined when no folder above has it.
 */
export function findDemoForecast(from = path.dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, DEMO_FORECAST);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The REST datastore answer to `?locationName=…` from a recorded document: the document with its
 * `records.location` kept to the names asked for (comma-separated, as the API takes them); all of
 * them when none is asked for; an empty list for an unknown name, as the API answers. A document
 * not in the REST shape is returned as it is (the tool then reports it cannot read it).
 */
export function forecastResponse(document: unknown, locationName: string | null): unknown {
  const records = (document as { records?: { location?: unknown } } | null)?.records;
  if (locationName === null || !records || !Array.isArray(records.location)) return document;
  const names = new Set(locationName.split(",").map((n) => n.trim()));
  const location = records.location.filter((l: { locationName?: unknown }) => names.has(String(l?.locationName)));
  return { ...(document as object), records: { ...records, location } };
}
