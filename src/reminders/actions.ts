/**
 * What the adapters do with reminders: the done / snooze buttons of a posted reminder, the cancel
 * buttons of `/reminders`, and the `/reminders` listing itself. Platform-neutral: an adapter passes
 * the button data and who pressed, and shows the answer (a toast or ephemeral notice, and the
 * posted message edited to `closeText` without buttons).
 *
 * Only the owner's presses count (the owner's id is in the button data), except that a group's
 * administrators (and bot admins) see every reminder of the group in `/reminders` and may cancel
 * them there (issue 39). A posted occurrence takes
 * one press (`SET NX` on its press marker), so a double click snoozes once.
 */
import { listButtonLimit } from "../feature.js";
import { isAdmin } from "../access/policy.js";
import type { RedisClient } from "../redis.js";
import type { Config, Locale } from "../config.js";
import { localize } from "../i18n.js";
import { markdownLiteral } from "../plain-text.js";
import type { Logger } from "../log.js";
import type { ConversationRef } from "../queue/incoming.js";
import { completeTodo } from "../../tools/todo/store.js";
import { formatReminder, listCancelData, parseButton, type ReminderListView } from "./format.js";
import type { ReminderScheduler } from "./schedule.js";
import {
  MARKER_TTL_SECONDS,
  deleteReminder,
  getReminder,
  groupReminders,
  isActive,
  listReminders,
  reminderKeys,
  updateReminder,
  type ReminderOwner,
} from "./store.js";
import { durationInWords, timeInWords } from "./time.js";

/** A button press on a reminder message or a `/reminders` list. */
export interface ReminderPress {
  /** The button's `callback_data` / `custom_id`. */
  data: string;
  /** Who pressed: platform and user id. */
  platform: ConversationRef["platform"];
  userId: string;
  /** The group the pressed message is in (absent in a DM): its admins may cancel its reminders there (issue 39). */
  chatId?: string;
  /** Whether the presser administers that group (asked only for someone else's reminder). */
  isGroupAdmin?: (() => Promise<boolean>) | undefined;
  /** The language of the answer (the pressed message's conversation's); default `BOT_LOCALE`. */
  locale?: Locale;
  /**
   * The conversation the pressed message is in (its chat and topic): a press on a `/reminders`
   * list's button answers with that list as it is now ({@link PressAnswer.listing}). Without it, none.
   */
  place?: { chatId: string; topicId?: string | undefined };
}

/** The answer to a press. */
export interface PressAnswer {
  /** A short notice for the presser (Telegram `answerCallbackQuery` text, at most 200 characters). */
  notice: string;
  /** When set, edit the pressed message to this plain text without buttons. */
  closeText?: string;
  /**
   * True when a cancel button cancelled its reminder: a list's (`listing` then shows the list) or one
   * outside a list (a paused reminder's notice: the adapter drops that button).
   */
  cancelled?: boolean;
  /**
   * The pressed `/reminders` list as it is now (the cancelled reminder gone, the others with their
   * buttons), for the adapter to show in place of the pressed message: set for a press on a list's
   * button (`rm:cl:`, `rm:cg:`, {@link listCancelData}) that cancelled, or, on one person's list,
   * that its owner pressed after the reminder had ended. Absent for a button outside a list.
   */
  listing?: ReminderListing;
}

/** The `/reminders` listing of one person in one conversation: the text and one cancel button per reminder. */
export interface ReminderListing {
  /** Markdown (a command's reply): texts and names people chose are literals in it. */
  text: string;
  /** `label` (e.g. `❌ #3`) and `data` (`rm:c:<token>`, at most 64 bytes). */
  buttons: { label: string; data: string }[];
}

/** Reminder actions the adapters call (see the module comment). */
export class ReminderActions {
  /**
   * @param parts.scheduler - a scheduler on the `reminders` queue (the adapters' own connection and prefix).
   */
  constructor(
    private readonly parts: { config: Config; redis: RedisClient; scheduler: ReminderScheduler; log: Logger },
  ) {}

  /** True when `data` is a reminder button's data (`rm:…`), so the adapter hands the press here. */
  static owns(data: string): boolean {
    return data.startsWith("rm:");
  }

  /**
   * Handles a press. Refuses anyone but the owner; a reminder that no longer exists, or an
   * occurrence pressed before, is said so.
   * @throws when Redis or the queue fails (the adapter answers "try again").
   */
  async press(press: ReminderPress): Promise<PressAnswer> {
    const { redis, scheduler, config } = this.parts;
    const locale = press.locale ?? config.BOT_LOCALE;
    const parsed = parseButton(press.data);
    if (!parsed) return { notice: gone(locale) };
    if (parsed.userId !== press.userId && parsed.action === "c" && press.chatId !== undefined) {
      // A group's admin (or a bot admin) cancelling a reminder of that group, pressed there.
      const owner = { platform: press.platform, userId: parsed.userId };
      const reminder = await getReminder(redis, owner, parsed.reminderId);
      if (
        reminder?.chatKind === "group" &&
        reminder.chatId === press.chatId &&
        (isAdmin(config, press) || (await press.isGroupAdmin?.().catch(() => false)))
      ) {
        await deleteReminder(redis, owner, reminder.id);
        await scheduler.unschedule(owner, reminder);
        this.parts.log.info(
          { reminder: `${owner.platform}:${owner.userId}#${reminder.id}` },
          "reminder cancelled by a group admin",
        );
        return {
          notice: localize(
            locale,
            { "zh-TW": "已取消 {name} 的提醒 #{id}。", en: "Cancelled {name}'s reminder #{id}." },
            { id: reminder.id, name: reminder.userName },
          ),
          cancelled: true,
          ...(await this.#listAfter(parsed.view, owner, press, locale)),
        };
      }
    }
    if (parsed.userId !== press.userId) {
      return {
        notice: localize(locale, {
          "zh-TW": "這是別人的提醒，只有設定提醒的人可以按。",
          en: "This is someone else's reminder: only the person who set it can press these.",
        }),
      };
    }
    const owner = { platform: press.platform, userId: parsed.userId };
    const reminder = await getReminder(redis, owner, parsed.reminderId);
    // The owner's own list, pressed after the reminder ended: the list as it is now.
    if (!reminder)
      return {
        notice: gone(locale),
        ...(parsed.view === "list" ? await this.#listAfter(parsed.view, owner, press, locale) : {}),
      };

    if (parsed.action === "c") {
      await deleteReminder(redis, owner, reminder.id);
      await scheduler.unschedule(owner, reminder);
      this.parts.log.info(
        { reminder: `${owner.platform}:${owner.userId}#${reminder.id}` },
        "reminder cancelled from /reminders",
      );
      return {
        notice: localize(
          locale,
          { "zh-TW": "已取消提醒 #{id}。", en: "Cancelled reminder #{id}." },
          { id: reminder.id },
        ),
        cancelled: true,
        ...(await this.#listAfter(parsed.view, owner, press, locale)),
      };
    }

    const dueAt = parsed.dueAt!;
    const first = await redis.set(
      reminderKeys(owner).pressed(reminder.id, dueAt.toString(36)),
      parsed.action,
      "EX",
      MARKER_TTL_SECONDS,
      "NX",
    );
    if (first !== "OK")
      return {
        notice: localize(locale, { "zh-TW": "這則提醒已經處理過了。", en: "This reminder was handled already." }),
      };

    if (parsed.action === "s") {
      const seconds = config.REMINDER_SNOOZE_SECONDS;
      const next = Date.now() + seconds * 1000;
      await scheduler.snooze(owner, reminder.id, dueAt, next);
      if (!reminder.repeat) await updateReminder(redis, owner, { ...reminder, next, firedAt: undefined });
      const later = durationInWords(seconds * 1000, locale);
      return {
        notice: localize(
          locale,
          { "zh-TW": "好，{later}後再提醒你。", en: "OK, I'll remind you again in {later}." },
          { later },
        ),
        closeText: localize(
          locale,
          { "zh-TW": "💤 {text}（{time} 再提醒）", en: "💤 {text} (again at {time})" },
          { text: reminder.text, time: timeInWords(next, reminder.timezone, locale) },
        ),
      };
    }

    // Done: completes the tied todo, which ends the reminder; a repeat without a todo goes on.
    let todoNote = "";
    if (reminder.todoId) {
      const result = await completeTodo(redis, owner, reminder.todoId);
      if (result.status !== "missing")
        todoNote = localize(
          locale,
          { "zh-TW": "（待辦 #{id} 已完成）", en: " (todo #{id} completed)" },
          { id: reminder.todoId },
        );
    }
    if (reminder.todoId || !reminder.repeat) {
      await deleteReminder(redis, owner, reminder.id);
      await scheduler.unschedule(owner, reminder);
    }
    return {
      notice: localize(locale, { "zh-TW": "已完成！", en: "Done!" }),
      closeText: `✅ ${reminder.text}${todoNote}`,
    };
  }

  /**
   * The `/reminders` listing: the asker's active and paused reminders that were set in this
   * conversation (a paused one marked as such, e.g. paused by the bot's operator in the console),
   * each with a cancel button, in `asker.locale` (the conversation's language; default `BOT_LOCALE`).
   * @throws when Redis fails.
   */
  async listing(
    asker: ConversationRef & {
      userId: string;
      locale?: Locale;
      chatKind?: "dm" | "group";
      isGroupAdmin?: (() => Promise<boolean>) | undefined;
    },
  ): Promise<ReminderListing> {
    const { config } = this.parts;
    const locale = asker.locale ?? config.BOT_LOCALE;
    if (asker.chatKind === "group" && (isAdmin(config, asker) || (await asker.isGroupAdmin?.().catch(() => false))))
      return this.#groupListing(asker, locale);
    return this.#ownListing({ platform: asker.platform, userId: asker.userId }, asker, locale);
  }

  /**
   * The list a press on a list's button (`view`) was on, as it is now, as `{ listing }`; `{}` for a
   * button outside a list or a press without its place.
   */
  async #listAfter(
    view: ReminderListView | undefined,
    owner: ReminderOwner,
    press: ReminderPress,
    locale: Locale,
  ): Promise<{ listing?: ReminderListing }> {
    if (!view || !press.place) return {};
    const { chatId, topicId } = press.place;
    const here = { platform: owner.platform, chatId, ...(topicId ? { topicId } : {}) };
    return {
      listing: view === "group" ? await this.#groupListing(here, locale) : await this.#ownListing(owner, here, locale),
    };
  }

  /** One person's reminders set in this conversation (its chat and topic), each with a cancel button. */
  async #ownListing(owner: ReminderOwner, asker: ConversationRef, locale: Locale): Promise<ReminderListing> {
    const { redis } = this.parts;
    // A paused one is listed too (its line says who paused it: the operator, or that its owner left), so its owner may cancel it.
    const here = (await listReminders(redis, owner)).filter(
      (r) =>
        (isActive(r) || r.paused !== undefined) &&
        r.chatId === asker.chatId &&
        (r.topicId ?? "") === (asker.topicId ?? ""),
    );
    if (here.length === 0) {
      return {
        text: localize(locale, { "zh-TW": "你在這裡沒有設定提醒。", en: "You have no reminders set here." }),
        buttons: [],
      };
    }
    const lines = here.map((r) => formatReminder(r, locale, r.timezone, { markdown: true }));
    const title = localize(locale, { "zh-TW": "你在這裡的提醒：", en: "Your reminders here:" });
    return {
      text: [title, ...lines, ...moreThanButtons(here.length, listButtonLimit(asker.platform), locale)].join("\n"),
      buttons: here.slice(0, listButtonLimit(asker.platform)).map((r) => ({
        label: localize(locale, { "zh-TW": "❌ 取消 #{id}", en: "❌ Cancel #{id}" }, { id: r.id }),
        data: listCancelData("list", owner, r.id),
      })),
    };
  }

  /** Every reminder of the group (any topic, anyone's), for its admins (issue 39): each names its owner, with a cancel button. */
  async #groupListing(asker: ConversationRef, locale: Locale): Promise<ReminderListing> {
    const all = await groupReminders(this.parts.redis, asker.platform, asker.chatId);
    if (all.length === 0)
      return {
        text: localize(locale, { "zh-TW": "這個群組沒有提醒。", en: "This group has no reminders." }),
        buttons: [],
      };
    const title = localize(locale, {
      "zh-TW": "這個群組的所有提醒（管理員檢視）：",
      en: "Every reminder of this group (admin view):",
    });
    const lines = all.map(({ reminder }) =>
      localize(
        locale,
        { "zh-TW": "{line}（{name} 設定）", en: "{line} (set by {name})" },
        {
          line: formatReminder(reminder, locale, reminder.timezone, { markdown: true }),
          name: markdownLiteral(reminder.userName),
        },
      ),
    );
    return {
      text: [title, ...lines, ...moreThanButtons(all.length, listButtonLimit(asker.platform), locale)].join("\n"),
      buttons: all.slice(0, listButtonLimit(asker.platform)).map(({ owner, reminder }) => ({
        label: localize(
          locale,
          { "zh-TW": "❌ 取消 {name} 的 #{id}", en: "❌ Cancel {name}'s #{id}" },
          { id: reminder.id, name: [...reminder.userName].slice(0, 16).join("") },
        ),
        data: listCancelData("group", owner, reminder.id),
      })),
    };
  }
}

/**
 * The line ending a list of `count` reminders when some lack a button (more than `shown`, the
 * platform's {@link listButtonLimit}); none otherwise.
 */
function moreThanButtons(count: number, shown: number, locale: Locale): string[] {
  if (count <= shown) return [];
  return [
    localize(
      locale,
      {
        "zh-TW": "（按鈕只列出前 {n} 個；取消一些之後再傳 /reminders，就會出現其餘的按鈕。）",
        en: "(Buttons for the first {n} only; cancel some and send /reminders again for the rest.)",
      },
      { n: shown },
    ),
  ];
}

function gone(locale: Locale): string {
  return localize(locale, { "zh-TW": "這個提醒已經結束或取消了。", en: "This reminder has ended or was cancelled." });
}
