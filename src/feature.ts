/**
 * The contract of a feature (issue 37): one folder (`src/<feature>/feature.ts`) and one line in
 * the list (`src/features.ts`). Modelled on grammY's `bot.use(plugin)` (a plug-in adds its own
 * handlers to the bot) and on BullMQ's one processor per queue: a feature says what it adds, and
 * `src/app.ts`, the worker, `src/buttons.ts`, `src/conversations/migrate.ts` and `/reset` walk the
 * list instead of knowing each feature.
 *
 * A feature declares:
 * - its button prefixes and the handler of a press on one of its buttons ({@link FeatureButtons});
 * - the Redis data of a conversation that a conversation move (a Telegram group upgraded to a
 *   supergroup) carries over, and the keys a `/reset` clears ({@link FeatureConversation}).
 *
 * This module holds the contract's types (and the shared "press again" notice); it imports no
 * feature and not the list, so a feature's folder may import it freely.
 */
import type { CommandRunner } from "./commands/runner.js";
import type { Locale, Localized } from "./i18n.js";
import type { Logger } from "./log.js";
import type { ConversationRef } from "./queue/incoming.js";
import type { RedisClient } from "./redis.js";
import type { ApprovalDecider } from "./approvals/decision.js";
import type { ReminderActions } from "./reminders/actions.js";

/** The notice of a press that could not be handled now (Redis unreachable…): press again. */
export const PRESS_AGAIN: Localized = {
  "zh-TW": "暫時無法處理，請稍後再按一次。",
  en: "Could not do that right now; please press again in a moment.",
};

/** A press on one of the bot's buttons, as the adapter saw it. */
export interface ButtonPress extends ConversationRef {
  /** The button's `callback_data` (Telegram), `custom_id` (Discord) or postback data (LINE). */
  data: string;
  /** Who pressed (same id scheme as `IncomingMessage.userId`). */
  userId: string;
  /** The adapter's locale for the notice (`BOT_LOCALE`, a Discord client's language); the conversation's `/settings` language wins. */
  locale: Locale;
  /**
   * Whether the pressed message is in a private chat or a group: a `/memory` delete button deletes
   * in that scope (in a group only for its administrators); without it such a press is refused.
   * Settings buttons need it too (absent: treated as a group).
   */
  chatKind?: "dm" | "group";
  /**
   * Whether the presser administers the group the pressed message is in (Telegram:
   * `getChatMember`). Only asked when an approval requested on behalf of that group (requester
   * `chat:<chatId>`) is pressed by someone else. Optional: without it only the requester decides.
   */
  isGroupAdmin?: () => Promise<boolean>;
  /** Whether the bot receives the group's messages that do not address it (see `CommandInvocation.readsAllGroupMessages`). */
  readsAllGroupMessages?: () => Promise<boolean>;
}

/** A reply with buttons (the same shape as a command's reply with buttons, `CommandReply`). */
export interface ButtonListing {
  /** Markdown. */
  text: string;
  buttons?: { label: string; data: string }[];
}

/** What the adapter shows after a press. */
export interface ButtonAnswer {
  /** The name of the feature whose button it was ({@link Feature.name}); `unknown` for data that is none of the bot's. */
  kind: string;
  /** The short notice for the presser (Telegram `answerCallbackQuery`, at most 200 characters; Discord an ephemeral reply). */
  notice: string;
  /** Edit the pressed message to this plain text, without buttons (a reminder done or snoozed). */
  closeText?: string;
  /** Take the pressed button out of its message (a cancelled `/reminders` entry, a revoked grant). */
  dropButton?: boolean;
  /** Take every button off the pressed message at once (an accepted approval: the worker edits in the outcome). */
  removeButtons?: boolean;
  /** Show this in place of the pressed message, buttons included (a settings listing after a change). */
  replaceWith?: ButtonListing;
  /**
   * True when the press could not be handled now (Redis unreachable): `notice` says to press again; an adapter may
   * word it as its other "try again" answers.
   */
  failed?: boolean;
}

/** What a feature's press handler may use: the adapter side's services. */
export interface PressParts {
  log: Logger;
  /** The command runner (its stores: grants, memory, settings, tasks). */
  commands: CommandRunner;
  /** Checks and records a decision on an approval prompt. */
  approvals: ApprovalDecider;
  /** Reminder buttons; absent where reminders are not wired. */
  reminders?: ReminderActions | undefined;
}

/** A feature's buttons: the data prefixes it owns and what a press on one does. */
export interface FeatureButtons {
  /** Prefixes of the button data the feature owns (e.g. `rm:`); no two features share one. */
  readonly prefixes: readonly string[];
  /**
   * Handles a press on one of the feature's buttons, in `locale` (the conversation's language, else
   * the adapter's). Should not throw: a failure is answered with a "try again" notice and `failed`.
   */
  press(press: ButtonPress, locale: Locale, parts: PressParts): Promise<ButtonAnswer>;
}

/** A store whose data belongs to a conversation: how it moves to a new chat id (`src/conversations/migrate.ts`). */
export interface ConversationStore {
  /** The store, for logs (e.g. `history`). */
  name: string;
  /** The conversation's keys of this store, moved as they are. */
  keys?: (conversation: ConversationRef) => string[];
  /**
   * `append` for a string that writers only append to (a history: whole lines of whole runs): it
   * is taken with `GETDEL` and added after the new key's value when there is one, so nothing
   * written is lost, even by a writer appending meanwhile. Default: the key is moved with
   * `DUMP` / `RESTORE` and a key the new conversation already has is kept as it is.
   */
  merge?: "append";
  /** Moves the rest of the store's data from `from` to `to`; idempotent. */
  move?: (redis: RedisClient, from: ConversationRef, to: ConversationRef) => Promise<void>;
}

/** A feature's data of a conversation. */
export interface FeatureConversation {
  /** Its stores that a conversation move carries to the new chat id. */
  readonly stores?: readonly ConversationStore[];
  /**
   * The keys `/reset` deletes with the history (in the same `MULTI`: they must carry the
   * conversation's hash tag, `conversationTag`, so that they share its Redis Cluster slot).
   */
  reset?(conversation: ConversationRef): string[];
}

/** A feature: see the module comment. */
export interface Feature {
  /** Its name, lower case (`reminders`); also the `kind` of its {@link ButtonAnswer}s. */
  readonly name: string;
  /** Its buttons, if it has any. */
  readonly buttons?: FeatureButtons;
  /** Its data of a conversation, if it keeps any. */
  readonly conversation?: FeatureConversation;
}
