/**
 * Text the core hands over as plain (an approval prompt's action and the requester's name, a
 * closed prompt, a reminder and its closed text, a notice, a button's notice such as "only **Eve**
 * can decide": see `src/outbound.ts` and `ButtonAnswer.notice`) as Discord
 * message content. Discord renders Markdown in every message, so names and texts people chose (a
 * display name `**Eve**`, a task's instruction `**list my todos**`, a reminder's text) would be
 * formatted, or break the bot's own formatting around them; they are escaped with discord.js's
 * `escapeMarkdown` (https://discord.js.org/docs/packages/formatters/main/escapeMarkdown:Function),
 * which is told to escape headings, lists and masked links too; and what it leaves is escaped here:
 * `<` (Discord shows `<@id>`, `<@&id>`, `<#id>` as mentions, `<t:…>` as a time, `<:name:id>` as an
 * emoji: https://discord.com/developers/docs/reference#message-formatting) and `-#` small text at a
 * line's start. A `> ` quote, how the core shows a value of several lines, stays a quote
 * (escapeMarkdown leaves `>` as it is). Discord drops a backslash before any punctuation.
 */
import { escapeMarkdown } from "discord.js";

/** `text` (plain) as Discord content that shows it as it is; see the module comment. Never throws. */
export function plainContent(text: string): string {
  return escapeMarkdown(text, { heading: true, bulletedList: true, numberedList: true, maskedLink: true })
    .replace(/</g, "\\<")
    .replace(/^( *)-#/gm, "$1\\-#");
}
