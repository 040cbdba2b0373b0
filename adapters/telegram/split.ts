/**
 * Splitting an answer into Telegram messages.
 *
 * Source: Bot API `sendMessage`: "Text of the message to be sent, 1-4096 characters after entities
 * parsing" (https://core.telegram.org/bots/api#sendmessage). Telegram counts UTF-16 code units, so
 * every length here is a JavaScript `string.length` of the *visible* text (tags count 0, an entity
 * such as `&lt;` counts 1).
 */
import { markdownBlocks } from "./html.js";

/** Telegram's limit for one message's text after entity parsing, in UTF-16 code units. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/** One message to send: its HTML and the plain text to send instead if Telegram rejects the HTML. */
export interface TelegramChunk {
  /** Telegram HTML, tags balanced; visible length ≤ the limit. */
  html: string;
  /** Plain text (the Markdown source where possible, else the visible text); length ≤ the limit. */
  plain: string;
}

type Atom =
  | { kind: "open"; tag: string; raw: string }
  | { kind: "close"; tag: string; raw: string }
  | { kind: "text"; raw: string; text: string };

const TOKEN = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)(?:\s[^>]*)?>|&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);|[^<&]+|[<&]/g;
const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

function decodeEntity(raw: string): string {
  const body = raw.slice(1, -1);
  if (body.startsWith("#x") || body.startsWith("#X")) return String.fromCodePoint(parseInt(body.slice(2), 16));
  if (body.startsWith("#")) return String.fromCodePoint(parseInt(body.slice(1), 10));
  return NAMED[body] ?? raw;
}

/** Splits HTML into atoms: tags, and one atom per code point (an entity is one atom). */
function atomize(html: string): Atom[] {
  const atoms: Atom[] = [];
  for (const m of html.matchAll(TOKEN)) {
    const raw = m[0];
    if (m[2] !== undefined) {
      atoms.push({ kind: m[1] ? "close" : "open", tag: m[2].toLowerCase(), raw });
    } else if (raw.startsWith("&") && raw.length > 1) {
      atoms.push({ kind: "text", raw, text: decodeEntity(raw) });
    } else {
      for (const ch of raw) atoms.push({ kind: "text", raw: ch, text: ch });
    }
  }
  return atoms;
}

/** The text Telegram shows for `html` (tags removed, entities decoded). */
export function htmlToPlain(html: string): string {
  return atomize(html)
    .map((a) => (a.kind === "text" ? a.text : ""))
    .join("");
}

/** Length of the text Telegram shows for `html`, in UTF-16 code units. */
export function visibleLength(html: string): number {
  return htmlToPlain(html).length;
}

interface Break {
  /** Index of the break character (not included in either piece). */
  at: number;
  /** Index where the next piece starts. */
  resume: number;
  /** 3 paragraph, 2 line, 1 space. */
  rank: number;
  /** Visible length before the break. */
  visible: number;
  /** Open tags at the break. */
  stack: Extract<Atom, { kind: "open" }>[];
}

/**
 * Splits Telegram HTML into pieces whose visible text is at most `limit` UTF-16 units each, in order.
 * Cuts at a blank line, else a line break, else a space (preferring cuts in the second half of a
 * piece), else between two code points; never inside a tag, an entity or a surrogate pair. Tags open
 * at a cut are closed at the end of the piece and reopened (with their attributes, e.g.
 * `<pre><code class="language-ts">`) at the start of the next.
 *
 * @param html - well-formed Telegram HTML (as produced by `markdownToTelegramHtml`).
 * @param limit - visible UTF-16 units per piece, default {@link TELEGRAM_TEXT_LIMIT} (a piece always holds at least
 * one code point, so with a limit of 1 a surrogate pair still makes a 2-unit piece).
 */
export function splitHtml(html: string, limit = TELEGRAM_TEXT_LIMIT): string[] {
  const atoms = atomize(html);
  const pieces: string[] = [];
  let stack: Extract<Atom, { kind: "open" }>[] = [];
  let i = 0;
  while (i < atoms.length) {
    const startStack = [...stack];
    const from = i;
    let visible = 0;
    let best: Break | undefined;
    let cut: Break | undefined;
    const run = [...stack];
    for (; i < atoms.length; i++) {
      const a = atoms[i]!;
      if (a.kind === "open") {
        run.push(a);
        continue;
      }
      if (a.kind === "close") {
        const at = run.map((o) => o.tag).lastIndexOf(a.tag);
        if (at >= 0) run.splice(at, 1);
        continue;
      }
      // (A piece always takes at least one code point, so a limit below 2 cannot loop forever.)
      if (visible > 0 && visible + a.text.length > limit) {
        cut = best ?? { at: i, resume: i, rank: 0, visible, stack: [...run] };
        break;
      }
      const rank = a.text === "\n" ? (prevChar(atoms, i) === "\n" ? 3 : 2) : a.text === " " ? 1 : 0;
      if (rank > 0 && visible > 0) {
        const candidate: Break = { at: rank === 3 ? i - 1 : i, resume: i + 1, rank, visible, stack: [...run] };
        const half = visible >= limit / 2;
        if (!best || (half && (best.visible < limit / 2 || rank >= best.rank)) || (!half && rank >= best.rank))
          best = candidate;
      }
      visible += a.text.length;
    }
    if (!cut) {
      pieces.push(assemble(startStack, atoms.slice(from), run));
      break;
    }
    pieces.push(assemble(startStack, atoms.slice(from, cut.at), cut.stack));
    stack = cut.stack;
    i = cut.resume;
    // A new piece does not start with a line break (Telegram would show an empty first line).
    while (atoms[i]?.kind === "text" && (atoms[i] as { text: string }).text === "\n") i++;
  }
  return pieces.filter((p) => htmlToPlain(p).trim() !== "");
}

function prevChar(atoms: Atom[], i: number): string | undefined {
  for (let j = i - 1; j >= 0; j--) {
    const a = atoms[j]!;
    if (a.kind === "text") return a.text;
  }
  return undefined;
}

function assemble(
  reopen: Extract<Atom, { kind: "open" }>[],
  body: Atom[],
  open: Extract<Atom, { kind: "open" }>[],
): string {
  const closeTags = [...open]
    .reverse()
    .map((o) => `</${o.tag}>`)
    .join("");
  return reopen.map((o) => o.raw).join("") + body.map((a) => a.raw).join("") + closeTags;
}

/**
 * Turns a Markdown answer into the Telegram messages to send, in order. Whole Markdown blocks are
 * packed into one message while both the HTML's visible text and the Markdown source fit in
 * `limit`; a block too long on its own (e.g. a long code block) is cut with {@link splitHtml}, its
 * fence closed and reopened, and its plain fallback is the visible text of each piece.
 *
 * @param markdown - the model's answer.
 * @param limit - UTF-16 units per message, default {@link TELEGRAM_TEXT_LIMIT}.
 * @returns the chunks; empty when the answer has no visible text.
 */
export function planChunks(markdown: string, limit = TELEGRAM_TEXT_LIMIT): TelegramChunk[] {
  const chunks: TelegramChunk[] = [];
  let current: { html: string; plain: string; visible: number } | undefined;
  const flush = () => {
    if (current) chunks.push({ html: current.html, plain: current.plain });
    current = undefined;
  };
  for (const block of markdownBlocks(markdown)) {
    const visible = visibleLength(block.html);
    if (Math.max(visible, block.markdown.length) > limit) {
      flush();
      for (const html of splitHtml(block.html, limit)) chunks.push({ html, plain: htmlToPlain(html) });
      continue;
    }
    if (current && Math.max(current.visible + 2 + visible, current.plain.length + 2 + block.markdown.length) <= limit) {
      current = {
        html: `${current.html}\n\n${block.html}`,
        plain: `${current.plain}\n\n${block.markdown}`,
        visible: current.visible + 2 + visible,
      };
      continue;
    }
    flush();
    current = { html: block.html, plain: block.markdown, visible };
  }
  flush();
  return chunks;
}
