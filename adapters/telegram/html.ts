/**
 * Markdown → Telegram HTML. The model writes Markdown; Telegram's `parse_mode: "HTML"` accepts a
 * small tag subset and wants `<`, `>` and `&` escaped everywhere else.
 *
 * Source: Bot API, "Formatting options" → "HTML style" (https://core.telegram.org/bots/api#html-style):
 * tags `b`, `i`, `u`, `s`, `code`, `pre` (with `<code class="language-x">` inside), `a href`,
 * `blockquote`; entities `&lt;` `&gt;` `&amp;` `&quot;` and numeric ones.
 *
 * Parsing uses `marked`'s lexer; only the rendering to that subset is ours.
 */
import { Lexer, type Token, type Tokens } from "marked";
import { isMislabelledLink, isProxyLink, labelText } from "../../src/links.js";

/** Escapes text for Telegram HTML: `&`, `<`, `>` (and `"` so the result is also safe in attributes). */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const SAFE_LINK = /^(?:https?:\/\/|tg:\/\/|mailto:)/i;
const LANGUAGE = /^[A-Za-z0-9_+#.-]{1,32}$/;

/** One top-level Markdown block with its Telegram HTML rendering. */
export interface RenderedBlock {
  /** The block's Markdown source, trimmed: sent as plain text if Telegram rejects `html`. */
  markdown: string;
  /** The block as Telegram HTML (tags balanced, everything else escaped). */
  html: string;
}

/**
 * Converts Markdown to Telegram HTML, block by block (paragraphs, code blocks, lists, quotes,
 * headings, tables). Empty blocks are dropped. Never throws.
 *
 * Rendering: bold/italic/strikethrough → `b`/`i`/`s`; inline code → `code`; fenced code → `pre` +
 * `code class="language-x"`; links with http(s)/tg/mailto targets → `a href` (a label that looks
 * like another address shows the real target), Telegram proxy links and other targets → their
 * text; lists → `•` / `1.` lines (nested lists indented); headings → bold; quotes → `blockquote`;
 * tables → `pre` with the Markdown source; raw HTML → escaped text.
 */
export function markdownBlocks(markdown: string): RenderedBlock[] {
  const tokens = new Lexer({ gfm: true }).lex(markdown);
  const blocks: RenderedBlock[] = [];
  for (const token of tokens) {
    const html = renderBlock(token, 0, false).trim();
    const source = token.raw.trim();
    if (html === "" || source === "") continue;
    blocks.push({ markdown: source, html });
  }
  return blocks;
}

/** Converts Markdown to one Telegram HTML string (blocks joined by blank lines). Never throws. */
export function markdownToTelegramHtml(markdown: string): string {
  return markdownBlocks(markdown)
    .map((b) => b.html)
    .join("\n\n");
}

function renderBlocks(tokens: Token[], depth: number, quoted: boolean): string {
  return tokens
    .map((t) => renderBlock(t, depth, quoted))
    .filter((s) => s !== "")
    .join("\n");
}

/** `quoted`: inside a blockquote, where Telegram allows no nested blockquote. */
function renderBlock(token: Token, depth: number, quoted = false): string {
  switch (token.type) {
    case "space":
    case "def":
      return "";
    case "paragraph":
      return renderInline((token as Tokens.Paragraph).tokens);
    case "heading":
      return `<b>${renderInline((token as Tokens.Heading).tokens)}</b>`;
    case "code": {
      const code = token as Tokens.Code;
      const lang = (code.lang ?? "").split(/\s/)[0] ?? "";
      const open = LANGUAGE.test(lang) ? `<pre><code class="language-${escapeHtml(lang)}">` : "<pre><code>";
      const text = code.text === "" ? " " : code.text;
      return `${open}${escapeHtml(text)}</code></pre>`;
    }
    case "blockquote": {
      const inner = renderBlocks((token as Tokens.Blockquote).tokens, depth, true);
      return quoted || inner === "" ? inner : `<blockquote>${inner}</blockquote>`;
    }
    case "list":
      return renderList(token as Tokens.List, depth, quoted);
    case "table":
      return `<pre>${escapeHtml(token.raw.trim())}</pre>`;
    case "hr":
      return "——————";
    case "html":
      return escapeHtml(token.raw.trim());
    case "text": {
      const text = token as Tokens.Text;
      return text.tokens ? renderInline(text.tokens) : unlinkProxies(escapeHtml(text.text));
    }
    default:
      return "tokens" in token && Array.isArray(token.tokens) ? renderInline(token.tokens) : escapeHtml(token.raw);
  }
}

function renderList(list: Tokens.List, depth: number, quoted: boolean): string {
  const indent = "  ".repeat(depth);
  const start = typeof list.start === "number" ? list.start : 1;
  return list.items
    .map((item, i) => {
      const bullet = list.ordered ? `${start + i}.` : "•";
      const box = item.task ? (item.checked ? "☑ " : "☐ ") : "";
      const parts = item.tokens
        .filter((t) => t.type !== "checkbox")
        .map((t) =>
          t.type === "list" ? renderList(t as Tokens.List, depth + 1, quoted) : renderBlock(t, depth + 1, quoted),
        )
        .filter((s) => s !== "");
      const [first = "", ...rest] = parts;
      return [`${indent}${bullet} ${box}${first}`, ...rest].join("\n");
    })
    .join("\n");
}

function renderInline(tokens: Token[] | undefined): string {
  if (!tokens) return "";
  return tokens.map(renderInlineToken).join("");
}

function renderInlineToken(token: Token): string {
  switch (token.type) {
    case "text": {
      const text = token as Tokens.Text;
      return text.tokens ? renderInline(text.tokens) : unlinkProxies(escapeHtml(text.text));
    }
    case "escape":
      return escapeHtml((token as Tokens.Escape).text);
    case "strong":
      return wrap("b", renderInline((token as Tokens.Strong).tokens));
    case "em":
      return wrap("i", renderInline((token as Tokens.Em).tokens));
    case "del":
      return wrap("s", renderInline((token as Tokens.Del).tokens));
    case "codespan": {
      const text = (token as Tokens.Codespan).text;
      return text === "" ? "" : `<code>${escapeHtml(text)}</code>`;
    }
    case "br":
      return "\n";
    case "link": {
      const link = token as Tokens.Link;
      return renderLink(link.href, renderInline(link.tokens), labelText(link.tokens));
    }
    case "image": {
      const image = token as Tokens.Image;
      return renderLink(image.href, escapeHtml(image.text), image.text);
    }
    case "checkbox":
      return "";
    case "html":
      return escapeHtml(token.raw);
    default:
      return "tokens" in token && Array.isArray(token.tokens) ? renderInline(token.tokens) : escapeHtml(token.raw);
  }
}

/**
 * A link: `a href` for an http(s), mailto or tg target, showing the real target instead of a label
 * that looks like another address ({@link isMislabelledLink}); a Telegram proxy link
 * ({@link isProxyLink}) or another target is not made clickable: its label, or the address itself
 * as code (so no client turns it into a link).
 *
 * @param label - the label as Telegram HTML ("" for none); `plain` the same as the reader sees it.
 */
function renderLink(href: string, label: string, plain: string): string {
  if (!SAFE_LINK.test(href) || isProxyLink(href))
    return label !== "" && plain.trim() !== href.trim() ? label : `<code>${escapeHtml(href)}</code>`;
  const shown = label === "" || isMislabelledLink(plain, href) ? escapeHtml(href) : label;
  return `<a href="${escapeHtml(href)}">${shown}</a>`;
}

/** Telegram proxy addresses in plain text, as code, so no client makes them clickable. @param html - escaped text. */
function unlinkProxies(html: string): string {
  return html.replace(/\btg:(?:\/\/)?(?:proxy|socks)\b[^\s<]*/gi, (address) => `<code>${address}</code>`);
}

/** Wraps non-empty content in a tag; Telegram rejects nothing here, but an empty tag adds nothing. */
function wrap(tag: string, inner: string): string {
  return inner === "" ? "" : `<${tag}>${inner}</${tag}>`;
}
