/**
 * The `decisions` queue: approval decisions (button, reaction, console y/n) go here as their own
 * jobs, consumed by a separate BullMQ Worker (see `startWorker`), so a decision never waits behind
 * the jobs of its chat. The approval store adds the jobs; the worker hands each job's data to
 * `ApprovalHooks.handleDecision`.
 */
import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import { DECISIONS_QUEUE } from "./keys.js";

export { DECISIONS_QUEUE };

/** Options of decision jobs: a few quick retries of transient failures, bounded retention. */
export const DECISION_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: "exponential", delay: 500 },
  removeOnComplete: { count: 1000 },
  removeOnFail: { count: 1000 },
};

/**
 * Opens the `decisions` queue on `redis` (a producer connection; it may fail fast). Add jobs with
 * `queue.add(name, data, { ...DECISION_JOB_OPTIONS, jobId })`; a job id derived from the approval
 * id makes a repeated add a no-op. Close it with `queue.close()` (the connection stays open).
 */
export function openDecisionQueue(redis: Redis, prefix?: string): Queue {
  const queue = new Queue(DECISIONS_QUEUE, { connection: redis, prefix });
  queue.on("error", () => {}); // connection problems are logged by connectRedis
  return queue;
}
