/**
 * The scheduled tasks feature: `/tasks` (the asker's tasks here, with pause, resume and cancel
 * buttons), the buttons of `/tasks` (`tk:pl:`, `tk:rl:`, `tk:cl:`, a group's list for its admins
 * `tk:cg:`: the pressed list is shown as it is now) and of a paused task's notice (`tk:r:`, `tk:c:`), the `tasks` queue whose
 * occurrences a worker answers as the task's owner (`src/worker/task.ts`), and the tasks of a
 * conversation, which move with it (each record names the chat it runs in). The tools
 * (`schedule_task`, `list_tasks`, `cancel_task`) are files of `tools/`; they reach the worker's
 * scheduler through its connection (`attachTaskScheduler`).
 */
import { DelayedError } from "bullmq";
import { isAdmin } from "../access/policy.js";
import { AccessStore } from "../access/store.js";
import { moveRecordsOfChat } from "../conversations/keys.js";
import { defineFeature } from "../feature.js";
import { localize } from "../i18n.js";
import { conversationOf } from "../queue/incoming.js";
import { closeQueue, logJobFailure, openQueue } from "../queue/jobs.js";
import { UsageStore } from "../usage/store.js";
import { answerTask } from "../worker/task.js";
import { TaskActions } from "./actions.js";
import { attachTaskScheduler, TASKS_QUEUE, TaskScheduler, type TaskJobData } from "./schedule.js";

/** The answer to a press that could not be handled now (Redis unreachable…). */
const TRY_AGAIN = {
  "zh-TW": "抱歉，現在無法處理這個指令，請稍後再試一次。",
  en: "Sorry, I could not do that right now. Please try again in a moment.",
};

/** The scheduled tasks feature (see the module comment). */
export const tasksFeature = defineFeature<TaskActions>({
  name: "tasks",
  start({ config, log, redis, prefix }) {
    // The adapters' own `tasks` queue: pause, resume and cancel remove and add jobs.
    const queue = openQueue<TaskJobData>(TASKS_QUEUE, redis, prefix);
    return {
      state: new TaskActions({ config, redis, scheduler: new TaskScheduler(queue), log }),
      close: () => closeQueue(queue),
    };
  },
  commands: [
    {
      name: "tasks",
      description: {
        "zh-TW": "你在這裡的排程任務（可暫停、繼續、取消）",
        en: "Your scheduled tasks here (pause, resume, cancel)",
      },
      access: "everyone",
      run: (inv, services, tasks) =>
        // A group's admins (and bot admins) see every task of the group, with cancel buttons (issue 39).
        tasks.listing({
          ...conversationOf(inv),
          userId: inv.userId,
          locale: inv.locale,
          chatKind: inv.chatKind,
          admin: isAdmin(services.config, inv),
          isGroupAdmin: inv.isGroupAdmin,
        }),
    },
  ],
  buttons: {
    prefixes: ["tk:"],
    async press(press, locale, tasks, { config, log }) {
      try {
        const answer = await tasks.press({
          data: press.data,
          platform: press.platform,
          userId: press.userId,
          locale,
          admin: isAdmin(config, press),
          // A group's admins may cancel any task of the group there (issue 39).
          ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
          // A list's button (`tk:pl:` …) answers with the list as it is now.
          place: { chatId: press.chatId, topicId: press.topicId },
        });
        return {
          kind: "tasks",
          notice: answer.notice,
          ...(answer.listing ? { listing: answer.listing } : answer.changed ? { dropButton: true } : {}),
        };
      } catch (error) {
        log.error({ err: error, platform: press.platform }, "scheduled task button failed");
        return { kind: "tasks", notice: localize(locale, TRY_AGAIN), failed: true };
      }
    },
  },
  queues: [
    {
      name: TASKS_QUEUE,
      fastTakeOver: true,
      processor({ answer, bullRedis, prefix }) {
        const { config, log, redis } = answer;
        // The worker's scheduler of the `tasks` queue, also attached to the tools' connection (schedule_task, cancel_task).
        const queue = openQueue<TaskJobData>(TASKS_QUEUE, bullRedis, prefix);
        const scheduler = new TaskScheduler(queue);
        attachTaskScheduler(redis, scheduler);
        const parts = {
          ...answer,
          scheduler,
          access: new AccessStore(redis, log),
          usage: answer.usage ?? new UsageStore(redis, config.TIMEZONE),
        };
        return {
          process: (job, token) => answerTask(parts, job, token),
          failed(job, err) {
            if (!job || err instanceof DelayedError) return;
            logJobFailure(log, job, err, {
              final: "a scheduled task's occurrence failed for good",
              retry: "a scheduled task's occurrence failed; it will retry",
            });
          },
          close: async () => void (await queue.close().catch(() => {})),
        };
      },
    },
  ],
  conversation: {
    stores: [
      {
        // Per person (`task:{<platform>:<userId>}:items`, src/tasks/store.ts), each record naming the chat it runs in.
        name: "tasks",
        move: (redis, from, to) => moveRecordsOfChat(redis, `task:{${from.platform}:*}:items`, from, to),
      },
    ],
  },
});
