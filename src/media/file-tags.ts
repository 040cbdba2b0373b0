/**
 * Keeps a text file's content from ending or faking the `<file name="…">…</file>` wrapper it is
 * sent to the model in (`convertText`). Not only the exact `</file`: anything a reader — the
 * model — would take for a `file` tag is neutralised, whatever it is spelled with:
 * - spaces around the slash (`</ file>`, `< /file>`), any case (`</FILE>`);
 * - invisible characters anywhere in it (zero-width space, joiners, bidi controls, soft hyphen…:
 *   {@link INVISIBLE});
 * - compatibility forms (full-width `＜／ｆｉｌｅ＞`, small `﹤`, mathematical letters), folded
 *   with NFKC;
 * - look-alike brackets and slashes (`‹ 〈 ⟨ ˂ ᐸ ❮`, `∕ ⁄ ⧸ ╱`) and look-alike letters from other
 *   scripts (Cyrillic `е і ӏ`, Greek `ι`, dotless `ı`…);
 * - HTML character references for `<` and `/` (`&lt;`, `&#60;`, `&#x3c;`, `&sol;`, `&#47;`, `&#x2f;`).
 *
 * {@link neutraliseTags} does the same for other tag names (the memory block's `memory`).
 *
 * Each such tag gets a backslash right after its opening bracket (`</file` → `<\/file`,
 * `＜／ｆｉｌｅ` → `＜\／ｆｉｌｅ`, `<file` → `<\file`); nothing else of the content changes.
 *
 * Sources: NFKC, https://www.unicode.org/reports/tr15/; confusables,
 * https://www.unicode.org/reports/tr39/#Confusable_Detection (the few that spell `</file`).
 */
import { INVISIBLE } from "../plain-text.js";

/** Look-alikes that NFKC does not fold, each to the ASCII character it imitates. */
const LOOK_ALIKES = new Map<string, string>([
  // ‹ 〈 ⟨ ˂ ᐸ ❮ (U+2329 〈 folds to U+3008 with NFKC)
  ...[..."\u2039\u3008\u27E8\u02C2\u1438\u276E"].map((c) => [c, "<"] as const),
  // ∕ ⁄ ⧸ ╱
  ...[..."\u2215\u2044\u29F8\u2571"].map((c) => [c, "/"] as const),
  // ƒ ꬵ
  ...[..."\u0192\uAB35"].map((c) => [c, "f"] as const),
  // Cyrillic і, Greek ι, dotless ı, Latin ɩ, Cyrillic palochka Ӏ (lower case ӏ below)
  ...[..."\u0456\u03B9\u0131\u0269\u04C0"].map((c) => [c, "i"] as const),
  // Cyrillic ӏ, Latin ǀ (dental click), Ɩ
  ...[..."\u04CF\u01C0\u0196"].map((c) => [c, "l"] as const),
  // Cyrillic е, ҽ
  ...[..."\u0435\u04BD"].map((c) => [c, "e"] as const),
  // for `memory` (the memory block, `src/memory/notes.ts`): Cyrillic о, Greek ο, Armenian օ; Cyrillic у, ү; small capital ᴍ, Cyrillic м; small capital ʀ
  ...[..."\u043E\u03BF\u0585"].map((c) => [c, "o"] as const),
  ...[..."\u0443\u04AF"].map((c) => [c, "y"] as const),
  ...[..."\u1D0D\u043C"].map((c) => [c, "m"] as const),
  ...[..."\u0280"].map((c) => [c, "r"] as const),
]);

/** HTML character references of `<` and `/`, matched at one position (sticky), any case, `;` optional. */
const REFERENCE = /&(?:(lt|#0*60|#x0*3c)|(sol|#0*47|#x0*2f));?/iy;

/** A tag named one of `names`, opening or closing, in the folded text. */
function tagPattern(names: readonly string[]): RegExp {
  return new RegExp(`<\\s*\\/?\\s*(?:${names.join("|")})`, "g");
}

const FILE_TAG = tagPattern(["file"]);

/** Variation selectors 1–16 (kept in names for emoji, but invisible inside a tag). */
const VARIATION_SELECTOR = /[\uFE00-\uFE0F]/u;

/**
 * `content` with every `file` tag look-alike neutralised (see the module comment).
 * @returns the same string when there is none.
 */
export function neutraliseFileTags(content: string): string {
  return neutralise(content, FILE_TAG);
}

/**
 * `content` with every look-alike of a tag named one of `names` (lower-case ASCII letters, e.g.
 * `["file", "memory"]`) neutralised as {@link neutraliseFileTags} does for `file`.
 * @returns the same string when there is none.
 */
export function neutraliseTags(content: string, names: readonly string[]): string {
  return neutralise(content, tagPattern(names));
}

function neutralise(content: string, tag: RegExp): string {
  // The folded text, and for each of its characters the end (in `content`) of the piece it came
  // from: where the backslash goes when that character is a tag's `<`.
  let folded = "";
  const ends: number[] = [];
  for (let i = 0; i < content.length;) {
    REFERENCE.lastIndex = i;
    const reference = REFERENCE.exec(content);
    if (reference) {
      i += reference[0].length;
      folded += reference[1] ? "<" : "/";
      ends.push(i);
      continue;
    }
    const char = String.fromCodePoint(content.codePointAt(i)!);
    i += char.length;
    INVISIBLE.lastIndex = 0;
    if (INVISIBLE.test(char) || VARIATION_SELECTOR.test(char)) continue;
    for (const piece of char.normalize("NFKC").toLowerCase()) {
      const mapped = LOOK_ALIKES.get(piece) ?? piece;
      folded += mapped;
      // One entry per UTF-16 unit, as `folded` is indexed.
      for (let k = 0; k < mapped.length; k += 1) ends.push(i);
    }
  }
  const cuts = [...folded.matchAll(tag)].map((match) => ends[match.index]!);
  if (cuts.length === 0) return content;
  let out = "";
  let from = 0;
  for (const cut of cuts) {
    out += `${content.slice(from, cut)}\\`;
    from = cut;
  }
  return out + content.slice(from);
}
