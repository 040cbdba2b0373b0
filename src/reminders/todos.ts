/**
 * Reminders tied to a todo end with it: complete_todo and delete_todo call
 * {@link endRemindersOfTodo}, and the done button of such a reminder completes the todo.
 */
import type { RedisClient } from "../redis.js";
import type { Locale } from "../config.js";
import { englishNoun, localize } from "../i18n.js";
import { reminderSchedulerOf } from "./schedule.js";
import { deleteRemindersOfTodo, type ReminderOwner } from "./store.js";

/**
 * Cancels the owner's reminders tied to `todoId` (records deleted, schedules removed when this
 * process runs reminder delivery; otherwise their jobs find nothing when due and end).
 *
 * @returns a note for the tool result, e.g. ` 也取消了提醒 #2。`, or "" when none was tied.
 */
export async function endRemindersOfTodo(
  redis: RedisClient,
  owner: ReminderOwner,
  todoId: number,
  locale: Locale,
): Promise<string> {
  const ended = await deleteRemindersOfTodo(redis, owner, todoId);
  const scheduler = reminderSchedulerOf(redis);
  for (const reminder of ended) await scheduler?.unschedule(owner, reminder);
  if (ended.length === 0) return "";
  const ids = ended.map((r) => `#${r.id}`).join(", ");
  return localize(
    locale,
    { "zh-TW": "（也取消了提醒 {ids}）", en: " ({reminder} {ids} cancelled too)" },
    { ids, reminder: englishNoun(ended.length, "reminder") },
  );
}
