/**
 * set_reminder: the bot posts `⏰ <text>` at a given time in the chat (and topic) where it was set.
 */
import { z } from "zod";
import { localize, type Localized } from "../src/i18n.js";
import { formatReminder } from "../src/reminders/format.js";
import { reminderSchedulerOf } from "../src/reminders/schedule.js";
import {
  MAX_ACTIVE_REMINDERS,
  MAX_REMINDER_TEXT,
  REPEATS,
  addReminder,
  deleteReminder,
} from "../src/reminders/store.js";
import { placeOf } from "../src/personal-records.js";
import { checkScheduledTime, wallTimeNote } from "../src/reminders/time.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";
import { getTodo, noSuchTodo } from "./todo/store.js";

/** What set_reminder answers: `{line}` is the reminder ({@link formatReminder}). */
export const REMINDER_SET_TEXT: Localized = { "zh-TW": "已設定提醒：{line}", en: "Reminder set: {line}" };

/**
 * The set_reminder tool: `{ text, at, repeat?, todo_id? }` → `已設定提醒：#1 …`. Refused with a
 * ToolError: an `at` that is not ISO 8601, in the past or less than 10 s ahead, more than a year
 * ahead; an empty text (without a todo); an unknown todo; more than 50 active reminders.
 */
export default defineTool({
  name: "set_reminder",
  title: { "zh-TW": "設定提醒", en: "Set a reminder" },
  summary: {
    "zh-TW": "在指定時間於這個聊天提醒你，可以每天、每週或每月重複。",
    en: "Reminds you in this chat at a given time, once or daily, on weekdays, weekly or monthly.",
  },
  description: [
    "Set a reminder: at the given time the bot posts '⏰ <text>' in this chat (mentioning the user in groups), with done and snooze buttons.",
    "Use it when the user asks to be reminded of something at a time ('remind me at 8 tomorrow to pay the bill', '每天早上 7 點提醒我吃藥').",
    "Resolve relative times ('tomorrow', '明天早上') with get_current_datetime first and pass an ISO 8601 date-time.",
    "For a reminder about an existing todo, pass its todo_id: completing the todo then ends the reminder. Not for todos without a time: use add_todo.",
  ].join(" "),
  tags: ["daily", "write"],
  activity: ({ text }, locale) =>
    text
      ? localize(locale, { "zh-TW": "設定提醒：{what}", en: "Setting a reminder: {what}" }, { what: text })
      : localize(locale, { "zh-TW": "設定提醒", en: "Setting a reminder" }),
  input: z.object({
    text: z
      .string()
      .trim()
      .max(MAX_REMINDER_TEXT, { message: `the text is longer than ${MAX_REMINDER_TEXT} characters: shorten it` })
      .default("")
      .describe("What to remind of, short, e.g. 繳電費. May be empty only with todo_id (the todo's title is used)."),
    at: z
      .string()
      .trim()
      .min(1, { message: "give the time as an ISO 8601 date-time, e.g. 2026-12-01T08:00" })
      .max(64)
      .describe(
        "ISO 8601 date-time, e.g. 2026-12-01T08:00 (in the user's time zone when no offset is " +
          "given) or 2026-12-01T08:00+08:00. At least 10 seconds and at most one year ahead. A " +
          "time a DST change repeats is the first of the two; one it skips is moved on (the result says so).",
      ),
    repeat: z
      .enum(REPEATS)
      .optional()
      .describe(
        "Repeat: daily, weekdays (Mon-Fri), weekly (same weekday), monthly (same day of month; set " +
          "on the 29th-31st, it comes on the last day of months without that day). Omit for a " +
          "one-off reminder.",
      ),
    todo_id: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("The user's todo (#id from list_todos) this reminder is about."),
  }),
  async run({ text, at, repeat, todo_id }, context) {
    const { locale, timezone } = context;
    const scheduler = reminderSchedulerOf(context.redis);
    if (!scheduler)
      throw new ToolError(
        "Reminders are not available in this setup (no reminder delivery runs here). Tell the user you cannot set reminders right now.",
      );
    const now = Date.now();
    const when = checkScheduledTime(at, timezone, "reminder", now);
    if (typeof when === "string") throw new ToolError(when);
    let title = text;
    if (todo_id !== undefined) {
      const todo = await getTodo(context.redis, context, todo_id);
      if (!todo) throw new ToolError(noSuchTodo(todo_id, locale));
      if (todo.completedAt)
        throw new ToolError(`Todo #${todo_id} is already completed: a reminder for it would end at once.`);
      if (!title) title = todo.title;
    }
    if (!title)
      throw new ToolError("The reminder text is empty: say what to remind the user of (e.g. 繳電費), or pass todo_id.");

    const reminder = await addReminder(context.redis, context, {
      text: title,
      at: when,
      next: when,
      ...(repeat ? { repeat } : {}),
      timezone,
      ...(todo_id !== undefined ? { todoId: todo_id } : {}),
      ...placeOf(context),
      createdAt: now,
    });
    if (!reminder) {
      throw new ToolError(
        `The user already has ${MAX_ACTIVE_REMINDERS} active reminders, the most allowed: suggest cancelling some (list_reminders, cancel_reminder) first.`,
      );
    }
    try {
      const next = await scheduler.schedule(context, reminder, now);
      if (next !== reminder.next) reminder.next = next;
    } catch (error) {
      await deleteReminder(context.redis, context, reminder.id);
      throw error;
    }
    context.log.info(
      { reminder: reminder.id, at: new Date(reminder.next!).toISOString(), repeat: repeat ?? "none" },
      "reminder set",
    );
    const set = localize(locale, REMINDER_SET_TEXT, { line: formatReminder(reminder, locale, timezone) });
    const note = wallTimeNote(at, timezone);
    return note ? `${set}\n${note}` : set;
  },
});
