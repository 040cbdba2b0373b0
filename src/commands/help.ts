/**
 * The `/help` (and Telegram `/start`) text shared by every adapter: what the bot does — the titles
 * of the tools actually offered in the chat (a bot without `CWA_API_KEY` never advertises
 * weather), with example requests for the shipped ones — and the commands the asker may use.
 * Markdown, like `formatToolList`'s output.
 */
import { localize, type Locale, type Localized } from "../i18n.js";
import type { Tool } from "../toolbox/tool.js";
import type { ToolBox } from "../toolbox/toolbox.js";

/** One example request per shipped tool, in the order they are shown. */
const EXAMPLES: Record<string, Localized> = {
  get_weather: { "zh-TW": "台北明天會下雨嗎？", en: "Will it rain in Taipei tomorrow?" },
  get_current_datetime: { "zh-TW": "現在紐約幾點？", en: "What time is it in New York?" },
  add_todo: { "zh-TW": "幫我記下：星期五前繳電話費", en: "Add a todo: pay the phone bill by Friday" },
  list_todos: { "zh-TW": "我的待辦清單有什麼？", en: "What is on my todo list?" },
  set_reminder: { "zh-TW": "明天早上 8 點提醒我繳電費", en: "Remind me at 8 tomorrow morning to pay the power bill" },
  calculate: { "zh-TW": "(1299 × 3) 打八五折是多少？", en: "What is 15% off 1299 × 3?" },
};

/**
 * The tools in the order `/tools` shows them: by tag (sorted), each tool under its first tag.
 * A tool whose first tag is not offered here still appears, after the others.
 */
function inListingOrder(toolbox: ToolBox): Tool[] {
  const tags = toolbox.tags();
  const rank = (tool: Tool) => (tool.tags[0] === undefined ? tags.length : tags.indexOf(tool.tags[0]));
  return toolbox.list().sort((a, b) => rank(a) - rank(b));
}

/** A command line of the help text. */
export interface HelpCommand {
  name: string;
  description: string;
  /** The argument shown after the name, e.g. `<tag>`. */
  arg?: string;
}

/**
 * The help text in `locale`.
 *
 * @param locale - the bot's locale (`BOT_LOCALE`).
 * @param options.toolbox - the tools offered in this chat; only they are described, by their
 *   `title` in `locale` (a tool without one, e.g. an MCP tool, by its name).
 * @param options.commands - the commands to list (name, description), in order.
 * @param options.groupHint - how to address the bot in a group (e.g. `@mybot`); omitted → no group line.
 * @returns Markdown text; never throws.
 */
export function formatHelp(
  locale: Locale,
  options: { toolbox: ToolBox; commands: HelpCommand[]; groupHint?: string },
): string {
  const names = options.toolbox.names();
  const sep = locale === "zh-TW" ? "、" : ", ";
  const whats = [
    ...new Set(
      inListingOrder(options.toolbox).map((tool) => (tool.title ? localize(locale, tool.title) : `\`${tool.name}\``)),
    ),
  ];
  const intro =
    whats.length === 0
      ? localize(locale, {
          "zh-TW": "嗨！我是 AI 助理，這個聊天目前沒有可用的工具，但你仍然可以直接問我問題。",
          en: "Hi! I am an AI assistant. No tools are available in this chat, but you can still ask me things.",
        })
      : localize(
          locale,
          {
            "zh-TW": "嗨！我是會使用工具的 AI 助理，可以幫你：{what}。直接用中文或英文問我就好，例如：",
            en: "Hi! I am an AI assistant that uses tools: {what}. Just ask in English or Chinese, for example:",
          },
          { what: whats.join(sep) },
        );
  const examples = Object.keys(EXAMPLES)
    .filter((n) => names.includes(n))
    .map((n) => `- ${localize(locale, EXAMPLES[n]!)}`)
    .join("\n");
  const heading = localize(locale, { "zh-TW": "指令：", en: "Commands:" });
  const commands = options.commands.map((c) => `- /${c.name}${c.arg ? ` ${c.arg}` : ""} — ${c.description}`).join("\n");
  const group = options.groupHint ? `\n\n${localize(locale, GROUP_HINT, { who: options.groupHint })}` : "";
  return `${intro}${examples ? `\n\n${examples}` : ""}\n\n${heading}\n${commands}${group}`;
}

/** The last line of `/help` in a group: how to address the bot there. */
const GROUP_HINT = {
  "zh-TW": "在群組裡，請提及 {who} 或回覆我的訊息。",
  en: "In groups, mention {who} or reply to one of my messages.",
};
