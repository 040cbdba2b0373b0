/**
 * Running a command for an adapter: the access policy first (a stranger gets what the gate says
 * to strangers: a pairing code, one note a day, or silence), then who may run it
 * ({@link CommandAccess}), then its handler. Commands are instant: no queue, no model call.
 */
import { isAdmin } from "../access/policy.js";
import { localize, STOP_TEXT, type Locale } from "../i18n.js";
import { pressStopButton, type StopPress } from "../stop/commands.js";
import { ADMIN_ONLY, findCommand, GROUP_ADMIN_ONLY, listedCommands } from "./catalog.js";
import type { CommandInvocation, CommandReply, CommandServices } from "./command.js";
import { MEMORY_TEXT, pressMemoryButton, scopeOfAsker, type MemoryPress, type MemoryPressAnswer } from "./memory.js";
import {
  PERMISSION_TEXT,
  pressPermissionButton,
  type PermissionPress,
  type PermissionPressAnswer,
} from "./permissions.js";
import type { TaskPress, TaskPressAnswer } from "../tasks/actions.js";
import { pressSettingsButton, SETTINGS_TEXT, type SettingsAsker, type SettingsPressAnswer } from "./settings.js";
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

/** Runs commands; see the module comment. */
export class CommandRunner {
  readonly services: CommandServices;

  constructor(services: CommandServices) {
    this.services = services;
  }

  /**
   * Runs a command.
   * @returns the reply (Markdown), or undefined when the bot stays silent (a stranger in a group
   *   that is not enabled). An unknown name returns "unknown command" with the list. Never throws.
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

  /**
   * A press on a `/permissions` revoke button (`pm:…` data; see `permissions.ts`), answered in
   * `locale`: only the owner's press revokes, their grant in the pressed message's conversation.
   * @returns the notice for the presser and whether a grant was revoked. Never throws (a Redis
   *   failure is logged and answered with "try again").
   */
  async pressPermission(press: PermissionPress & { locale: Locale }): Promise<PermissionPressAnswer> {
    const { grants, log } = this.services;
    if (!grants) return { notice: localize(press.locale, PERMISSION_TEXT.unavailable), revoked: false };
    try {
      return await pressPermissionButton(press, grants, press.locale);
    } catch (error) {
      log.error({ err: error, platform: press.platform, chatId: press.chatId }, "/permissions revoke button failed");
      return { notice: localize(press.locale, PERMISSION_TEXT.tryAgain), revoked: false };
    }
  }

  /**
   * A press on a scheduled task's button (`tk:…` data: `/tasks` pause / resume / cancel, the
   * resume button of a paused task's notice): only the owner's press counts.
   * @returns the notice and whether the task changed. Never throws (a Redis failure is logged and
   *   answered with "try again").
   */
  async pressTask(press: TaskPress): Promise<TaskPressAnswer> {
    const { tasks, log } = this.services;
    if (!tasks)
      return {
        notice: localize(press.locale, {
          "zh-TW": "這裡沒有排程任務功能。",
          en: "Scheduled tasks are not available here.",
        }),
        changed: false,
      };
    try {
      return await tasks.press({ ...press, admin: isAdmin(this.services.config, press) });
    } catch (error) {
      log.error({ err: error, platform: press.platform }, "scheduled task button failed");
      return { notice: localize(press.locale, TRY_AGAIN), changed: false };
    }
  }

  /**
   * A press on a settings button (`st:…` data; see `settings.ts`), answered in the conversation's
   * language: changes the setting only when the presser may change it there.
   * @returns the notice for the presser, and the listing after a change. Never throws (a Redis
   *   failure is logged and answered with "try again").
   */
  async pressSettings(press: SettingsAsker & { data: string }): Promise<SettingsPressAnswer & { failed?: boolean }> {
    const { config, settings, log } = this.services;
    const locale = (await this.languageOf(press)) ?? press.locale;
    if (!settings) return { notice: localize(locale, SETTINGS_TEXT.gone), changed: false };
    try {
      const answer = await pressSettingsButton({ ...press, locale }, press.data, { config, settings });
      if (answer.changed)
        log.info(
          {
            platform: press.platform,
            chatId: press.chatId,
            topicId: press.topicId,
            by: press.userId,
            button: press.data.slice(0, 5),
          },
          "conversation settings changed",
        );
      return answer;
    } catch (error) {
      log.error({ err: error, platform: press.platform, chatId: press.chatId }, "settings button failed");
      return { notice: localize(locale, PERMISSION_TEXT.tryAgain), changed: false, failed: true };
    }
  }

  /**
   * A press on a live answer's Stop button (`sp:…` data; see `src/stop/`), answered in the
   * conversation's language: stops the answer when the presser asked or administers the group.
   * @returns the notice for the presser. Never throws (a Redis failure is logged and answered with "try again").
   */
  async pressStop(press: StopPress): Promise<{ notice: string; failed?: boolean }> {
    const locale = (await this.languageOf(press)) ?? press.locale;
    try {
      return { notice: await pressStopButton({ ...press, locale }, this.services) };
    } catch (error) {
      this.services.log.error({ err: error, platform: press.platform, chatId: press.chatId }, "Stop button failed");
      return { notice: localize(locale, STOP_TEXT.failed), failed: true };
    }
  }

  /** The language set in the conversation (`/settings`), or undefined (none set, no store, Redis unreachable). */
  async languageOf(conversation: ConversationRef): Promise<Locale | undefined> {
    return this.services.settings?.language(conversationOf(conversation)).catch((error: unknown) => {
      this.services.log.warn({ err: error }, "could not read the conversation's language; using the default");
      return undefined;
    });
  }

  /**
   * A press on a `/memory` delete button (`mm:…` data; see `memory.ts`), answered in `press.locale`:
   * in a group only its administrators and bot admins may delete.
   * @returns the notice, and whether a file or everything was deleted. Never throws (a Redis failure
   *   is logged and answered with "try again").
   */
  async pressMemory(press: Omit<MemoryPress, "admin">): Promise<MemoryPressAnswer> {
    const { memory, log, config } = this.services;
    if (!memory) return { notice: localize(press.locale, MEMORY_TEXT.unavailable) };
    try {
      const answer = await pressMemoryButton({ ...press, admin: isAdmin(config, press) }, memory);
      if (answer.deletedFile || answer.closeText)
        log.info(
          { scope: scopeOfAsker(press), by: `${press.platform}:${press.userId}`, all: answer.closeText !== undefined },
          "memory deleted (/memory button)",
        );
      return answer;
    } catch (error) {
      log.error({ err: error, platform: press.platform, chatId: press.chatId }, "/memory delete button failed");
      return { notice: localize(press.locale, MEMORY_TEXT.tryAgain) };
    }
  }

  async #run(asked: CommandInvocation): Promise<string | CommandReply | undefined> {
    const { config, log, gate } = this.services;
    // Replies are in the conversation's language when one is set there (`/settings`).
    const locale = (await this.languageOf(asked)) ?? asked.locale;
    const invocation = { ...asked, locale };
    const command = findCommand(invocation.name, invocation.platform);
    if (!command) return unknownCommand(locale, invocation.name, invocation.platform, isAdmin(config, invocation));
    try {
      const admin = isAdmin(config, invocation);
      if (command.access === "admin") {
        if (!admin) return localize(locale, ADMIN_ONLY);
      } else {
        const verdict = await gate.check({ ...invocation });
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
      return await command.run(invocation, this.services);
    } catch (error) {
      log.error(
        { err: error, command: command.name, platform: invocation.platform, chatId: invocation.chatId },
        `/${command.name} failed`,
      );
      return localize(locale, TRY_AGAIN);
    }
  }
}
