/**
 * Records read back from Redis, decoded in one place: JSON checked against the record's zod schema.
 * A key that is missing reads as `undefined`; a record that is not JSON or does not fit its schema
 * (written by another version, damaged by hand) is logged once and read as missing too — never a
 * crash in the middle of an answer. Every store that keeps JSON in Redis reads it through
 * {@link decodeRecord}; nothing is read with a bare `JSON.parse(…) as T`.
 */
import type { z } from "zod";
import type { Logger } from "./log.js";

/**
 * Decodes `raw` (what Redis returned) with `schema`.
 *
 * @param what - names the record in the log line, e.g. `run checkpoint`.
 * @param log - where an unreadable record is reported (at warn, with the failing paths, never the value).
 * @param context - extra fields for that log line (an approval id, a conversation).
 * @returns the decoded record, or undefined when `raw` is null/undefined or cannot be decoded.
 */
export function decodeRecord<S extends z.ZodType>(
  schema: S,
  raw: string | null | undefined,
  what: string,
  log: Logger,
  context: Record<string, unknown> = {},
): z.output<S> | undefined {
  if (raw === null || raw === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    log.warn({ ...context, record: what, problem: "not JSON" }, `unreadable ${what} in Redis; treated as missing`);
    return undefined;
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  log.warn(
    {
      ...context,
      record: what,
      issues: parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`),
    },
    `unreadable ${what} in Redis; treated as missing`,
  );
  return undefined;
}
