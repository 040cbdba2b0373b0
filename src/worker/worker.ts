/**
 * The worker: takes chat jobs from BullMQ, and the jobs of every feature queue (`Feature.queues`,
 * `src/feature.ts`: decisions, scheduled tasks' occurrences, compactions, reminders), and gives
 * each answer through the answer pipeline (`pipeline.ts`, its map in the module comment):
 * `message.ts` takes a chat's messages in order, `decision.ts` resumes a run paused for an
 * approval (the approvals feature's queue), `task.ts` runs a task's occurrence as its owner (the
 * tasks feature's queue); `deliver.ts` sends.
 *
 * A chat job drains its chat's inbox (`src/queue/producer.ts` puts messages there): peek the head,
 * answer it, pop it; when the inbox is empty, one atomic script clears the chat's mark and the job
 * ends. Only one job per chat exists at a time, so one chat is strictly sequential even with many
 * worker processes, while different chats run in parallel (`WORKER_CONCURRENCY` per process).
 * A crashed worker's job stalls; BullMQ hands it to another worker, which resumes at the unpopped head;
 * a message whose processing crashed a worker twice is skipped there with an apology (`pipeline.ts`).
 * A stop is not a crash: a stop that gives up on the answers still running hands them back marked
 * interrupted ({@link ChatWorker.interrupt}), not counted toward that skip.
 * An inbox entry Redis cannot decode (a lone UTF-16 surrogate's escape, from an older version or
 * another writer) never stops the chat: the finish script pops it by its id without decoding it,
 * and an `unblock` job ({@link UNBLOCK_JOB}) takes up one left at the head without a job. So does
 * an unblock job added for an inbox whose head was queued long ago (`src/queue/stalled.ts`: its
 * job removed or lost), when no other job of the conversation is alive.
 *
 * Answers are idempotent: the run's messages are appended to the history in one command, tagged
 * with the message id (and the answer), before anything is sent; when an answer may take more than
 * one chunk (longer than the outbound's `singleChunkUnits`), each sent chunk is counted in Redis;
 * for a one-chunk answer the pop of the message records that it went out. A retried job finds the answer in the history and sends only the chunks
 * not yet sent.
 *
 * Redis on the common path (one-chunk answer, one job per message; `npm run bench` counts it, see
 * docs/worker-path.md): one round trip of reads when the answer begins (`readAtStart` of `pipeline.ts`:
 * the history, settings and approval hint in one `MGET`, the memory's `GET`), the guarded append script before
 * anything is sent (`EVALSHA`, `GET` of the last reset's time, `APPEND`), and the finish script after
 * it (`EVALSHA`, `LPOP … 2`, the run's trace `LPUSH`, its `EXPIRE` at most once an hour per chat).
 * A fresh attempt writes no crash marker. The first message of a fresh job is taken from the job's
 * data, not read from the inbox. Stop adds nothing to a chat message's answer: the inbox's head is
 * what an adapter reads to find the answer being written (`src/stop/`); a resumed approval's answer
 * writes its answering record (`SET … EX` in that first write, a compare-and-delete when computed).
 */
import { Queue, UnrecoverableError, Worker, type Job } from "bullmq";
import { conversationStores } from "../conversations/migrate.js";
import type { Feature, QueueProcessor, WorkerParts } from "../feature.js";
import type { RedisClient } from "../redis.js";
import { metrics } from "../metrics.js";
import { IncomingMessageSchema, conversationKey, conversationOf, type IncomingMessage } from "../queue/incoming.js";
import { bullPrefix, CHATS_QUEUE, TOOL_CALL_PREFIX, chatJobId, conversationKeys, progressKeys } from "../queue/keys.js";
import { CHAT_JOB_OPTIONS, UNBLOCK_JOB, UNBLOCK_JOB_OPTIONS, unblockJobId } from "../queue/producer.js";
import { otherLiveChatJob } from "../queue/stalled.js";
import type { PendingTrace } from "../trace/tracer.js";
import { ExecutionLedger } from "../toolbox/once.js";
import { traceKey, tracePushLua } from "../trace/store.js";
import { bullmqTelemetry } from "../telemetry/otel.js";
import { answerMessage } from "./message.js";
import type { AnswerServices, WorkerDeps } from "./deps.js";
import { CHECKPOINT_TTL_SECONDS, CRASHES_BEFORE_SKIP, type AnswerParts } from "./pipeline.js";

export { PROGRESS_TTL_SECONDS } from "./deliver.js";

/** What a worker needs, and the agent loop's entry point it is given (`deps.ts`, which `pipeline.ts` reads too). */
export type { RunAgent, WorkerDeps } from "./deps.js";

/** How often the typing indicator is refreshed, in ms (it lasts about 5 s on Telegram and Discord). */
export const TYPING_INTERVAL_MS = 4000;

/**
 * BullMQ lock of an active job, in ms: the worker renews it every half of this while the job runs.
 * A worker that dies stops renewing; once the lock has run out, the next stalled-job check (every
 * {@link STALLED_INTERVAL_MS}, by any worker) hands the job to another worker. Together they bound
 * the pickup of a dead worker's job to about 6 + 3 = 9 s (BullMQ's defaults, 30 s + 30 s, gave
 * 34–67 s), leaving room under the 15 s promised in the README on a busy machine. Source: https://docs.bullmq.io/guide/workers/stalled-jobs
 */
export const LOCK_DURATION_MS = 6_000;

/** How often a worker checks for stalled jobs, in ms (see {@link LOCK_DURATION_MS}). */
export const STALLED_INTERVAL_MS = 3_000;

/**
 * Stalls (its worker process died) after which BullMQ fails a job instead of handing it to the
 * next worker: {@link CRASHES_BEFORE_SKIP}, so the attempt after a message's second crash still
 * runs — and skips that message with an apology (`pipeline.ts`) instead of running it a third time.
 * A chat job failed this way (its stalls added up over several messages) is replaced by a new job
 * for the chat, as after any final failure. BullMQ's default is 1.
 */
export const MAX_STALLED_COUNT = CRASHES_BEFORE_SKIP;

/** BullMQ's failure reason of a job that stalled more than `maxStalledCount` times. */
const STALLED_OUT = "job stalled more than allowable limit";

/** A running worker. */
export interface ChatWorker {
  /** The BullMQ worker of chat jobs. */
  readonly chats: Worker<IncomingMessage>;
  /** The BullMQ worker of each feature queue this worker runs (`decisions`, `tasks`, `compactions`, `reminders` …), by queue name. */
  readonly queues: ReadonlyMap<string, Worker>;
  /** Resolves when every worker is connected and taking jobs. */
  waitUntilReady(): Promise<void>;
  /**
   * Stops taking jobs, lets the jobs in flight finish (BullMQ `close`; a chat with more messages
   * waiting is handed to a new job), and closes the worker's own queues. After `timeoutMs`
   * (default 30 000 ms: a long answer, or Redis down) it gives up on them, logging which of the two
   * it was: with Redis up, the answers still running are first marked interrupted ({@link interrupt},
   * at most {@link INTERRUPT_WAIT_MS}), so that the next attempt does them again without counting a
   * crash; with Redis down, they stall, and once their lock lapses BullMQ hands them to another
   * worker (or this one's next start), counted as a crash. Does not close `deps.redis`. Never throws.
   */
  close(timeoutMs?: number): Promise<void>;
  /**
   * Marks the chat answers this worker is still running as *interrupted*, for a stop that gives up
   * on them (the graceful wait of {@link close} ran out, or a forced exit: a second Ctrl-C): for
   * each, its job is moved back to the delayed set with its lock token (BullMQ `moveToDelayed`,
   * which counts neither a stall nor an attempt), due in {@link LOCK_DURATION_MS} — when its lock
   * would have lapsed — so that no other worker takes it up while this process exits; then what its
   * attempt adds to the answer's crash marker is taken back (`DECR`). The next attempt does
   * the answer again, and the skip after {@link CRASHES_BEFORE_SKIP} crashes counts only real ones.
   * Each job is marked once; the answers themselves are not stopped (the process exits next).
   * Bounded by `timeoutMs` (default {@link INTERRUPT_WAIT_MS}); never throws.
   * @returns how many answers were marked (0 when Redis did not answer in time).
   */
  interrupt(timeoutMs?: number): Promise<number>;
}

/**
 * How long a stop that gives up on the answers still running waits for them to be marked
 * interrupted ({@link ChatWorker.interrupt}), in ms: two Redis round trips per answer, sent together.
 */
export const INTERRUPT_WAIT_MS = 1000;

/**
 * KEYS: inbox, sent (or a placeholder of the chat), trace key of the chat.
 * ARGV: [1] id of the message just handled ("" when the entry was malformed), [2] "1" to delete
 * its sent-chunk count, [3] the run's trace JSON ("" for none), [4] runs kept, [5] trace TTL (s),
 * [6] "1" to renew the trace list's expiry (see {@link TraceRenewals}), [7] the handled entry as
 * read from the inbox when the worker hands it back ({@link entryToMatch}; "" otherwise), [8] the
 * handled message's id field as `JSON.stringify` writes it (`"messageId":"42"`; "" for a
 * malformed entry).
 * Pops the handled message, writes the run's trace, and returns `{new head, unreadable}`: the new
 * head, or `false` (nil) when the inbox is empty: the job then ends, and the chat's next message,
 * entering an empty inbox, adds a new job. When the popped entry is not the handled message, it is
 * put back and the head is `false`: the handled message was the job's own data, and the inbox had
 * been emptied by the producer's undo of an add that timed out yet reached BullMQ, so what is
 * there now has a job of its own.
 *
 * The popped entry is the handled one when it is [7] itself, else when its `messageId` is [1]. An
 * entry Redis' `cjson` cannot decode (a lone UTF-16 surrogate, which `JSON.stringify` writes as
 * the escape `\ud800`, written by an older version or another writer) is never left in the way:
 * it is recognised by [7], or by its first `"messageId":` field being [8], without decoding it,
 * and popped like any other. `unreadable` says that such an entry was met: 0 none, 1 popped as the
 * handled message, else (a string) the SHA-1 of such an entry put back at the head because it is
 * not the handled one: the worker adds that entry's {@link UNBLOCK_JOB} (which leaves it to its own
 * job if that job still runs).
 *
 * The pop takes two entries (`LPOP key 2`) and puts the second back (`LPUSH`) when there is one:
 * one command when the inbox held only the handled message (the common case at a steady rate),
 * two when more wait — never more than `LPOP` + `LINDEX`.
 */
const FINISH_SCRIPT = `
local popped = redis.call('LPOP', KEYS[1], 2)
local head = popped and popped[1] or false
local nextHead = popped and popped[2] or false
local unreadable = 0
if head and (ARGV[1] ~= '' or ARGV[7] ~= '') then
  local mine = ARGV[7] ~= '' and head == ARGV[7]
  if ARGV[1] ~= '' then
    local ok, m = pcall(cjson.decode, head)
    if ok then
      mine = mine or (type(m) == 'table' and m.messageId == ARGV[1])
    else
      unreadable = 1
      local at = string.find(head, ARGV[8], 1, true)
      mine = mine or (at ~= nil and at == string.find(head, '"messageId":', 1, true))
    end
  end
  if not mine then
    if unreadable == 1 then unreadable = redis.sha1hex(head) end
    if nextHead then redis.call('LPUSH', KEYS[1], nextHead, head) else redis.call('LPUSH', KEYS[1], head) end
    head = false
    nextHead = false
  end
end
if ARGV[2] == '1' then redis.call('DEL', KEYS[2]) end
if ARGV[3] ~= '' then ${tracePushLua(3, 3, 6)} end
if nextHead then redis.call('LPUSH', KEYS[1], nextHead) end
return {nextHead, unreadable}
`;

/**
 * The handled entry as the finish script compares it ({@link FINISH_SCRIPT}'s ARGV[7]): the raw
 * entry when it was read from the inbox and is malformed (no id to compare), or holds the JSON
 * escape of a UTF-16 surrogate (what Redis may be unable to decode; `JSON.stringify` escapes only
 * a lone one, so a well-formed entry of ours holds none); "" otherwise, so that the common entry
 * is not sent back to Redis.
 */
function entryToMatch(entry: string | IncomingMessage, id: string): string {
  if (typeof entry !== "string") return "";
  return id === "" || SURROGATE_ESCAPE.test(entry) ? entry : "";
}

/** An inbox entry as a message, or undefined when it is malformed. */
function parseEntry(raw: string): IncomingMessage | undefined {
  try {
    const parsed = IncomingMessageSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON escape of a UTF-16 surrogate (`\ud800`–`\udfff`, either case). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/;

/** What the finish script said of an entry Redis could not decode: 0 none, 1 popped, else the SHA-1 of one put back. */
type Unreadable = 0 | 1 | string;

/**
 * KEYS: inbox. Returns `{head, unreadable, sha1}`: the inbox's first entry, 1 when Redis' `cjson`
 * cannot decode it (else 0), and its SHA-1 (hex); or `false` (nil) when the inbox is empty.
 */
const HEAD_SCRIPT = `
local head = redis.call('LINDEX', KEYS[1], 0)
if not head then return false end
if pcall(cjson.decode, head) then return {head, 0, redis.sha1hex(head)} end
return {head, 1, redis.sha1hex(head)}
`;

type RedisWithWorkerScripts = RedisClient & {
  inboxHead(inbox: string): Promise<[string, 0 | 1, string] | null>;
  finishChat(
    inbox: string,
    sent: string,
    traceKey: string,
    messageId: string,
    delSent: "0" | "1",
    trace: string,
    keep: number,
    ttl: number,
    renew: "0" | "1",
    entry: string,
    idField: string,
  ): Promise<[string | null, Unreadable]>;
};

/** How often a worker renews the expiry of one chat's trace list, at most: an hour (in ms). */
export const TRACE_RENEW_MS = 3_600_000;

/**
 * When this worker last renewed each chat's trace expiry, so that the finish script renews it at
 * most once every {@link TRACE_RENEW_MS} (and when it creates or cuts the list): a chat's traces
 * then live `TRACE_TTL_SECONDS` after its latest run, less at most that hour, for one `EXPIRE` per
 * hour instead of one per run. Remembers the last {@link TraceRenewals.MAX} chats; a chat it
 * forgot is renewed on its next run.
 */
export class TraceRenewals {
  static readonly MAX = 10_000;
  readonly #at = new Map<string, number>();

  /** Whether the run finishing now in the chat of `key` renews the expiry (and notes it when it does); `now` in ms. */
  due(key: string, now: number): boolean {
    const last = this.#at.get(key);
    if (last !== undefined && now - last < TRACE_RENEW_MS && now >= last) return false;
    if (this.#at.size >= TraceRenewals.MAX) this.#at.clear();
    this.#at.set(key, now);
    return true;
  }
}

/**
 * Starts a worker: a BullMQ Worker on the `chats` queue with `concurrency: WORKER_CONCURRENCY`,
 * and one on each queue of `features` (`Feature.queues`, `src/feature.ts`: the `decisions` queue
 * whose jobs resume the paused runs, scheduled tasks' occurrences, compactions, reminders), running
 * the processor the feature gives. Before that, it starts each feature's worker side
 * (`Feature.worker`, {@link startWorkerSides}): what they lend the answers (the confirmation flow,
 * the settings, compaction, Stop), closed with the worker.
 * A chat job that failed for good (its retries spent, or stalled more than {@link MAX_STALLED_COUNT}
 * times) is replaced by a new job for the chat after 5 s, so a chat never stays stuck behind its mark.
 */
export function startWorker(deps: WorkerDeps, features: readonly Feature[]): ChatWorker {
  const { config, log } = deps;
  const redis = deps.store ?? deps.redis;
  const store = redis as RedisWithWorkerScripts;
  if (!("finishChat" in redis)) {
    redis.defineCommand("finishChat", { numberOfKeys: 3, lua: FINISH_SCRIPT });
    redis.defineCommand("inboxHead", { numberOfKeys: 1, lua: HEAD_SCRIPT });
  }
  const queue = new Queue<IncomingMessage>(CHATS_QUEUE, {
    connection: deps.redis,
    prefix: bullPrefix(deps.redis, CHATS_QUEUE, deps.prefix),
  });
  queue.on("error", () => {});
  let closing = false;

  const ledger = new ExecutionLedger(redis, { prefix: TOOL_CALL_PREFIX, log });
  // The features' worker sides, started in list order: what they lend the answers (approvals, settings, compaction, Stop).
  const started = startWorkerSides(features, {
    config,
    log,
    bullRedis: deps.redis,
    redis,
    prefix: deps.prefix,
    history: deps.history,
    toolbox: deps.toolbox,
    client: deps.client,
    usage: deps.usage,
    tracerFor: deps.tracerFor,
  });
  const { store: _store, ...rest } = deps;
  const parts: AnswerParts = {
    ...rest,
    ...started.lends,
    redis,
    typingIntervalMs: deps.typingIntervalMs ?? TYPING_INTERVAL_MS,
    ledger,
    conversationStores: conversationStores(features),
  };

  const renewals = new TraceRenewals();

  async function drain(job: Job<IncomingMessage>, run: InFlight): Promise<void> {
    const parsed = IncomingMessageSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(
        `malformed chat job: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    }
    run.data = parsed.data;
    const keys = conversationKeys(parsed.data);
    const trace = traceKey(parsed.data);
    const chat = conversationKey(parsed.data);
    /**
     * Pops the handled entry (the finish script) and writes the run's trace; returns the new head.
     * Warns when the entry was one Redis cannot decode, and adds the {@link UNBLOCK_JOB} of such an
     * entry found at the head that is not the handled one.
     */
    const finish = async (
      entry: string | IncomingMessage,
      id: string,
      counted: boolean,
      run?: PendingTrace,
    ): Promise<string | null> => {
      const [next, unreadable] = await store.finishChat(
        keys.inbox,
        counted ? progressKeys(parsed.data, id).sent : keys.inbox,
        trace,
        id,
        counted ? "1" : "0",
        run?.json ?? "",
        run?.keepRuns ?? 0,
        run?.ttlSeconds ?? 0,
        run && renewals.due(trace, Date.now()) ? "1" : "0",
        entryToMatch(entry, id),
        id === "" ? "" : `"messageId":${JSON.stringify(id)}`,
      );
      if (unreadable === 1)
        log.warn(
          { chat, messageId: id, job: job.id },
          "removed an inbox entry Redis cannot decode (a lone UTF-16 surrogate, from an older version or another writer) by its id",
        );
      else if (unreadable !== 0) {
        log.warn(
          { chat, messageId: id, job: job.id },
          "an inbox entry Redis cannot decode heads the inbox and is not the message just answered; a job is added to take it up",
        );
        await queue
          .add(UNBLOCK_JOB, parsed.data, { ...UNBLOCK_JOB_OPTIONS, jobId: unblockJobId(parsed.data, unreadable) })
          .catch((err: unknown) => log.error({ err, chat }, "could not add the job to take up the inbox's head"));
      }
      return next;
    };
    // A fresh job was added for the message that entered the empty inbox: it is the head.
    let head: string | IncomingMessage | null =
      job.name === UNBLOCK_JOB
        ? await unblock(job, parsed.data, keys.inbox, finish)
        : job.name === "chat" && job.attemptsStarted <= 1
          ? parsed.data
          : await redis.lindex(keys.inbox, 0);
    while (head !== null) {
      run.head = head;
      const done = await answerMessage(parts, job, head);
      head = await finish(head, done.message?.messageId ?? "", done.counted, done.trace);
      if (head !== null && closing) {
        // Shutting down: hand the rest of the chat to a new job (another worker, or this one after a restart).
        await queue.add("handover", parsed.data, { ...CHAT_JOB_OPTIONS, jobId: `${job.id}-h${Date.now()}` });
        return;
      }
    }
  }

  /**
   * The first step of an {@link UNBLOCK_JOB}, added for an inbox whose head may have no job: an
   * entry Redis cannot decode, which a finish script of an older version could not pop (it ended
   * its job, and the conversation answered nothing more), or one queued long ago, whose job may be
   * gone (`src/queue/stalled.ts`). Returns the head to answer, or null to end the job:
   * - another job of the conversation alive ({@link otherLiveChatJob}: waiting, running, delayed,
   *   or failed within the last minute, its replacement on the way): null, that job drains the
   *   inbox (a slow answer is never answered twice); asked on a later attempt of this job too
   *   (which was draining the inbox itself), and before the head is read, so that a job ending
   *   in between is seen by the head it left;
   * - no head: null;
   * - on the job's first attempt, a head that is not the one it was added for (its id ends with
   *   the head's SHA-1): null, another job took that entry up;
   * - a head Redis decodes: returned, answered as a resumed job answers (an answer already in the
   *   history is sent, not asked of the model again);
   * - malformed: returned, and dropped as any malformed entry is;
   * - one Redis cannot decode whose answer is in the history: it was answered and sent before the
   *   old script failed to pop it, so it is popped without being sent again, and the next head is
   *   returned;
   * - else returned, to be answered.
   */
  async function unblock(
    job: Job<IncomingMessage>,
    data: IncomingMessage,
    inbox: string,
    finish: (entry: string, id: string, counted: boolean) => Promise<string | null>,
  ): Promise<string | null> {
    const chat = conversationKey(data);
    const other = await otherLiveChatJob(deps.redis, queue, conversationOf(data), job.id ?? "", Date.now());
    if (other !== undefined) {
      log.info({ chat, job: job.id, other }, "the inbox's head still has a live job of its conversation; left to it");
      return null;
    }
    // The head is read after that check: a job that ended in between (it popped the head this job
    // was added for, and the inbox may be empty or headed by another entry) is seen here.
    const found = await store.inboxHead(inbox);
    if (found === null) return null;
    const [raw, unreadable, sha1] = found;
    if (job.attemptsStarted <= 1 && job.id !== unblockJobId(data, sha1)) return null;
    if (unreadable === 0) {
      // A later attempt goes on draining what this job took up.
      if (job.attemptsStarted <= 1)
        log.warn(
          { chat, job: job.id },
          "an inbox whose head was queued long ago had no live job (removed or lost); answering it now",
        );
      return raw;
    }
    const entry = parseEntry(raw);
    if (!entry) return raw;
    const at = { chat: conversationKey(entry), messageId: entry.messageId, job: job.id };
    const { answer } = await parts.history.read(conversationOf(entry), entry.messageId);
    if (answer === undefined) {
      log.warn(at, "an inbox entry Redis cannot decode heads the inbox unanswered; answering it now");
      return raw;
    }
    log.warn(at, "an inbox entry Redis cannot decode was answered but never removed; removing it, not sent again");
    return finish(raw, entry.messageId, false);
  }

  metrics.workerConcurrency(config.WORKER_CONCURRENCY);
  let running = 0; // chat jobs in flight here (answers being written), for the shutdown's message
  // The same, with what `interrupt` needs (in memory only: nothing is written for it on the answer's path).
  const inFlight = new Map<Job<IncomingMessage>, InFlight>();
  const counted = async (job: Job<IncomingMessage>, token: string | undefined): Promise<void> => {
    running += 1;
    const run: InFlight = { token, interrupted: false };
    inFlight.set(job, run);
    try {
      await drain(job, run);
    } finally {
      running -= 1;
      inFlight.delete(job);
    }
  };

  /** {@link ChatWorker.interrupt}: marks one running chat job; @returns whether it was marked. */
  async function interruptOne(job: Job<IncomingMessage>, run: InFlight): Promise<boolean> {
    const entry = run.head === undefined ? undefined : typeof run.head === "string" ? parseEntry(run.head) : run.head;
    const at = { job: job.id, chat: run.data ? conversationKey(run.data) : undefined, messageId: entry?.messageId };
    try {
      // Handed back first: a job no longer this worker's (its lock lost) throws here, its count untouched.
      await job.moveToDelayed(Date.now() + LOCK_DURATION_MS, run.token);
      if (run.data && entry) {
        // Takes back this attempt's share of the crash marker (`beginAttempt` of pipeline.ts).
        const key = progressKeys(run.data, entry.messageId).crashes;
        await redis.multi().decr(key).expire(key, CHECKPOINT_TTL_SECONDS).exec();
      }
      log.info(
        at,
        "stop: the answer being written is interrupted; the next attempt does it again (not counted as a crash)",
      );
      return true;
    } catch (err) {
      log.warn(
        { ...at, err },
        "stop: could not mark the answer being written as interrupted; it will count as a crash",
      );
      return false;
    }
  }

  const interrupt = async (timeoutMs = INTERRUPT_WAIT_MS): Promise<number> => {
    const due = [...inFlight].filter(([, run]) => !run.interrupted);
    for (const [, run] of due) run.interrupted = true;
    if (due.length === 0) return 0;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean[]>((resolve) => (timer = setTimeout(() => resolve([]), timeoutMs)));
    const marked = await Promise.race([Promise.all(due.map(([job, run]) => interruptOne(job, run))), late]);
    clearTimeout(timer);
    if (marked.length === 0)
      log.warn({ timeoutMs }, "stop: marking the answers being written as interrupted took too long");
    return marked.filter(Boolean).length;
  };

  const chats = new Worker<IncomingMessage>(CHATS_QUEUE, (job, token) => metrics.activeJob(() => counted(job, token)), {
    connection: deps.redis,
    prefix: bullPrefix(deps.redis, CHATS_QUEUE, deps.prefix),
    concurrency: config.WORKER_CONCURRENCY,
    lockDuration: LOCK_DURATION_MS,
    stalledInterval: STALLED_INTERVAL_MS,
    maxStalledCount: MAX_STALLED_COUNT,
    ...bullmqTelemetry(),
  });
  const warnEvery10s = throttled(10_000);
  /**
   * A BullMQ worker's error: a warning, but for the connection closing under a job cut short at
   * shutdown (the process closes Redis after the worker; the job goes back to the queue anyway), and
   * for the lock of a job the shutdown handed back ({@link ChatWorker.interrupt}: it is gone, by design).
   */
  const workerError = (name: string) => (err: Error) => {
    if (closing && (isConnectionClosed(err) || isLockLost(err)))
      log.debug({ err: { message: err.message } }, `${name}: ${err.message} (shutting down)`);
    else warnEvery10s(() => log.warn({ err: { message: err.message } }, `${name}: ${err.message}`));
  };
  chats.on("error", workerError("chat worker"));
  chats.on("failed", (job, err) => {
    // BullMQ fails a job that stalled more than MAX_STALLED_COUNT times (its workers died) as unrecoverable: the chat still needs a job.
    const stalledOut = err instanceof UnrecoverableError && err.message === STALLED_OUT;
    if (
      !job ||
      (err instanceof UnrecoverableError && !stalledOut) ||
      (!stalledOut && job.attemptsMade < (job.opts.attempts ?? 1))
    ) {
      if (job && err instanceof UnrecoverableError)
        log.error({ job: job.id, err: { message: err.message } }, "chat job failed without retry");
      return;
    }
    const data = IncomingMessageSchema.safeParse(job.data);
    if (!data.success) return;
    log.error(
      { job: job.id, err: { message: err.message } },
      "chat job failed for good; scheduling a new job for the chat",
    );
    void queue
      .add("recover", data.data, {
        ...CHAT_JOB_OPTIONS,
        delay: 5000,
        jobId: `${chatJobId(data.data, data.data.messageId)}-r${Date.now()}`,
      })
      .catch((e: unknown) => log.error({ err: e }, "could not schedule the replacement job"));
  });

  // One BullMQ Worker per feature queue, running the processor its feature gives (BullMQ's one processor per queue).
  const queues = new Map<string, Worker>();
  const processors: QueueProcessor[] = [];
  for (const spec of features.flatMap((f) => f.queues ?? [])) {
    const processor = spec.processor({ answer: parts, bullRedis: deps.redis, prefix: deps.prefix });
    if (!processor) continue;
    processors.push(processor);
    const worker = new Worker(spec.name, (job, token) => processor.process(job, token), {
      connection: deps.redis,
      prefix: bullPrefix(deps.redis, spec.name, deps.prefix),
      concurrency: spec.concurrency?.(config) ?? config.WORKER_CONCURRENCY,
      ...(spec.fastTakeOver ? { lockDuration: LOCK_DURATION_MS, stalledInterval: STALLED_INTERVAL_MS } : {}),
      ...(spec.maxStalledCount !== undefined ? { maxStalledCount: spec.maxStalledCount } : {}),
      ...bullmqTelemetry(),
    });
    worker.on("error", workerError(`${spec.name} worker`));
    if (processor.failed) worker.on("failed", (job, err) => processor.failed!(job, err));
    queues.set(spec.name, worker);
  }
  const all = [chats, ...queues.values()];

  return {
    chats,
    queues,
    interrupt,
    async waitUntilReady() {
      await Promise.all([...all.map((w) => w.waitUntilReady()), parts.stops?.ready()]);
    },
    async close(timeoutMs = 30_000) {
      closing = true;
      const graceful = Promise.all(all.map((w) => w.close().catch(() => {}))).then(() => "closed" as const);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs)));
      if ((await Promise.race([graceful, late])) === "late") {
        const seconds = Math.round(timeoutMs / 100) / 10;
        const up = await answersPing(deps.redis, 1000);
        // A stop is not a crash: what is given up on here is marked interrupted before it goes.
        const interrupted = up ? await interrupt() : 0;
        if (!up)
          log.warn(
            { timeoutMs, running },
            `shutdown: the jobs in flight did not finish within ${seconds} s and Redis is unreachable; closing anyway: ` +
              "Redis keeps them, and a worker takes them again once it is back and their lock has lapsed",
          );
        else {
          const what = running === 0 ? "jobs are" : running === 1 ? "1 answer is" : `${running} answers are`;
          // What could not be marked (a job whose lock was lost, Redis too slow) stalls, counted as a crash.
          const how =
            running === 0
              ? `goes back to the queue once its lock lapses (${LOCK_DURATION_MS / 1000} s)`
              : interrupted >= running
                ? `goes back to the queue in ${LOCK_DURATION_MS / 1000} s, marked interrupted (not a crash),`
                : `goes back to the queue (${interrupted} of ${running} marked interrupted; the rest once its lock lapses, ` +
                  "counted as a crash)";
          log.warn(
            { timeoutMs, running, interrupted },
            `shutdown: ${what} still running after ${seconds} s; stopping ${running === 1 ? "it" : "them"} now: ` +
              `what is cut short ${how} and is done again by the next worker to start, or by another one running now`,
          );
        }
        await Promise.race([
          Promise.all(all.map((w) => w.close(true).catch(() => {}))),
          new Promise((r) => setTimeout(r, 2000)),
        ]);
      }
      clearTimeout(timer);
      await Promise.race([
        Promise.all([
          queue.close().catch(() => {}),
          ...processors.map((p) => p.close?.().catch(() => {})),
          started.close(),
        ]),
        new Promise((r) => setTimeout(r, 2000)),
      ]);
    },
  };
}

/** A chat job running in this worker: what {@link ChatWorker.interrupt} needs to mark it. */
interface InFlight {
  /** Its BullMQ lock token. */
  token: string | undefined;
  /** The job's message (its chat), once checked. */
  data?: IncomingMessage;
  /** The inbox entry being answered (the job's data, or an entry read from the inbox). */
  head?: string | IncomingMessage;
  /** Set once `interrupt` took it: each job is marked once. */
  interrupted: boolean;
}

/** True when `redis` answers a PING within `ms`. Never throws. */
async function answersPing(redis: WorkerDeps["redis"], ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      redis.ping().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** True for BullMQ's error of a job whose lock is gone: it failed to renew it, or to finish the job with it. */
function isLockLost(err: Error): boolean {
  return /could not renew lock|Missing lock|not in the active/i.test(err.message);
}

/** True for the error of a command on a Redis connection that was closed (ioredis' "Connection is closed."). */
function isConnectionClosed(err: Error): boolean {
  return /Connection is closed/.test(err.message);
}

/**
 * Starts the worker side of each of `features` (`Feature.worker`, in list order) and gathers what
 * they lend the answer pipeline.
 * @throws when two features lend the same part (those already started are closed again).
 */
export function startWorkerSides(
  features: readonly Feature[],
  parts: WorkerParts,
): { lends: Partial<AnswerServices>; close(): Promise<void> } {
  const lends: Partial<AnswerServices> = {};
  const lenders = new Map<string, string>();
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const c of [...closers].reverse()) await c().catch(() => {});
  };
  for (const feature of features) {
    if (!feature.worker) continue;
    const side = feature.worker(parts);
    if (side.close) closers.push(() => side.close!());
    for (const [name, part] of Object.entries(side.lends)) {
      const other = lenders.get(name);
      if (other) {
        void close();
        throw new Error(`features "${other}" and "${feature.name}" both lend the answers' ${name}`);
      }
      lenders.set(name, feature.name);
      Object.assign(lends, { [name]: part });
    }
  }
  return { lends, close };
}

/**
 * A gate that lets one call through per `intervalMs` ms and drops the rest: during a Redis outage
 * BullMQ emits an error on every reconnect attempt, and one line per 10 s says enough.
 */
function throttled(intervalMs: number): (emit: () => void) => void {
  let last = 0;
  return (emit) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    emit();
  };
}
