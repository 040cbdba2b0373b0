/**
 * Helpers of the scheduled-task scenarios (`tasks-*.test.ts`): the scripted model (the reminder
 * scenarios' `call <tool> <json>` rule, plus `FAIL-MODEL`, answered with an API error), the
 * `tasks` queue as the bot sees it, an occurrence added as the scheduler adds one, and what its job did.
 */
import { Job, Queue } from "bullmq";
import { bullPrefix } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { TASKS_QUEUE, taskJobId, taskSchedulerIds, type TaskJobData } from "../../src/tasks/schedule.js";
import type { TaskOwner } from "../../src/tasks/store.js";
import type { FakeErrorReply, FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { eventually, remindersModel, schedulerJobId } from "./reminders-helpers.js";
import { lastUserTyped } from "./scripted-model.js";

/**
 * The reminder scenarios' model, and one more rule: an occurrence's user turn (`[scheduled task] …`)
 * containing `FAIL-MODEL` is answered `400 invalid_request_error` (a failure no retry mends), so
 * the occurrence fails at once.
 */
export function tasksModel(request: FakeRequest): FakeMessageReply | FakeErrorReply {
  const said = lastUserTyped(request) ?? "";
  if (said.includes("[scheduled task]") && said.includes("FAIL-MODEL"))
    return {
      status: 400,
      errorType: "invalid_request_error",
      message: "messages: the scripted model refuses FAIL-MODEL",
    };
  return remindersModel(request);
}

/** The `tasks` queue of the e2e stack (prefix `e2e`) on the test's own connection; close it after use. */
export function tasksQueue(redis: RedisClient): Queue<TaskJobData> {
  return new Queue<TaskJobData>(TASKS_QUEUE, { connection: redis, prefix: bullPrefix(redis, TASKS_QUEUE, "e2e") });
}

/** The job id of task `id`'s occurrence at `at` (ms): a one-off's own, or the one its job scheduler adds. */
export function taskOccurrenceJobId(owner: TaskOwner, id: number, at: number, repeat: boolean): string {
  return repeat ? schedulerJobId(taskSchedulerIds(owner, id)[0], at) : taskJobId(owner, id, at);
}

/** The next run (ms) of task `id`'s job scheduler, or undefined when it has none. */
export async function taskSchedulerNext(
  queue: Queue<TaskJobData>,
  owner: TaskOwner,
  id: number,
): Promise<number | undefined> {
  return (await queue.getJobScheduler(taskSchedulerIds(owner, id)[0]))?.next ?? undefined;
}

/**
 * Adds the occurrence of task `taskId` due at `dueAt` (default now) as its own job, the way a
 * one-off is scheduled (what the job scheduler adds at a repeat's time is the same job data).
 * @returns the job id.
 */
export async function addOccurrence(
  queue: Queue<TaskJobData>,
  owner: TaskOwner,
  taskId: number,
  dueAt = Date.now(),
): Promise<string> {
  const jobId = taskJobId(owner, taskId, dueAt);
  await queue.add(
    "task",
    { ...owner, taskId, dueAt },
    { jobId, attempts: 3, backoff: { type: "exponential", delay: 5000 } },
  );
  return jobId;
}

/** Waits until job `jobId` completed and returns what it did (`TaskOutcome`); fails naming it after `timeoutMs`. */
export async function outcomeOf(queue: Queue<TaskJobData>, jobId: string, timeoutMs = 20_000): Promise<string> {
  return eventually(
    async () => {
      if ((await queue.getJobState(jobId)) !== "completed") return undefined;
      // Read after the state says completed: a job read before it completed has no return value yet.
      return String((await Job.fromId<TaskJobData, string>(queue, jobId))?.returnvalue);
    },
    `the outcome of task job ${jobId}`,
    timeoutMs,
  );
}

/**
 * When (ms since the epoch) a worker took job `jobId` to run it (BullMQ's `processedOn`, stamped
 * by the worker as it moves the job to active); waits for it up to `timeoutMs`. What "the task
 * ran at its time" is measured by: the moment its occurrence started, not when its answer, after
 * the model and the platform, reached the fake (seconds later on a loaded machine).
 */
export async function occurrenceStartedAt(
  queue: Queue<TaskJobData>,
  jobId: string,
  timeoutMs = 20_000,
): Promise<number> {
  return eventually(
    async () => (await Job.fromId<TaskJobData>(queue, jobId))?.processedOn ?? undefined,
    `job ${jobId} to be taken by a worker`,
    timeoutMs,
  );
}
