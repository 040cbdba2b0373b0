/**
 * Scheduling reminders on their own BullMQ queue, `reminders`: a one-off reminder (and every
 * snooze) is a delayed job with one job id per occurrence; a repeating one is a BullMQ job
 * scheduler (`upsertJobScheduler`, a cron pattern with `tz`), which adds one job per occurrence
 * (`repeat:<scheduler id>:<ms>`) — or two schedulers for a monthly one on the 29th or 30th (that
 * day outside February, and February's last day; see `repeatPatterns`). No polling loop of our own: jobs due while no worker ran wait in
 * Redis and are taken when a worker starts.
 *
 * The tools find the scheduler through the Redis connection of their context
 * ({@link reminderSchedulerOf}); the app attaches it to the worker's connection at start-up.
 */
import type { Queue } from "bullmq";
import { type JobsOptions } from "bullmq";
import type { RedisClient } from "../redis.js";
import type { Platform } from "../queue/incoming.js";
import type { Reminder, ReminderOwner } from "./store.js";
import { repeatPatterns } from "./time.js";

/** Name of the BullMQ queue of reminder jobs. */
export const REMINDERS_QUEUE = "reminders";

/** The data of a reminder job: whose reminder, which one, and (one-offs and snoozes) when it is due. */
export interface ReminderJobData {
  platform: Platform;
  userId: string;
  reminderId: number;
  /** When the occurrence is due, ms since the Unix epoch (absent in a scheduler's jobs: read from the job id). */
  dueAt?: number;
}

/**
 * Options of every reminder job: 5 attempts 2 s, 4 s, 8 s… apart (after the outbound's own 429
 * and 5xx retries), kept a day after completion so the same occurrence id is never added twice.
 */
export const REMINDER_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: "exponential", delay: 2000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);

/** The job scheduler id of a repeating reminder: `rem-<platform>-<userId>-<id>` (made safe for BullMQ ids). */
export function schedulerId(owner: ReminderOwner, reminderId: number): string {
  return `rem-${owner.platform}-${safe(owner.userId)}-${reminderId}`;
}

/**
 * The job scheduler ids a repeating reminder may have: {@link schedulerId}, and for the second
 * pattern of a monthly repeat on the 29th or 30th (February's last day) the same id with `-feb`.
 */
export function schedulerIds(owner: ReminderOwner, reminderId: number): [string, string] {
  const id = schedulerId(owner, reminderId);
  return [id, `${id}-feb`];
}

/** The job id of the occurrence due at `dueAt` (ms); with `snooze`, of the snooze of that occurrence. */
export function occurrenceJobId(owner: ReminderOwner, reminderId: number, dueAt: number, snooze = false): string {
  return `${schedulerId(owner, reminderId)}-${snooze ? "s" : "o"}${dueAt}`;
}

/** Schedules, snoozes and unschedules reminders on the `reminders` queue. */
export class ReminderScheduler {
  /** @param queue - the `reminders` queue (its connection and prefix are the worker's). */
  constructor(readonly queue: Queue<ReminderJobData>) {}

  /**
   * Schedules the reminder's occurrences: a delayed job at `reminder.at`, or for a repeat a job
   * scheduler with the repeat's cron pattern in `reminder.timezone`, starting at `reminder.at`.
   *
   * @returns the first time it is due, ms since the Unix epoch (the scheduler's next run for a repeat).
   */
  async schedule(owner: ReminderOwner, reminder: Reminder, now = Date.now()): Promise<number> {
    const data: ReminderJobData = { platform: owner.platform, userId: owner.userId, reminderId: reminder.id };
    if (!reminder.repeat) {
      await this.queue.add(
        "remind",
        { ...data, dueAt: reminder.at },
        {
          ...REMINDER_JOB_OPTIONS,
          jobId: occurrenceJobId(owner, reminder.id, reminder.at),
          delay: Math.max(0, reminder.at - now),
        },
      );
      return reminder.at;
    }
    const patterns = repeatPatterns(reminder.repeat, reminder.at, reminder.timezone);
    const ids = schedulerIds(owner, reminder.id);
    // Cron has whole seconds; startDate 1 ms before `at`'s second: the iterator returns times strictly after it, and `at` is the first occurrence.
    const startDate = Math.floor(reminder.at / 1000) * 1000 - 1;
    for (const [i, pattern] of patterns.entries()) {
      await this.queue.upsertJobScheduler(
        ids[i]!,
        { pattern, tz: reminder.timezone, startDate },
        { name: "remind", data, opts: REMINDER_JOB_OPTIONS },
      );
    }
    return (await this.nextRun(owner, reminder.id)) ?? reminder.at;
  }

  /**
   * Schedules a paused reminder again from `now` on (the console's resume): a repeat from its next
   * time after now; a one-off at its time, or at once when that passed — then as a job of its own
   * (`…-r<ms>`), since the job of its time may have run already (a one-off posted and snoozed) and
   * BullMQ would not add a job id it still keeps.
   *
   * @returns the time it is due next, ms since the Unix epoch.
   */
  async resume(owner: ReminderOwner, reminder: Reminder, now = Date.now()): Promise<number> {
    if (reminder.repeat || reminder.at > now) return this.schedule(owner, reminder, now);
    const data: ReminderJobData = {
      platform: owner.platform,
      userId: owner.userId,
      reminderId: reminder.id,
      dueAt: now,
    };
    await this.queue.add("remind", data, {
      ...REMINDER_JOB_OPTIONS,
      jobId: `${schedulerId(owner, reminder.id)}-r${now}`,
    });
    return now;
  }

  /**
   * Adds the snoozed occurrence at `dueAt` (ms). Its job id comes from the occurrence that was
   * snoozed (`from`, its due time in ms), so snoozing one posted reminder twice adds one job.
   */
  async snooze(owner: ReminderOwner, reminderId: number, from: number, dueAt: number, now = Date.now()): Promise<void> {
    const data: ReminderJobData = { platform: owner.platform, userId: owner.userId, reminderId, dueAt };
    await this.queue.add("remind", data, {
      ...REMINDER_JOB_OPTIONS,
      jobId: occurrenceJobId(owner, reminderId, from, true),
      delay: Math.max(0, dueAt - now),
    });
  }

  /**
   * Removes what is scheduled for the reminder: its job scheduler, or its pending one-off job (of
   * its time, or of a resume at that time). Best effort: a job that is already running, or a snooze,
   * finds no reminder (or finds it paused) and ends.
   */
  async unschedule(owner: ReminderOwner, reminder: Pick<Reminder, "id" | "repeat" | "next">): Promise<void> {
    if (reminder.repeat) {
      await this.removeScheduler(owner, reminder.id);
      return;
    }
    if (reminder.next !== undefined) {
      await this.queue.remove(occurrenceJobId(owner, reminder.id, reminder.next)).catch(() => 0);
      await this.queue.remove(`${schedulerId(owner, reminder.id)}-r${reminder.next}`).catch(() => 0);
    }
  }

  /** The next run of a repeating reminder (the earliest of its job schedulers), ms since the Unix epoch, or undefined. */
  async nextRun(owner: ReminderOwner, reminderId: number): Promise<number | undefined> {
    const runs = await Promise.all(
      schedulerIds(owner, reminderId).map(async (id) => (await this.queue.getJobScheduler(id))?.next ?? undefined),
    );
    const due = runs.filter((next): next is number => next !== undefined);
    return due.length > 0 ? Math.min(...due) : undefined;
  }

  /** Removes a repeat's job schedulers by reminder id (its reminder is gone). */
  async removeScheduler(owner: ReminderOwner, reminderId: number): Promise<void> {
    for (const id of schedulerIds(owner, reminderId)) await this.queue.removeJobScheduler(id);
  }
}

const attached = new WeakMap<RedisClient, ReminderScheduler>();

/** Makes `scheduler` the one the tools find through `redis` (the worker's connection, given to tools as `context.redis`). */
export function attachReminderScheduler(redis: RedisClient, scheduler: ReminderScheduler): void {
  attached.set(redis, scheduler);
}

/** The scheduler attached to `redis`, or undefined when this process runs no reminder delivery. */
export function reminderSchedulerOf(redis: RedisClient): ReminderScheduler | undefined {
  return attached.get(redis);
}
