/**
 * The bot's commands on Telegram: the platform-neutral catalogue (`src/commands/catalog.ts`)
 * exposed as the command menu, registered with `setMyCommands` at start-up
 * (https://core.telegram.org/bots/api#setmycommands): `command` is 1-32 of `a-z 0-9 _`, the
 * description 1-256 characters. Admin commands work but stay out of the menu everyone sees.
 */
import type { BotCommand } from "grammy/types";
import { commandsFor, findCommand } from "../../src/commands/catalog.js";
import { localize, type Locale } from "../../src/i18n.js";

/** True when `name` is a command of the catalogue on Telegram (answered by the adapter, without the queue). */
export function isInstantCommand(name: string): boolean {
  return findCommand(name, "telegram") !== undefined;
}

/** The command menu in `locale`: every command of the catalogue on Telegram except the admin ones. */
export function botCommands(locale: Locale): BotCommand[] {
  return commandsFor("telegram")
    .filter((c) => c.access !== "admin")
    .map((c) => ({ command: c.name, description: localize(locale, c.description) }));
}
