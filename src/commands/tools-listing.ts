/**
 * The `/tools` listing shared by every adapter: the tools of a chat grouped by tag, dangerous ones
 * marked ⚠️, each once (under its first tag) with its title and summary for people in the bot's
 * locale, or — for a tool without them (an MCP tool) — its name and the first sentence of its
 * description. The text is Markdown (bold tag names, list items, tool names as inline code), which
 * both Discord and the Telegram HTML converter render.
 */
import { localize, type Locale } from "../i18n.js";
import type { Tool } from "../toolbox/tool.js";
import type { ToolBox } from "../toolbox/toolbox.js";

/** Longest description line shown per tool, in UTF-16 code units (longer ones end with `…`). */
export const TOOL_LINE_MAX = 140;

/** The first sentence of a description's first line, shortened to {@link TOOL_LINE_MAX} units. */
function firstLine(description: string): string {
  const whole = description.trim().split("\n")[0]?.trim() ?? "";
  const line = /^.*?[.!?。！？](?=\s|$)/u.exec(whole)?.[0] ?? whole;
  return line.length > TOOL_LINE_MAX ? `${line.slice(0, TOOL_LINE_MAX - 1).trimEnd()}…` : line;
}

/**
 * One tool as a list item: `⚠️ \`delete_todo\` 刪除待辦 — 永久刪除…` with a title (its name stays:
 * `/permissions <tool>` takes it), `\`name\` — summary` without one. The summary is the tool's
 * `summary` in `locale`, else the first sentence of its description, at most {@link TOOL_LINE_MAX} units.
 */
function toolLine(tool: Tool, locale: Locale): string {
  const title = tool.title ? ` ${localize(locale, tool.title)}` : "";
  const summary = firstLine(tool.summary ? localize(locale, tool.summary) : tool.description);
  return `${tool.dangerous ? "⚠️ " : ""}\`${tool.name}\`${title} — ${summary}`;
}

/**
 * Formats the tools of `toolbox` for `/tools` (all tags) or `/tools <tag>` (one tag).
 *
 * @param toolbox - the tools offered in this chat (`AdapterContext.toolboxFor`).
 * @param locale - locale of the surrounding words.
 * @param tag - one tag to show (case-insensitive); an unknown tag yields a short message listing the tags.
 * @returns Markdown text; never empty, never throws.
 */
export function formatToolList(toolbox: ToolBox, locale: Locale, tag?: string): string {
  const tags = toolbox.tags();
  if (toolbox.size === 0 || tags.length === 0) {
    return localize(locale, { "zh-TW": "這個聊天目前沒有可用的工具。", en: "No tools are available in this chat." });
  }
  const wanted = tag?.trim().toLowerCase();
  const shown = wanted ? tags.filter((t) => t.toLowerCase() === wanted) : tags;
  if (shown.length === 0) {
    return localize(
      locale,
      { "zh-TW": "沒有「{tag}」這個分類。可用的分類：{tags}", en: "There is no tag “{tag}”. Tags: {tags}" },
      { tag: tag!.trim(), tags: tags.map((t) => `\`${t}\``).join(locale === "zh-TW" ? "、" : ", ") },
    );
  }
  // The whole list shows each tool once, under its first tag; `/tools <tag>` shows every tool carrying the tag.
  const inSection = (tool: Tool, t: string) => (wanted ? tool.tags.includes(t) : tool.tags[0] === t);
  const sections = shown
    .map((t) => {
      const lines = toolbox
        .list()
        .filter((tool) => inSection(tool, t))
        .map((tool) => `- ${toolLine(tool, locale)}`);
      return lines.length > 0 ? `**${t}**\n${lines.join("\n")}` : "";
    })
    .filter((section) => section !== "");
  const header = wanted
    ? ""
    : `${localize(locale, { "zh-TW": "可用的工具（依分類）：", en: "Available tools, by tag:" })}\n\n`;
  const footer = toolbox.list().some((t) => t.dangerous && shown.some((s) => t.tags.includes(s)))
    ? `\n\n${localize(locale, { "zh-TW": "⚠️ 表示執行前會先請你確認。", en: "⚠️ means you will be asked to confirm first." })}`
    : "";
  return `${header}${sections.join("\n\n")}${footer}`;
}
