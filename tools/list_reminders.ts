/**
 * list_reminders: the requester's reminders with id, next time and repeat.
 */
import { z } from "zod";
import { localize } from "../src/i18n.js";
import { formatReminder } from "../src/reminders/format.js";
import { listReminders } from "../src/reminders/store.js";
import { defineTool } from "../src/toolbox/tool.js";

/** The list_reminders tool: `{}` → a header and one line per reminder (`#id text — next time in words (ISO), repeat`). */
export default defineTool({
  name: "list_reminders",
  title: { "zh-TW": "查看提醒", en: "List reminders" },
  summary: {
    "zh-TW": "列出你的提醒，以及每個提醒下次的時間。",
    en: "Lists your reminders and when each one comes next.",
  },
  description: [
    "List the user's reminders: each one's number (#id), text, next time (in words and ISO 8601, in the user's time zone) and repeat.",
    "Use it when the user asks which reminders they have, and before cancel_reminder when you do not know the number.",
  ].join(" "),
  tags: ["daily"],
  activity: (_input, locale) => localize(locale, { "zh-TW": "讀取提醒清單", en: "Reading the reminders" }),
  deferred: true,
  readOnly: true,
  input: z.object({}),
  async run(_input, context) {
    const { locale } = context;
    const reminders = await listReminders(context.redis, context);
    if (reminders.length === 0)
      return localize(locale, { "zh-TW": "你沒有設定任何提醒。", en: "You have no reminders." });
    const title = localize(
      locale,
      { "zh-TW": "你的提醒（{count} 個）：", en: "Your reminders ({count}):" },
      { count: reminders.length },
    );
    return [title, ...reminders.map((r) => formatReminder(r, locale, context.timezone))].join("\n");
  },
});
