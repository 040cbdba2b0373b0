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
import { Lexer, type Token, type Tokens } from "marked";

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
 * characters ({@link INVISIBLE}) are removed but a zero-width joiner between two emoji (👩‍💻,
 * 🏳️‍🌈 stay one picture; {@link withoutInvisible}), runs of whitespace become one space, the ends are
 * trimmed, and the result is cut to `maxLength` characters (code points, so never inside a
 * surrogate pair).
 *
 * @param maxLength - most characters (code points) kept; default no limit.
 * @returns the plain line; `""` when nothing visible is left (callers choose a fallback).
 */
export function plainLine(text: string, maxLength = Infinity): string {
  const line = withoutInvisible(text).replace(LINE_BREAKING, " ").replace(/\s+/g, " ").trim();
  if (maxLength === Infinity || line.length <= maxLength) return line;
  return [...line].slice(0, maxLength).join("").trimEnd();
}

/** C0 controls other than tab and line feed, and DEL: shown as their Control Pictures by {@link terminalText}. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000B-\u001F\u007F]/g;

/** C1 controls (U+0080–U+009F; U+009B is CSI to some terminals): removed by {@link terminalText}. */
const C1_CONTROLS = /[\u0080-\u009F]/g;

/** What may stand before a zero-width joiner that joins two emoji (👩‍💻): a pictograph, a skin tone, or VS16. */
const EMOJI_BEFORE = /(?:[\p{Extended_Pictographic}\u{1F3FB}-\u{1F3FF}]|\uFE0F)$/u;
/** What may follow such a joiner: a pictograph. */
const EMOJI_AFTER = /^\p{Extended_Pictographic}/u;

/** A replacer for {@link INVISIBLE}: keeps a zero-width joiner between two emoji, removes the rest. */
function keepEmojiJoiner(char: string, offset: number, whole: string): string {
  return char === "\u200D" &&
    EMOJI_BEFORE.test(whole.slice(Math.max(0, offset - 2), offset)) &&
    EMOJI_AFTER.test(whole.slice(offset + 1, offset + 3))
    ? char
    : "";
}

/**
 * `text` without its invisible characters ({@link INVISIBLE}), except a zero-width joiner between
 * two emoji, which makes them one picture (👩‍💻 = 👩 U+200D 💻; 🏳️‍🌈): removing it would show,
 * and store, two pictures. Source: Unicode emoji ZWJ sequences, https://www.unicode.org/reports/tr51/#Emoji_ZWJ_Sequences.
 * @returns the text, as long or shorter; never throws.
 */
export function withoutInvisible(text: string): string {
  return text.replace(INVISIBLE, keepEmojiJoiner);
}

/**
 * Text of other people or of the model (answers, streamed deltas, tool status lines, listings)
 * made harmless for a terminal, keeping its lines: line feeds and tabs stay (a CR LF pair becomes
 * a line feed, U+2028/U+2029 too); every other C0 control and DEL is shown as its Control Picture
 * (ESC as `␛`, BEL as `␇`, NUL as `␀`, a lone CR as `␍`: U+2400–U+241F, U+2421), so an escape
 * sequence is seen and never acts; C1 controls are removed; invisible characters
 * ({@link INVISIBLE}: bidi controls, zero-width characters) are removed, except a zero-width
 * joiner between two emoji (👩‍💻 stays one picture).
 *
 * Source: ECMA-48 (control functions: C0, C1, ESC sequences), https://ecma-international.org/publications-and-standards/standards/ecma-48/;
 * Control Pictures, https://www.unicode.org/charts/PDF/U2400.pdf.
 *
 * @returns the text, as long or shorter (code points), never throwing.
 */
export function terminalText(text: string): string {
  return text
    .replace(/\r\n/g, "\n")
    .replace(/[\u2028\u2029]/g, "\n")
    .replace(INVISIBLE, keepEmojiJoiner)
    .replace(TERMINAL_CONTROLS, (char) => String.fromCharCode(char === "\u007F" ? 0x2421 : 0x2400 + char.charCodeAt(0)))
    .replace(C1_CONTROLS, "");
}

/**
 * A link (or an image) as text: `label (address)`; the address alone when the label is empty or is
 * the address; an autolink (`<https://…>`, a bare `https://…` or e-mail address) as its address as
 * written.
 */
function linkText(link: Tokens.Link | Tokens.Image): string {
  const label = link.type === "image" ? link.text.trim() : inlinePlain(link.tokens).trim();
  if (link.raw === label || link.raw === `<${label}>`) return label;
  return label === "" || label === link.href ? link.href : `${label} (${link.href})`;
}

/** Inline Markdown tokens as the words a reader sees. */
function inlinePlain(tokens: Token[] | undefined): string {
  let out = "";
  for (const token of tokens ?? []) {
    switch (token.type) {
      case "strong":
      case "em":
      case "del":
        out += inlinePlain((token as Tokens.Strong).tokens);
        break;
      case "codespan":
      case "escape":
        out += (token as Tokens.Codespan).text;
        break;
      case "br":
        out += "\n";
        break;
      case "link":
      case "image":
        out += linkText(token as Tokens.Link | Tokens.Image);
        break;
      case "text": {
        const text = token as Tokens.Text;
        out += text.tokens ? inlinePlain(text.tokens) : text.text;
        break;
      }
      default:
        out += "text" in token && typeof token.text === "string" ? token.text : token.raw;
    }
  }
  return out;
}

/** Options of {@link markdownToPlain}. */
export interface PlainTextOptions {
  /** What starts an unordered list item: `• ` (default, LINE), `- ` (the console: what a person would type). */
  bullet?: string;
}

/** Block Markdown tokens as plain lines; `indent` prefixes nested list lines. */
function blocksPlain(tokens: Token[], options: PlainTextOptions, indent = ""): string[] {
  const blocks: string[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case "space":
        break;
      case "paragraph":
      case "heading":
        blocks.push(inlinePlain((token as Tokens.Paragraph).tokens));
        break;
      case "text": {
        const text = token as Tokens.Text;
        blocks.push(text.tokens ? inlinePlain(text.tokens) : text.text);
        break;
      }
      case "code":
        blocks.push((token as Tokens.Code).text);
        break;
      case "hr":
        blocks.push("──────────");
        break;
      case "blockquote":
        blocks.push(
          blocksPlain((token as Tokens.Blockquote).tokens, options)
            .join("\n\n")
            .split("\n")
            .map((line) => `> ${line}`.trimEnd())
            .join("\n"),
        );
        break;
      case "list": {
        const list = token as Tokens.List;
        const start = typeof list.start === "number" ? list.start : 1;
        const lines = list.items.map((item, i) => {
          const bullet = list.ordered ? `${start + i}. ` : (options.bullet ?? "• ");
          const mark = item.task ? (item.checked ? "☑ " : "☐ ") : "";
          const body = blocksPlain(item.tokens, options, `${indent}  `).join("\n");
          return `${indent}${bullet}${mark}${body}`;
        });
        blocks.push(lines.join("\n"));
        break;
      }
      case "table": {
        const table = token as Tokens.Table;
        const row = (cells: Tokens.TableCell[]) => cells.map((c) => inlinePlain(c.tokens).trim()).join(" | ");
        blocks.push([row(table.header), ...table.rows.map(row)].join("\n"));
        break;
      }
      default:
        blocks.push("text" in token && typeof token.text === "string" ? token.text : token.raw);
    }
  }
  return blocks;
}

/**
 * Markdown (an answer, a command's reply) as plain text, for places that render none (LINE shows
 * `**今天**` as it is; the console's terminal): emphasis and strike marks go, inline code and code
 * blocks keep their text without backticks or fences, a link is `label (address)` (the address
 * alone when the label is it), headings are their words, list items start with `• ` (or
 * `options.bullet`) or their number (nested ones indented two spaces), quotes keep `> `, table rows
 * are cells joined by ` | `. Blocks stay as the text had them: separated by one empty line where
 * it had one or more, on the next line where it had none (a heading over its list). Read with
 * marked's lexer (https://marked.js.org). The one converter of Markdown to plain text: LINE's
 * messages and the console's command replies both use it.
 * @returns the plain text; never throws (what the lexer cannot read stays as it is).
 */
export function markdownToPlain(markdown: string, options: PlainTextOptions = {}): string {
  try {
    let out = "";
    let blankBefore = false;
    for (const token of Lexer.lex(markdown)) {
      if (token.type === "space") {
        blankBefore = true;
        continue;
      }
      const block = blocksPlain([token], options).join("\n\n");
      if (block.trim() === "") continue;
      out += out === "" ? block : `${blankBefore ? "\n\n" : "\n"}${block}`;
      blankBefore = false;
    }
    return out;
  } catch {
    return markdown;
  }
}

/**
 * A bare web address as Markdown readers link it by themselves (GFM's extended autolinks, Discord's
 * links): escapes inside it are not read, so it is left as it is. It ends at white space or `<`.
 */
const BARE_ADDRESS = /(?:(?:https?|ftp):\/\/|www\.)[^\s<]*/gi;

/** Characters that are formatting wherever they stand: backslash, code, emphasis, strike, spoiler/table, link, tag or autolink, entity. */
const INLINE_MARKS = /[\\`*_~|[<&]/g;

/**
 * Plain text (a name, a reminder's text, a task's instruction, a tool's input, a persona) written
 * as Markdown that every reader of the bot's Markdown shows exactly as it is, for interpolating
 * text people chose into a Markdown message (a command's reply, a line leading an answer): marked's
 * lexer (Telegram's Markdown → HTML, {@link markdownToPlain} for LINE and the console) and
 * Discord's client. With CommonMark backslash escapes, which both read
 * (https://spec.commonmark.org/0.31.2/#backslash-escapes: any ASCII punctuation; Discord's parser,
 * of the simple-markdown family, drops a backslash before any character that is not a letter, a
 * digit or white space):
 * - everywhere: `\`, `` ` ``, `*`, `_`, `~`, `|`, `[`, `<` and `&` (emphasis, code, strike,
 *   Discord's spoiler, tables, links and images, tags, autolinks, Discord's `<@id>` and `<t:…>`,
 *   entities such as `&#42;`);
 * - at the start of a line (after spaces or tabs): `>`, `#`, `+`, `-`, `=` (quotes, headings, list
 *   items, Discord's `-# ` small text, setext underlines and rules) and the `.` or `)` of a
 *   number (`1.` ordered lists).
 *
 * A bare web address (`https://…`, `www.…`) is left as it is: readers link it by themselves and
 * read no escape inside it. What Markdown cannot keep is not kept: white space at the start of a
 * line and several blank lines in a row (marked drops the former and joins the latter; Discord
 * keeps both), and a `<` right after a bare address, whose escape joins the address.
 *
 * @returns the Markdown; never throws. An empty text stays empty.
 */
export function markdownLiteral(text: string): string {
  let out = "";
  let from = 0;
  for (const address of text.matchAll(BARE_ADDRESS)) {
    out += text.slice(from, address.index).replace(INLINE_MARKS, "\\$&") + address[0];
    from = address.index + address[0].length;
  }
  out += text.slice(from).replace(INLINE_MARKS, "\\$&");
  return out.replace(/^([ \t]*)([>#+=-])/gm, "$1\\$2").replace(/^([ \t]*\d{1,9})([.)])/gm, "$1\\$2");
}

/** The tokens inside `token` (a block's inline tokens, a list's items, a table's cells), in order. */
function childTokens(token: Token): Token[] {
  if (token.type === "list") return (token as Tokens.List).items;
  if (token.type === "table") {
    const table = token as Tokens.Table;
    return [...table.header, ...table.rows.flat()].flatMap((cell) => cell.tokens);
  }
  return "tokens" in token && Array.isArray(token.tokens) ? (token.tokens as Token[]) : [];
}

/** The innermost tokens of `tokens` in the order of the text, a link or an image counting as one. */
function* leafTokens(tokens: readonly Token[]): Generator<Token> {
  for (const token of tokens) {
    const children = token.type === "link" || token.type === "image" ? [] : childTokens(token);
    if (children.length > 0) yield* leafTokens(children);
    else yield token;
  }
}

/**
 * Markdown (an answer) with its links written for a terminal, where they cannot be clicked as
 * Markdown and `[title](<https://…>)` is hard to read: each link as `label (address)` (the address
 * alone when the label is it, an autolink as its address), an image as `alt (address)`, as
 * {@link markdownToPlain} writes them; a backslash escape as the character it stands for (`\*` as
 * `*`: what people wrote, written into the answer as a literal with {@link markdownLiteral}, reads
 * as they wrote it); everything else stays as written (emphasis, code, lists), and text that only
 * looks like a link stays text too (inside code, or with its `[` escaped). Read with marked's lexer
 * (https://marked.js.org): each token is found in the text in order, a link's or an escape's
 * written form replaced.
 * @returns the text; never throws (what the lexer cannot read stays as it is).
 */
export function terminalLinks(markdown: string): string {
  let tokens: Token[];
  try {
    tokens = Lexer.lex(markdown);
  } catch {
    return markdown;
  }
  let out = "";
  let from = 0;
  for (const token of leafTokens(tokens)) {
    // A token's written form is where it stands at or after the previous one's end; one not found
    // there (an item's text, which the lexer holds without its indent) moves nothing.
    const at = token.raw === "" ? -1 : markdown.indexOf(token.raw, from);
    if (at === -1) continue;
    const link = token.type === "link" || token.type === "image";
    const shown = link
      ? linkText(token as Tokens.Link | Tokens.Image)
      : token.type === "escape"
        ? (token as Tokens.Escape).text
        : token.raw;
    out += markdown.slice(from, at) + shown;
    from = at + token.raw.length;
  }
  return out + markdown.slice(from);
}
