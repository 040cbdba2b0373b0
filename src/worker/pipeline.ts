/**
 * The answer pipeline: every answer the worker gives goes through these phases, in this order.
 *
 * ```
 * take ──> restore ──> compute ──> persist ──> deliver
 *  │          │           │           │           └ streaming or chunks, sent-chunk counting, 429s waited out
 *  │          │           │           └ history append with the run tag, usage, approval prompt when paused
 *  │          │           └ one step for all (`compute.ts`): settings, history with summary, run deps, rescue
 *  │          └ what an earlier attempt left: start time, stored answer, sent chunks, checkpoint, streamed messages
 *  └ a chat inbox entry (`message.ts`), a decision job (`decision.ts`) or a task occurrence (`task.ts`)
 *                         fail: retry (transient, before the last attempt and the deadline) or apologise
 * ```
 *
 * A fresh message, a resumed approval and a task occurrence differ only in *take* (a {@link Taken}
 * carries its compute: the one compute step of `compute.ts` with the take's input); everything else — one deadline per answer (`ANSWER_DEADLINE_SECONDS`,
 * from when the first attempt began, aborting the model calls and the tools), streaming with
 * `STREAMING=on`, the typing indicator, the exactly-once bookkeeping of a retried job — is written
 * once, here, over one {@link AnswerState}. A scheduled task's occurrence is a third take
 * (`task.ts`); checks before each model call (budgets) and what a request carries (settings,
 * memory) belong to *compute*'s run dependencies; work after an answer (compaction) follows *deliver*.
 *
 * Throws only to retry the job; every other failure ends with an apology, so one bad message never
 * blocks its conversation. An answer that in the end could not be delivered at all is removed from
 * the history, and no apology is sent into a chat that is still rate limited.
 */
import type { AgentEvent, AgentOutcome, MessageParam, ModelUsage, PausedOutcome, RunState } from "../agent/contract.js";
import { RunStateSchema } from "../agent/contract.js";
import { compactionReason, type ConversationSize } from "../compaction/queue.js";
import { migrateConversation, movedTo, type ConversationStore } from "../conversations/migrate.js";
import type { HistoryRead } from "../history/store.js";
import type { Logger } from "../log.js";
import { MemoryStore, memoryScopeOf, type MemoryFile } from "../memory/store.js";
import { MEMORY_TOOL_NAME } from "../memory/tool.js";
import { sendUndoNotices, undoOffers, type UndoOffer } from "../memory/undo.js";
import { metrics } from "../metrics.js";
import { markdownLiteral } from "../plain-text.js";
import { destinationOf, SentRefSchema, type Destination, type Outbound, type SentRef } from "../outbound.js";
import { conversationKey, conversationOf, type ConversationRef, type IncomingMessage } from "../queue/incoming.js";
import { DRAFTS_OFF_SECONDS, draftsOffKey, progressKeys } from "../queue/keys.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";
import { pricesFor } from "../config.js";
import type { Settings } from "../settings/store.js";
import { priceDeltaOf } from "../usage/store.js";
import { outputWeightFor } from "../usage/budget.js";
import { openLiveAnswer, type AnswerStream, type StreamEvent } from "../streaming.js";
import type { ExecutionLedger } from "../toolbox/once.js";
import { toolboxFor } from "../toolbox/select.js";
import { nullRunTracer, type RunTracer } from "../trace/tracer.js";
import { z } from "zod";
import { localize, MODEL_BUSY_NOTICE, STOP_TEXT, type Locale } from "../i18n.js";
import { stopButtonData, type RunningAnswer } from "../stop/stops.js";
import { AnswerDeadlineError, LATE_DELIVERY_MS, Typing, deliverAnswer, sendApology } from "./deliver.js";
import { CrashLoopError, isTransient, NoOutboundError, retryAfterMs } from "./errors.js";
import type { AnswerServices, WorkerDeps } from "./deps.js";

/**
 * What the pipeline needs, built once per worker from its {@link WorkerDeps} and what the started
 * features lend ({@link AnswerServices}; the fields keep their meaning there), with the defaults filled in.
 */
export interface AnswerParts
  extends Omit<WorkerDeps, "redis" | "store" | "prefix" | "typingIntervalMs">, Partial<AnswerServices> {
  /** Connection for the progress keys and the tools (the worker's `store`, else its `redis`). */
  redis: RedisClient;
  /** Typing refresh interval, in ms. */
  typingIntervalMs: number;
  /** Exactly-once records of the tool calls that change data (keys `toolcall:{tool_use id}`). */
  ledger: ExecutionLedger;
  /**
   * Every conversation store (the core's and the features': `conversationStores` of
   * `src/conversations/migrate.ts`): an answer in flight when its chat moved moves what it wrote with them.
   */
  conversationStores: readonly ConversationStore[];
}

/** Seconds a run's progress (checkpoint, streamed messages, start time) is kept: long enough for every retry of its job. */
export const CHECKPOINT_TTL_SECONDS = 24 * 3600;

/**
 * Attempts at one answer whose worker process died with them (a crash, memory exhausted, a kill)
 * before the next attempt skips it with an apology instead of running it again. A stop that gave
 * up on the answer (SIGTERM or Ctrl-C whose wait ran out, a forced exit) is not one of them: it
 * marks the answer interrupted (`ChatWorker.interrupt`, see `beginAttempt`).
 */
export const CRASHES_BEFORE_SKIP = 2;

/** Which attempt of its job an answer is. */
export interface JobAttempt {
  /** Attempts made before this one (BullMQ `attemptsMade`). */
  made: number;
  /** Attempts the job may make (`opts.attempts`). */
  allowed: number;
  /** True when an earlier attempt may have left progress (a retry, a stalled job taken over, a replacement job). */
  resumed: boolean;
  /**
   * True when this answer is the first of the job's second attempt and the first attempt ended
   * with its worker process (BullMQ started it, `attemptsStarted` 2, but recorded no failure,
   * `attemptsMade` 0): a fresh attempt writes no crash marker, so that crash is counted here
   * ({@link freshCrashed}).
   */
  freshCrashed?: boolean;
}

/**
 * Whether the job's first attempt — fresh, so it wrote no crash marker — ended with its worker
 * process (a crash, a kill): the job is on its second start (`attemptsStarted` 2, BullMQ counts a
 * stalled job's restart) and no failure was recorded (`attemptsMade` 0, a thrown error counts one).
 * Only for the first answer of the attempt: that is the one the first attempt was giving.
 */
export function freshCrashed(job: { attemptsStarted: number; attemptsMade: number }): boolean {
  return job.attemptsStarted === 2 && job.attemptsMade === 0;
}

/** True when this is the job's last attempt. */
export function lastAttempt(attempt: JobAttempt): boolean {
  return attempt.made + 1 >= attempt.allowed;
}

/**
 * The outbound of `platform`; without one in this worker (its token is not set here) another worker
 * process may answer: {@link NoOutboundError} to retry there, or undefined on the last attempt.
 */
export function outboundFor(
  parts: AnswerParts,
  platform: IncomingMessage["platform"],
  attempt: JobAttempt,
): Outbound | undefined {
  const outbound = parts.outbounds[platform];
  if (outbound) return outbound;
  const problem = new NoOutboundError(platform);
  if (!lastAttempt(attempt)) throw problem;
  parts.log.error(`${problem.message}; dropped`);
  return undefined;
}

/** What a compute phase hands to *persist*: the loop's outcome, or a text to send without the model (a file that cannot be read). */
export type Computed =
  | (Extract<AgentOutcome, { kind: "answer" }> & {
      before?: HistoryRead;
      /** The model's text without the lead line (`text` has it), when there is a lead. */
      body?: string;
    })
  | (PausedOutcome & {
      /** The answer's lead line, which an outbound whose prompts stay as sent shows before the prompt. */
      lead?: string;
    })
  | { kind: "said"; text: string };

/** What a take phase found: the answer to give and how this kind computes it. */
export interface Taken {
  /** A fresh `message`, a `decision` resuming a run paused for an approval, or a scheduled `task`'s occurrence (`task.ts`). */
  kind: "message" | "decision" | "task";
  /** The user's message being answered (for a decision, the message whose run paused; for a task, its occurrence as its owner's message). */
  message: IncomingMessage;
  outbound: Outbound;
  /** The id of this answer's progress keys (`progressKeys` of its conversation). */
  answerId: string;
  /** The run's trace id. */
  runId: string;
  /** The compute phase (reads the state's deadline, live answer, restored checkpoint). */
  compute(state: AnswerState): Promise<Computed>;
  /**
   * What the user reads when the answer fails for good and the error has no words of its own, in
   * `locale` (the conversation's language, when the answer read its settings); default the generic apology.
   */
  failureText?(locale: Locale): string;
  /** Called once the answer is over (delivered, paused again, or failed for good); e.g. deletes the approval record. */
  settle?(): Promise<void>;
  /**
   * Optional: whether this answer is also spoken (a voice reply, `voice-reply.ts`); asked once the
   * settings are read. Such an answer is not streamed: the voice goes out first, then the text.
   */
  speaks?(state: AnswerState): boolean;
  /**
   * Optional: runs after *persist* and before *deliver* of a computed answer (not of one an earlier
   * attempt stored), with the model's own text (`AnswerState.body`): sends the voice reply.
   * @returns a short line to add to the delivered text (the voice reply failed), or undefined.
   */
  beforeDeliver?(state: AnswerState): Promise<string | undefined>;
  /**
   * The conversation's reset generation this answer belongs to (`HistoryStore.generation`): for a
   * decision, the one its approval noted when it was asked. Default: none; the answer compares the
   * time of the last `/reset` with the time its attempt began instead ({@link AnswerState.resets}).
   */
  resets?: number;
}

/** What an earlier attempt of the job left (all empty on a first attempt). */
export interface Restored {
  /** The answer found in the history under this message's run tag: it is delivered again, not computed. */
  answer?: string;
  /** Chunks of that answer already sent. */
  sent: number;
  /** The run saved before it changed data: the compute resumes it. */
  checkpoint?: RunState;
  /** Messages an earlier attempt streamed into the chat: edited to the final answer, or deleted. */
  streamed: SentRef[];
  /** When the first attempt began, ms since the Unix epoch. */
  startedAt?: number;
}

/** The one state of an answer, read and written by the phases (instead of flags). */
export interface AnswerState {
  readonly taken: Taken;
  readonly to: Destination;
  readonly conversation: ConversationRef;
  readonly log: Logger;
  readonly attempt: JobAttempt;
  readonly keys: ReturnType<typeof progressKeys>;
  readonly restored: Restored;
  /**
   * Which conversation the answer belongs to, for *persist*: it appends to the history only when
   * the conversation was not reset since, so a `/reset` meanwhile keeps everything of this run out
   * of the forgotten conversation (the answer is still delivered). The reset generation the take
   * brought ({@link Taken.resets}: a decision's, noted when its approval was asked), or else when
   * this attempt began (ms since the Unix epoch; compared with the time of the last `/reset`, so
   * nothing is read for it when the answer begins).
   */
  readonly resets: number | { since: number };
  /** When the first attempt began, ms since the Unix epoch. */
  readonly startedAt: number;
  /** ms since the Unix epoch when the answer's one deadline passes; its signal aborts the run. */
  readonly deadlineAt: number;
  readonly deadline: AbortController;
  readonly typing: Typing;
  /**
   * The streamed answer, when the outbound streams and streaming is on (or an earlier attempt
   * streamed); opened later, without streaming, to show that the model is busy (`showBusy`).
   */
  live: AnswerStream | undefined;
  /** True once the user was told the model is busy and the bot is still trying. */
  busy: boolean;
  /** False when the chat refused drafts within the last hour (`draftsOffKey`): its live answer posts and edits. */
  readonly drafts: boolean;
  /** Recordings of the run's token usage in flight (awaited before anything goes out). */
  readonly usage: Promise<void>[];
  /**
   * The conversation's settings, once *compute* read them (with the history): its model, persona,
   * language and streaming. Until then (and without a settings store) the defaults apply.
   */
  settings?: Settings;
  /** Where the answer stands: what *fail* reads. */
  stage: "computing" | "delivering";
  tracer: RunTracer;
  /**
   * The conversation's history (with its summary) as read when the answer began, for a take whose
   * compute runs on it ({@link readAtStart}); *compute* starts from it. A take that writes to the
   * history before its compute (a message closing its sender's pending approval) drops it, and
   * *compute* reads the history again.
   */
  history?: HistoryRead;
  /** The files of the message's memory scope as read when the answer began, when the run offers the memory tool (dropped with `history`). */
  memory?: MemoryFile[];
  /**
   * A message's sender's pending approval hint as read when the answer began (`ApprovalFlow.pendingHintKey`):
   * the approval's id, null when there is none; absent when it was not read.
   */
  readonly pendingHint?: string | null;
  /** On a resumed attempt: the attempts at this answer begun and never ended, this one included (`beginAttempt`). */
  readonly begun?: number;
  /** True once a checkpoint may have been written (persist deletes it). */
  checkpointed: boolean;
  /** Chunks delivered, in this attempt and earlier ones. */
  sent: number;
  /** Whether a sent-chunk count may have been written (the finish script deletes it). */
  counted: boolean;
  /** How it ended: the text delivered, or the approval asked for. */
  result?: { answered: string } | { asked: string | undefined };
  /** Why it failed for good (the user got an apology), when it did. */
  failure?: unknown;
  /** Tokens of the run's latest model request (input + cache reads + cache writes), once a response arrived. */
  requestTokens?: number;
  /** How large the conversation is once the answer is stored: what decides a compaction after *deliver*. */
  size?: ConversationSize;
  /** Memory writes of the run made after outside content was read: offered for undo after *deliver* (`src/memory/undo.ts`). */
  undo?: UndoOffer[];
  /**
   * The answer as Stop knows it (`src/stop/`), while it is computed: its signal aborts when the
   * person stops it. Absent for a task's occurrence, an answer found already computed, or without Stop.
   */
  running?: RunningAnswer;
  /** The model's answer text of this attempt, without its lead line and notices (what a voice reply speaks). */
  body?: string;
}

/**
 * Gives the answer of `taken`: restore → compute → persist → deliver (see the module comment).
 *
 * @returns the final state (its `result`, `counted`, `tracer`).
 * @throws to retry the job: a transient failure before the job's last attempt and the deadline.
 */
export async function answer(parts: AnswerParts, taken: Taken, attempt: JobAttempt): Promise<AnswerState> {
  const state = await restore(parts, taken, attempt);
  // A Stop shows at once on the live answer, in the conversation's language once read.
  if (state.running)
    state.running.onStop = () =>
      state.live?.push({ type: "notice", text: localize(localeOf(parts, state), STOP_TEXT.stopping) });
  const timer = setTimeout(
    () => state.deadline.abort(new AnswerDeadlineError(parts.config.ANSWER_DEADLINE_SECONDS)),
    Math.max(0, state.deadlineAt - Date.now()),
  );
  timer.unref();
  try {
    beginAttempt(parts, state);
    let text = state.restored.answer ?? (await computeAndPersist(parts, state));
    if (text !== undefined && state.body !== undefined && taken.beforeDeliver) {
      const note = await taken.beforeDeliver(state);
      if (note) text = `${text}\n\n${note}`;
    }
    if (text !== undefined) await deliver(parts, state, text);
    if (state.undo) await offerUndo(parts, state, state.undo);
    await followMove(parts, state);
    await taken.settle?.();
    await requestCompaction(parts, state);
  } catch (error) {
    await fail(parts, state, error);
  } finally {
    clearTimeout(timer);
    state.typing.stop();
    await state.running?.end();
    await state.live?.pause();
    // The attempt ended in this process (answered, failed, or thrown to retry): it did not crash.
    // A fresh attempt wrote no marker (see `beginAttempt`).
    if (attempt.resumed)
      await parts.redis
        .del(state.keys.crashes)
        .catch((err: unknown) => state.log.warn({ err }, "could not clear the answer's crash marker"));
  }
  return state;
}

/**
 * After a group answer: when its chat moved to a new id meanwhile (a Telegram group upgraded to a
 * supergroup, noticed by the outbound or the adapter while this answer was being written), what
 * this answer wrote to the old conversation moves too (`migrateConversation` with `again`). Only a
 * chat that can move is checked ({@link mayMove}: one `GET` per answer in a Telegram basic group).
 */
async function followMove(parts: AnswerParts, state: AnswerState): Promise<void> {
  if (state.to.chatKind !== "group" || !mayMove(state.conversation)) return;
  const to = await movedTo(parts.redis, state.conversation, state.log);
  if (to)
    await migrateConversation(parts.redis, parts.conversationStores, state.conversation, to, state.log, {
      again: true,
    });
}

/**
 * Whether a group conversation can move to a new chat id: only Telegram upgrades a basic group to a
 * supergroup (`migrate_to_chat_id`). A supergroup's id (-100 followed by the channel's id, at most
 * -1 000 000 000 000; a basic group's is -1 to -999 999 999 999: https://core.telegram.org/api/bots/ids)
 * stays, as do Discord and LINE chats'.
 */
export function mayMove(conversation: ConversationRef): boolean {
  return conversation.platform === "telegram" && !(Number(conversation.chatId) <= -1_000_000_000_000);
}

/**
 * Judges a resumed attempt's start, counted in its crash marker with the answer's first reads
 * (`crashes` of the progress keys, see `progressKeys` and {@link readAtStart}): when earlier
 * attempts of this answer began and never ended {@link CRASHES_BEFORE_SKIP} times — their worker
 * process died with them — the answer is skipped: logged with its conversation and message id
 * (never its content) and answered with a short apology (*fail*).
 *
 * A fresh attempt (the common case) writes no marker and clears none: should its process die,
 * BullMQ's own counts tell the next attempt ({@link JobAttempt.freshCrashed}), which then counts
 * that crash into the marker with its own start (`INCRBY 2`).
 *
 * An attempt a stop gave up on (`ChatWorker.interrupt` of `worker.ts`) takes back its share with
 * one `DECR` and hands its job back without a stall or an attempt counted (BullMQ `moveToDelayed`):
 * a resumed attempt had counted its own start, and a fresh one's is counted by the next attempt
 * (`freshCrashed`, `attemptsStarted` 2 and `attemptsMade` 0 still), so either way the next start
 * finds the crashes of before. Only an answer stopped in the instant between its job's start and
 * its first read is counted one crash less (its `INCRBY` not yet done): it errs on retrying.
 * @throws {CrashLoopError} to skip it.
 */
function beginAttempt(parts: AnswerParts, state: AnswerState): void {
  if (!state.attempt.resumed || state.begun === undefined) return;
  const crashes = state.begun - 1;
  if (crashes < CRASHES_BEFORE_SKIP) {
    if (crashes > 0)
      state.log.warn(
        { crashes },
        "an earlier attempt at this answer ended with its worker process (crash or kill); trying again",
      );
    return;
  }
  state.log.error({ crashes }, `this message crashed a worker ${crashes} times; skipped with an apology`);
  throw new CrashLoopError(crashes, state.taken.failureText?.(localeOf(parts, state)));
}

/** *Restore*: what an earlier attempt left, the deadline kept from the first attempt, the typing indicator and the live answer. */
async function restore(parts: AnswerParts, taken: Taken, attempt: JobAttempt): Promise<AnswerState> {
  const { message, outbound } = taken;
  const conversation = conversationOf(message);
  const log = parts.log.child({
    chat: conversationKey(conversation),
    messageId: message.messageId,
    ...(taken.kind === "decision" ? { answer: taken.answerId } : {}),
  });
  const keys = progressKeys(conversation, taken.answerId);
  if (taken.kind === "message" && !attempt.resumed) metrics.started(message);
  const to = destinationOf(message);
  const began = Date.now();
  const read = await readAtStart(parts, taken, attempt, { conversation, keys, to, log });
  const { restored } = read;
  if (restored.answer !== undefined)
    log.info({ skip: restored.sent }, "reusing the answer of an earlier attempt found in the history");
  const startedAt = restored.startedAt ?? Date.now();
  const typing = new Typing(outbound, to, parts.typingIntervalMs, log);
  const drafts = !read.draftsOff;
  // Stop: registered with the reads above (`readAtStart`); an answer found already computed has nothing to stop.
  const running = read.running;
  if (running && restored.answer !== undefined) await running.end();
  // The Stop button speaks the conversation's language (its settings were read with the history above).
  const locale = read.settings?.language ?? parts.config.BOT_LOCALE;
  const live = openLive(
    parts,
    taken,
    { to, keys, typing, log, drafts, streamed: restored.streamed },
    false,
    running && { running, locale },
  );
  return {
    taken,
    to,
    conversation,
    log,
    attempt,
    keys,
    restored,
    resets: taken.resets ?? { since: began },
    ...(read.history ? { history: read.history } : {}),
    ...(read.settings ? { settings: read.settings } : {}),
    ...(read.memory ? { memory: read.memory } : {}),
    ...(read.pendingHint !== undefined ? { pendingHint: read.pendingHint } : {}),
    ...(read.begun !== undefined ? { begun: read.begun } : {}),
    startedAt,
    deadlineAt: startedAt + parts.config.ANSWER_DEADLINE_SECONDS * 1000,
    deadline: new AbortController(),
    typing,
    drafts,
    live,
    ...(running ? { running } : {}),
    usage: [],
    busy: false,
    stage: "computing",
    tracer: nullRunTracer,
    checkpointed: restored.checkpoint !== undefined,
    sent: restored.sent,
    counted: false,
  };
}

/** What an answer reads when it begins ({@link readAtStart}). */
interface StartRead {
  restored: Restored;
  draftsOff: boolean;
  history?: HistoryRead;
  settings?: Settings;
  memory?: MemoryFile[];
  /** A message's sender's pending approval hint (null: none), when it was read. */
  pendingHint?: string | null;
  begun?: number;
  /** The answer as Stop registered it (`src/stop/`), when it may be stopped. */
  running?: RunningAnswer;
}

/**
 * Everything an answer reads when it begins, issued together in one tick, so it costs ONE round
 * trip (each command is written at once, none waits for another's reply; the worker's connection
 * has no auto-pipelining, `WORKER_REDIS_OPTIONS`; on a Redis Cluster, one per node the keys live on): the
 * conversation's history with its summary
 * (for a take whose compute runs on the conversation's history, and for a resumed attempt, which
 * looks for its answer there), its settings and — for a message — its sender's pending approval
 * hint, the three in one `MGET` (`HistoryStore.readAlong`: a `GETEX` beside it once an hour renews
 * the history's expiry; a topic's group settings, in another hash slot, one `GET` more), the memory of the message's scope when the run offers
 * the memory tool, whether the chat refuses drafts, and — on a resumed attempt only — the crash
 * marker (`INCRBY` + `EXPIRE`, counted here, judged by `beginAttempt`) and the progress an earlier
 * attempt left (one `MGET`: start time, sent chunks, checkpoint, streamed messages). The answer is
 * registered with Stop (`AnswerStops.begin`, except for a task's occurrence): a chat message's
 * answer writes nothing for it, a decision's writes its answering record in the same write.
 *
 * The memory read here is what the run's first model request carries (the agent loop reads the
 * scope when a run starts: a message's files are downloaded in between, nothing else); a second
 * run of the same answer (the context-window rescue) reads it again.
 * @throws when Redis is unreachable (the job retries).
 */
async function readAtStart(
  parts: AnswerParts,
  taken: Taken,
  attempt: JobAttempt,
  at: { conversation: ConversationRef; keys: ReturnType<typeof progressKeys>; to: Destination; log: Logger },
): Promise<StartRead> {
  const { message, outbound } = taken;
  const { conversation, keys, to, log } = at;
  const resumed = attempt.resumed;
  // A decision runs on its paused run's own history; a resumed attempt looks for its stored answer.
  const wantsHistory = taken.kind !== "decision" || resumed;
  const memoryScope = toolboxFor(parts.toolbox, message).get(MEMORY_TOOL_NAME) ? memoryScopeOf(message) : undefined;
  // With the history, one `MGET` of the conversation's keys: its settings, the sender's pending approval hint.
  const settingsWith = wantsHistory ? parts.settings?.readWith(conversation) : undefined;
  const hintKey = taken.kind === "message" && wantsHistory ? parts.approvals?.pendingHintKey(message) : undefined;
  const along = [...(settingsWith ? [settingsWith.key] : []), ...(hintKey ? [hintKey] : [])];
  const read = wantsHistory
    ? parts.history.readAlong(conversation, resumed ? message.messageId : undefined, along)
    : undefined;
  const [draftsOff, history, settings, memory, progress, begun, running] = await Promise.all([
    outbound.liveSurface && to.chatKind === "dm" ? parts.redis.exists(draftsOffKey(conversation)) : 0,
    read?.then((r) => r.history),
    settingsWith ? read!.then((r) => settingsWith.settings(r.values[0] ?? null)) : parts.settings?.read(conversation),
    memoryScope
      ? new MemoryStore(parts.redis, { log })
          .read(memoryScope)
          .catch((err: unknown) => void log.warn({ err }, "could not read the memory ahead; the run reads it itself"))
      : undefined,
    resumed ? parts.redis.mget(keys.started, keys.sent, keys.run, keys.stream) : undefined,
    resumed ? countAttempt(parts, keys.crashes, attempt) : undefined,
    // Stop (`src/stop/`): the answer is registered in the same write (a task's occurrence has nobody watching it being written).
    parts.stops && taken.kind !== "task"
      ? parts.stops.begin(
          conversation,
          { userId: message.userId, messageId: message.messageId },
          // A chat message heads its inbox: nothing is written for it. A decision writes its record.
          taken.kind === "message" ? { inbox: true } : { ttlSeconds: parts.config.ANSWER_DEADLINE_SECONDS + 60 },
        )
      : undefined,
  ]);
  const restored: Restored = { sent: 0, streamed: [] };
  if (progress) {
    const [started, sent, run, stream] = progress;
    const answer = history?.answer;
    if (answer !== undefined) {
      restored.answer = answer;
      restored.sent = Number(sent ?? 0);
    } else {
      const checkpoint = decodeRecord(RunStateSchema, run ?? null, "run checkpoint", log);
      if (checkpoint) restored.checkpoint = checkpoint;
    }
    restored.streamed = decodeRecord(z.array(SentRefSchema), stream ?? null, "list of streamed messages", log) ?? [];
    const startedAt = Number(started) || undefined;
    if (startedAt) restored.startedAt = startedAt;
  }
  return {
    restored,
    draftsOff: draftsOff === 1,
    // A resumed decision read the history for its stored answer only: its run keeps its own history.
    ...(history && taken.kind !== "decision" ? { history } : {}),
    ...(settings ? { settings } : {}),
    ...(memory ? { memory } : {}),
    ...(hintKey ? { pendingHint: (await read!).values[along.length - 1] ?? null } : {}),
    ...(begun !== undefined ? { begun } : {}),
    ...(running ? { running } : {}),
  };
}

/**
 * Counts a resumed attempt's start in its crash marker (`crashes` of the progress keys): `INCRBY`
 * 1, or 2 when it also counts the crash of a fresh first attempt ({@link JobAttempt.freshCrashed}),
 * and `EXPIRE`, in one `MULTI`.
 * @returns the attempts begun and never ended so far, this one included.
 * @throws when Redis is unreachable.
 */
async function countAttempt(parts: AnswerParts, key: string, attempt: JobAttempt): Promise<number> {
  const by = attempt.freshCrashed ? 2 : 1;
  const [[, begun] = []] = (await parts.redis.multi().incrby(key, by).expire(key, CHECKPOINT_TTL_SECONDS).exec()) ?? [];
  return Number(begun);
}

/**
 * The live answer, built by the core over the outbound's live surface (`openLiveAnswer`), when the
 * outbound gives one and streaming is on, or when an earlier attempt
 * left streamed messages (they must end as the final answer or be deleted), or `always`; else undefined. The
 * list of posted messages is kept under the stream key for {@link CHECKPOINT_TTL_SECONDS}, so a
 * retried or redelivered job edits them instead of posting a second copy. `stoppable` is the answer
 * as Stop registered it, with the language of its Stop button (the conversation's).
 */
function openLive(
  parts: AnswerParts,
  { outbound, message, kind }: Taken,
  at: Pick<AnswerState, "to" | "keys" | "typing" | "log" | "drafts"> & { streamed: SentRef[] },
  always = false,
  stoppable?: { running: RunningAnswer; locale: Locale },
): AnswerStream | undefined {
  // An occurrence of a scheduled task is not streamed: nobody is watching it being written, and it goes out as one posted answer.
  if (
    !outbound.liveSurface ||
    kind === "task" ||
    (!always && parts.config.STREAMING !== "on" && at.streamed.length === 0)
  )
    return undefined;
  // The Stop button rides on the live messages while the answer is written (not on a busy notice's message).
  const stop =
    stoppable && !always
      ? { label: localize(stoppable.locale, STOP_TEXT.button), data: stopButtonData(stoppable.running.id) }
      : undefined;
  return openLiveAnswer(outbound.liveSurface(at.to, stop ? { stop } : {}), {
    intervalMs: parts.config.STREAM_EDIT_INTERVAL_MS,
    ...(stop ? { controls: true } : {}),
    resume: at.streamed,
    drafts: at.drafts,
    onDraftsRefused: async () => {
      await parts.redis
        .set(draftsOffKey(at.to.conversation), "1", "EX", DRAFTS_OFF_SECONDS)
        .catch((err: unknown) => at.log.warn({ err }, "could not remember that the chat refuses drafts"));
    },
    onMessages: async (refs) => {
      if (refs.length > 0) await parts.redis.set(at.keys.stream, JSON.stringify(refs), "EX", CHECKPOINT_TTL_SECONDS);
      else await parts.redis.del(at.keys.stream);
    },
    onVisible: () => {
      at.typing.stop();
      // The one place where the first streamed text of an answer becomes visible.
      if (kind === "message") metrics.firstVisibleText(message);
    },
    log: at.log,
  });
}

/** The locale of the bot's own messages in this answer: the conversation's `language` setting once read, else `BOT_LOCALE`. */
export function localeOf(parts: AnswerParts, state: AnswerState): Settings["language"] {
  return state.settings?.language ?? parts.config.BOT_LOCALE;
}

/**
 * The language of the bot's own words in `conversation` outside an answer (a reminder, a notice about
 * a scheduled task): its `language` setting, else `BOT_LOCALE`. A Redis read (two in a Telegram
 * topic), so ask it only when such words are about to be sent; an answer has read its settings
 * already ({@link localeOf}). Never throws: an unreadable setting is logged and gives `BOT_LOCALE`.
 */
export async function conversationLocale(
  parts: Pick<AnswerParts, "config"> & Partial<Pick<AnswerParts, "settings">>,
  conversation: ConversationRef,
  log: Logger,
): Promise<Locale> {
  try {
    return (await parts.settings?.language(conversationOf(conversation))) ?? parts.config.BOT_LOCALE;
  } catch (err) {
    log.warn({ err }, "could not read the conversation's language; using BOT_LOCALE");
    return parts.config.BOT_LOCALE;
  }
}

/**
 * The conversation's settings for *compute*: read when the answer began ({@link readAtStart}),
 * with the history, so both cost one round trip; read now (in the same tick as `alongside`)
 * only when they were not. Kept in the state. Without a settings store, the defaults.
 * @throws when Redis is unreachable.
 */
export async function withSettings<T>(parts: AnswerParts, state: AnswerState, alongside: Promise<T>): Promise<T> {
  const [value, settings] = await Promise.all([
    alongside,
    state.settings ? undefined : parts.settings?.read(state.conversation),
  ]);
  if (settings) state.settings = settings;
  return value;
}

/**
 * Starts the answer's trace (`state.tracer`) unless it was started already, e.g. by a compute
 * that traces work before the run (a voice message's transcription); {@link runOptions} calls it.
 * @returns the tracer.
 */
export function startTrace(parts: AnswerParts, state: AnswerState): RunTracer {
  if (state.tracer === nullRunTracer)
    state.tracer =
      parts.tracerFor?.(state.taken.runId, conversationKey(state.conversation), state.taken.message) ?? nullRunTracer;
  return state.tracer;
}

/**
 * The run's own options for `runDeps` (`context.ts`): the tracer (started here), the deadline's
 * signal, the checkpoint saved under this answer's key (`strip` takes file data out of it), usage
 * recording (which the budget check before each model call awaits), the conversation's settings
 * (model, persona, language), and the live answer's events when streaming is on (`STREAMING=on`
 * and not turned off in the conversation).
 */
export function runOptions(
  parts: AnswerParts,
  state: AnswerState,
  strip: (messages: MessageParam[]) => MessageParam[] = (m) => m,
) {
  startTrace(parts, state);
  const { usage } = parts;
  const { message } = state.taken;
  return {
    tracer: state.tracer,
    log: state.log,
    signal: state.deadline.signal,
    ...(state.running ? { stop: state.running.signal } : {}),
    checkpoint: async (run: RunState) => {
      await parts.redis.set(
        state.keys.run,
        JSON.stringify({ ...run, messages: strip(run.messages) }),
        "EX",
        CHECKPOINT_TTL_SECONDS,
      );
      state.checkpointed = true;
    },
    // Each response's usage is recorded as it arrives; all of it is in Redis before the answer goes out.
    onUsage: (u: ModelUsage) => {
      state.requestTokens = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      if (!usage) return;
      // A model priced apart in MODEL_PRICES: its difference from the default price is recorded with its tokens,
      // and its output/input price ratio weighs its output in the budget tokens.
      const model = state.settings?.model ?? parts.config.ANTHROPIC_MODEL;
      const delta = priceDeltaOf(u, pricesFor(parts.config, model), parts.config.MODEL_PRICES);
      state.usage.push(
        usage
          .record(message, u, Date.now(), delta, outputWeightFor(parts.config, model), model)
          .catch((err: unknown) => state.log.warn({ err }, "could not record token usage")),
      );
    },
    usageSettled: () => Promise.all(state.usage),
    ...(state.settings ? { settings: state.settings } : {}),
    ...(state.memory ? { memoryFiles: state.memory } : {}),
    ...(state.live &&
    parts.config.STREAMING === "on" &&
    state.settings?.streaming !== false &&
    state.taken.speaks?.(state) !== true
      ? { onEvent: streamEvents(state.live) }
      : {}),
    // Model calls that fail for a passing reason are tried again until the deadline; after a while the user is told.
    retryUntil: state.deadlineAt,
    onModelBusy: () => showBusy(parts, state),
  };
}

/**
 * Tells the user, once per answer, that the model is busy and the bot is still trying
 * ({@link MODEL_BUSY_NOTICE}): a status line of the live answer, or — without streaming — a live
 * answer opened for it, whose one short message the answer then replaces (or that is deleted
 * before an apology). An outbound that cannot stream shows nothing.
 */
function showBusy(parts: AnswerParts, state: AnswerState): void {
  if (state.busy || state.stage !== "computing") return;
  state.busy = true;
  state.live ??= openLive(parts, state.taken, { ...state, streamed: [] }, true);
  state.live?.push({ type: "notice", text: localize(localeOf(parts, state), MODEL_BUSY_NOTICE) });
  state.log.info("the model has been busy for a while; the user is told the bot is still trying");
}

/** *Compute*, then *persist*: the text to deliver, or undefined when the run paused for an approval. */
async function computeAndPersist(parts: AnswerParts, state: AnswerState): Promise<string | undefined> {
  state.typing.start();
  let computed: Computed;
  try {
    computed = await state.taken.compute(state);
  } finally {
    // Computed (or failed): nothing is left to stop, so a Stop from now on says the answer finished.
    // Not awaited: its script goes out with the history append instead of a round trip of its own
    // (`end` never throws; `answer` awaits it again at the end).
    void state.running?.end();
    await Promise.all(state.usage);
  }
  if (computed.kind === "said") return computed.text;
  if (computed.kind === "approval") {
    await persistPause(parts, state, computed);
    return undefined;
  }
  // A refused run stores only its tag (no message): the next request is sent as if the refused
  // message had not happened, and a retried job still finds the apology instead of asking again.
  const { messageId } = state.taken.message;
  // Not streamed, the answer says what its calls saved (`📝 記住了：…`). Streamed, the status lines
  // shown while the calls ran give way to the answer: one compact line of them stays at its end (the
  // terminal chat keeps the status lines themselves on screen, so it gets none).
  const streamed = state.live !== undefined && parts.config.STREAMING === "on";
  const locale = localeOf(parts, state);
  const text = !streamed
    ? withNotices(computed.text, noticesOf(parts.toolbox, computed.messages, locale))
    : state.conversation.platform === "console"
      ? computed.text
      : withNotices(computed.text, doneLines(parts.toolbox, computed.messages, locale));
  if (!computed.refused) state.body = computed.body ?? computed.text;
  const stored = computed.refused ? [] : computed.messages;
  const undo = undoOffers(parts.toolbox, state.taken.message, computed.messages, computed.before);
  if (undo.length > 0) state.undo = undo;
  const kept = await parts.history.append(
    state.conversation,
    stored,
    { messageId, text, ...(state.requestTokens !== undefined ? { tokens: state.requestTokens } : {}) },
    computed.before,
    state.resets,
  );
  if (state.checkpointed) await parts.redis.del(state.keys.run); // the tagged answer in the history takes over
  if (!kept) {
    // `/reset` came after this answer began: it is still sent, but nothing of it joins the history.
    state.log.info(
      "the conversation was reset while this answer was under way; its turns are not added to the history",
    );
    return text;
  }
  const { before } = computed;
  state.size = {
    tokens: state.requestTokens,
    ...(before
      ? {
          messages: before.stored + stored.length,
          chars: (before.raw?.length ?? 0) + stored.reduce((n, m) => n + JSON.stringify(m).length + 1, 0),
        }
      : {}),
  };
  return text;
}

/**
 * The notices of the successful calls of a run (`ToolBox.notice`, e.g. `📝 記住了：住在新竹` for
 * a memory write), in call order, each once: a `tool_use` whose `tool_result` is not an error.
 */
export function noticesOf(
  toolbox: AnswerParts["toolbox"],
  messages: readonly MessageParam[],
  locale: AnswerParts["config"]["BOT_LOCALE"],
): string[] {
  return linesOfSucceededCalls(messages, (name, input) => toolbox.notice(name, input, locale));
}

/**
 * What `line` gives for each successful call of a run (a `tool_use` whose `tool_result` is not an
 * error), in call order, each distinct line once; calls it gives nothing for are left out.
 */
function linesOfSucceededCalls(
  messages: readonly MessageParam[],
  line: (name: string, input: unknown) => string | undefined,
): string[] {
  // Most answers call no tool: no result, no sets (every answer of the worker comes here).
  let failed: Set<string> | undefined;
  let answered: Set<string> | undefined;
  for (const m of messages) {
    if (m.role !== "user" || typeof m.content === "string") continue;
    for (const b of m.content)
      if (b.type === "tool_result") {
        if (b.is_error) (failed ??= new Set()).add(b.tool_use_id);
        else (answered ??= new Set()).add(b.tool_use_id);
      }
  }
  if (!answered) return [];
  const lines: string[] = [];
  for (const m of messages) {
    if (m.role !== "assistant" || typeof m.content === "string") continue;
    for (const b of m.content) {
      if (b.type !== "tool_use" || failed?.has(b.id) || !answered.has(b.id)) continue;
      const text = line(b.name, b.input);
      if (text && !lines.includes(text)) lines.push(text);
    }
  }
  return lines;
}

/** Most calls named in a streamed answer's line of calls ({@link doneLines}); more are counted as `+N`. */
export const MAX_DONE_CALLS = 4;

/**
 * The final line of a streamed answer: what its successful calls did (`ToolBox.done`), in call
 * order, each once, joined by ` · ` — at most {@link MAX_DONE_CALLS}, then `+N` — so the status
 * lines shown while they ran are not simply gone (e.g. `🔧 查詢天氣：臺北市 · 📝 記住了：住在新竹`).
 * @returns that line alone, or nothing when no call succeeded or none needs a word.
 */
export function doneLines(
  toolbox: AnswerParts["toolbox"],
  messages: readonly MessageParam[],
  locale: AnswerParts["config"]["BOT_LOCALE"],
): string[] {
  const items = linesOfSucceededCalls(messages, (name, input) => toolbox.done(name, input, locale));
  if (items.length === 0) return [];
  const shown = items.slice(0, MAX_DONE_CALLS);
  const more = items.length - shown.length;
  return [`${shown.join(" · ")}${more > 0 ? ` · +${more}` : ""}`];
}

/**
 * `text` (the answer's Markdown) followed by `notices`, one per line after a blank line; `text`
 * alone when there are none. A notice is plain (a tool's words with its input: `📝 記住了：**x**`),
 * so it is written as a Markdown literal ({@link markdownLiteral}) and shows as it is.
 */
function withNotices(text: string, notices: string[]): string {
  return notices.length === 0 ? text : `${text}\n\n${notices.map(markdownLiteral).join("\n")}`;
}

/** *Persist* of a run paused at a dangerous call: the approval prompt (its own message: a streamed part is deleted). */
async function persistPause(
  parts: AnswerParts,
  state: AnswerState,
  paused: PausedOutcome & { lead?: string },
): Promise<void> {
  const { message, outbound } = state.taken;
  await state.live?.discard();
  if (parts.approvals) {
    state.result = {
      asked: await parts.approvals.begin(
        message,
        paused,
        outbound,
        localeOf(parts, state),
        // The approval notes the generation the run belongs to (one more round trip, on a pause only).
        typeof state.resets === "number"
          ? state.resets
          : await parts.history.generationAt(state.conversation, state.resets.since),
        outbound.promptsStayAsSent ? paused.lead : undefined,
      ),
    };
  } else {
    // Without an approval store a dangerous call is not run, and nothing of the paused run is kept (the history stays valid).
    state.log.warn(
      { tool: paused.call.name },
      "a dangerous tool needs confirmation, but no approval store is configured",
    );
    const text = localize(
      localeOf(parts, state),
      {
        "zh-TW": "這個動作（{tool}）需要你確認，但目前無法進行確認，所以沒有執行。",
        en: "This action ({tool}) needs your confirmation, but confirmation is unavailable right now, so nothing was done.",
      },
      { tool: paused.call.name },
    );
    await outbound.sendAnswer(state.to, text);
    state.result = { asked: undefined };
  }
  if (state.checkpointed) await parts.redis.del(state.keys.run); // the paused run lives on in the approval record
  if (state.taken.kind === "message") metrics.answered(message);
}

/** *Deliver*: the chunks (or the live answer's final edit), counted when the answer may take several; a 429 waited out within the deadline. */
async function deliver(parts: AnswerParts, state: AnswerState, text: string): Promise<void> {
  const { message, outbound } = state.taken;
  state.stage = "delivering";
  state.typing.stop();
  const sending = performance.now();
  const delivery = await deliverAnswer(outbound, message, state.to, text, {
    redis: parts.redis,
    sentKey: state.keys.sent,
    skip: state.sent,
    deadlineAt: state.deadlineAt,
    log: state.log,
    timed: state.taken.kind === "message",
    ...(state.live ? { stream: state.live } : {}),
  });
  state.sent = delivery.sent;
  state.counted = delivery.counted;
  state.tracer.event("delivery", {
    chunks: delivery.sent,
    ok: delivery.error === undefined,
    durationMs: Math.round(performance.now() - sending),
  });
  if (delivery.error !== undefined) throw delivery.error;
  if (state.live && state.live.messages.length > 0) await parts.redis.del(state.keys.stream);
  if (state.taken.kind === "message") metrics.answered(message);
  state.result = { answered: text };
}

/** After *deliver*: the undo notices of memory writes made after outside content was read (`src/memory/undo.ts`). */
async function offerUndo(parts: AnswerParts, state: AnswerState, offers: UndoOffer[]): Promise<void> {
  const { message, outbound } = state.taken;
  await sendUndoNotices({
    outbound,
    to: state.to,
    store: new MemoryStore(parts.redis, { log: state.log }),
    scope: memoryScopeOf(message),
    offers,
    locale: localeOf(parts, state),
    log: state.log,
  });
}

/**
 * After *deliver*: asks for a compaction of the conversation when the answer left it large
 * (`compactionReason`: its last request's tokens, the stored messages or characters). The job is
 * queued (deduplicated per conversation) and runs on its own: the answer is already out, and the
 * next message of the chat does not wait for it. A failure to queue it is logged, never the answer's.
 */
async function requestCompaction(parts: AnswerParts, state: AnswerState): Promise<void> {
  if (!parts.compaction || !state.size || state.result === undefined || !("answered" in state.result)) return;
  const reason = compactionReason(parts.config, state.size);
  if (!reason) return;
  const { message } = state.taken;
  try {
    await parts.compaction.queue.request({
      conversation: state.conversation,
      owner: { platform: message.platform, userId: message.userId, chatId: message.chatId },
      reason,
    });
    state.log.debug({ reason, ...state.size }, "compaction requested");
  } catch (error) {
    state.log.warn({ err: error }, "could not queue the conversation's compaction");
  }
}

/**
 * *Fail*: a transient failure before the job's last attempt and the deadline is rethrown (the job
 * retries; the streamed messages stay for the retry to edit, the start time is kept for its
 * deadline). Anything else ends the answer: a partial streamed answer is deleted, an answer of
 * which nothing reached the user is removed from the history, and the user gets an apology —
 * except into a chat whose rate limit outlasts the deadline.
 *
 * @throws the failure, to retry the job.
 */
async function fail(parts: AnswerParts, state: AnswerState, caught: unknown): Promise<void> {
  const { taken, log, live, attempt } = state;
  // The deadline's own error, unless the model stayed busy until it (its apology says so).
  const exhausted = (caught as { exhausted?: unknown } | undefined)?.exhausted === true;
  const error =
    state.deadline.signal.aborted && state.stage === "computing" && !exhausted ? state.deadline.signal.reason : caught;
  await state.tracer.finish();
  if (isTransient(error) && !lastAttempt(attempt) && Date.now() < state.deadlineAt) {
    log.warn(
      { err: error, attempt: attempt.made + 1, attempts: attempt.allowed },
      "transient failure; the job will retry",
    );
    await live?.pause(); // its messages stay; the retry edits them (their ids are in Redis)
    await parts.redis.set(state.keys.started, state.startedAt, "EX", CHECKPOINT_TTL_SECONDS, "NX");
    throw error;
  }
  state.failure = error;
  metrics.failed(taken.message);
  // A partial streamed answer never stays beside the apology (delivered final chunks do stay).
  if (live && state.stage === "computing") await live.discard();
  if (state.stage === "delivering" && state.sent === 0) {
    // Nothing of the answer reached the user: the model must not believe it was seen.
    await parts.history
      .forget(state.conversation, taken.message.messageId)
      .catch((e: unknown) => log.error({ err: e }, "could not remove the undelivered answer from the history"));
  }
  if (retryAfterMs(error) !== undefined) {
    // The platform still refuses to take messages in this chat: an apology would meet the same 429.
    log.error(
      { err: error, lateDeliveryMs: LATE_DELIVERY_MS },
      "the answer could not be delivered within ANSWER_DEADLINE_SECONDS and the late-delivery bound after it (rate limited); no apology sent",
    );
  } else {
    log.error({ err: error }, "could not answer the message; sending an apology");
    const locale = localeOf(parts, state);
    await sendApology(taken.outbound, state.to, error, locale, log, taken.failureText?.(locale));
  }
  await taken.settle?.().catch((e: unknown) => log.error({ err: e }, "could not close the answer after its failure"));
}

/**
 * The agent loop's events as a live answer's: text deltas, the text of a model call dropped when it
 * leads into a tool call (it is not the answer, see `StreamEvent`), tool status.
 */
function streamEvents(live: AnswerStream): (event: AgentEvent) => void {
  return (event) => {
    let mapped: StreamEvent | undefined;
    if (event.type === "text") mapped = { type: "text", text: event.text };
    else if (event.type === "retry") mapped = { type: "text_dropped" };
    else if (event.type === "tool_use") mapped = { type: "text_dropped" };
    else if (event.type === "tool_start")
      mapped = {
        type: "tool_start",
        id: event.toolUseId,
        activity: event.activity,
        ...(event.icon ? { icon: event.icon } : {}),
      };
    else if (event.type === "tool_end") mapped = { type: "tool_end", id: event.toolUseId, ok: event.ok };
    else if (event.type === "tool_progress")
      mapped = { type: "tool_progress", id: event.toolUseId, progress: event.progress };
    if (mapped) live.push(mapped);
  };
}
