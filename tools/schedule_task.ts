/**
 * schedule_task: the assistant carries out an instruction at a given time — once, or daily, on
 * weekdays, weekly or monthly — in the chat (and topic) where it was set, as the person who set it.
 */
import { z } from "zod";
import { localize } from "../src/i18n.js";
import { placeOf } from "../src/personal-records.js";
import { checkScheduledTime, wallTimeNote } from "../src/reminders/time.js";
import { REPEATS } from "../src/reminders/store.js";
import { describeTask, formatTask } from "../src/tasks/format.js";
import { taskSchedulerOf } from "../src/tasks/schedule.js";
import { MAX_INSTRUCTION, addTask, deleteTask } from "../src/tasks/store.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";

/**
 * The schedule_task tool: `{ instruction, at, repeat? }` → `已排程任務：#1 …`. `at` and `repeat`
 * are read exactly as set_reminder reads them. Refused with a ToolError: an `at` that is not ISO
 * 8601, in the past or less than 10 s ahead, more than a year ahead; an empty instruction; more
 * than `MAX_TASKS_PER_USER` tasks.
 */
export default defineTool({
  name: "schedule_task",
  title: { "zh-TW": "排程任務", en: "Schedule a task" },
  summary: {
    "zh-TW": "在指定時間由助理在這個聊天替你做一件事，可以每天、每週或每月重複。",
    en: "Has the assistant do something for you in this chat at a time, once or daily, on weekdays, weekly or monthly.",
  },
  description: [
    "Schedule a task: at the given time the assistant itself carries out the instruction in " +
      "this chat, as the user (with this chat's history and tools), and posts the result here " +
      "(mentioning the user in groups).",
    "Use it when the user wants something *done* at a time or on a repeat ('every weekday at 7:" +
      "30 tell me the weather in 新竹 and my open todos', '每週五 18:00 整理這週群組的決定').",
    "For a fixed text at a time ('remind me to take my pills') use set_reminder instead.",
    "Write the instruction as the user would ask it then, self-contained. Resolve relative " +
      "times with get_current_datetime first and pass an ISO 8601 date-time.",
    "The user is asked to confirm the task (its instruction and schedule) before it is scheduled. " +
      "Actions that need the user's confirmation still ask them at that time. A scheduled task's own run cannot schedule tasks.",
  ].join(" "),
  tags: ["daily", "write"],
  // Issue 39: a task acts later as its owner, unattended, so text the model read (a web page, a
  // file, someone else's message) must never set one up: every task is confirmed by its owner,
  // each time (no "always allow"), on a prompt showing the instruction and the schedule.
  dangerous: true,
  alwaysAllow: false,
  describe: ({ instruction, at, repeat }, context) => {
    const when = checkScheduledTime(at, context.timezone, "task", Date.now());
    if (typeof when === "string") throw new ToolError(when);
    return describeTask({ instruction, at: when, repeat, timezone: context.timezone }, context.locale);
  },
  activity: ({ instruction }, locale) =>
    localize(locale, { "zh-TW": "排程任務：{what}", en: "Scheduling a task: {what}" }, { what: instruction }),
  input: z.object({
    instruction: z
      .string()
      .trim()
      .min(1, { message: "the instruction is empty: say what to do at that time" })
      .max(MAX_INSTRUCTION, { message: `the instruction is longer than ${MAX_INSTRUCTION} characters: shorten it` })
      .describe("What to do at that time, as a request to the assistant, e.g. 告訴我新竹今天的天氣和我未完成的待辦."),
    at: z
      .string()
      .trim()
      .min(1, { message: "give the time as an ISO 8601 date-time, e.g. 2026-12-01T07:30" })
      .max(64)
      .describe(
        "ISO 8601 date-time of the first run, e.g. 2026-12-01T07:30 (in the user's time zone when " +
          "no offset is given) or 2026-12-01T07:30+08:00. At least 10 seconds and at most one year " +
          "ahead. A time a DST change repeats is the first of the two; one it skips is moved on (the result says so).",
      ),
    repeat: z
      .enum(REPEATS)
      .optional()
      .describe(
        "Repeat: daily, weekdays (Mon-Fri), weekly (same weekday), monthly (same day of month; set " +
          "on the 29th-31st, it runs on the last day of months without that day). Omit for a one-off " +
          "task.",
      ),
  }),
  async run({ instruction, at, repeat }, context) {
    const { locale, timezone } = context;
    const scheduler = taskSchedulerOf(context.redis);
    if (!scheduler)
      throw new ToolError(
        "Scheduled tasks are not available in this setup (no task worker runs here). Tell the user you cannot schedule tasks right now.",
      );
    const now = Date.now();
    const when = checkScheduledTime(at, timezone, "task", now);
    if (typeof when === "string") throw new ToolError(when);
    const limit = context.config.MAX_TASKS_PER_USER;
    const task = await addTask(
      context.redis,
      context,
      {
        instruction,
        at: when,
        next: when,
        ...(repeat ? { repeat } : {}),
        timezone,
        ...placeOf(context),
        createdAt: now,
      },
      limit,
    );
    if (!task)
      throw new ToolError(
        `The user already has ${limit} scheduled tasks, the most allowed (MAX_TASKS_PER_USER): suggest cancelling one (list_tasks, cancel_task) first.`,
      );
    try {
      const next = await scheduler.schedule(context, task, when, now);
      if (next !== task.next) task.next = next;
    } catch (error) {
      await deleteTask(context.redis, context, task.id);
      throw error;
    }
    context.log.info(
      { task: task.id, at: new Date(task.next!).toISOString(), repeat: repeat ?? "none" },
      "task scheduled",
    );
    const scheduled = localize(
      locale,
      { "zh-TW": "已排程任務：{line}", en: "Task scheduled: {line}" },
      { line: formatTask(task, locale, timezone) },
    );
    const note = wallTimeNote(at, timezone);
    return note ? `${scheduled}\n${note}` : scheduled;
  },
});
