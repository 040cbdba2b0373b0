/**
 * The `/help` (and Telegram `/start`) text shared by every adapter: what the bot does, a few
 * example requests, and the commands. Markdown, like {@link formatToolList}'s output.
 */
import { localize, type Locale } from "../i18n.js";

/**
 * The help text in `locale`.
 *
 * @param locale - the bot's locale (`BOT_LOCALE`).
 * @param options.groupHint - how to address the bot in a group (e.g. `@mybot`); omitted → no group line.
 * @returns Markdown text; never throws.
 */
export function formatHelp(locale: Locale, options: { groupHint?: string } = {}): string {
  const intro = localize(locale, {
    "zh-TW": "嗨！我是會使用工具的 AI 助理：可以查天氣、時間、幫你記待辦事項、計算，還有更多。直接用中文或英文問我就好，例如：",
    en: "Hi! I am an AI assistant that uses tools: weather, time, your todo list, calculations and more. Just ask in English or Chinese, for example:",
  });
  const examples = localize(locale, {
    "zh-TW": "- 台北明天會下雨嗎？\n- 幫我記下：星期五前繳電話費\n- 我的待辦清單有什麼？\n- (1299 × 3) 打八五折是多少？",
    en: "- Will it rain in Taipei tomorrow?\n- Add a todo: pay the phone bill by Friday\n- What is on my todo list?\n- What is 15% off 1299 × 3?",
  });
  const commands = localize(locale, {
    "zh-TW": "指令：\n- /tools 列出可用的工具（/tools 分類名稱 只看一類）\n- /reset 清除這個聊天的對話記憶\n- /help 顯示這段說明",
    en: "Commands:\n- /tools lists the tools (/tools <tag> shows one tag)\n- /reset forgets this chat's conversation\n- /help shows this text",
  });
  const group = options.groupHint
    ? `\n\n${localize(locale, { "zh-TW": "在群組裡，請提及 {who} 或回覆我的訊息。", en: "In groups, mention {who} or reply to one of my messages." }, { who: options.groupHint })}`
    : "";
  return `${intro}\n\n${examples}\n\n${commands}${group}`;
}
