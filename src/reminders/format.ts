/**
 * The words of reminders: one reminder as a line (list_reminders, `/reminders`), the posted text
 * with its lateness, and the button token that names one posted occurrence.
 */
import type { Locale } from "../config.js";
import { localize } from "../i18n.js";
import { markdownLiteral } from "../plain-text.js";
import type { ReminderOwner, Reminder } from "./store.js";
import { durationInWords, monthEndDay, repeatInWords, timeInWords, timeIso } from "./time.js";

/** A posted reminder counts as late (and says so) when it goes out more than this many ms after its time. */
export const LATE_AFTER_MS = 60_000;

/**
 * One reminder as a line: `#3 繳電費 — 2026年12月1日 星期二 08:00（2026-12-01T08:00:00+08:00），每天`
 * (a monthly one on the 29th–31st says that shorter months get it on their last day); a one-off that was posted and
 * awaits done/snooze says so instead of a time.
 * @param options.markdown - the line goes into a Markdown message (`/reminders`): the reminder's
 *   text is written as a literal ({@link markdownLiteral}), so it shows as it was set. Default: plain
 *   (a tool's result for the model).
 */
export function formatReminder(
  reminder: Reminder,
  locale: Locale,
  timeZone: string,
  options: { markdown?: boolean } = {},
): string {
  const text = options.markdown ? markdownLiteral(reminder.text) : reminder.text;
  const repeat = repeatInWords(reminder.repeat, locale, monthEndDay(reminder.repeat, reminder.at, reminder.timezone));
  const todo = reminder.todoId
    ? localize(locale, { "zh-TW": "，待辦 #{id}", en: ", todo #{id}" }, { id: reminder.todoId })
    : "";
  if (reminder.paused)
    return localize(
      locale,
      reminder.paused.by === "operator"
        ? { "zh-TW": "#{id} {text} — 已由機器人管理者暫停", en: "#{id} {text} — paused by the bot's operator" }
        : {
            "zh-TW": "#{id} {text} — 設定的人已離開群組，已暫停",
            en: "#{id} {text} — paused: its owner left the group",
          },
      { id: reminder.id, text },
    );
  if (reminder.next === undefined) {
    return localize(
      locale,
      {
        "zh-TW": "#{id} {text} — 已提醒，等你按完成或稍後提醒{todo}",
        en: "#{id} {text} — posted, waiting for done or snooze{todo}",
      },
      { id: reminder.id, text, todo },
    );
  }
  return localize(
    locale,
    {
      "zh-TW": "#{id} {text} — {words}（{iso}），{repeat}{todo}",
      en: "#{id} {text} — {words} ({iso}), {repeat}{todo}",
    },
    {
      id: reminder.id,
      text,
      words: timeInWords(reminder.next, timeZone, locale),
      iso: timeIso(reminder.next, timeZone),
      repeat,
      todo,
    },
  );
}

/** The posted text: `⏰ <text>`, and when `lateMs` is over {@link LATE_AFTER_MS}, how late and the time it was due. */
export function reminderText(reminder: Reminder, dueAt: number, lateMs: number, locale: Locale): string {
  const text = `⏰ ${reminder.text}`;
  if (lateMs <= LATE_AFTER_MS) return text;
  return `${text}\n${localize(
    locale,
    {
      "zh-TW": "（晚了 {late}：原定 {time}，當時機器人沒有在執行）",
      en: "(late by {late}: it was due {time}, while the bot was not running)",
    },
    { late: durationInWords(lateMs, locale), time: timeInWords(dueAt, reminder.timezone, locale) },
  )}`;
}

const safe = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/**
 * The token of a reminder's buttons: `<userId>.<reminderId>` and, for a posted occurrence,
 * `.<due time in base 36>` (the user id made safe: other characters become `%hh`). At most 58
 * characters for the ids platforms use (Telegram `callback_data` is 64 bytes with `rm:d:`).
 */
export function buttonToken(owner: ReminderOwner, reminderId: number, dueAt?: number): string {
  return `${safe(owner.userId)}.${reminderId}${dueAt === undefined ? "" : `.${dueAt.toString(36)}`}`;
}

/**
 * Which list a cancel button was shown in: `list`, one person's `/reminders` here (`rm:cl:…`);
 * `group`, a group's every reminder shown to its admins (`rm:cg:…`). A cancel button outside a list
 * (a paused reminder's notice, a list of an older version) has none (`rm:c:…`).
 */
export type ReminderListView = "list" | "group";

/**
 * The data of a cancel button in a `/reminders` list: `rm:cl:<token>` (one person's list) or
 * `rm:cg:<token>` (a group's list for its admins); at most 64 bytes for the ids platforms use
 * (Telegram `callback_data`), one more than the `rm:c:` of a button outside a list.
 */
export function listCancelData(view: ReminderListView, owner: ReminderOwner, reminderId: number): string {
  return `rm:c${view === "list" ? "l" : "g"}:${buttonToken(owner, reminderId)}`;
}

/** What a button's data says: the action (`d` done, `s` snooze, `c` cancel), whose reminder, which, and which occurrence. */
export interface ReminderButton {
  action: "d" | "s" | "c";
  userId: string;
  reminderId: number;
  /** Due time of the posted occurrence, ms (done and snooze). */
  dueAt?: number;
  /** The list a cancel button was shown in ({@link listCancelData}); absent outside a list. */
  view?: ReminderListView;
}

/** Reads `rm:<action>[<view>]:<token>`; undefined for anything else (e.g. an approval button). */
export function parseButton(data: string): ReminderButton | undefined {
  const m = /^rm:([dsc])([lg]?):([A-Za-z0-9_%-]{1,40})\.(\d{1,9})(?:\.([0-9a-z]{1,11}))?$/.exec(data);
  if (!m) return undefined;
  let userId: string;
  try {
    userId = decodeURIComponent(m[3]!);
  } catch {
    return undefined;
  }
  const press: ReminderButton = { action: m[1] as ReminderButton["action"], userId, reminderId: Number(m[4]) };
  if (m[5]) press.dueAt = parseInt(m[5], 36);
  if (press.action !== "c" && press.dueAt === undefined) return undefined;
  if (m[2]) {
    // Only a cancel button is shown in a list, and it names no occurrence.
    if (press.action !== "c" || press.dueAt !== undefined) return undefined;
    press.view = m[2] === "l" ? "list" : "group";
  }
  return press;
}
