/**
 * Running a command for an adapter: the access policy first (a stranger gets what the gate says
 * to strangers: a pairing code, one note a day, or silence), then who may run it
 * ({@link CommandAccess}), then its handler. Commands are instant: no queue, no model call.
 */
import { isAdmin } from "../access/policy.js";
import { localize, type Locale } from "../i18n.js";
import { ADMIN_ONLY, CORE_COMMANDS, findCommand, GROUP_ADMIN_ONLY, listedCommands } from "./catalog.js";
import type { Command, CommandInvocation, CommandReply, CommandServices } from "./command.js";
import { conversationOf, type ConversationRef } from "../queue/incoming.js";

/** The short "try again" of a command that failed (Redis unreachable…). */
const TRY_AGAIN = {
  "zh-TW": "抱歉，現在無法處理這個指令，請稍後再試一次。",
  en: "Sorry, I could not do that right now. Please try again in a moment.",
};

/**
 * "unknown command" with the commands of `platform`: the same list as `/help` ({@link listedCommands};
 * admin commands when `admin`), then `extra` (e.g. the console's `/quit`). An empty `name` (a bare `/`)
 * gets the list alone.
 */
export function unknownCommand(
  locale: Locale,
  name: string,
  platform: string,
  admin: boolean,
  extra: string[] = [],
): string {
  const names = [...listedCommands(platform, admin).map((c) => `/${c.name}`), ...extra];
  if (name === "")
    return localize(locale, { "zh-TW": "可用的指令：{list}", en: "Commands: {list}" }, { list: names.join(" ") });
  return localize(
    locale,
    { "zh-TW": "不認得的指令 /{name}。可用的指令：{list}", en: "Unknown command /{name}. Commands: {list}" },
    { name: name.slice(0, 32), list: names.join(" ") },
  );
}

/** The answer to a command of a feature that is not started in this process. */
const NOT_HERE = {
  "zh-TW": "這裡無法使用這個指令。",
  en: "This command is not available here.",
};

/** Runs commands; see the module comment. */
export class CommandRunner {
  readonly services: CommandServices;
  readonly #features: ReadonlyMap<string, Command>;

  /**
   * @param features - the started features' commands, bound to their state (`RunningFeatures.commands`
   *   of `src/features.ts`); a feature's command not among them is answered "not available here".
   */
  constructor(services: CommandServices, features: ReadonlyMap<string, Command> = new Map()) {
    this.services = services;
    this.#features = features;
  }

  /**
   * Runs a command.
   * @returns the reply (Markdown), or undefined when the bot stays silent (a stranger in a group
   *   that is not enabled). An unknown name returns "unknown command" with the list, after the
   *   access gate (a stranger gets the gate's answer, as for a known command). Never throws.
   */
  async run(invocation: CommandInvocation): Promise<string | undefined> {
    return (await this.runReply(invocation))?.text;
  }

  /**
   * Like {@link run}, keeping the buttons of a command that has some (`/reminders`).
   * @returns the reply, or undefined when the bot stays silent. Never throws.
   */
  async runReply(invocation: CommandInvocation): Promise<CommandReply | undefined> {
    const reply = await this.#run(invocation);
    return typeof reply === "string" ? { text: reply } : reply;
  }

  /** The language set in the conversation (`/settings`), or undefined (none set, Redis unreachable). */
  async languageOf(conversation: ConversationRef): Promise<Locale | undefined> {
    return this.services.languageOf(conversationOf(conversation)).catch((error: unknown) => {
      this.services.log.warn({ err: error }, "could not read the conversation's language; using the default");
      return undefined;
    });
  }

  /**
   * The language of the bot's own words in `conversation`: the language set there, else `fallback`
   * (the adapter's, `BOT_LOCALE`). A Redis read (two in a Telegram topic): ask it when such words
   * are about to be sent, not for every message. Never throws (an unreadable setting is `fallback`).
   */
  async localeOf(conversation: ConversationRef, fallback: Locale): Promise<Locale> {
    return (await this.languageOf(conversation)) ?? fallback;
  }

  async #run(asked: CommandInvocation): Promise<string | CommandReply | undefined> {
    const { config, log, gate } = this.services;
    // Replies are in the conversation's language when one is set there (`/settings`).
    const set = await this.languageOf(asked);
    const locale = set ?? asked.locale;
    const invocation = { ...asked, locale };
    const command = findCommand(invocation.name, invocation.platform);
    try {
      const admin = isAdmin(config, invocation);
      if (!command) {
        // A stranger is told what the gate tells strangers (a known command's answer), not the list.
        if (!admin) {
          const verdict = await gate.check({ ...invocation, locale: set ?? asked.clientLocale ?? asked.locale });
          if (!verdict.allowed) return verdict.answer;
        }
        return unknownCommand(locale, invocation.name, invocation.platform, admin);
      }
      if (command.access === "admin") {
        if (!admin) return localize(locale, ADMIN_ONLY);
      } else {
        // A stranger has no conversation language: the app's, when the platform told it.
        const verdict = await gate.check({ ...invocation, locale: set ?? asked.clientLocale ?? asked.locale });
        if (!verdict.allowed) return verdict.answer;
        if (
          command.access === "group-admin" &&
          invocation.chatKind === "group" &&
          !admin &&
          !(await invocation.isGroupAdmin?.().catch(() => false))
        ) {
          return localize(locale, GROUP_ADMIN_ONLY);
        }
      }
      const run = CORE_COMMANDS.get(command.name) ?? this.#features.get(command.name);
      if (!run) return localize(locale, NOT_HERE);
      return await run.run(invocation, this.services);
    } catch (error) {
      log.error(
        { err: error, command: invocation.name, platform: invocation.platform, chatId: invocation.chatId },
        `/${invocation.name} failed`,
      );
      return localize(locale, TRY_AGAIN);
    }
  }
}
