/**
 * Text chosen by other people (display names, file names) made safe to show where it is not
 * expected to carry layout: a terminal, a log line, a prompt, a listing. A name with a line break
 * can forge a second row of a listing; ESC and BEL drive a terminal; bidirectional controls
 * (U+202E RIGHT-TO-LEFT OVERRIDE…) show `invoice‮fdp.exe` as `invoiceexe.pdf`; zero-width
 * characters make two names look alike.
 *
 * Sources: Unicode categories Cc (controls), Cf (format: bidi controls, zero-width characters),
 * Zl/Zp (line and paragraph separators), https://www.unicode.org/reports/tr44/#General_Category_Values;
 * Default_Ignorable_Code_Point, https://www.unicode.org/reports/tr44/#Default_Ignorable_Code_Point;
 * bidi controls, https://www.unicode.org/reports/tr9/#Explicit_Directional_Formatting_Characters.
 */

/**
 * Characters that show nothing and are removed: every format character (`\p{Cf}`: bidi embeddings,
 * overrides and isolates, LRM/RLM/ALM, zero-width space, joiners, word joiner, BOM, soft hyphen,
 * invisible operators, tag characters) and the other default-ignorable characters that are not
 * format characters (combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian
 * variation selectors, the variation selector supplement). Variation selectors 1–16 (emoji
 * presentation) stay.
 */
// The class lists code points one by one; that some are combining marks (U+034F, U+17B4…) is the point.
// eslint-disable-next-line no-misleading-character-class
export const INVISIBLE = /[\p{Cf}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u3164\uFFA0\u{E0100}-\u{E01EF}]/gu;

/** Characters that break or drive a line, turned into spaces: controls (`\p{Cc}`: line feed, tab, ESC, BEL, DEL, C1) and line/paragraph separators. */
const LINE_BREAKING = /[\p{Cc}\p{Zl}\p{Zp}]/gu;

/**
 * One line of plain text: controls and line or paragraph separators become spaces, invisible
 * characters ({@link INVISIBLE}) are removed, runs of whitespace become one space, the ends are
 * trimmed, and the result is cut to `maxLength` characters (code points, so never inside a
 * surrogate pair).
 *
 * @param maxLength - most characters (code points) kept; default no limit.
 * @returns the plain line; `""` when nothing visible is left (callers choose a fallback).
 */
export function plainLine(text: string, maxLength = Infinity): string {
  const line = text.replace(INVISIBLE, "").replace(LINE_BREAKING, " ").replace(/\s+/g, " ").trim();
  if (maxLength === Infinity || line.length <= maxLength) return line;
  return [...line].slice(0, maxLength).join("").trimEnd();
}
