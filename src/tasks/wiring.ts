/**
 * Wiring scheduled tasks into the adapter side of a running bot (called from `src/app.ts`): the
 * `/tasks` listing and the task buttons, with a `tasks` queue of their own (pause, resume and
 * cancel remove and add jobs). The worker side (the occurrences, the tools' scheduler) is started
 * by the worker itself (`src/worker/worker.ts`).
 */
import { Queue } from "bullmq";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { bullPrefix } from "../queue/keys.js";
import type { RedisClient } from "../redis.js";
import { TaskActions } from "./actions.js";
import { TASKS_QUEUE, TaskScheduler, type TaskJobData } from "./schedule.js";

/**
 * The adapters' task actions (buttons, `/tasks`) on `redis`, with their own `tasks` queue.
 * `close` closes that queue (not the connection); never throws.
 */
export function taskActions(parts: { config: Config; log: Logger; redis: RedisClient; prefix?: string }): {
  actions: TaskActions;
  close(): Promise<void>;
} {
  const queue = new Queue<TaskJobData>(TASKS_QUEUE, {
    connection: parts.redis,
    prefix: bullPrefix(parts.redis, TASKS_QUEUE, parts.prefix),
  });
  queue.on("error", () => {});
  const actions = new TaskActions({
    config: parts.config,
    redis: parts.redis,
    scheduler: new TaskScheduler(queue),
    log: parts.log,
  });
  return {
    actions,
    close: async () => {
      await Promise.race([queue.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
    },
  };
}
