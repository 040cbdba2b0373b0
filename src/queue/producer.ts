/**
 * The producer side of the queue: what an adapter's `enqueue` calls.
 *
 * BullMQ (open source) has no per-group ordering, so ordering is ours: each chat has an inbox
 * list in Redis and at most one BullMQ job at a time, which drains the inbox in order (see
 * `src/worker/worker.ts`). Enqueueing is one atomic Lua script plus, only when the chat had no job,
 * one `Queue.add`.
 */
import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import { EnqueueError } from "../adapter.js";
import { IncomingMessageSchema, type IncomingMessage } from "./incoming.js";
import { CHATS_QUEUE, chatJobId, chatKeys, dedupeKey } from "./keys.js";

/** Seconds a platform message id is remembered, so a redelivered update is accepted once (Telegram redelivers for up to 24 h). */
export const DEDUPE_TTL_SECONDS = 2 * 24 * 3600;

/**
 * KEYS: seen, inbox, scheduled. ARGV: message JSON, dedupe TTL (seconds).
 * Returns 0 when the message was seen before, 1 when queued behind a job that already exists,
 * 2 when queued and the caller must add the chat's job.
 */
const ENQUEUE_SCRIPT = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) == false then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
if redis.call('SET', KEYS[3], '1', 'NX') == false then return 1 end
return 2
`;

/** What happened to an enqueued message. */
export type EnqueueResult = "duplicate" | "queued" | "scheduled";

/**
 * BullMQ options of chat jobs. A job retries only transient failures (the worker decides which
 * errors are transient): 3 attempts, 1 s then 2 s apart, on top of the SDK's own retries, so a
 * user waits seconds, not minutes, for an apology when the model is down.
 */
export const CHAT_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: { count: 1000 },
  removeOnFail: { count: 1000 },
};

/** Options of {@link ChatQueue}. */
export interface ChatQueueOptions {
  /**
   * Connection for the inbox script and for BullMQ's `Queue`. Per BullMQ's guidance a producer may
   * fail fast (e.g. `maxRetriesPerRequest: 1`, `commandTimeout`), so the adapter can answer "try again".
   */
  redis: Redis;
  /**
   * Connection for the inbox, the chat mark and the dedupe keys when they live on another Redis
   * than BullMQ (the benchmark does this to count each side's commands); default `redis`.
   */
  store?: Redis;
  /** BullMQ key prefix (default BullMQ's `bull`). */
  prefix?: string;
}

/** Puts incoming messages into their chat's inbox and makes sure the chat has a job. */
export class ChatQueue {
  /** The BullMQ queue of chat jobs; job data is the {@link IncomingMessage} that scheduled the job. */
  readonly queue: Queue<IncomingMessage>;
  readonly #redis: Redis;

  constructor(options: ChatQueueOptions) {
    this.#redis = options.store ?? options.redis;
    this.queue = new Queue<IncomingMessage>(CHATS_QUEUE, { connection: options.redis, prefix: options.prefix });
    this.queue.on("error", () => {}); // connection problems are logged by connectRedis
    if (!("enqueueChat" in this.#redis)) {
      this.#redis.defineCommand("enqueueChat", { numberOfKeys: 3, lua: ENQUEUE_SCRIPT });
    }
  }

  /**
   * Queues `message` for a worker.
   *
   * Validates it with {@link IncomingMessageSchema}; atomically remembers its id (a redelivered
   * message returns `duplicate` and changes nothing), appends it to the chat's inbox and marks the
   * chat scheduled; when the chat had no job, adds one (job id from platform, chat and message id).
   *
   * @throws {EnqueueError} when the message is malformed, or Redis could not be reached. When the
   *   job could not be added after the message entered the inbox, the chat's mark is cleared and
   *   the message is picked up with the chat's next message.
   */
  async enqueue(message: IncomingMessage): Promise<EnqueueResult> {
    const parsed = IncomingMessageSchema.safeParse(message);
    if (!parsed.success) {
      throw new EnqueueError(`malformed message: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    }
    const msg = parsed.data;
    const keys = chatKeys(msg);
    let outcome: number;
    try {
      outcome = await (this.#redis as RedisWithScripts).enqueueChat(dedupeKey(msg, msg.messageId), keys.inbox, keys.scheduled, JSON.stringify(msg), DEDUPE_TTL_SECONDS);
    } catch (error) {
      throw new EnqueueError(`could not queue the message: ${(error as Error).message}`, { cause: error });
    }
    if (outcome === 0) return "duplicate";
    if (outcome === 1) return "queued";
    try {
      await this.queue.add("chat", msg, { ...CHAT_JOB_OPTIONS, jobId: chatJobId(msg, msg.messageId) });
    } catch (error) {
      await this.#redis.del(keys.scheduled).catch(() => {});
      throw new EnqueueError(`could not schedule the chat: ${(error as Error).message}`, { cause: error });
    }
    return "scheduled";
  }

  /** Closes the BullMQ queue (not the shared connection). Never throws. */
  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
  }
}

interface RedisWithScripts extends Redis {
  enqueueChat(seen: string, inbox: string, scheduled: string, json: string, ttl: number): Promise<number>;
}
