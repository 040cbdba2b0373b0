/**
 * The model's masked links (`[text](url)`, which Discord renders as links in bot messages) shown
 * honestly: a masked link whose text looks like another address than its target
 * (`[https://bank.example](https://evil.example)`, {@link isMislabelledLink}) becomes its target,
 * written out. Everything else of the Markdown is left as it is; Discord renders it.
 *
 * Masked links are found with marked's lexer (the Markdown Discord speaks is close enough to
 * CommonMark for links): a link inside a code span or block is no link, and is not touched unless
 * the same masked link also stands outside code.
 * Source: https://support.discord.com/hc/en-us/articles/210298617 (Markdown text, masked links).
 */
import { Lexer, type Token, type Tokens } from "marked";
import { isMislabelledLink, labelText } from "../../src/links.js";

/** Every link token of `tokens`, nested ones included. */
function* linksOf(tokens: Token[]): Generator<Tokens.Link> {
  for (const token of tokens) {
    if (token.type === "link") yield token as Tokens.Link;
    if ("tokens" in token && Array.isArray(token.tokens)) yield* linksOf(token.tokens);
    if (token.type === "list") for (const item of (token as Tokens.List).items) yield* linksOf(item.tokens);
    if (token.type === "table") {
      const table = token as Tokens.Table;
      for (const cell of [...table.header, ...table.rows.flat()]) yield* linksOf(cell.tokens);
    }
  }
}

/**
 * `markdown` with every mislabelled masked link replaced by its target (`https://evil.example`);
 * the same string when there is none. Never longer than `markdown` (a target is shorter than the
 * masked link that holds it), so a chunk within Discord's limit stays within it.
 */
export function honestLinks(markdown: string): string {
  if (!markdown.includes("](")) return markdown;
  let out = markdown;
  for (const link of linksOf(new Lexer({ gfm: true }).lex(markdown))) {
    if (!link.raw.startsWith("[")) continue; // an autolink shows its own address
    // In angle brackets when the target holds a space or a parenthesis, so Discord links all of it.
    const target = /[\s()]/.test(link.href) ? `<${link.href}>` : link.href;
    if (isMislabelledLink(labelText(link.tokens), link.href)) out = out.split(link.raw).join(target);
  }
  return out;
}
