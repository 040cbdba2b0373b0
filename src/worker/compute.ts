/**
 * The one *compute* step of the answer pipeline (`pipeline.ts`): a fresh message (`message.ts`), a
 * resumed approval (`decision.ts`) and a scheduled task's occurrence (`task.ts`) differ only in how
 * they take their input (a {@link RunInput}); this step does the rest the same way for all three:
 *
 * - the conversation's settings (model, persona, language, streaming), read with the history;
 * - the history with its summary (`withSummary`), or the paused run's own history for a decision;
 * - the run dependencies (`runDeps`: the toolbox of the chat's context, the budget guard before
 *   each model call, the memory block, grants, the deadline, streaming, usage, the checkpoint);
 * - the run resumed from the checkpoint an earlier attempt saved before it changed data;
 * - the context-window rescue: a request that does not fit is asked once more after the
 *   conversation was shortened (a compaction, else the older half left out), and when it still
 *   does not fit the user is told to start fresh (`TOO_LONG_TEXT`);
 * - the shared epilogue: the answer's lead line (a transcript, a task's header) before its text,
 *   file data stripped from what is kept, the history read handed to *persist*.
 */
import type { ContentBlockParam } from "@anthropic-ai/sdk/resources/messages";
import {
  RunStateSchema,
  type AgentOutcome,
  type MessageParam,
  type PausedOutcome,
  type RunState,
} from "../agent/contract.js";
import type { ResumeDeps } from "../agent/loop.js";
import { isContextWindowExceeded, TOO_LONG_TEXT } from "../agent/errors.js";
import { compact } from "../compaction/compactor.js";
import type { HistoryRead } from "../history/store.js";
import { withSummary } from "../history/summary.js";
import { isUserTextTurn } from "../history/trim.js";
import { localize } from "../i18n.js";
import { speakerLabel } from "../prompts.js";
import type { IncomingMessage } from "../queue/incoming.js";
import { decodeRecord } from "../records.js";
import type { ExecuteOnce } from "../toolbox/once.js";
import { runDeps } from "./context.js";
import { localeOf, runOptions, withSettings, type AnswerParts, type AnswerState, type Computed } from "./pipeline.js";

/** What a take hands to {@link compute}: the only things in which a message, a decision and a task differ. */
export interface RunInput {
  /** The message the run answers (as its sender, in its chat): tool context, memory scope, budgets, grants. */
  message: IncomingMessage;
  /** The user turn's text (see {@link userTurnOf}). */
  userText: string;
  /** Content blocks before the text of the user turn (a message's files). */
  userContent?: ContentBlockParam[];
  /** Exactly-once execution of the calls that change data (the worker's ledger, or the approval store's). */
  executeOnce: ExecuteOnce;
  /** Takes file data out of messages that are kept (checkpoint, history, approval); default none. */
  strip?: (messages: MessageParam[]) => MessageParam[];
  /**
   * Where the run's history comes from: `"conversation"` reads it (with its summary) from the
   * history store, with the context-window rescue; a paused run (a decision) brings its own:
   * `messages` for a run resumed from a checkpoint, else `resume` continues it (`ApprovalFlow.resume`).
   */
  history: "conversation" | { messages: MessageParam[]; resume(deps: ResumeDeps): Promise<AgentOutcome> };
  /** A line the answer starts with (after the run, in the conversation's language), e.g. a task's header or a voice message's transcript. */
  lead?: () => string | undefined;
  /** What the log says when the run resumes from a checkpoint. */
  resuming: string;
}

/**
 * The user turn of `message`: its text, after the speaker's label in groups (`speakerLabel`).
 */
export function userTurnOf(message: IncomingMessage): string {
  return message.chatKind === "group" ? `${speakerLabel(message)} ${message.text}`.trimEnd() : message.text;
}

/**
 * The compute step (see the module comment) of the answer in `state`, with the take's `input`.
 *
 * @returns the answer (with the history read for *persist*), the paused run (an approval to ask),
 *   or a text said without the model (the request does not fit the context window even shortened).
 * @throws what the run throws (a transient failure retries the job; *fail* apologises for the rest),
 *   or when Redis is unreachable.
 */
export async function compute(parts: AnswerParts, state: AnswerState, input: RunInput): Promise<Computed> {
  const strip = input.strip ?? ((m: MessageParam[]) => m);
  // The history and the settings were read when the answer began, in one round trip (`readAtStart` of
  // `pipeline.ts`): a change of the settings counts from this message.
  let before =
    input.history === "conversation"
      ? await withSettings(
          parts,
          state,
          state.history ? Promise.resolve(state.history) : parts.history.read(state.conversation),
        )
      : await withSettings(parts, state, Promise.resolve(undefined));
  const { checkpoint } = state.restored;
  if (checkpoint) state.log.info({ turns: checkpoint.turns }, input.resuming);
  const deps = runDeps(parts, input.message, { ...runOptions(parts, state, strip), executeOnce: input.executeOnce });
  const run = (history: MessageParam[], resume: RunState | undefined) =>
    parts.runAgent(
      {
        history,
        userText: input.userText,
        ...(input.userContent ? { userContent: input.userContent } : {}),
        context: deps.context,
        ...(resume ? { resume } : {}),
      },
      deps,
    );
  const lead = () => input.lead?.();
  let outcome: AgentOutcome;
  if (input.history !== "conversation") {
    const own = input.history;
    outcome = checkpoint ? await run(own.messages, checkpoint) : await own.resume(deps);
  } else {
    try {
      outcome = await run(withSummary(before!), checkpoint);
    } catch (error) {
      if (!isContextWindowExceeded(error)) throw error;
      // The request did not fit: shorten the conversation (a compaction, or the oldest turns left
      // out of the request) and ask once more; a run saved before a write resumes from its checkpoint.
      state.live?.push({ type: "text_dropped" });
      const shorter = await shortenForRetry(parts, state, input.message, before!);
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
        return { kind: "said", text: withLead(lead(), localize(localeOf(parts, state), TOO_LONG_TEXT)) };
      }
    }
  }
  if (outcome.kind === "approval") {
    // No answer follows: the lead line goes with the prompt where the prompt cannot show it later.
    const paused = stripPaused(outcome, strip);
    const line = lead();
    return line !== undefined ? { ...paused, lead: line } : paused;
  }
  // The lead line starts the answer, also after a retry that shortened the conversation.
  return {
    ...outcome,
    text: withLead(lead(), outcome.text),
    body: outcome.text,
    messages: strip(outcome.messages),
    ...(before ? { before } : {}),
  };
}

/** `text` after `lead` and a blank line; `text` alone without a lead. */
function withLead(lead: string | undefined, text: string): string {
  return lead !== undefined ? `${lead}\n\n${text}` : text;
}

/** A paused run with `strip` applied to its messages (for saving the approval); the same outcome when nothing is stripped. */
function stripPaused(outcome: PausedOutcome, strip: (messages: MessageParam[]) => MessageParam[]): PausedOutcome {
  const messages = strip(outcome.run.messages);
  return messages === outcome.run.messages ? outcome : { ...outcome, run: { ...outcome.run, messages } };
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
