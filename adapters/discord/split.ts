/**
 * Splitting a long answer into Discord messages.
 *
 * Discord refuses message content over 2000 characters (Create Message, `content`: "up to 2000
 * characters", https://discord.com/developers/docs/resources/message#create-message). Discord
 * counts Unicode characters; we measure UTF-16 code units (`string.length`), which is never less
 * than the character count, so a chunk within our limit is always within Discord's.
 */

/** Discord's content limit per message, in characters (we count UTF-16 code units). */
export const DISCORD_MESSAGE_LIMIT = 2000;

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence state after a piece of Markdown: the opening fence line when inside a code block. */
function fenceAfter(text: string, open: string | null): string | null {
  let current = open;
  for (const line of text.split("\n")) {
    const m = FENCE.exec(line);
    if (!m) continue;
    if (current === null) {
      current = line.trim();
    } else {
      const marker = /^(`{3,}|~{3,})/.exec(current)![1]!;
      if (m[1]![0] === marker[0] && m[1]!.length >= marker.length && m[2]!.trim() === "") current = null;
    }
  }
  return current;
}

function closingFor(open: string): string {
  return /^(`{3,}|~{3,})/.exec(open)![1]!;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Splits `text` into chunks of at most `limit` UTF-16 code units, in order.
 *
 * Cuts at a paragraph break (blank line) when one lies in the second half of the window, else at
 * a line break, else at a space, else hard; never between the two halves of a surrogate pair. A
 * chunk that ends inside a fenced code block is closed with the fence and the next chunk reopens
 * it with the same fence line (so the language, e.g. ```` ```ts ````, is kept). Whitespace-only
 * chunks are dropped. Joining the chunks without the added fences gives back the text, minus
 * the line breaks cut at.
 *
 * @param text - Markdown as Discord renders it.
 * @param limit - maximum chunk length in UTF-16 code units, default {@link DISCORD_MESSAGE_LIMIT}; at least 40.
 * @returns the chunks; empty when `text` is blank.
 */
export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  if (limit < 40) throw new RangeError("limit must be at least 40 UTF-16 code units");
  const chunks: string[] = [];
  let rest = text;
  let open: string | null = null;
  while (rest.length > 0) {
    const prefix: string = open ? `${open}\n` : "";
    if (prefix.length + rest.length <= limit && fenceAfter(rest, open) === null) {
      pushChunk(chunks, prefix + rest);
      break;
    }
    // Reserve room for a closing fence in case the chunk ends inside a code block.
    const reserve = open ? closingFor(open).length + 1 : 8;
    const budget = Math.min(rest.length, limit - prefix.length - reserve);
    let cut = budget;
    let skip = 0;
    if (budget < rest.length) {
      const window = rest.slice(0, budget + 1);
      const paragraph = window.lastIndexOf("\n\n");
      const line = window.lastIndexOf("\n");
      const space = window.lastIndexOf(" ");
      if (paragraph >= budget / 2) {
        cut = paragraph;
        skip = 2;
      } else if (line > 0) {
        cut = line;
        skip = 1;
      } else if (space > budget / 2 && open === null) {
        cut = space;
        skip = 1;
      }
      if (cut > budget) {
        cut = budget;
        skip = 0;
      }
      if (skip === 0 && isHighSurrogate(rest.charCodeAt(cut - 1))) cut -= 1;
    }
    const piece = rest.slice(0, cut);
    rest = rest.slice(cut + skip);
    const after = fenceAfter(piece, open);
    const close = after ? `${piece.endsWith("\n") ? "" : "\n"}${closingFor(after)}` : "";
    if (after && (prefix + piece + close).length > limit) {
      // The opening fence line itself was longer than the reserve: cut the piece shorter.
      const over = (prefix + piece + close).length - limit;
      rest = piece.slice(piece.length - over) + (skip ? "\n".repeat(skip) : "") + rest;
      const shorter = piece.slice(0, piece.length - over);
      const a2 = fenceAfter(shorter, open);
      pushChunk(chunks, prefix + shorter + (a2 ? `\n${closingFor(a2)}` : ""));
      open = a2;
      continue;
    }
    pushChunk(chunks, prefix + piece + close);
    open = after;
  }
  return chunks;
}

function pushChunk(chunks: string[], chunk: string): void {
  const trimmed = chunk.replace(/\s+$/, "");
  if (trimmed.trim().length > 0) chunks.push(trimmed);
}
