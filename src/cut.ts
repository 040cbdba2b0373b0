/**
 * Cutting a text short for a line (a tool's status line, a preview in a trace), marked with one
 * `…`. The cut is idempotent: cutting a cut text again (a status line built from an activity that
 * was cut already, a preview of a preview) adds no second mark, so nobody sees `999…9……`.
 */

/** The mark of a cut text. */
export const ELLIPSIS = "…";

/** A cut mark at the end of a text, with the spaces around it: `…`, `...`, `… …`. */
const TRAILING_MARKS = /(?:\s*(?:…|\.\.\.))+\s*$/u;

/**
 * `text` ending with exactly one {@link ELLIPSIS}: the ellipses (`…` or `...`) and spaces it
 * already ends with are replaced by one, so a text that was cut before is not marked twice.
 * @example withEllipsis("計算：999…") === "計算：999…"; withEllipsis("查詢天氣") === "查詢天氣…"
 */
export function withEllipsis(text: string): string {
  return `${text.replace(TRAILING_MARKS, "").trimEnd()}${ELLIPSIS}`;
}

/**
 * `text` at most `max` code points long: a longer one is cut to its first `max - 1` code points
 * (spaces and cut marks at the cut dropped) and {@link withEllipsis}. A text that fits is returned
 * as it is (a text cut before, with its one `…`, fits). Never splits a surrogate pair.
 * @param max - most code points of the result, at least 1.
 */
export function cutChars(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  return withEllipsis(chars.slice(0, Math.max(0, max - 1)).join(""));
}

/**
 * {@link cutChars} counted in UTF-16 code units (what `string.length` counts), for limits given in
 * them: at most `max` units, never ending on the high half of a surrogate pair.
 * @param max - most UTF-16 units of the result, at least 1.
 */
export function cutUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  return withEllipsis(sliceUnits(text, Math.max(0, max - 1)));
}

/**
 * A file name cut to at most `max` UTF-16 code units, keeping its extension (a dot and 1–10
 * letters or digits: what tells the worker how to read a file that comes without a type, e.g.
 * a LINE file) and never splitting a surrogate pair: the part before the extension is cut
 * ({@link sliceUnits}). A name that fits is returned as it is.
 * @example cutFileName(`${"a".repeat(254)}😀.txt`, 255) === `${"a".repeat(251)}.txt`
 * @param max - most UTF-16 units of the result.
 */
export function cutFileName(name: string, max: number): string {
  if (name.length <= max) return name;
  const ext = /\.[A-Za-z0-9]{1,10}$/.exec(name)?.[0] ?? "";
  if (ext.length >= max) return sliceUnits(name, max);
  return `${sliceUnits(name.slice(0, name.length - ext.length), max - ext.length)}${ext}`;
}

/**
 * The first at most `max` UTF-16 code units of `text` (what `text.slice(0, max)` keeps), one less
 * when the cut would fall between the halves of a surrogate pair: the result never ends on a lone
 * high surrogate (`"a😀".slice(0, 2)` is `"a\ud83d"`, which Redis' Lua `cjson` and the Messages API
 * refuse once written as JSON). No mark is added; see {@link cutUnits} for a cut marked with `…`.
 * @param max - most UTF-16 units of the result.
 */
export function sliceUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return "";
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
