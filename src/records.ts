/**
 * Records read back from Redis, decoded in one place: JSON checked against the record's zod schema.
 * A key that is missing reads as `undefined`; a record that is not JSON or does not fit its schema
 * (written by another version, damaged by hand) is logged once and read as missing too — never a
 * crash in the middle of an answer. Every store that keeps JSON in Redis reads it through
 * {@link decodeRecord}; nothing is read with a bare `JSON.parse(…) as T`.
 *
 * What is read is well-formed ({@link wellFormedJson}): a value written before messages were made
 * well-formed, or by another writer, may hold the JSON escape of a lone UTF-16 surrogate
 * (`\ud800`), which the Messages API refuses in a request (400 "no low surrogate in string") and
 * the platforms' APIs may refuse in a message; it is read as U+FFFD.
 */
import type { z } from "zod";
import type { Logger } from "./log.js";

/**
 * Decodes `raw` (what Redis returned) with `schema`.
 *
 * @param what - names the record in the log line, e.g. `run checkpoint`.
 * @param log - where an unreadable record is reported (at warn, with the failing paths, never the value).
 * @param context - extra fields for that log line (an approval id, a conversation).
 * @returns the decoded record, or undefined when `raw` is null/undefined or cannot be decoded. Its
 *   strings are well-formed: a lone surrogate's escape in `raw` is read as U+FFFD ({@link wellFormedJson}).
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
    json = JSON.parse(wellFormedJson(raw));
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

/**
 * Whether `json` holds what may be the JSON escape of a UTF-16 surrogate (`\ud800`–`\udfff`,
 * either case; perhaps after an escaped backslash, which {@link wellFormedJson} then tells apart):
 * a search for `\u` (a few ns for a line with none; V8's regular expression for the same took
 * 30–50 times longer), and a look at the two characters after each one found.
 */
function mayHoldSurrogateEscape(json: string): boolean {
  for (let at = json.indexOf("\\u"); at !== -1; at = json.indexOf("\\u", at + 2)) {
    // Lower case by the 0x20 bit ('D' → 'd'; digits have it already).
    if ((json.charCodeAt(at + 2) | 0x20) !== 0x64) continue;
    const third = json.charCodeAt(at + 3) | 0x20;
    if (third === 0x38 || third === 0x39 || (third >= 0x61 && third <= 0x66)) return true;
  }
  return false;
}

/** Four hexadecimal digits. */
const HEX4 = /^[0-9a-fA-F]{4}$/;

/**
 * `json` (JSON text) with the escape of every lone UTF-16 surrogate (a `\ud800`–`\udbff` not
 * followed by a `\udc00`–`\udfff` escape, or such a low one not preceded by a high one) replaced by
 * `\ufffd`, so that `JSON.parse` gives well-formed strings (`String.prototype.isWellFormed`), in
 * keys as in values. `JSON.stringify` writes a lone surrogate as such an escape (a pair it writes as
 * is), and Redis hands back no lone surrogate otherwise (it stores UTF-8): what `JSON.parse` of a
 * value read from Redis returns is well-formed once this has run.
 *
 * Cheap when there is nothing to mend: one search for `\u` (what JSON.stringify writes only for
 * control characters and lone surrogates); `json` itself is returned when it holds no surrogate's
 * escape. A text that holds one is read escape by escape (a backslash in
 * JSON text always starts an escape, so `\\ud800`, an escaped backslash before `ud800`, is left
 * alone). Text that is not JSON comes back changed at most in such escapes. Never throws.
 */
export function wellFormedJson(json: string): string {
  if (!mayHoldSurrogateEscape(json)) return json;
  let out = "";
  let copied = 0;
  let at = json.indexOf("\\");
  while (at !== -1) {
    const unit = unitAt(json, at);
    if (unit === undefined) {
      at = json.indexOf("\\", at + 2);
      continue;
    }
    let end = at + 6;
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const low = unit <= 0xdbff ? unitAt(json, end) : undefined;
      if (low !== undefined && low >= 0xdc00 && low <= 0xdfff) end += 6;
      else {
        out += `${json.slice(copied, at)}\\ufffd`;
        copied = end;
      }
    }
    at = json.indexOf("\\", end);
  }
  return copied === 0 ? json : out + json.slice(copied);
}

/** The UTF-16 unit of the `\uXXXX` escape at `at` in `json`, or undefined when none starts there. */
function unitAt(json: string, at: number): number | undefined {
  if (json[at] !== "\\" || json[at + 1] !== "u") return undefined;
  const hex = json.slice(at + 2, at + 6);
  return HEX4.test(hex) ? Number.parseInt(hex, 16) : undefined;
}
