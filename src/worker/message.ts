/**
 * A fresh message through the answer pipeline (`pipeline.ts`): its *take* (the chat inbox's entry,
 * and the outbound of its platform, the message's files, the requester's pending approval closed)
 * and the one compute step (`compute.ts`) with the user turn it makes.
 */
import type { Job } from "bullmq";
import { z } from "zod";
import type { MessageParam } from "../agent/contract.js";
import { IncomingMessageSchema, conversationKey, type IncomingMessage } from "../queue/incoming.js";
import type { PendingTrace } from "../trace/tracer.js";
import { transcriptLine, transcriptOfTurn } from "../media/voice.js";
import { compute, userTurnOf } from "./compute.js";
import { readMedia } from "./media.js";
import { sendVoiceReply, voiceDue } from "./voice-reply.js";
import {
  answer,
  freshCrashed,
  localeOf,
  outboundFor,
  startTrace,
  withSettings,
  type AnswerParts,
  type AnswerState,
  type Computed,
  type JobAttempt,
} from "./pipeline.js";

/** The chat jobs (one object per attempt: BullMQ hands each attempt its own) that answered a message here already. */
const drained = new WeakSet<object>();

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
    // Not the error itself: JSON.parse's message quotes the start of the entry, the user's words.
    const problem =
      error instanceof z.ZodError
        ? error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")
        : "not JSON";
    parts.log.error(
      { job: job.id, problem, chars: typeof entry === "string" ? entry.length : 0 },
      "malformed message in a chat inbox; dropped",
    );
    return { counted: false };
  }
  // Only a job that ran before (a retry, a stalled job handed over, a replacement) can find progress.
  // The first answer of this attempt is the one a crashed first attempt was giving (`freshCrashed`).
  const first = !drained.has(job);
  drained.add(job);
  const attempt: JobAttempt = {
    made: job.attemptsMade,
    allowed: job.opts.attempts ?? 1,
    resumed: job.attemptsStarted > 1 || job.name !== "chat",
    freshCrashed: first && job.name === "chat" && freshCrashed(job),
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
      speaks: (state) => voiceDue(parts, state),
      beforeDeliver: async (state) =>
        voiceDue(parts, state) && state.body !== undefined ? sendVoiceReply(parts, state, state.body) : undefined,
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
 * context. Group turns start with the speaker's label (`speakerLabel`). Where the closed approval's
 * prompt stays as it was sent (LINE), the answer starts with a line saying it was closed, not done.
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
  // An answer spoken too is not streamed (the voice comes first): its transcript line shows with the text.
  if (transcript !== undefined && state.live && config.STREAMING === "on" && !voiceDue(parts, state))
    state.live.push({ type: "lead", text: transcriptLine(transcript) });
  const superseded = await parts.approvals?.supersedePending(message, outbound, state.pendingHint);
  if (superseded) {
    // The closed run joined the history after the answer's first read: the compute reads it again.
    delete state.history;
    delete state.memory;
  }
  return compute(parts, state, {
    message: media.message,
    userText: userTurnOf(media.message),
    ...(media.blocks ? { userContent: media.blocks } : {}),
    executeOnce: parts.ledger.executeOnce,
    strip: media.strip,
    history: "conversation",
    // The transcript line leads the answer (and the "too long" note); where the closed approval's
    // prompt could not say it was closed (LINE), that line comes first.
    lead: () => leadLines(superseded?.lead, heard),
    resuming: "resuming the run an earlier attempt saved before it changed data",
  });
}

/** The lead lines that are there, one per line; undefined when there is none. */
function leadLines(...lines: (string | undefined)[]): string | undefined {
  const there = lines.filter((line): line is string => line !== undefined);
  return there.length > 0 ? there.join("\n") : undefined;
}

/** The text of a message (its string content, or its first text block); "" when it has none. */
function firstText(message: MessageParam): string {
  if (typeof message.content === "string") return message.content;
  const block = message.content.find((b) => b.type === "text");
  return block && block.type === "text" ? block.text : "";
}
