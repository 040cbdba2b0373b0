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
]);

/** HTML character references of `<` and `/`, matched at one position (sticky), any case, `;` optional. */
const REFERENCE = /&(?:(lt|#0*60|#x0*3c)|(sol|#0*47|#x0*2f));?/iy;

/** A `file` tag, opening or closing, in the folded text. */
const TAG = /<\s*\/?\s*file/g;

/** Variation selectors 1–16 (kept in names for emoji, but invisible inside a tag). */
const VARIATION_SELECTOR = /[\uFE00-\uFE0F]/u;

/**
 * `content` with every `file` tag look-alike neutralised (see the module comment).
 * @returns the same string when there is none.
 */
export function neutraliseFileTags(content: string): string {
  // The folded text, and for each of its characters the end (in `content`) of the piece it came
  // from: where the backslash goes when that character is a tag's `<`.
  let folded = "";
  const ends: number[] = [];
  for (let i = 0; i < content.length; ) {
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
  const cuts = [...folded.matchAll(TAG)].map((match) => ends[match.index]!);
  if (cuts.length === 0) return content;
  let out = "";
  let from = 0;
  for (const cut of cuts) {
    out += `${content.slice(from, cut)}\\`;
    from = cut;
  }
  return out + content.slice(from);
}
