/**
 * The `/tools` listing (temporary copy for the Discord adapter).
 *
 * The shared helper `src/commands/tools-listing.ts` belongs to the Telegram adapter's issue and
 * was not on the main branch when this adapter was written; this file has the same name and
 * signature so the lead can replace the import with the shared one.
 */
import { localize, type Locale } from "../../src/i18n.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";

/**
 * The tools of `toolbox` as text, grouped by tag (a tool with several tags appears under each),
 * dangerous tools marked ⚠️, each with the first line of its description.
 *
 * @param tag - only this tag; an unknown tag returns the list of known tags instead.
 * @returns plain text with light Markdown (bold tag names, inline code tool names); never throws.
 */
export function formatToolList(toolbox: ToolBox, locale: Locale, tag?: string): string {
  const tags = toolbox.tags();
  if (toolbox.size === 0) return localize(locale, { "zh-TW": "目前沒有可用的工具。", en: "No tools are available right now." });
  if (tag !== undefined && !tags.includes(tag)) {
    return localize(locale, { "zh-TW": "沒有「{tag}」這個分類。可用的分類：{tags}", en: "There is no tag \"{tag}\". Tags: {tags}" }, { tag, tags: tags.join(", ") });
  }
  const shown = tag === undefined ? tags : [tag];
  const lines: string[] = [localize(locale, { "zh-TW": "我可以使用這些工具（⚠️ 需要你確認才會執行）：", en: "Tools I can use (⚠️ runs only after you confirm):" })];
  for (const t of shown) {
    lines.push("", `**${t}**`);
    for (const tool of toolbox.filterByTag(t).list()) {
      const first = tool.description.split("\n")[0]!.trim();
      lines.push(`• \`${tool.name}\`${tool.dangerous ? " ⚠️" : ""}: ${first}`);
    }
  }
  return lines.join("\n");
}
