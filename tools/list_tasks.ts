/**
 * list_tasks: the requester's scheduled tasks with id, next time, repeat, and whether paused.
 */
import { z } from "zod";
import { localize } from "../src/i18n.js";
import { formatTask } from "../src/tasks/format.js";
import { listTasks } from "../src/tasks/store.js";
import { defineTool } from "../src/toolbox/tool.js";

/** The list_tasks tool: `{}` → a header and one line per task (`#id instruction — next time in words (ISO), repeat`, or paused). */
export default defineTool({
  name: "list_tasks",
  title: { "zh-TW": "查看排程任務", en: "List scheduled tasks" },
  summary: {
    "zh-TW": "列出你的排程任務，以及每個任務下次執行的時間。",
    en: "Lists your scheduled tasks and when each one runs next.",
  },
  description: [
    "List the user's scheduled tasks (from schedule_task): each one's number (#id), " +
      "instruction, next time (in words and ISO 8601, in the user's time zone) and repeat, or " +
      "that it is paused.",
    "Use it when the user asks which tasks are scheduled, and before cancel_task when you do not know the number. Not for reminders (list_reminders).",
  ].join(" "),
  tags: ["daily"],
  activity: (_input, locale) => localize(locale, { "zh-TW": "讀取排程任務", en: "Reading the scheduled tasks" }),
  deferred: true,
  readOnly: true,
  input: z.object({}),
  async run(_input, context) {
    const { locale } = context;
    const tasks = await listTasks(context.redis, context, context.log);
    if (tasks.length === 0)
      return localize(locale, { "zh-TW": "你沒有排程任務。", en: "You have no scheduled tasks." });
    const title = localize(
      locale,
      { "zh-TW": "你的排程任務（{count} 個）：", en: "Your scheduled tasks ({count}):" },
      { count: tasks.length },
    );
    return [title, ...tasks.map((t) => formatTask(t, locale, context.timezone))].join("\n");
  },
});
