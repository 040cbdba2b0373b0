/**
 * The approval flow on BullMQ: decisions and expiries are jobs of their own `decisions` queue,
 * so a click never waits behind the chat's message jobs, and any worker process can resume the
 * saved run. These helpers give the job ids, options and the two hooks that add jobs
 * (`wiring.ts` uses them); the worker's `decisions` Worker processes them (`answerDecision` of
 * `src/worker/decision.ts`).
 */
import type { JobsOptions, Queue } from "bullmq";
import type { DecisionJob } from "./flow.js";
import type { DecisionCallback } from "./store.js";

import { DECISIONS_QUEUE } from "../queue/keys.js";

/** Name of the BullMQ queue of decision and expiry jobs (defined with the other queue names). */
export { DECISIONS_QUEUE };

/** BullMQ job name of a requester's decision. */
export const DECISION_JOB = "decision";
/** BullMQ job name of the delayed expiry. */
export const EXPIRY_JOB = "expiry";

/**
 * Options of every decision and expiry job: 5 attempts with exponential backoff from 1 s (a model
 * or platform outage); finished jobs are kept 24 hours so that their ids keep deduplicating
 * (the same time as a closed approval record lives), failed ones 7 days for inspection.
 */
export const DECISION_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/**
 * The job id of a decision or expiry: `{verdict}-{approvalId}`, so a retried or repeated
 * `onDecision` adds one job, and the expiry job of an approval is added once. BullMQ refuses
 * custom ids that contain `:` or are integers (`Job.validateOptions`); approval ids are
 * base64url, so neither can happen.
 */
export function decisionJobId(job: DecisionJob): string {
  return `${job.verdict}-${job.approvalId}`;
}

/**
 * The hooks the approval store and flow need, over `queue`:
 * - `onDecision`: adds the decision job (throws when Redis is unreachable; the store then undoes the decision);
 * - `scheduleExpiry(approvalId, delayMs)`: adds the expiry job, delayed by `delayMs` ms;
 * - `expireNow(approvalId)`: runs the expiry job now (promotes the delayed one; adds it when it is
 *   missing), e.g. for an approval closed because its conversation was reset, so a worker closes
 *   its prompt at once. Does nothing when the job already ran or is running.
 *
 * @param options - job options over {@link DECISION_JOB_OPTIONS} (e.g. fewer attempts); `jobId` and `delay` are set here.
 */
export function decisionQueueHooks(
  queue: Queue,
  options: JobsOptions = {},
): {
  onDecision: DecisionCallback;
  scheduleExpiry: (approvalId: string, delayMs: number) => Promise<void>;
  expireNow: (approvalId: string) => Promise<void>;
} {
  return {
    async onDecision(decision) {
      await queue.add(DECISION_JOB, decision, { ...DECISION_JOB_OPTIONS, ...options, jobId: decisionJobId(decision) });
    },
    async scheduleExpiry(approvalId, delayMs) {
      const job: DecisionJob = { approvalId, verdict: "expired" };
      await queue.add(EXPIRY_JOB, job, {
        ...DECISION_JOB_OPTIONS,
        ...options,
        jobId: decisionJobId(job),
        delay: Math.max(0, delayMs),
      });
    },
    async expireNow(approvalId) {
      const data: DecisionJob = { approvalId, verdict: "expired" };
      const jobId = decisionJobId(data);
      const job = await queue.getJob(jobId);
      if (!job) {
        await queue.add(EXPIRY_JOB, data, { ...DECISION_JOB_OPTIONS, ...options, jobId });
        return;
      }
      // Promote refuses a job that is no longer delayed (taken meanwhile): then it runs anyway.
      if (await job.isDelayed()) await job.promote().catch(() => {});
    },
  };
}
