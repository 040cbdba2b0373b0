/**
 * cancel_task: cancels one of the requester's own scheduled tasks.
 */
import { z } from "zod";
import { localize } from "../src/i18n.js";
import { cancelTask } from "../src/tasks/actions.js";
import { shortInstruction } from "../src/tasks/format.js";
import { taskSchedulerOf } from "../src/tasks/schedule.js";
import { getTask } from "../src/tasks/store.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";

/** The cancel_task tool: `{ task_id }` → `已取消排程任務 #3：…`; an id not among the user's tasks is a ToolError. */
export default defineTool({
  name: "cancel_task",
  title: { "zh-TW": "取消排程任務", en: "Cancel a scheduled task" },
  summary: {
    "zh-TW": "取消你的一個排程任務；重複的任務也會停止。",
    en: "Cancels one of your scheduled tasks; a repeating one stops for good.",
  },
  description: [
    "Cancel one of the user's scheduled tasks by its number (#id from list_tasks); a repeating task stops for good.",
    "Use it when the user no longer wants a scheduled task. It only works on the user's own tasks. Not for reminders (cancel_reminder).",
  ].join(" "),
  tags: ["daily", "write"],
  activity: ({ task_id }, locale) =>
    localize(locale, { "zh-TW": "取消排程任務 #{id}", en: "Cancelling scheduled task #{id}" }, { id: task_id }),
  deferred: true,
  input: z.object({
    task_id: z.number().int().positive().describe("The task's number as shown by list_tasks, e.g. 3 for #3"),
  }),
  async run({ task_id }, context) {
    const { locale } = context;
    const task = await getTask(context.redis, context, task_id, context.log);
    if (!task) {
      throw new ToolError(
        localize(
          locale,
          {
            "zh-TW": "你沒有 #{id} 這個排程任務。請先用 list_tasks 查看正確的編號。",
            en: "You have no scheduled task #{id}. Check the numbers with list_tasks first.",
          },
          { id: task_id },
        ),
      );
    }
    await cancelTask(context.redis, taskSchedulerOf(context.redis), context, task);
    return localize(
      locale,
      { "zh-TW": "已取消排程任務 #{id}：{what}", en: "Cancelled scheduled task #{id}: {what}" },
      { id: task_id, what: shortInstruction(task.instruction) },
    );
  },
});
