/**
 * A command (`/tools`, `/help`, `/reset`, `/usage`, `/approve`, `/enable`, `/disable` …), defined once
 * and platform-neutral, the way tools are: a name, a description, who may run it, an optional
 * argument, and a handler that returns the reply text (Markdown). Each adapter only exposes the
 * catalogue (`catalog.ts`): Telegram `setMyCommands` + handlers, Discord slash commands, the console.
 */
import type { AccessGate } from "../access/gate.js";
import type { Config } from "../config.js";
import type { Locale, Localized } from "../i18n.js";
import type { Logger } from "../log.js";
import type { ConversationRef, Platform } from "../queue/incoming.js";
import type { ToolBox } from "../toolbox/toolbox.js";

/**
 * Who may run a command:
 * - `everyone`: anyone the access policy serves in that chat;
 * - `group-admin`: in a group only its administrators (Telegram `getChatMember` creator or
 *   administrator; Discord Manage Messages in the channel) and bot admins; in a DM anyone served;
 * - `admin`: bot admins only (`ADMIN_USERS`), in any chat, even one not enabled.
 */
export type CommandAccess = "everyone" | "group-admin" | "admin";

/** One use of a command, as an adapter reports it. */
export interface CommandInvocation {
  /** The command's name, lower case, without `/`. */
  name: string;
  /** The text after the command, trimmed (`""` when none). */
  args: string;
  platform: Platform;
  chatId: string;
  chatKind: "dm" | "group";
  /** Telegram topic of the message, when in one. */
  topicId?: string | undefined;
  /** Discord guild of a server channel. */
  guildId?: string | undefined;
  userId: string;
  userName: string;
  locale: Locale;
  /**
   * The language of the person's app when the platform tells it and `locale` does not follow it
   * (Telegram's `language_code` through `clientLocale` of `src/i18n.ts`): what a stranger, who has
   * no `/settings`, is answered in. Absent: `locale`.
   */
  clientLocale?: Locale | undefined;
  /** How to address the bot in a group (`@mybot`), for `/help`. */
  mention?: string | undefined;
  /**
   * Whether the user administers this group: Telegram `getChatMember` status `creator` or
   * `administrator`; Discord the Manage Messages permission in the channel. Asked only for
   * `group-admin` commands in groups; false on any error.
   */
  isGroupAdmin?: () => Promise<boolean>;
  /**
   * Whether the bot receives this group's messages that do not address it (Telegram: `getMe`'s
   * `can_read_all_group_messages`, false while privacy mode is on); absent = it does. Asked only
   * when a group's replies are set to `all`.
   */
  readsAllGroupMessages?: () => Promise<boolean>;
}

/**
 * What every command may use, built once per adapter process (`src/app.ts`). A feature's commands
 * get the feature's own state besides (`FeatureCommand` of `src/feature.ts`): nothing here is
 * per feature.
 */
export interface CommandServices {
  config: Config;
  log: Logger;
  /** The toolbox offered in a chat of this kind. */
  toolboxFor(chat: { platform: Platform; chatKind: "dm" | "group" }): ToolBox;
  /**
   * Forgets a conversation (`/reset`: `src/conversations/reset.ts`).
   * @returns the features' lines about what the reset closed (`Started.beforeReset` of
   *   `src/feature.ts`: a pending confirmation whose prompt cannot say it), for the reply to add
   *   after its own, in the asker's language; empty when none.
   * @throws when Redis is unreachable.
   */
  resetConversation(conversation: ConversationRef): Promise<Localized[]>;
  /** Access policy, grants, pairing codes and usage. */
  gate: AccessGate;
  /**
   * Sends `text` to a user's DM on `platform` (e.g. "you are in" after `/approve`).
   * @throws when the platform is not configured in this process or the send fails.
   */
  notify(platform: string, chatId: string, userId: string, text: string): Promise<void>;
  /**
   * The language set in the conversation (`/settings`), or undefined when none is set.
   * @throws when it cannot be read (the runner then uses the adapter's locale).
   */
  languageOf(conversation: ConversationRef): Promise<Locale | undefined>;
}

/**
 * A reply with buttons: Telegram inline keyboard (one button per row), Discord action rows (at most
 * 25 buttons). `data` is the button's `callback_data` / `custom_id` (at most 64 bytes).
 */
export interface CommandReply {
  /** Markdown. */
  text: string;
  buttons?: { label: string; data: string }[];
  /**
   * For the terminal chat, which has no buttons: the reply is a yes-or-no question, and the next
   * line typed there, when it is `y` or `n`, answers it as a press on the button whose data is
   * `yes` or `no` (`/forget`'s "erase everything?"); any other line drops the question.
   */
  typed?: { yes: string; no: string };
}

/** A command's optional argument (Discord: a string option; Telegram and console: the text after the name). */
export interface CommandOption {
  /** Discord option name: 1-32 of `a-z 0-9 _ -`. */
  name: string;
  description: Localized;
  required: boolean;
  /** Allowed values (Discord shows them as choices; at most 25). */
  choices?: (services: CommandServices) => string[];
}

/** A command; see the module comment. */
export interface Command {
  /** 1-32 of `a-z 0-9 _` (the intersection of Telegram's and Discord's rules). */
  name: string;
  /** One line, at most 100 characters (Discord's limit; Telegram allows 256). */
  description: Localized;
  access: CommandAccess;
  option?: CommandOption;
  /** Platforms that expose it; default all. */
  platforms?: Platform[];
  /**
   * The reply, as Markdown, or a {@link CommandReply} with buttons. Throwing is answered with a short "try again" (and logged).
   */
  run(invocation: CommandInvocation, services: CommandServices): Promise<string | CommandReply> | string | CommandReply;
}
