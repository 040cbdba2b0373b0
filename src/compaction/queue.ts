/**
 * The `compactions` queue (BullMQ): compactions run as jobs of their own, never inside an answer.
 *
 * - After an answer the worker asks for one when the conversation is large ({@link compactionReason});
 *   such a request is deduplicated per conversation (BullMQ `deduplication` by the conversation
 *   key, held until the job completes or fails), so a conversation has at most one automatic
 *   compaction queued or running, however many answers asked.
 * - `/compact` adds a job of its own and waits for its result ({@link CompactionQueue.compactNow}).
 * - A failed compaction (model down, refusal, empty summary) is retried with exponential backoff
 *   ({@link COMPACTION_JOB_OPTIONS}); the history stays as it was meanwhile.
 * - Two workers never compact one conversation at once: besides BullMQ's one-worker-per-job, every
 *   compaction holds the conversation's lease (`compact` of `compactor.ts`).
 */
import { Queue, UnrecoverableError, Worker, type Job, type JobsOptions } from "bullmq";
import type { Config } from "../config.js";
import { DEFAULT_HISTORY_MAX_CHARS } from "../history/trim.js";
import type { Logger } from "../log.js";
import { conversationKey } from "../queue/incoming.js";
import { bullPrefix, chatJobId, COMPACTIONS_QUEUE } from "../queue/keys.js";
import type { RedisClient } from "../redis.js";
import {
  compact,
  CompactionJobSchema,
  type CompactionJob,
  type CompactionResult,
  type CompactorDeps,
} from "./compactor.js";

/** Options of every compaction job: 5 attempts, exponential backoff from 10 s (10, 20, 40, 80 s). */
export const COMPACTION_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: "exponential", delay: 10_000 },
  removeOnComplete: { count: 200 },
  removeOnFail: { count: 200 },
};

/** How long `/compact` waits for its compaction, in ms. */
export const COMPACT_NOW_WAIT_MS = 90_000;

/** How large a conversation is after an answer. */
export interface ConversationSize {
  /** Tokens of the answer's last model request (input + cache reads + cache writes), when known. */
  tokens?: number | undefined;
  /** Messages stored in the history, when known. */
  messages?: number | undefined;
  /** Characters of the stored history's JSON lines, when known. */
  chars?: number | undefined;
}

/**
 * Why a conversation of this size should be compacted now, or undefined: its last request reached
 * `COMPACT_AT_TOKENS`, or the stored history passed `HISTORY_MAX_MESSAGES` or the size budget of
 * what is sent (`DEFAULT_HISTORY_MAX_CHARS`): past either, requests leave the oldest turns out
 * until the compaction has summarised them.
 */
export function compactionReason(config: Config, size: ConversationSize): CompactionJob["reason"] | undefined {
  if (size.tokens !== undefined && size.tokens >= config.COMPACT_AT_TOKENS) return "tokens";
  if (size.messages !== undefined && size.messages > config.HISTORY_MAX_MESSAGES) return "messages";
  if (size.chars !== undefined && size.chars > DEFAULT_HISTORY_MAX_CHARS) return "size";
  return undefined;
}

/** What `/compact` got. */
export type CompactNowResult = CompactionResult | { outcome: "failed"; error: string } | { outcome: "pending" };

/** The producer side of the `compactions` queue. */
export class CompactionQueue {
  readonly queue: Queue<CompactionJob>;

  constructor(options: { redis: RedisClient; prefix?: string | undefined }) {
    this.queue = new Queue<CompactionJob>(COMPACTIONS_QUEUE, {
      connection: options.redis,
      prefix: bullPrefix(options.redis, COMPACTIONS_QUEUE, options.prefix),
    });
    this.queue.on("error", () => {});
  }

  /**
   * Asks for a compaction of `job.conversation`, deduplicated: while one of the conversation's
   * automatic compactions is queued, waiting for a retry or running, this adds nothing.
   * @throws when Redis is unreachable.
   */
  async request(job: CompactionJob): Promise<void> {
    await this.queue.add("compact", job, {
      ...COMPACTION_JOB_OPTIONS,
      deduplication: { id: conversationKey(job.conversation) },
    });
  }

  /**
   * Compacts now (`/compact`): adds a job of its own and waits up to `waitMs` for it.
   * @returns the compaction's result, `failed` (with the reason) after its first failed attempt
   *   (it is retried in the background), or `pending` when it has not finished in time.
   * @throws when Redis is unreachable.
   */
  async compactNow(job: CompactionJob, waitMs = COMPACT_NOW_WAIT_MS): Promise<CompactNowResult> {
    const added = await this.queue.add("compact", job, {
      ...COMPACTION_JOB_OPTIONS,
      jobId: `${chatJobId(job.conversation, "compact")}-${Date.now()}`,
    });
    const id = added.id!;
    const until = Date.now() + waitMs;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
      // The state first, then the job read after it: a job read before its state may predate its
      // completion (no return value yet, `null`) while the state already says completed, which a
      // loaded machine hit (the reply read `null.outcome` and the user got "try again").
      const state = await this.queue.getJobState(id);
      if (state === "unknown") return { outcome: "pending" };
      const current = await this.queue.getJob(id);
      if (!current) return { outcome: "pending" };
      if (state === "completed") {
        const result = current.returnvalue as CompactionResult | null;
        return result ?? { outcome: "pending" };
      }
      // A failed attempt leaves its reason (and one more attempt made); a completion meanwhile
      // counts an attempt too, without a reason: the next round reads it as completed.
      if (state === "failed" || (current.attemptsMade > 0 && current.failedReason))
        return { outcome: "failed", error: current.failedReason || "unknown" };
    }
    return { outcome: "pending" };
  }

  /** Closes the queue's connection use. Never throws. */
  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
  }
}

/** A worker of the `compactions` queue. */
export interface CompactionWorker {
  readonly worker: Worker<CompactionJob, CompactionResult>;
  close(force?: boolean): Promise<void>;
}

/**
 * The processor of the `compactions` queue: each job runs {@link compact} (a `/compact` job
 * waits up to 60 s for a compaction already running; an automatic one finding the conversation
 * busy is done, since that compaction covers it, unless the lease is its own earlier run's, whose
 * worker died: then the job fails and is retried with its backoff, so the compaction is redone).
 * `failed` logs a failed job (an error once it failed for good).
 */
export function compactionProcessor(
  deps: CompactorDeps,
  log: Logger,
): {
  process(job: Job<CompactionJob>): Promise<CompactionResult>;
  failed(job: Job<CompactionJob> | undefined, err: Error): void;
} {
  return {
    async process(job) {
      const parsed = CompactionJobSchema.safeParse(job.data);
      if (!parsed.success)
        throw new UnrecoverableError(
          `malformed compaction job: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
        );
      return compact(deps, parsed.data, {
        waitMs: parsed.data.reason === "command" ? 60_000 : 0,
        ...(job.id !== undefined ? { jobId: job.id } : {}),
      });
    },
    failed(job, err) {
      const attempts = job?.opts.attempts ?? 1;
      const made = job?.attemptsMade ?? attempts;
      log[made >= attempts ? "error" : "warn"](
        {
          chat: job ? conversationKey(job.data.conversation) : undefined,
          attempt: made,
          attempts,
          err: { message: err.message },
        },
        made >= attempts
          ? "compaction failed for good; the history stays as it is"
          : "compaction failed; it will be retried (the history stays as it is)",
      );
    },
  };
}

/**
 * Starts a worker of the `compactions` queue on its own ({@link compactionProcessor}); a bot's
 * worker runs the queue as the compaction feature's (`src/compaction/feature.ts`).
 *
 * @param options.concurrency - compactions in parallel in this process (different conversations).
 */
export function startCompactionWorker(
  deps: CompactorDeps,
  options: {
    redis: RedisClient;
    prefix?: string | undefined;
    concurrency: number;
    lockDurationMs: number;
    stalledIntervalMs: number;
    log: Logger;
  },
): CompactionWorker {
  const processor = compactionProcessor(deps, options.log);
  const worker = new Worker<CompactionJob, CompactionResult>(COMPACTIONS_QUEUE, (job) => processor.process(job), {
    connection: options.redis,
    prefix: bullPrefix(options.redis, COMPACTIONS_QUEUE, options.prefix),
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
  });
  worker.on("error", () => {});
  worker.on("failed", (job, err) => processor.failed(job, err));
  return {
    worker,
    close: async (force = false) => {
      await worker.close(force).catch(() => {});
    },
  };
}
