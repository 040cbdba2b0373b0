/**
 * Button presses, routed in one place for every adapter: an adapter hands over what was pressed
 * (the button's `callback_data` / `custom_id`, who pressed, where) and renders the answer —
 * a notice for the presser, and what to do with the pressed message (close it, drop the pressed
 * button, remove every button). It never parses a button's data itself.
 *
 * Buttons by prefix:
 * - `ap:<approval id>:y|n|a`: approve, decline, always allow an approval prompt (`ApprovalDecider`);
 *   a request made anonymously on behalf of a Telegram group (requester `chat:<group id>`) may be
 *   decided by any administrator of that group, as the adapter's `isGroupAdmin` says;
 * - `rm:…`: a reminder's done / snooze, a `/reminders` cancel (`ReminderActions`);
 * - `pm:…`: a `/permissions` revoke button (`CommandRunner.pressPermission`);
 * - `tk:…`: a scheduled task's pause / resume / cancel (`/tasks`, a paused task's notice; `CommandRunner.pressTask`);
 * - `st:…`: a `/settings` (`/persona`, `/model`) button (`CommandRunner.pressSettings`): changes
 *   a setting only when the presser may change the conversation's settings;
 * - `mm:…`: a `/memory` delete button (`CommandRunner.pressMemory`);
 * - `sp:…`: a live answer's Stop button (`CommandRunner.pressStop`, `src/stop/`): only the asker
 *   or a group admin stops it; a press after the answer finished only says so.
 */
import type { AdapterContext } from "./adapter.js";
import { decideForGroup, decisionNotice, type DecisionRequest } from "./approvals/decision.js";
import type { CommandReply } from "./commands/command.js";
import { isMemoryButton } from "./commands/memory.js";
import { isPermissionButton } from "./commands/permissions.js";
import { isSettingsButton } from "./commands/settings.js";
import { localize, type Locale } from "./i18n.js";
import type { Logger } from "./log.js";
import type { ConversationRef } from "./queue/incoming.js";
import { ReminderActions } from "./reminders/actions.js";
import { isTaskButton } from "./tasks/format.js";
import { isStopButton } from "./stop/stops.js";

/** The approval id on the buttons of a closed prompt (Discord keeps them, disabled): never a real approval. */
export const CLOSED_APPROVAL_ID = "closed";

/**
 * Approval button data: `ap:<approval id>:y` (approve), `:n` (decline), `:a` (always allow). Ids are at most 90
 * characters (Discord's `custom_id` is at most 100).
 */
const APPROVAL_BUTTON = /^ap:([A-Za-z0-9_-]{1,90}):([yna])$/;

/** Reads approval button data; undefined for anything else. `always` implies `approve`. */
export function parseApprovalButton(
  data: string,
): { approvalId: string; approve: boolean; always: boolean } | undefined {
  const m = APPROVAL_BUTTON.exec(data);
  return m ? { approvalId: m[1]!, approve: m[2] !== "n", always: m[2] === "a" } : undefined;
}

/** Which of the bot's buttons `data` belongs to; `unknown` when none. */
export function buttonKind(data: string): ButtonAnswer["kind"] {
  if (ReminderActions.owns(data)) return "reminder";
  if (isPermissionButton(data)) return "permission";
  if (isTaskButton(data)) return "task";
  if (isSettingsButton(data)) return "settings";
  if (isMemoryButton(data)) return "memory";
  if (isStopButton(data)) return "stop";
  return parseApprovalButton(data) ? "approval" : "unknown";
}

/** A press on one of the bot's buttons, as the adapter saw it. */
export interface ButtonPress extends ConversationRef {
  /** The button's `callback_data` (Telegram) or `custom_id` (Discord). */
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

/** What the adapter shows after a press. */
export interface ButtonAnswer {
  /** Which kind of button it was; `unknown` for data that is none of the bot's. */
  kind: "approval" | "reminder" | "permission" | "task" | "settings" | "memory" | "stop" | "unknown";
  /** The short notice for the presser (Telegram `answerCallbackQuery`, at most 200 characters; Discord an ephemeral reply). */
  notice: string;
  /** Edit the pressed message to this plain text, without buttons (a reminder done or snoozed). */
  closeText?: string;
  /** Take the pressed button out of its message (a cancelled `/reminders` entry, a revoked grant). */
  dropButton?: boolean;
  /** Take every button off the pressed message at once (an accepted approval: the worker edits in the outcome). */
  removeButtons?: boolean;
  /** Show this in place of the pressed message, buttons included (a settings listing after a change). */
  replaceWith?: CommandReply;
  /**
   * True when the press could not be handled now (Redis unreachable): `notice` says to press again; an adapter may
   * word it as its other "try again" answers.
   */
  failed?: boolean;
}

/** The "try again" notice of a press that could not be handled (Redis unreachable…). */
const TRY_AGAIN = {
  "zh-TW": "暫時無法處理，請稍後再按一次。",
  en: "Could not do that right now; please press again in a moment.",
};

/**
 * Handles a press (see the module comment). Never throws: a failure is logged and answered with
 * "try again", and the pressed message is left as it is.
 *
 * @param parts - the adapter's context: its approval decider, reminder actions and command runner.
 */
export async function pressButton(
  parts: Pick<AdapterContext, "approvals" | "reminders" | "commands"> & { log: Logger },
  press: ButtonPress,
): Promise<ButtonAnswer> {
  const { data } = press;
  // The conversation's language (`/settings`), when one is set, else the adapter's: every notice below speaks it.
  const locale = (await parts.commands.languageOf(press)) ?? press.locale;
  const kind = buttonKind(data);
  if (kind === "reminder") {
    if (!parts.reminders)
      return {
        kind: "reminder",
        notice: localize(locale, {
          "zh-TW": "這個提醒已經結束或取消了。",
          en: "This reminder has ended or was cancelled.",
        }),
      };
    try {
      const answer = await parts.reminders.press({
        data,
        platform: press.platform,
        userId: press.userId,
        // A group's admins may cancel any reminder of the group there (issue 39).
        ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
      });
      return {
        kind: "reminder",
        notice: answer.notice,
        ...(answer.closeText ? { closeText: answer.closeText } : {}),
        ...(data.startsWith("rm:c:") && answer.cancelled ? { dropButton: true } : {}),
      };
    } catch (error) {
      parts.log.error({ err: error, platform: press.platform }, "reminder button failed");
      return { kind: "reminder", notice: localize(locale, TRY_AGAIN), failed: true };
    }
  }
  if (kind === "permission") {
    const answer = await parts.commands.pressPermission({
      data,
      platform: press.platform,
      chatId: press.chatId,
      ...(press.topicId ? { topicId: press.topicId } : {}),
      userId: press.userId,
      locale,
    });
    return { kind: "permission", notice: answer.notice, ...(answer.revoked ? { dropButton: true } : {}) };
  }
  if (kind === "task") {
    const answer = await parts.commands.pressTask({
      data,
      platform: press.platform,
      userId: press.userId,
      locale,
      // A group's admins may cancel any task of the group there (issue 39).
      ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
    });
    return { kind: "task", notice: answer.notice, ...(answer.changed ? { dropButton: true } : {}) };
  }
  if (kind === "settings") {
    const answer = await parts.commands.pressSettings({
      data,
      platform: press.platform,
      chatId: press.chatId,
      ...(press.topicId ? { topicId: press.topicId } : {}),
      chatKind: press.chatKind ?? "group",
      userId: press.userId,
      locale,
      isGroupAdmin: press.isGroupAdmin,
      readsAllGroupMessages: press.readsAllGroupMessages,
    });
    return {
      kind: "settings",
      notice: answer.notice,
      ...(answer.listing ? { replaceWith: answer.listing } : {}),
      ...(answer.failed ? { failed: true } : {}),
    };
  }
  if (kind === "stop") {
    const answer = await parts.commands.pressStop({
      data,
      platform: press.platform,
      chatId: press.chatId,
      ...(press.topicId ? { topicId: press.topicId } : {}),
      chatKind: press.chatKind,
      userId: press.userId,
      locale,
      isGroupAdmin: press.isGroupAdmin,
    });
    return { kind: "stop", notice: answer.notice, ...(answer.failed ? { failed: true } : {}) };
  }
  if (kind === "memory") {
    if (!press.chatKind)
      return {
        kind: "memory",
        notice: localize(locale, { "zh-TW": "這裡無法刪除記憶。", en: "Memory cannot be deleted from here." }),
      };
    const answer = await parts.commands.pressMemory({
      data,
      platform: press.platform,
      chatId: press.chatId,
      chatKind: press.chatKind,
      userId: press.userId,
      locale,
      isGroupAdmin: press.isGroupAdmin,
    });
    return {
      kind: "memory",
      notice: answer.notice,
      ...(answer.closeText ? { closeText: answer.closeText } : {}),
      ...(answer.deletedFile ? { dropButton: true } : {}),
    };
  }
  const parsed = parseApprovalButton(data);
  if (!parsed) return { kind: "unknown", notice: decisionNotice({ status: "not_found" }, locale) };
  if (parsed.approvalId === CLOSED_APPROVAL_ID)
    return { kind: "approval", notice: decisionNotice({ status: "not_found" }, locale) };
  try {
    const request: DecisionRequest = {
      approvalId: parsed.approvalId,
      platform: press.platform,
      deciderId: press.userId,
      approve: parsed.approve,
      ...(parsed.always ? { always: true } : {}),
    };
    const result = await decideForGroup(parts.approvals, request, press);
    parts.log.info(
      { via: "button", deciderId: press.userId, status: result.status },
      `approval button: ${result.status}`,
    );
    return {
      kind: "approval",
      notice: decisionNotice(result, locale),
      ...(result.status === "accepted" ? { removeButtons: true } : {}),
    };
  } catch (error) {
    parts.log.error({ err: error, platform: press.platform }, "approval decision failed");
    return { kind: "approval", notice: localize(locale, TRY_AGAIN), failed: true };
  }
}
