/**
 * The bot's command menu, registered with `setMyCommands` at start-up
 * (https://core.telegram.org/bots/api#setmycommands): `command` is 1-32 of `a-z 0-9 _`, the
 * description 1-256 characters.
 */
import type { BotCommand } from "grammy/types";
import { localize, type Locale } from "../../src/i18n.js";

/** Commands answered by the adapter itself, without the queue. */
export const INSTANT_COMMANDS = ["start", "help", "tools", "reset"] as const;
/** One of {@link INSTANT_COMMANDS}. */
export type InstantCommand = (typeof INSTANT_COMMANDS)[number];

/** True when `name` is one of {@link INSTANT_COMMANDS}. */
export function isInstantCommand(name: string): name is InstantCommand {
  return (INSTANT_COMMANDS as readonly string[]).includes(name);
}

/** The command menu in `locale`. */
export function botCommands(locale: Locale): BotCommand[] {
  return [
    { command: "start", description: localize(locale, { "zh-TW": "開始使用與範例", en: "Get started, with examples" }) },
    { command: "help", description: localize(locale, { "zh-TW": "我能做什麼", en: "What I can do" }) },
    { command: "tools", description: localize(locale, { "zh-TW": "列出可用的工具（可加分類）", en: "List the tools (optionally one tag)" }) },
    { command: "reset", description: localize(locale, { "zh-TW": "清除這個聊天的對話記憶", en: "Forget this chat's conversation" }) },
  ];
}
