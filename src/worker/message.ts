/**
 * A fresh message through the answer pipeline (`pipeline.ts`): its *take* (the chat inbox's entry,
 * and the outbound of its platform) and its *compute* (the message's files, the requester's
 * pending approval closed, the history read, the agent loop run — or resumed from the checkpoint
 * an earlier attempt saved before it changed data).
 */
import type { Job } from "bullmq";
import { RunStateSchema, type AgentOutcome, type MessageParam, type RunState } from "../agent/contract.js";
import { isContextWindowExceeded, TOO_LONG_TEXT } from "../agent/errors.js";
import { compact } from "../compaction/compactor.js";
import type { HistoryRead } from "../history/store.js";
import { withSummary } from "../history/summary.js";
import { isUserTextTurn } from "../history/trim.js";
import { localize } from "../i18n.js";
import { decodeRecord } from "../records.js";
import { speakerLabel } from "../prompts.js";
import { IncomingMessageSchema, conversationKey, type IncomingMessage } from "../queue/incoming.js";
import type { PendingTrace } from "../trace/tracer.js";
import { transcriptLine, transcriptOfTurn } from "../media/voice.js";
import { runDeps } from "./context.js";
import { readMedia } from "./media.js";
import {
  answer,
  localeOf,
  outboundFor,
  runOptions,
  startTrace,
  withSettings,
  type AnswerParts,
  type AnswerState,
  type Computed,
  type JobAttempt,
} from "./pipeline.js";

/** The agent loop's entry point (`runAgent` of `src/agent/loop.ts`), injected so `src/main.ts` wires the real loop in one place. */
export type { RunAgent } from "./worker.js";

/** What answering one inbox entry left for the chat job's finish script. */
export interface Answered {
  /** The message, or undefined when the entry was malformed (dropped). */
  message?: IncomingMessage;
  /** True when a sent-chunk count may have been written. */
  counted: boolean;
  /** The run's trace, to be written by the finish script. */
  trace?: PendingTrace;
}

/**
 * Answers one message of a chat's inbox (`entry`: its raw JSON, or the job's own data when the
 * job is fresh). A malformed entry is logged and dropped.
 *
 * @throws to retry the job: a transient failure before the job's last attempt (see `pipeline.ts`),
 *   or a platform this worker has no outbound for (another worker may have it).
 */
export async function answerMessage(
  parts: AnswerParts,
  job: Job<IncomingMessage>,
  entry: string | IncomingMessage,
): Promise<Answered> {
  let message: IncomingMessage;
  try {
    message = typeof entry === "string" ? IncomingMessageSchema.parse(JSON.parse(entry)) : entry;
  } catch (error) {
    parts.log.error({ err: error, job: job.id }, "malformed message in a chat inbox; dropped");
    return { counted: false };
  }
  // Only a job that ran before (a retry, a stalled job handed over, a replacement) can find progress.
  const attempt: JobAttempt = {
    made: job.attemptsMade,
    allowed: job.opts.attempts ?? 1,
    resumed: job.attemptsStarted > 1 || job.name !== "chat",
  };
  const outbound = outboundFor(parts, message.platform, attempt);
  if (!outbound) return { message, counted: false };
  const done = await answer(
    parts,
    {
      kind: "message",
      message,
      outbound,
      answerId: message.messageId,
      runId: `${conversationKey(message)}:${message.messageId}`,
      compute: (state) => computeMessage(parts, state),
    },
    attempt,
  );
  return { message, counted: done.counted, trace: done.tracer.take() };
}

/**
 * The compute of a fresh message: its files (and a Telegram album's other items) are read — one
 * that cannot be read is answered without the model; a run resumed from its checkpoint already
 * holds their placeholders, so nothing is downloaded again — then the sender's pending approval
 * in the conversation is closed, and the loop runs on the history with the toolbox of the chat's
 * context. Group turns start with the speaker's label (`speakerLabel`).
 *
 * A transcribed voice message is answered like its text turn (`[voice 0:07] …`); the answer begins
 * with the transcript line (`🎤 「…」`, `transcriptLine`), which a streamed answer shows first, as
 * soon as the transcript exists. A run resumed from its checkpoint (no audio is kept) finds the
 * transcript in its saved user turn.
 */
async function computeMessage(parts: AnswerParts, state: AnswerState): Promise<Computed> {
  const { config } = parts;
  const { message, outbound } = state.taken;
  const { checkpoint } = state.restored;
  const tracer = message.media ? startTrace(parts, state) : undefined;
  // A file's refusal and a voice message's transcription speak the conversation's language: its settings first.
  if (message.media || message.mediaGroupId) await withSettings(parts, state, Promise.resolve());
  const media = await readMedia(
    { config, redis: parts.redis, log: state.log, locale: localeOf(parts, state), ...(tracer ? { tracer } : {}) },
    message,
    outbound,
    state.deadline.signal,
    { resuming: checkpoint !== undefined },
  );
  if (media.refusal !== undefined) return { kind: "said", text: media.refusal };
  const seconds = media.voice?.seconds;
  if (seconds !== undefined && parts.usage) {
    // Awaited with the tokens' usage before the answer goes out (`/usage` right after it counts it).
    state.usage.push(
      parts.usage
        .recordVoice(message, seconds)
        .catch((err: unknown) => state.log.warn({ err }, "could not record the seconds transcribed")),
    );
  }
  const transcript =
    media.voice?.transcript ??
    (checkpoint && config.STT_BASE_URL && message.media?.some((m) => m.kind === "voice" || m.kind === "audio")
      ? transcriptOfTurn(firstText(checkpoint.messages[0]!))
      : undefined);
  const heard = transcript !== undefined ? transcriptLine(transcript, { markdown: true }) : undefined;
  if (transcript !== undefined && state.live && config.STREAMING === "on")
    state.live.push({ type: "lead", text: transcriptLine(transcript) });
  await parts.approvals?.supersedePending(message, outbound);
  // The settings are read with the history (one write for both): a change counts from this message.
  let before = await withSettings(parts, state, parts.history.read(state.conversation));
  if (checkpoint)
    state.log.info({ turns: checkpoint.turns }, "resuming the run an earlier attempt saved before it changed data");
  const deps = runDeps(parts, media.message, {
    ...runOptions(parts, state, media.strip),
    executeOnce: parts.ledger.executeOnce,
  });
  const asked = media.message;
  const userText = asked.chatKind === "group" ? `${speakerLabel(asked)} ${asked.text}`.trimEnd() : asked.text;
  const run = (history: MessageParam[], resume: RunState | undefined) =>
    parts.runAgent(
      {
        history,
        userText,
        ...(media.blocks ? { userContent: media.blocks } : {}),
        context: deps.context,
        ...(resume ? { resume } : {}),
      },
      deps,
    );
  let outcome: AgentOutcome;
  try {
    outcome = await run(withSummary(before), checkpoint);
  } catch (error) {
    if (!isContextWindowExceeded(error)) throw error;
    // The request did not fit: shorten the conversation (a compaction, or the oldest turns left
    // out of the request) and ask once more; a run saved before a write resumes from its checkpoint.
    state.live?.push({ type: "text_dropped" });
    const shorter = await shortenForRetry(parts, state, asked, before);
    before = shorter.before;
    const saved =
      decodeRecord(RunStateSchema, await parts.redis.get(state.keys.run), "run checkpoint", state.log) ?? checkpoint;
    try {
      outcome = await run(shorter.history, saved);
    } catch (again) {
      if (!isContextWindowExceeded(again)) throw again;
      state.log.warn(
        "the conversation does not fit the context window even after it was shortened; the user is told to start fresh",
      );
      state.live?.push({ type: "text_dropped" });
      const tooLong = localize(localeOf(parts, state), TOO_LONG_TEXT);
      return { kind: "said", text: heard ? `${heard}\n\n${tooLong}` : tooLong };
    }
  }
  if (outcome.kind === "approval") return media.stripOutcome(outcome);
  // The transcript line leads the answer, also after a retry that shortened the conversation.
  return {
    ...outcome,
    ...(heard ? { text: `${heard}\n\n${outcome.text}` } : {}),
    messages: media.strip(outcome.messages),
    before,
  };
}

/** The text of a message (its string content, or its first text block); "" when it has none. */
function firstText(message: MessageParam): string {
  if (typeof message.content === "string") return message.content;
  const block = message.content.find((b) => b.type === "text");
  return block && block.type === "text" ? block.text : "";
}

/**
 * The overflow rescue: the conversation compacted now (keeping half of its user turns verbatim, at
 * most `COMPACT_KEEP_TURNS`), waiting for a compaction already running; when no compaction could
 * shorten it (nothing to summarise, the model failed), the request leaves out the older half of
 * the history instead (cut in front of a user text turn; the stored history is not changed).
 */
async function shortenForRetry(
  parts: AnswerParts,
  state: AnswerState,
  asked: IncomingMessage,
  before: HistoryRead,
): Promise<{ history: MessageParam[]; before: HistoryRead }> {
  const turns = before.messages.filter(isUserTextTurn).length;
  if (parts.compaction) {
    const keepTurns = Math.max(1, Math.min(parts.config.COMPACT_KEEP_TURNS, Math.floor(turns / 2)));
    try {
      const result = await compact(
        parts.compaction.deps,
        {
          conversation: state.conversation,
          owner: { platform: asked.platform, userId: asked.userId, chatId: asked.chatId },
          reason: "overflow",
          keepTurns,
        },
        { waitMs: 30_000, signal: state.deadline.signal },
      );
      state.log.info(
        { outcome: result.outcome },
        "the request did not fit the context window; compacted before asking again",
      );
      if (result.outcome !== "nothing") {
        const after = await parts.history.read(state.conversation);
        return { history: withSummary(after), before: after };
      }
    } catch (error) {
      state.log.warn(
        { err: error },
        "the overflow compaction failed; the older turns are left out of the request instead",
      );
    }
  }
  const starts = before.messages.flatMap((m, i) => (isUserTextTurn(m) ? [i] : []));
  const from = starts[Math.floor(starts.length / 2)] ?? before.messages.length;
  return { history: withSummary({ ...before, messages: before.messages.slice(from) }), before };
}
