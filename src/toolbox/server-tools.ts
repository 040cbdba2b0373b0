/**
 * Server tools: tools the Messages API runs itself (web search, web fetch), declared here beside
 * the tools of `tools/` so they have tags, count toward the ten tools of a request and show in
 * `/tools`. The loader adds {@link serverTools} to the toolbox (the tool search tool, which finds
 * deferred tools, is added per request by `ToolBox.requestTools`); the agent loop keeps their
 * blocks valid in the history.
 *
 * Sources: web search https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool ;
 * web fetch https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool ; tool
 * search https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool .
 */
import { cutChars } from "../cut.js";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { Config } from "../config.js";
import { localize } from "../i18n.js";
import { defineTool, ToolError, type Tool } from "./tool.js";

/** The tag of the web tools; chats get it (see `select.ts`), a context that should not search leaves it out. */
export const WEB_TAG = "web";

/** Most pages web fetch may read in one model call (its `max_uses`). */
export const WEB_FETCH_MAX_USES = 3;

/** Most tokens of page text one fetch may put in the context (web fetch's `max_content_tokens`). */
export const WEB_FETCH_MAX_CONTENT_TOKENS = 20_000;

/**
 * The city of web search's `user_location` (the API localises results with it). The API wants
 * a city name in English; the bot's default region is Taiwan.
 */
export const WEB_SEARCH_CITY = "Taipei";

const FILE = fileURLToPath(import.meta.url);
const SOURCE = "the Messages API (server tool)";

/** What `run` says if a server tool is ever called as a tool of the bot (the API never does so). */
function notHere(name: string): never {
  throw new ToolError(
    `${name} is run by the Messages API itself, not by the bot; it cannot be called as a tool of the bot.`,
  );
}

/** `text` on one line, at most `max` code points (ending with `…` when cut). */
function short(text: string, max = 50): string {
  return cutChars(text.replace(/\s+/g, " ").trim(), max);
}

/**
 * The server tools `config` turns on, as tools of the toolbox: `web_search` (`WEB_SEARCH=on`,
 * `web_search_20250305` with `max_uses` = `WEB_SEARCH_MAX_USES` and an approximate location in
 * Taiwan in `TIMEZONE`) and `web_fetch` (`WEB_FETCH=on`, `web_fetch_20250910` with citations on
 * and a bound on the page text). Both are tagged {@link WEB_TAG}. Web search is loaded in every
 * request; web fetch is deferred (`defer_loading: true`, found with the tool search tool, like a
 * tool of `tools/` marked `deferred: true`), so turning it on never adds a tool in front of the model.
 */
export function serverTools(config: Config): Tool[] {
  const tools: Tool[] = [];
  if (config.WEB_SEARCH === "on") {
    const webSearch = {
      ...defineTool({
        name: "web_search",
        description:
          "Search the web for current information (news, opening hours, events, prices, schedules); the answer cites its sources. Run by the Messages API.",
        tags: [WEB_TAG],
        readOnly: true,
        outside: true,
        title: { "zh-TW": "網頁搜尋", en: "Web search" },
        summary: {
          "zh-TW": "上網查最新消息、營業時間、活動等，回答附上可點的來源。",
          en: "Searches the web for current information; answers end with their sources as links.",
        },
        input: z.object({ query: z.string() }),
        source: SOURCE,
        server: {
          definition: {
            type: "web_search_20250305",
            name: "web_search",
            max_uses: config.WEB_SEARCH_MAX_USES,
            user_location: { type: "approximate", city: WEB_SEARCH_CITY, country: "TW", timezone: config.TIMEZONE },
          },
          icon: "🔎",
        },
        activity: ({ query }, locale) =>
          localize(locale, { "zh-TW": "搜尋：{query}", en: "Searching: {query}" }, { query: short(query) }),
        run: () => notHere("web_search"),
      }),
      file: FILE,
    };
    tools.push(webSearch as unknown as Tool);
  }
  if (config.WEB_FETCH === "on") {
    const webFetch = {
      ...defineTool({
        name: "web_fetch",
        description:
          "Read a web page or PDF the user linked (or one found by web search); the answer cites it. Run by the Messages API.",
        tags: [WEB_TAG],
        // Needed only in turns with a link: found with tool search, so turning it on adds no tool
        // in front of the model (the shipped tools, web search and memory already make ten).
        deferred: true,
        readOnly: true,
        outside: true,
        title: { "zh-TW": "讀取網頁", en: "Web page reader" },
        summary: { "zh-TW": "讀取你貼的網頁或 PDF。", en: "Reads a web page or PDF you linked." },
        input: z.object({ url: z.string() }),
        source: SOURCE,
        server: {
          definition: {
            type: "web_fetch_20250910",
            name: "web_fetch",
            max_uses: WEB_FETCH_MAX_USES,
            citations: { enabled: true },
            max_content_tokens: WEB_FETCH_MAX_CONTENT_TOKENS,
          },
          icon: "🌐",
        },
        activity: ({ url }, locale) =>
          localize(locale, { "zh-TW": "讀取網頁：{url}", en: "Reading: {url}" }, { url: short(url) }),
        run: () => notHere("web_fetch"),
      }),
      file: FILE,
    };
    tools.push(webFetch as unknown as Tool);
  }
  return tools;
}
