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
import { IncomingMessageSchema, type IncomingMessage } from "../queue/incoming.js";
import { bullPrefix, CHATS_QUEUE, TOOL_CALL_PREFIX, chatJobId, conversationKeys, progressKeys } from "../queue/keys.js";
import { CHAT_JOB_OPTIONS } from "../queue/producer.js";
import { ExecutionLedger } from "../toolbox/once.js";
import { traceKey, tracePushLua } from "../trace/store.js";
import { bullmqTelemetry } from "../telemetry/otel.js";
import { answerMessage } from "./message.js";
import type { AnswerServices, WorkerDeps } from "./deps.js";
import { CRASHES_BEFORE_SKIP, type AnswerParts } from "./pipeline.js";

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
   * (default 30 000 ms: a long answer, or Redis down) it force-closes, logging which of the two it
   * was: unfinished jobs stall, and once their lock lapses BullMQ hands them to another worker (or
   * this one's next start). Does not close `deps.redis`. Never throws.
   */
  close(timeoutMs?: number): Promise<void>;
}

/**
 * KEYS: inbox, sent (or a placeholder of the chat), trace key of the chat.
 * ARGV: [1] id of the message just handled ("" when the entry was malformed), [2] "1" to delete
 * its sent-chunk count, [3] the run's trace JSON ("" for none), [4] runs kept, [5] trace TTL (s),
 * [6] "1" to renew the trace list's expiry (see {@link TraceRenewals}).
 * Pops the handled message, writes the run's trace, and returns the new head, or `false` (nil)
 * when the inbox is empty: the job then ends, and the chat's next message, entering an empty inbox,
 * adds a new job. When the popped entry is not the handled message, it is put back and `false` is
 * returned: the handled message was the job's own data, and the inbox had been emptied by the
 * producer's undo of an add that timed out yet reached BullMQ, so what is there now has a job of its own.
 *
 * The pop takes two entries (`LPOP key 2`) and puts the second back (`LPUSH`) when there is one:
 * one command when the inbox held only the handled message (the common case at a steady rate),
 * two when more wait — never more than `LPOP` + `LINDEX`.
 */
const FINISH_SCRIPT = `
local popped = redis.call('LPOP', KEYS[1], 2)
local head = popped and popped[1] or false
local nextHead = popped and popped[2] or false
if head and ARGV[1] ~= '' then
  local ok, m = pcall(cjson.decode, head)
  if not (ok and type(m) == 'table' and m.messageId == ARGV[1]) then
    if nextHead then redis.call('LPUSH', KEYS[1], nextHead, head) else redis.call('LPUSH', KEYS[1], head) end
    head = false
    nextHead = false
  end
end
if ARGV[2] == '1' then redis.call('DEL', KEYS[2]) end
if ARGV[3] ~= '' then ${tracePushLua(3, 3, 6)} end
if head == false and ARGV[1] ~= '' then return false end
if nextHead then redis.call('LPUSH', KEYS[1], nextHead) end
return nextHead
`;

type RedisWithWorkerScripts = RedisClient & {
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
  ): Promise<string | null>;
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
  if (!("finishChat" in redis)) redis.defineCommand("finishChat", { numberOfKeys: 3, lua: FINISH_SCRIPT });
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

  async function drain(job: Job<IncomingMessage>): Promise<void> {
    const parsed = IncomingMessageSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(
        `malformed chat job: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
      );
    }
    const keys = conversationKeys(parsed.data);
    const trace = traceKey(parsed.data);
    // A fresh job was added for the message that entered the empty inbox: it is the head.
    let head: string | IncomingMessage | null =
      job.name === "chat" && job.attemptsStarted <= 1 ? parsed.data : await redis.lindex(keys.inbox, 0);
    while (head !== null) {
      const done = await answerMessage(parts, job, head);
      const id = done.message?.messageId ?? "";
      const sent = done.counted ? progressKeys(parsed.data, id).sent : keys.inbox;
      const run = done.trace;
      head = await store.finishChat(
        keys.inbox,
        sent,
        trace,
        id,
        done.counted ? "1" : "0",
        run?.json ?? "",
        run?.keepRuns ?? 0,
        run?.ttlSeconds ?? 0,
        run && renewals.due(trace, Date.now()) ? "1" : "0",
      );
      if (head !== null && closing) {
        // Shutting down: hand the rest of the chat to a new job (another worker, or this one after a restart).
        await queue.add("handover", parsed.data, { ...CHAT_JOB_OPTIONS, jobId: `${job.id}-h${Date.now()}` });
        return;
      }
    }
  }

  metrics.workerConcurrency(config.WORKER_CONCURRENCY);
  let running = 0; // chat jobs in flight here (answers being written), for the shutdown's message
  const counted = async (job: Job<IncomingMessage>): Promise<void> => {
    running += 1;
    try {
      await drain(job);
    } finally {
      running -= 1;
    }
  };
  const chats = new Worker<IncomingMessage>(CHATS_QUEUE, (job) => metrics.activeJob(() => counted(job)), {
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
   * shutdown (the process closes Redis after the worker; the job goes back to the queue anyway).
   */
  const workerError = (name: string) => (err: Error) => {
    if (closing && isConnectionClosed(err))
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
        if (!(await answersPing(deps.redis, 1000)))
          log.warn(
            { timeoutMs, running },
            `shutdown: the jobs in flight did not finish within ${seconds} s and Redis is unreachable; closing anyway: ` +
              "Redis keeps them, and a worker takes them again once it is back and their lock has lapsed",
          );
        else {
          const what = running === 0 ? "jobs are" : running === 1 ? "1 answer is" : `${running} answers are`;
          log.warn(
            { timeoutMs, running },
            `shutdown: ${what} still running after ${seconds} s; stopping ${running === 1 ? "it" : "them"} now: ` +
              `what is cut short goes back to the queue once its lock lapses (${LOCK_DURATION_MS / 1000} s) ` +
              "and is done again by the next worker to start, or by another one running now",
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
