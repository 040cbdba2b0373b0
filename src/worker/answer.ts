/**
 * Answering one message of a conversation's inbox: parse it, find an answer an earlier attempt
 * already stored (a retried job), else run the agent loop and store the run in the history, then
 * deliver. Throws only to retry the job (transient failures, within the answer's deadline); every
 * other failure ends with an apology to the user, so one bad message never blocks its conversation.
 *
 * One deadline per answer (`ANSWER_DEADLINE_SECONDS`, from when the worker began the message;
 * kept across retries): it aborts the model call and the tools (their `AbortSignal`) and bounds
 * waiting out a platform's 429. An answer that in the end could not be delivered at all is removed
 * from the history, and no apology is sent into a chat that is still rate limited.
 */
import type { Job } from "bullmq";
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import { RunStateSchema, type AgentDeps, type AgentEvent, type AgentOutcome, type AgentRequest, type ModelUsage, type RunState } from "../agent/contract.js";
import { decodeRecord } from "../records.js";
import { grantLookup, grantStoreFor } from "../approvals/grants.js";
import type { Logger } from "../log.js";
import { metrics } from "../metrics.js";
import { IncomingMessageSchema, conversationKey, conversationOf, type ConversationRef, type IncomingMessage } from "../queue/incoming.js";
import { speakerLabel } from "../prompts.js";
import { progressKeys } from "../queue/keys.js";
import type { ExecutionLedger } from "../toolbox/once.js";
import { toolboxFor } from "../toolbox/select.js";
import { nullRunTracer, type PendingTrace, type RunTracer } from "../trace/tracer.js";
import { destinationOf, SentRefSchema, type SentRef } from "../outbound.js";
import type { AnswerStream, StreamEvent } from "../streaming.js";
import type { WorkerDeps } from "./worker.js";
import { toolContextFor } from "./context.js";
import { readMedia } from "./media.js";
import { AnswerDeadlineError, Typing, deliverAnswer, sendApology } from "./deliver.js";
import { isTransient, NoOutboundError, retryAfterMs } from "./errors.js";

/** The agent loop's entry point, injected so `src/main.ts` wires the real loop in one place. */
export type RunAgent = (request: AgentRequest, deps: AgentDeps) => Promise<AgentOutcome>;

/**
 * What answering a message needs, built once per worker from its {@link WorkerDeps} (the fields
 * keep their meaning there), with the defaults filled in.
 */
export interface AnswerParts extends Omit<WorkerDeps, "redis" | "store" | "prefix" | "typingIntervalMs"> {
  /** Connection for the progress keys and the tools (the worker's `store`, else its `redis`). */
  redis: RedisClient;
  /** Typing refresh interval, in ms. */
  typingIntervalMs: number;
  /** Exactly-once records of the tool calls that change data (keys `toolcall:{tool_use id}`). */
  ledger: ExecutionLedger;
}

/** Seconds a run's checkpoint is kept (long enough for every retry of its job). */
export const CHECKPOINT_TTL_SECONDS = 24 * 3600;

/** What answering one inbox entry left for the finish script. */
export interface Answered {
  /** The message, or undefined when the entry was malformed (dropped). */
  message?: IncomingMessage;
  /** True when a sent-chunk count may have been written. */
  counted: boolean;
  /** The run's trace, to be written by the finish script. */
  trace?: PendingTrace;
}

/**
 * Answers one message of the inbox (`entry`: its raw JSON, or the job's own data when the job is
 * fresh). A malformed entry is logged and dropped.
 *
 * @throws to retry the job: a transient failure (see `isTransient`) before the job's last attempt,
 *   or a platform this worker has no outbound for (another worker may have it).
 */
export async function answerMessage(parts: AnswerParts, job: Job<IncomingMessage>, entry: string | IncomingMessage): Promise<Answered> {
  const { config, log } = parts;
  let message: IncomingMessage;
  try {
    message = typeof entry === "string" ? IncomingMessageSchema.parse(JSON.parse(entry)) : entry;
  } catch (error) {
    log.error({ err: error, job: job.id }, "malformed message in a chat inbox; dropped");
    return { counted: false };
  }
  const chat: ConversationRef = conversationOf(message);
  const mlog = log.child({ chat: conversationKey(chat), messageId: message.messageId });
  const outbound = parts.outbounds[message.platform];
  if (!outbound) {
    // Another worker process may answer on this platform: retry there; drop only at the last attempt.
    const problem = new NoOutboundError(message.platform);
    if (job.attemptsMade + 1 < (job.opts.attempts ?? 1)) throw problem;
    mlog.error(`${problem.message}; message dropped`);
    return { message, counted: false };
  }
  const { sent: sentKey, run: runKey, started: startedKey, stream: streamKey } = progressKeys(chat, message.messageId);
  // Only a job that ran before (a retry, a stalled job handed over, a replacement) can find progress.
  const resumed = job.attemptsStarted > 1 || job.name !== "chat";
  if (!resumed) metrics.started(message);
  let stored: string | undefined;
  let skip = 0;
  let checkpoint: RunState | undefined;
  let startedAt = Date.now();
  if (resumed) {
    startedAt = Number((await parts.redis.get(startedKey)) ?? startedAt) || startedAt;
    stored = (await parts.history.read(chat, message.messageId)).answer;
    if (stored !== undefined) skip = Number((await parts.redis.get(sentKey)) ?? 0);
    else checkpoint = decodeRecord(RunStateSchema, await parts.redis.get(runKey), "run checkpoint", mlog);
  }
  // Messages an earlier attempt streamed into the chat (kept with the run's progress): edited to the final text or deleted.
  const streamed = resumed ? (decodeRecord(z.array(SentRefSchema), await parts.redis.get(streamKey), "list of streamed messages", mlog) ?? []) : [];
  let checkpointed = checkpoint !== undefined;
  const saveCheckpoint = async (run: RunState) => {
    await parts.redis.set(runKey, JSON.stringify(run), "EX", CHECKPOINT_TTL_SECONDS);
    checkpointed = true;
  };

  // One deadline per answer: it aborts the model call and the tools, and bounds waiting out 429s.
  const deadlineSeconds = config.ANSWER_DEADLINE_SECONDS;
  const deadlineAt = startedAt + deadlineSeconds * 1000;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new AnswerDeadlineError(deadlineSeconds)), Math.max(0, deadlineAt - Date.now()));
  timer.unref();

  const typing = new Typing(outbound, destinationOf(message), parts.typingIntervalMs, mlog);
  const live = openLiveAnswer(parts, message, streamed, streamKey, () => {
    typing.stop();
    // The one place where the first streamed text of an answer becomes visible.
    metrics.firstVisibleText(message);
  }, mlog);
  let tracer: RunTracer = nullRunTracer;
  let counted = false;
  let delivering = false;
  let delivered = 0;
  try {
    let text: string;
    if (stored !== undefined) {
      text = stored;
      mlog.info({ skip }, "reusing the answer of an earlier attempt found in the history");
    } else {
      typing.start();
      // Files (and a Telegram album's other items) are read here; one that cannot be read is answered without the model.
      // A run resumed from its checkpoint already holds their placeholders: nothing is downloaded again.
      const media = await readMedia({ config, redis: parts.redis, log: mlog }, message, outbound, deadline.signal, { resuming: checkpoint !== undefined });
      if (media.refusal !== undefined) {
        typing.stop();
        await outbound.sendAnswer(destinationOf(message), media.refusal);
        metrics.answered(message);
        return { message, counted };
      }
      await parts.approvals.supersedePending(message);
      const before = await parts.history.read(chat);
      tracer = parts.tracerFor?.(`${conversationKey(chat)}:${message.messageId}`, conversationKey(chat)) ?? nullRunTracer;
      if (checkpoint) mlog.info({ turns: checkpoint.turns }, "resuming the run an earlier attempt saved before it changed data");
      const outcome = await runAgentFor(parts, media.message, before.messages, tracer, mlog, {
        resume: checkpoint,
        checkpoint: (run) => saveCheckpoint({ ...run, messages: media.strip(run.messages) }),
        signal: deadline.signal,
        blocks: media.blocks,
        ...(live && parts.config.STREAMING === "on" ? { onEvent: streamEvents(live) } : {}),
      });
      if (outcome.kind === "approval") {
        await tracer.finish();
        await live?.discard(); // the approval prompt is its own message, as without streaming
        await parts.approvals.begin(message, media.stripOutcome(outcome), outbound);
        metrics.answered(message);
        return { message, counted };
      }
      text = outcome.text;
      // A refused run stores only its tag (no message): the next request is sent as if the refused
      // message had not happened, and a retried job still finds the apology instead of asking again.
      await parts.history.append(chat, outcome.refused ? [] : media.strip(outcome.messages), { messageId: message.messageId, text }, before);
      if (checkpointed) await parts.redis.del(runKey); // the tagged answer in the history takes over
    }
    delivering = true;
    typing.stop();
    const delivery = await deliverAnswer(outbound, message, text, { redis: parts.redis, sentKey, skip, deadlineAt, log: mlog, ...(live ? { stream: live } : {}) });
    delivered = delivery.sent;
    if (delivery.error !== undefined) throw delivery.error;
    counted = delivery.counted;
    if (live && live.messages.length > 0) await parts.redis.del(streamKey);
    metrics.answered(message);
  } catch (caught) {
    await tracer.finish();
    const error = deadline.signal.aborted && !delivering ? deadline.signal.reason : caught;
    const attempts = job.opts.attempts ?? 1;
    if (isTransient(error) && job.attemptsMade + 1 < attempts && Date.now() < deadlineAt) {
      mlog.warn({ err: error, attempt: job.attemptsMade + 1, attempts }, "transient failure; the job will retry");
      await live?.pause(); // its messages stay; the retry edits them (their ids are in Redis)
      await parts.redis.set(startedKey, startedAt, "EX", CHECKPOINT_TTL_SECONDS, "NX");
      throw error;
    }
    metrics.failed(message);
    // A partial streamed answer never stays beside the apology (delivered final chunks do stay).
    if (live && !delivering) await live.discard();
    else await live?.pause();
    if (delivering && delivered === 0) {
      // Nothing of the answer reached the user: the model must not believe it was seen.
      await parts.history.forget(chat, message.messageId).catch((e: unknown) => mlog.error({ err: e }, "could not remove the undelivered answer from the history"));
    }
    if (retryAfterMs(error) !== undefined) {
      // The platform still refuses to take messages in this chat: an apology would meet the same 429.
      mlog.error({ err: error }, "the answer could not be delivered within ANSWER_DEADLINE_SECONDS (rate limited); no apology sent");
    } else {
      mlog.error({ err: error }, "could not answer the message; sending an apology");
      await sendApology(outbound, message, error, config.BOT_LOCALE, mlog);
    }
  } finally {
    clearTimeout(timer);
    typing.stop();
    await live?.pause();
  }
  return { message, counted, trace: tracer.take() };
}

/** Runs the agent loop for `message` with the toolbox of its context; group turns start with the speaker's label (`speakerLabel`). */
async function runAgentFor(
  parts: AnswerParts,
  message: IncomingMessage,
  history: AgentRequest["history"],
  tracer: RunTracer,
  mlog: Logger,
  progress: { resume?: RunState; checkpoint: (run: RunState) => Promise<void>; signal: AbortSignal; onEvent?: AgentDeps["onEvent"]; blocks?: AgentRequest["userContent"] },
): Promise<AgentOutcome> {
  const { config, usage } = parts;
  const chat = { platform: message.platform, chatKind: message.chatKind } as const;
  const userText = message.chatKind === "group" ? `${speakerLabel(message)} ${message.text}`.trimEnd() : message.text;
  // Each response's usage is recorded as it arrives; all of it is in Redis before the answer goes out.
  const recording: Promise<void>[] = [];
  const onUsage = usage
    ? (u: ModelUsage) => void recording.push(usage.record(message, u).catch((err: unknown) => mlog.warn({ err }, "could not record token usage")))
    : undefined;
  try {
    return await parts.runAgent(
      { history, userText, ...(progress.blocks ? { userContent: progress.blocks } : {}), context: toolContextFor(message, { config, redis: parts.redis, log: mlog, signal: progress.signal }), ...(progress.resume ? { resume: progress.resume } : {}) },
      {
        client: parts.client,
        config,
        toolbox: toolboxFor(parts.toolbox, chat),
        tracer,
        executeOnce: parts.ledger.executeOnce,
        checkpoint: progress.checkpoint,
        onUsage,
        ...(progress.onEvent ? { onEvent: progress.onEvent } : {}),
        grantFor: grantLookup(grantStoreFor(parts.redis, config), message),
      },
    );
  } finally {
    await Promise.all(recording);
  }
}

/**
 * The live answer of `message` when the outbound can stream and streaming is on, or when an
 * earlier attempt left streamed messages (they must end as the final answer or be deleted); else
 * undefined (today's path). The list of posted messages is kept under `streamKey` for
 * {@link CHECKPOINT_TTL_SECONDS}, so a retried or redelivered job edits them instead of posting a second copy.
 */
function openLiveAnswer(parts: AnswerParts, message: IncomingMessage, streamed: SentRef[], streamKey: string, onVisible: () => void, log: Logger): AnswerStream | undefined {
  const outbound = parts.outbounds[message.platform];
  if (!outbound?.openStream || (parts.config.STREAMING !== "on" && streamed.length === 0)) return undefined;
  return outbound.openStream(destinationOf(message), {
    intervalMs: parts.config.STREAM_EDIT_INTERVAL_MS,
    resume: streamed,
    onMessages: async (refs) => {
      if (refs.length > 0) await parts.redis.set(streamKey, JSON.stringify(refs), "EX", CHECKPOINT_TTL_SECONDS);
      else await parts.redis.del(streamKey);
    },
    onVisible,
    log,
  });
}

/**
 * The agent loop's events as a live answer's: text deltas, the text of a model call dropped when it
 * leads into a tool call (it is not the answer, see `StreamEvent`), tool status.
 */
function streamEvents(live: AnswerStream): (event: AgentEvent) => void {
  return (event) => {
    let mapped: StreamEvent | undefined;
    if (event.type === "text") mapped = { type: "text", text: event.text };
    else if (event.type === "tool_use") mapped = { type: "text_dropped" };
    else if (event.type === "tool_start") mapped = { type: "tool_start", id: event.toolUseId, activity: event.activity, ...(event.icon ? { icon: event.icon } : {}) };
    else if (event.type === "tool_end") mapped = { type: "tool_end", id: event.toolUseId, ok: event.ok };
    if (mapped) live.push(mapped);
  };
}
