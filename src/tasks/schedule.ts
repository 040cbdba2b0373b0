/**
 * Scheduling tasks on their own BullMQ queue, `tasks`, the way reminders are scheduled
 * (`src/reminders/schedule.ts`): a one-off task is a delayed job with one job id per occurrence; a
 * repeating one is a BullMQ job scheduler (`upsertJobScheduler`, the reminders' cron patterns of
 * `repeatPatterns` with `tz`), which adds one job per occurrence (`repeat:<scheduler id>:<ms>`),
 * or two schedulers for a monthly task on the 29th or 30th. No polling loop of our own:
 * occurrences due while no worker ran wait in Redis and are taken when a worker starts.
 *
 * The tools find the scheduler through the Redis connection of their context
 * ({@link taskSchedulerOf}); the worker attaches it to its connection at start-up.
 */
import type { JobsOptions, Queue } from "bullmq";
import type { Platform } from "../queue/incoming.js";
import type { RedisClient } from "../redis.js";
import { repeatPatterns } from "../reminders/time.js";
import type { Task, TaskOwner } from "./store.js";

/** Name of the BullMQ queue of task occurrences. */
export const TASKS_QUEUE = "tasks";

/** The data of a task job: whose task, which one, and (one-offs) when it is due. */
export interface TaskJobData {
  platform: Platform;
  userId: string;
  taskId: number;
  /** When the occurrence is due, ms since the Unix epoch (absent in a scheduler's jobs: read from the job id). */
  dueAt?: number;
}

/**
 * Options of every task job: 3 attempts 5 s, then 10 s apart — a transient failure (the model
 * overloaded, the platform down) is retried within the answer's one deadline
 * (`ANSWER_DEADLINE_SECONDS`, from the first attempt), after the SDK's and the outbound's own
 * retries. Kept a day after completion, so the same occurrence id is never added twice.
 */
export const TASK_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: "exponential", delay: 5000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);

/**
 * The job scheduler ids a repeating task may have: `task-<platform>-<userId>-<id>` (made safe for
 * BullMQ ids), and the same with `-feb` for February's last day of a monthly task on the 29th or 30th.
 */
export function taskSchedulerIds(owner: TaskOwner, taskId: number): [string, string] {
  const id = `task-${owner.platform}-${safe(owner.userId)}-${taskId}`;
  return [id, `${id}-feb`];
}

/** The job id of the one-off occurrence due at `dueAt` (ms). */
export function taskJobId(owner: TaskOwner, taskId: number, dueAt: number): string {
  return `${taskSchedulerIds(owner, taskId)[0]}-o${dueAt}`;
}

/** Schedules and unschedules tasks on the `tasks` queue. */
export class TaskScheduler {
  /** @param queue - the `tasks` queue (its connection and prefix are the worker's, or the adapters'). */
  constructor(readonly queue: Queue<TaskJobData>) {}

  /**
   * Schedules the task's occurrences from `from` on (default its first time, `task.at`): a delayed
   * job at `from` for a one-off (at once when it is past), or for a repeat a job scheduler with the
   * repeat's cron pattern in `task.timezone` whose first run is the first match at or after `from`.
   *
   * @returns the next time it is due, ms since the Unix epoch.
   */
  async schedule(
    owner: TaskOwner,
    task: Pick<Task, "id" | "at" | "repeat" | "timezone">,
    from = task.at,
    now = Date.now(),
  ): Promise<number> {
    const data: TaskJobData = { platform: owner.platform, userId: owner.userId, taskId: task.id };
    if (!task.repeat) {
      const dueAt = Math.max(from, task.at);
      await this.queue.add(
        "task",
        { ...data, dueAt },
        { ...TASK_JOB_OPTIONS, jobId: taskJobId(owner, task.id, dueAt), delay: Math.max(0, dueAt - now) },
      );
      return dueAt;
    }
    const patterns = repeatPatterns(task.repeat, task.at, task.timezone);
    const ids = taskSchedulerIds(owner, task.id);
    // Cron has whole seconds; startDate 1 ms before the second: the iterator returns times strictly after it.
    const startDate = Math.floor(Math.max(from, task.at) / 1000) * 1000 - 1;
    for (const [i, pattern] of patterns.entries()) {
      await this.queue.upsertJobScheduler(
        ids[i]!,
        { pattern, tz: task.timezone, startDate },
        { name: "task", data, opts: TASK_JOB_OPTIONS },
      );
    }
    return (await this.nextRun(owner, task.id)) ?? task.at;
  }

  /**
   * Removes what is scheduled for the task: its job schedulers, or its pending one-off job. Best
   * effort: a job already running finds the task gone (or paused) and ends.
   */
  async unschedule(owner: TaskOwner, task: Pick<Task, "id" | "repeat" | "next">): Promise<void> {
    if (task.repeat) {
      for (const id of taskSchedulerIds(owner, task.id)) await this.queue.removeJobScheduler(id);
      return;
    }
    if (task.next !== undefined) await this.queue.remove(taskJobId(owner, task.id, task.next)).catch(() => 0);
  }

  /** The next run of a repeating task (the earliest of its job schedulers), ms since the Unix epoch, or undefined. */
  async nextRun(owner: TaskOwner, taskId: number): Promise<number | undefined> {
    const runs = await Promise.all(
      taskSchedulerIds(owner, taskId).map(async (id) => (await this.queue.getJobScheduler(id))?.next ?? undefined),
    );
    const due = runs.filter((next): next is number => next !== undefined);
    return due.length > 0 ? Math.min(...due) : undefined;
  }
}

const attached = new WeakMap<RedisClient, TaskScheduler>();

/** Makes `scheduler` the one the tools find through `redis` (the worker's connection, given to tools as `context.redis`). */
export function attachTaskScheduler(redis: RedisClient, scheduler: TaskScheduler): void {
  attached.set(redis, scheduler);
}

/** The scheduler attached to `redis`, or undefined when this process runs no task worker. */
export function taskSchedulerOf(redis: RedisClient): TaskScheduler | undefined {
  return attached.get(redis);
}
