/**
 * The passage of time for BullMQ jobs, which tests move instead of waiting for it: a delayed job
 * made due now ({@link bringForward}), and the locks of a dead worker's jobs run out
 * ({@link expireLocks}). Both change only what time would change in Redis, through BullMQ's own
 * keys and commands, so the workers under test react as they would after the wait.
 */
import { Job, type Queue } from "bullmq";
import type { RedisClient } from "../../src/redis.js";

/** When a delayed job was due as BullMQ held it, and when it is due after {@link bringForward}, ms since the Unix epoch. */
export interface BroughtForward {
  /** The time BullMQ held the job for before (its `timestamp + delay`). */
  heldFor: number;
  /** The time it is due now. */
  dueNow: number;
}

/** Polls `check` every 50 ms until it resolves truthy; throws naming `what` after 10 s. */
async function poll<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after 10000 ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until job `jobId` of `queue` is delayed (a one-off's job, a snooze, the job a job scheduler
 * added for its next run, a job that waits its turn), reads when BullMQ holds it for, and makes it
 * due `inMs` from now (`Job.changeDelay`). The job keeps its data and id, so the occurrence it
 * carries (a reminder's `dueAt`, or the `<ms>` of a scheduler's `repeat:<id>:<ms>`) is unchanged:
 * the test asserts `heldFor` against the time it set, and what happens next against `dueNow`.
 *
 * @throws when the job is not delayed within 10 s.
 */
export async function bringForward<T>(queue: Queue<T>, jobId: string, inMs = 300): Promise<BroughtForward> {
  const job = await poll(
    async () => ((await queue.getJobState(jobId)) === "delayed" ? await Job.fromId<T>(queue, jobId) : undefined),
    `the delayed job ${jobId}`,
  );
  const heldFor = job.timestamp + job.delay;
  await job.changeDelay(inMs);
  return { heldFor, dueNow: Date.now() + inMs };
}

/**
 * Makes `queue` look as it does once the locks of a dead worker's jobs have run out (the worker's
 * `lockDuration`) and one stalled-job check has seen them: each job's lock key is gone, the job is
 * in the queue's `stalled` set, and the key that spaces the checks (`stalled-check`, which lives
 * one `stalledInterval`) has expired. The next stalled-job check hands the jobs on, counting a
 * stall each, as it would after the wait: a worker's check at its start, or a running worker's
 * next one (every `stalledInterval`, see `src/worker/worker.ts`). Call it only after the worker
 * holding `jobIds` died: a live worker's job would be taken from it.
 *
 * @param redis - a connection to the queue's Redis.
 * @param jobIds - the dead worker's jobs; default every active job of the queue.
 * @returns the job ids it expired.
 */
export async function expireLocks<T>(redis: RedisClient, queue: Queue<T>, jobIds?: string[]): Promise<string[]> {
  const ids = jobIds ?? (await queue.getActive()).flatMap((job) => (job.id ? [job.id] : []));
  for (const id of ids) {
    await redis.del(`${queue.toKey(id)}:lock`);
    await redis.sadd(queue.toKey("stalled"), id);
  }
  await redis.del(queue.toKey("stalled-check"));
  return ids;
}
