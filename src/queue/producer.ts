/**
 * The producer side of the queue: what an adapter's `enqueue` calls.
 *
 * BullMQ (open source) has no per-group ordering, so ordering is ours: each chat has an inbox
 * list in Redis and at most one BullMQ job at a time, which drains the inbox in order (see
 * `src/worker/worker.ts`): a chat has a job exactly while its inbox is not empty. Enqueueing is one
 * atomic Lua script plus, only when the message entered an empty inbox, one `Queue.add`.
 *
 * Should a chat lose its job (removed by hand, lost), its inbox would wait for good: a message
 * queued behind a head that Redis cannot decode, or that was queued longer than
 * `STALLED_INBOX_MS` ago, adds an {@link UNBLOCK_JOB}, which takes the inbox up when no other job
 * of the conversation is alive (`src/queue/stalled.ts`).
 */
import { Queue, type JobsOptions } from "bullmq";
import type { RedisClient } from "../redis.js";
import { bullmqTelemetry } from "../telemetry/otel.js";
import { EnqueueError } from "./errors.js";
import { IncomingMessageSchema, type ConversationRef, type IncomingMessage } from "./incoming.js";
import { bullPrefix, CHATS_QUEUE, chatJobId, conversationKeys, dedupeKey } from "./keys.js";
import { STALLED_INBOX_MS } from "./stalled.js";

/** Seconds a platform message id is remembered, so a redelivered update is accepted once (Telegram redelivers for up to 24 h). */
export const DEDUPE_TTL_SECONDS = 2 * 24 * 3600;

/**
 * KEYS: seen, inbox. ARGV: message JSON, dedupe TTL (seconds), most messages the inbox may hold
 * (0 = no cap), now (ms since the Unix epoch), {@link STALLED_INBOX_MS}.
 * Returns 3 when the inbox is full (nothing changed), 0 when the message was seen before, 1 when
 * queued behind messages that already have a job, 2 when the inbox was empty (no job for the
 * chat): the caller must add the chat's job.
 * When the message would wait behind others (1, or 3) and the inbox's head may have no job,
 * returns `{code, sha1 of the head}` instead, and the caller adds the head's {@link UNBLOCK_JOB}:
 * when Redis' `cjson` cannot decode the head (a finish script of an older version could not pop
 * such an entry and ended its job without another: docs/operations.md, "troubleshooting"), or
 * when the head was queued (`queuedAt`) at least ARGV[5] ms before ARGV[4] (its job may be gone:
 * `src/queue/stalled.ts`; the unblock job leaves the inbox to a job still alive).
 * Three commands on the server without a cap (`EVALSHA`, `SET NX EX`, `RPUSH`), four with one
 * (`LLEN`); a message queued behind others adds the head's `LINDEX` (decoded there by `cjson`).
 */
const ENQUEUE_SCRIPT = `
local function stuck(code)
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then return code end
  local ok, m = pcall(cjson.decode, head)
  if not ok then return {code, redis.sha1hex(head)} end
  if type(m) == 'table' and type(m.queuedAt) == 'number' and m.queuedAt + tonumber(ARGV[5]) <= tonumber(ARGV[4]) then
    return {code, redis.sha1hex(head)}
  end
  return code
end
local cap = tonumber(ARGV[3])
if cap > 0 and redis.call('LLEN', KEYS[2]) >= cap then return stuck(3) end
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) == false then return 0 end
if redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then return 2 end
return stuck(1)
`;

/**
 * The name of a chat job added for an inbox whose head may have no job ({@link unblockJobId}): an
 * entry Redis cannot decode, or one queued longer than {@link STALLED_INBOX_MS} ago. The worker
 * looks at the head before anything else (`src/worker/worker.ts`): nothing is done when the head
 * is no longer the one the job was added for, or when another job of the conversation is alive
 * (it drains the inbox); an entry Redis cannot decode whose answer is already in the history is
 * popped without being answered again; otherwise the inbox is drained as usual, from its head.
 * A worker of an older version that takes such a job for a head Redis decodes does nothing.
 */
export const UNBLOCK_JOB = "unblock";

/**
 * The job id of the {@link UNBLOCK_JOB} of `conversation`'s inbox whose head is the entry with
 * SHA-1 `sha1` (hex): one such job per stuck entry, however many messages arrive behind it
 * (BullMQ ignores an add whose id exists; see {@link UNBLOCK_JOB_OPTIONS}).
 */
export function unblockJobId(conversation: ConversationRef, sha1: string): string {
  return `${chatJobId(conversation, UNBLOCK_JOB)}-${sha1.slice(0, 16)}`;
}

/**
 * Undoes an enqueue whose job could not be added. KEYS: seen, inbox. ARGV: message JSON.
 * When the message is still alone in the inbox (nothing was queued behind it), removes it and its
 * dedupe mark and returns 1: the chat is as before, and a retry of the message is accepted.
 * Otherwise returns 0 (messages queued behind it count on its job, so it stays).
 */
const UNDO_SCRIPT = `
if redis.call('LLEN', KEYS[2]) == 1 and redis.call('LINDEX', KEYS[2], 0) == ARGV[1] then
  redis.call('DEL', KEYS[2], KEYS[1])
  return 1
end
return 0
`;

/** Delays in ms between further attempts to add a chat's job after a failed add left messages waiting. */
const READD_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15000, 30000, 60000];

/**
 * What happened to an enqueued message: `full` when the conversation already holds
 * `maxQueued` unanswered messages (it was not queued).
 */
export type EnqueueResult = "duplicate" | "queued" | "scheduled" | "full";

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

/**
 * BullMQ options of an {@link UNBLOCK_JOB}: a chat job's ({@link CHAT_JOB_OPTIONS}), removed once
 * completed, so that its id ({@link unblockJobId}) keeps a second one from being added only while
 * it waits or runs: should the entry still head the inbox afterwards (a worker of an older version
 * took the job during a rolling update), the next message adds a new one.
 */
export const UNBLOCK_JOB_OPTIONS: JobsOptions = { ...CHAT_JOB_OPTIONS, removeOnComplete: true };

/** Options of {@link ChatQueue}. */
export interface ChatQueueOptions {
  /**
   * Connection for the inbox script and for BullMQ's `Queue`. Per BullMQ's guidance a producer may
   * fail fast (e.g. `maxRetriesPerRequest: 1`, `commandTimeout`), so the adapter can answer "try again".
   */
  redis: RedisClient;
  /**
   * Connection for the inbox, the chat mark and the dedupe keys when they live on another Redis
   * than BullMQ (the benchmark does this to count each side's commands); default `redis`.
   */
  store?: RedisClient;
  /** BullMQ key prefix (default BullMQ's `bull`). */
  prefix?: string;
  /**
   * The clock of `queuedAt` and of the stalled-inbox check, ms since the Unix epoch (default
   * `Date.now`; tests pass their own).
   */
  now?: () => number;
}

/** Puts incoming messages into their chat's inbox and makes sure the chat has a job. */
export class ChatQueue {
  /** The BullMQ queue of chat jobs; job data is the {@link IncomingMessage} that scheduled the job. */
  readonly queue: Queue<IncomingMessage>;
  readonly #redis: RedisClient;
  readonly #now: () => number;
  #closed = false;

  constructor(options: ChatQueueOptions) {
    this.#redis = options.store ?? options.redis;
    this.#now = options.now ?? Date.now;
    this.queue = new Queue<IncomingMessage>(CHATS_QUEUE, {
      connection: options.redis,
      prefix: bullPrefix(options.redis, CHATS_QUEUE, options.prefix),
      ...bullmqTelemetry(),
    });
    this.queue.on("error", () => {}); // connection problems are logged by connectRedis
    if (!("enqueueChat" in this.#redis)) {
      this.#redis.defineCommand("enqueueChat", { numberOfKeys: 2, lua: ENQUEUE_SCRIPT });
      this.#redis.defineCommand("undoEnqueue", { numberOfKeys: 2, lua: UNDO_SCRIPT });
    }
  }

  /**
   * Queues `message` for a worker.
   *
   * Validates it with {@link IncomingMessageSchema}; returns `full` without changing anything when
   * the conversation's inbox holds `options.maxQueued` messages (unanswered ones, the one being
   * answered included; default no cap); atomically remembers its id (a redelivered
   * message returns `duplicate` and changes nothing) and appends it to the chat's inbox; when the
   * inbox was empty (the chat had no job), adds one (job id from platform, chat and message id).
   * The message is queued with `queuedAt` (now). When it would wait (queued or full) behind an
   * inbox head that may have no job — one Redis cannot decode, which a finish script of an older
   * version left without a job, or one queued at least {@link STALLED_INBOX_MS} ago — also adds
   * that head's {@link UNBLOCK_JOB}, so the conversation answers again (nothing is done when its
   * job is merely slow).
   *
   * @throws {EnqueueError} when the message is malformed, or Redis could not be reached. When the
   *   job could not be added after the message entered the inbox and the message is still alone
   *   there, it is removed again (with its dedupe mark) and EnqueueError is thrown, so the user is
   *   asked to try again. When other messages were queued behind it meanwhile (they count on its
   *   job), it stays, `scheduled` is returned and the add is retried in the background with the
   *   same job id (BullMQ ignores an add whose id exists, so an add that timed out but reached
   *   Redis never makes a second job). When even the undo fails (Redis unreachable), the add is
   *   retried in the background too and EnqueueError is thrown.
   */
  async enqueue(message: IncomingMessage, options: { maxQueued?: number } = {}): Promise<EnqueueResult> {
    const parsed = IncomingMessageSchema.safeParse(message);
    if (!parsed.success) {
      throw new EnqueueError(
        `malformed message: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    }
    const now = this.#now();
    const msg: IncomingMessage = { ...parsed.data, queuedAt: now };
    const keys = conversationKeys(msg);
    const json = JSON.stringify(msg);
    const seen = dedupeKey(msg, msg.messageId);
    let outcome: number;
    try {
      const reply = await (this.#redis as RedisWithScripts).enqueueChat(
        seen,
        keys.inbox,
        json,
        DEDUPE_TTL_SECONDS,
        options.maxQueued ?? 0,
        now,
        STALLED_INBOX_MS,
      );
      outcome = typeof reply === "number" ? reply : reply[0];
      if (typeof reply !== "number") await this.#unblock(msg, reply[1]);
    } catch (error) {
      throw new EnqueueError(`could not queue the message: ${(error as Error).message}`, { cause: error });
    }
    if (outcome === 3) return "full";
    if (outcome === 0) return "duplicate";
    if (outcome === 1) return "queued";
    const add = () => this.queue.add("chat", msg, { ...CHAT_JOB_OPTIONS, jobId: chatJobId(msg, msg.messageId) });
    try {
      await add();
    } catch (error) {
      const undone = await (this.#redis as RedisWithScripts).undoEnqueue(seen, keys.inbox, json).catch(() => -1);
      if (undone === 1)
        throw new EnqueueError(`could not schedule the chat: ${(error as Error).message}`, { cause: error });
      void this.#readd(add);
      if (undone === -1)
        throw new EnqueueError(`could not schedule the chat: ${(error as Error).message}`, { cause: error });
    }
    return "scheduled";
  }

  /**
   * Adds the {@link UNBLOCK_JOB} of `message`'s conversation, whose inbox is headed by the entry
   * with SHA-1 `sha1` that may have no job (see `ENQUEUE_SCRIPT`); while one for that head waits
   * or runs, BullMQ ignores the add (same id). Never throws: when the add fails, the next message
   * behind that entry asks again.
   */
  async #unblock(message: IncomingMessage, sha1: string): Promise<void> {
    await this.queue
      .add(UNBLOCK_JOB, message, { ...UNBLOCK_JOB_OPTIONS, jobId: unblockJobId(message, sha1) })
      .catch(() => {});
  }

  /** Retries adding a chat's job (same job id) until it succeeds or the queue closes. Never throws. */
  async #readd(add: () => Promise<unknown>): Promise<void> {
    for (const delay of READD_DELAYS_MS) {
      await new Promise((r) => setTimeout(r, delay).unref());
      if (this.#closed) return;
      try {
        await add();
        return;
      } catch {
        // keep trying
      }
    }
  }

  /** Closes the BullMQ queue (not the shared connection). Never throws. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.queue.close().catch(() => {});
  }
}

type RedisWithScripts = RedisClient & {
  enqueueChat(
    seen: string,
    inbox: string,
    json: string,
    ttl: number,
    cap: number,
    now: number,
    stalledMs: number,
  ): Promise<number | [number, string]>;
  undoEnqueue(seen: string, inbox: string, json: string): Promise<number>;
};
