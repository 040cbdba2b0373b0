/**
 * Sources of an answer that used web search: the pages its text cites, shown once each as
 * numbered links at its end, with the numbers after the cited parts. Only URLs of the answer's
 * own citations (`web_search_result_location`) become sources: a URL the model merely wrote is
 * never presented as one.
 *
 * A title is the page's own words, so it may claim another site (`臺灣銀行 bank.gov.tw 官方網站` on
 * another domain) or reorder itself with bidi controls: each source shows its real host beside
 * the title, as inline code the title cannot imitate (its backticks are escaped), and titles are
 * one plain line (`plainLine`: controls, bidi and zero-width characters removed).
 *
 * The sources are Markdown, like the rest of the answer, so each platform's formatter renders
 * them: `[title](<url>)` is an HTML link on Telegram (`adapters/telegram/html.ts`), and a
 * masked link on Discord whose target in `<…>` shows no embed.
 *
 * Sources: citations https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 * ("inline citations must be made clearly visible and clickable"); CommonMark link
 * destinations in angle brackets https://spec.commonmark.org/0.31.2/#link-destination ;
 * Discord masked links https://support.discord.com/hc/en-us/articles/210298617 .
 */
import type Anthropic from "@anthropic-ai/sdk";
import { localize, type Locale } from "../i18n.js";
import { plainLine } from "../plain-text.js";
import type { Answer } from "./server-blocks.js";

/** One source: a cited page. */
export interface Source {
  url: string;
  /** The page's title as the search result gave it, one plain line; the URL's host when it gave none. */
  title: string;
  /** The URL's host as the browser will open it (an international name in its `xn--` form), lower case. */
  host: string;
}

/** Longest title shown, in code points (longer ones end with `…`). */
export const MAX_SOURCE_TITLE_CHARS = 100;

/** The `http(s)` URL of a web search citation, or undefined for any other citation. */
function citedUrl(citation: Anthropic.Messages.TextCitationParam): string | undefined {
  if (citation.type !== "web_search_result_location") return undefined;
  try {
    const url = new URL(citation.url);
    return url.protocol === "https:" || url.protocol === "http:" ? citation.url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The title to show for a citation: one plain line ({@link plainLine}: no controls, bidi or
 * zero-width characters), at most {@link MAX_SOURCE_TITLE_CHARS}, the host when nothing is left.
 */
function titleOf(citation: Anthropic.Messages.CitationWebSearchResultLocationParam): string {
  const line = plainLine(citation.title ?? "");
  const chars = [...line];
  if (chars.length === 0) return new URL(citation.url).hostname;
  return chars.length > MAX_SOURCE_TITLE_CHARS ? `${chars.slice(0, MAX_SOURCE_TITLE_CHARS - 1).join("")}…` : line;
}

/**
 * The sources cited by `blocks`: each URL once, numbered in the order first cited; citations
 * other than web search results (and URLs that are not `http(s)`) are left out.
 */
export function sourcesOf(blocks: readonly Anthropic.Messages.TextBlockParam[]): Source[] {
  const sources = new Map<string, Source>();
  for (const block of blocks) {
    for (const citation of block.citations ?? []) {
      const url = citedUrl(citation);
      if (url && !sources.has(url))
        sources.set(url, {
          url,
          title: titleOf(citation as Anthropic.Messages.CitationWebSearchResultLocationParam),
          host: new URL(url).hostname,
        });
    }
  }
  return [...sources.values()];
}

/**
 * `text` with the characters escaped that Markdown (CommonMark and Discord's) would read inside
 * a link's text: brackets (which would end the link), emphasis and code marks, `<`/`>`, and `|`
 * (Discord's spoiler), so a title shows as written.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~[\]<>|]/g, "\\$&");
}

/** `url` safe inside `<…>`: the characters that would end or break it percent-encoded. */
function inAngleBrackets(url: string): string {
  return url.replace(/[<>\\\s]/g, (c) => encodeURIComponent(c));
}

/**
 * The answer's text for the user: its blocks joined as the API meant, each cited block followed
 * by the numbers of its sources (`[1][2]`), then the numbered sources as Markdown links, each
 * followed by its host as inline code (`` 1. [Title](<https://www.cna.com.tw/…>) `www.cna.com.tw` ``;
 * not repeated when the title is the host). Without citations, just the text (trimmed).
 */
export function withSources(answer: Answer, locale: Locale): string {
  const sources = sourcesOf(answer.blocks);
  if (sources.length === 0)
    return answer.blocks
      .map((b) => b.text)
      .join(answer.joiner)
      .trim();
  const number = new Map(sources.map((s, i) => [s.url, i + 1]));
  const text = answer.blocks
    .map((block) => markedText(block, number))
    .join(answer.joiner)
    .trim();
  const heading = localize(locale, { "zh-TW": "來源：", en: "Sources:" });
  const list = sources.map(
    (s, i) =>
      `${i + 1}. [${escapeMarkdown(s.title)}](<${inAngleBrackets(s.url)}>)` +
      (s.title === s.host ? "" : ` \`${s.host}\``),
  );
  return `${text}\n\n${heading}\n${list.join("\n")}`;
}

/** Longest title kept in the history's sources note, in code points (longer ones end with `…`). */
export const MAX_HISTORY_TITLE_CHARS = 80;

/** The first line of the sources note kept with a stored answer (see {@link sourcesNote}). */
export const SOURCES_NOTE_HEADING = "[Sources of this answer, numbered as shown to the user:";

/**
 * The compact sources note kept with an answer in the history (issue 38 item 12), so a later turn
 * ("which site said that?") is answered from the history without searching again: one line per
 * source, numbered as the answer showed them (`withSources`), `n. title — url`, the title cut to
 * {@link MAX_HISTORY_TITLE_CHARS}; no page content. About 20 bytes plus the title and URL per
 * source (a typical news page: 100–200 bytes). Undefined when there are no sources.
 */
export function sourcesNote(sources: readonly Source[]): string | undefined {
  if (sources.length === 0) return undefined;
  const lines = sources.map((s, i) => {
    const chars = [...s.title];
    const title =
      chars.length > MAX_HISTORY_TITLE_CHARS ? `${chars.slice(0, MAX_HISTORY_TITLE_CHARS - 1).join("")}…` : s.title;
    return `${i + 1}. ${title} — ${s.url}`;
  });
  return `${SOURCES_NOTE_HEADING}\n${lines.join("\n")}]`;
}

/**
 * `block`'s text followed by the numbers of the sources it cites (`[1][2]`, as {@link withSources}
 * shows them), `number` mapping a source's URL to its number; the text alone when it cites none.
 */
export function markedText(block: Anthropic.Messages.TextBlockParam, number: ReadonlyMap<string, number>): string {
  const marks = [...new Set((block.citations ?? []).flatMap((c) => number.get(citedUrl(c) ?? "") ?? []))].sort(
    (a, b) => a - b,
  );
  if (marks.length === 0) return block.text;
  const body = block.text.trimEnd();
  return `${body} ${marks.map((n) => `[${n}]`).join("")}${block.text.slice(body.length)}`;
}
