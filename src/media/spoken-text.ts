/**
 * What a voice reply says: the answer as a person would read it aloud. The answer is Markdown (the
 * model writes it; `withSources` adds its numbered sources); it is read with marked's lexer
 * (https://marked.js.org, the renderer the adapters use too) and spoken as its words:
 *
 * - links say their text, never their address; a bare address says nothing; images nothing;
 * - a code block, a table, or inline code longer than {@link SHORT_CODE_CHARS} says "see the
 *   message" ({@link SEE_MESSAGE}; one such phrase for several in a row); short inline code says
 *   its text (a file name, a command word);
 * - the sources list (`來源：` / `Sources:` and its links) and the citation marks `[1]` are left
 *   out: they are in the text message;
 * - emphasis, headings, lists and quotes say their words; line breaks become pauses.
 *
 * At most `MAX_TTS_CHARACTERS` characters (code points) are spoken ({@link spokenText}): a longer
 * answer speaks its first part, cut at the last sentence end (else a comma or space) that keeps at
 * least half of it, then says the rest is in the text ({@link REST_IN_TEXT}).
 */
import { Lexer, type Token, type Tokens } from "marked";
import { localize, type Locale } from "../i18n.js";

/** Longest inline code spoken as its text, in characters; longer inline code reads as {@link SEE_MESSAGE}. */
export const SHORT_CODE_CHARS = 24;

/** Said in place of code and tables. */
export const SEE_MESSAGE = { "zh-TW": "（請看訊息）", en: "(see the message)" };

/** Said after a cut answer. */
export const REST_IN_TEXT = { "zh-TW": "其餘內容請看文字訊息。", en: "The rest is in the text message." };

/** The headings of an answer's sources list (`withSources`), left out. */
const SOURCES_HEADINGS = new Set(["來源：", "Sources:"]);

/**
 * The words of `answer` (Markdown) to speak, in the conversation's `locale` (the "see the
 * message" phrases), at most `maxChars` code points with the {@link REST_IN_TEXT} sentence when it
 * was cut. Empty when nothing is left to say (an answer that is all code).
 */
export function spokenText(answer: string, locale: Locale, maxChars: number): { text: string; cut: boolean } {
  const see = localize(locale, SEE_MESSAGE);
  const parts: string[] = [];
  const tokens = new Lexer().lex(answer);
  let skipList = false;
  for (const token of tokens) {
    if (token.type === "paragraph" && SOURCES_HEADINGS.has(token.text.trim())) {
      skipList = true;
      continue;
    }
    if (skipList && token.type === "list") {
      skipList = false;
      continue;
    }
    if (token.type !== "space") skipList = false;
    parts.push(blockWords(token, see));
  }
  const text = tidy(parts.filter((p) => p.trim() !== "").join("\n"), see);
  return fit(text, maxChars, localize(locale, REST_IN_TEXT));
}

/** The spoken words of a block token. */
function blockWords(token: Token, see: string): string {
  switch (token.type) {
    case "code":
    case "table":
      return see;
    case "hr":
    case "space":
    case "html":
    case "def":
      return "";
    case "list":
      return (token as Tokens.List).items.map((item) => blocksWords(item.tokens, see)).join("\n");
    case "heading":
    case "paragraph":
      return inlineWords((token as Tokens.Heading | Tokens.Paragraph).tokens, see);
    case "blockquote":
      return blocksWords((token as Tokens.Blockquote).tokens, see);
    case "text": {
      const t = token as Tokens.Text;
      return t.tokens ? inlineWords(t.tokens, see) : t.text;
    }
    default:
      return "tokens" in token && Array.isArray(token.tokens) ? blocksWords(token.tokens, see) : "";
  }
}

function blocksWords(tokens: Token[], see: string): string {
  return tokens
    .map((t) => blockWords(t, see))
    .filter((p) => p.trim() !== "")
    .join("\n");
}

/** The spoken words of inline tokens. */
function inlineWords(tokens: Token[] | undefined, see: string): string {
  let out = "";
  for (const token of tokens ?? []) {
    switch (token.type) {
      case "link": {
        const link = token as Tokens.Link;
        const label = inlineWords(link.tokens, see);
        // An address written as its own label (`https://…`, an autolink) says nothing.
        out += /^\s*(?:[a-z][a-z0-9+.-]*:\/\/|www\.)\S*\s*$/i.test(label) || link.text === link.href ? "" : label;
        break;
      }
      case "image":
      case "html":
        break;
      case "codespan": {
        const code = (token as Tokens.Codespan).text;
        out += [...code].length <= SHORT_CODE_CHARS && !/[\n{};=<>]/.test(code) ? code : see;
        break;
      }
      case "br":
        out += "\n";
        break;
      case "strong":
      case "em":
      case "del":
        out += inlineWords((token as Tokens.Strong).tokens, see);
        break;
      case "text":
      case "escape": {
        const t = token as Tokens.Text;
        out += t.tokens ? inlineWords(t.tokens, see) : t.text;
        break;
      }
      default:
        out += "tokens" in token && Array.isArray(token.tokens) ? inlineWords(token.tokens, see) : "";
    }
  }
  return out;
}

/** Citation marks gone, bare addresses gone, runs of white space and repeated "see the message" folded. */
function tidy(text: string, see: string): string {
  const escaped = see.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return text
    .replace(/(?:\s*\[\d{1,3}\])+/g, "")
    .replace(/\b(?:https?:\/\/|www\.)\S+/gi, "")
    .replace(/[ \t]+/g, " ")
    .replace(/ +([。，、！？；：.,!?;:])/g, "$1")
    .replace(/ *\n[\s]*/g, "\n")
    .replace(new RegExp(`(?:${escaped}\\s*){2,}`, "g"), `${see}\n`)
    .trim();
}

/**
 * `text` within `maxChars` code points: as it is when it fits, else its first part cut at a
 * sentence end (else a comma, else a space) in its second half, followed by `rest`.
 */
function fit(text: string, maxChars: number, rest: string): { text: string; cut: boolean } {
  const chars = [...text];
  if (chars.length <= maxChars) return { text, cut: false };
  const room = Math.max(1, maxChars - [...rest].length - 1);
  const head = chars.slice(0, room).join("");
  const half = Math.floor(head.length / 2);
  const at = (pattern: RegExp): number => {
    let best = -1;
    for (const m of head.matchAll(pattern)) if (m.index + m[0].length >= half) best = m.index + m[0].length;
    return best;
  };
  const end = [at(/[。！？!?]|[.;](?=\s)|\n/g), at(/[，、,；]/g), at(/\s/g)].find((i) => i > 0) ?? head.length;
  return { text: `${head.slice(0, end).trim()}\n${rest}`, cut: true };
}
