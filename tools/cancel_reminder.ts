/**
 * cancel_reminder: cancels one of the requester's own reminders.
 */
import { z } from "zod";
import { localize } from "../src/i18n.js";
import { reminderSchedulerOf } from "../src/reminders/schedule.js";
import { deleteReminder } from "../src/reminders/store.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";

/** The cancel_reminder tool: `{ reminder_id }` → `已取消提醒 #3：…`; an id not among the user's reminders is a ToolError. */
export default defineTool({
  name: "cancel_reminder",
  title: { "zh-TW": "取消提醒", en: "Cancel a reminder" },
  summary: {
    "zh-TW": "取消你的一個提醒；重複的提醒也會停止。",
    en: "Cancels one of your reminders; a repeating one stops for good.",
  },
  description: [
    "Cancel one of the user's reminders by its number (#id from list_reminders); a repeating reminder stops for good.",
    "Use it when the user no longer wants a reminder. It only works on the user's own reminders.",
  ].join(" "),
  tags: ["daily", "write"],
  activity: ({ reminder_id }, locale) =>
    localize(locale, { "zh-TW": "取消提醒 #{id}", en: "Cancelling reminder #{id}" }, { id: reminder_id }),
  deferred: true,
  input: z.object({
    reminder_id: z
      .number()
      .int()
      .positive()
      .describe("The reminder's number as shown by list_reminders, e.g. 3 for #3"),
  }),
  async run({ reminder_id }, context) {
    const { locale } = context;
    const removed = await deleteReminder(context.redis, context, reminder_id);
    if (!removed) {
      throw new ToolError(
        localize(
          locale,
          {
            "zh-TW": "你沒有 #{id} 這個提醒。請先用 list_reminders 查看正確的編號。",
            en: "You have no reminder #{id}. Check the numbers with list_reminders first.",
          },
          { id: reminder_id },
        ),
      );
    }
    // Without a scheduler here its jobs find no reminder when due and end (a repeat's scheduler is removed then).
    await reminderSchedulerOf(context.redis)?.unschedule(context, removed);
    return localize(
      locale,
      { "zh-TW": "已取消提醒 #{id}：{text}", en: "Cancelled reminder #{id}: {text}" },
      { id: reminder_id, text: removed.text },
    );
  },
});
