/**
 * Wiring reminders into a running bot (called from `src/app.ts`): delivery on the worker side,
 * button and `/reminders` actions on the adapter side, each on that side's Redis connection.
 */
import { Queue } from "bullmq";
import type { RedisClient } from "../redis.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { ReminderActions } from "./actions.js";
import { bullPrefix } from "../queue/keys.js";
import { REMINDERS_QUEUE, ReminderScheduler, type ReminderJobData } from "./schedule.js";

export { startReminderDelivery, type ReminderDelivery } from "./delivery.js";

/**
 * The adapters' reminder actions (buttons, `/reminders`), with a `reminders` queue of their own on
 * `redis` (snoozes and cancels add and remove jobs). `close` closes that queue; never throws.
 */
export function reminderActions(parts: { config: Config; log: Logger; redis: RedisClient; prefix?: string }): {
  actions: ReminderActions;
  close(): Promise<void>;
} {
  const queue = new Queue<ReminderJobData>(REMINDERS_QUEUE, {
    connection: parts.redis,
    prefix: bullPrefix(parts.redis, REMINDERS_QUEUE, parts.prefix),
  });
  queue.on("error", () => {});
  const actions = new ReminderActions({
    config: parts.config,
    redis: parts.redis,
    scheduler: new ReminderScheduler(queue),
    log: parts.log,
  });
  return {
    actions,
    close: async () => {
      await Promise.race([queue.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
    },
  };
}
