/**
 * What the features with a BullMQ queue of their own (reminders, scheduled tasks) share: opening
 * that queue, closing it within a bound, and logging a job that failed.
 */
import { Queue, UnrecoverableError, type Job } from "bullmq";
import type { Logger } from "../log.js";
import type { RedisClient } from "../redis.js";
import { bullPrefix } from "./keys.js";

/** How long {@link closeQueue} waits for a queue to close before giving up, ms. */
const CLOSE_WITHIN_MS = 2000;

/**
 * A `Queue` named `name` on `redis` with the key prefix {@link bullPrefix} gives it. Its `error`
 * events (Redis unreachable…) are dropped: the commands that use it fail and answer for themselves.
 *
 * @param prefix - the base prefix, without braces (BullMQ's `bull` by default).
 */
export function openQueue<T>(name: string, redis: RedisClient, prefix?: string): Queue<T> {
  const queue = new Queue<T>(name, { connection: redis, prefix: bullPrefix(redis, name, prefix) });
  queue.on("error", () => {});
  return queue;
}

/** Closes `queue`, giving up after 2 s (Redis unreachable); never throws. */
export async function closeQueue<T>(queue: Queue<T>): Promise<void> {
  await Promise.race([queue.close().catch(() => {}), new Promise((r) => setTimeout(r, CLOSE_WITHIN_MS))]);
}

/**
 * Logs the failure `err` of `job`: as an error with `messages.final` when it will not be retried
 * (an `UnrecoverableError`, or its attempts used up), else as a warning with `messages.retry` and
 * the attempt it was.
 */
export function logJobFailure<T>(
  log: Logger,
  job: Job<T>,
  err: Error,
  messages: { final: string; retry: string },
): void {
  const final = err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
  if (final) log.error({ job: job.id, err: { message: err.message } }, messages.final);
  else log.warn({ job: job.id, attempt: job.attemptsMade, err: { message: err.message } }, messages.retry);
}
