/**
 * The agent loop: call the model with the system prompt, the toolbox's schemas and the messages;
 * run every `tool_use` of the turn; answer them all in one user message of `tool_result` blocks;
 * repeat until the model answers or `MAX_TURNS` model calls were made.
 *
 * Dangerous tools never run here: the turn's safe calls run, and the run pauses with an
 * `approval` outcome (see `contract.ts`); {@link resumeAgent} continues it once the requester
 * has decided. Every message list this module returns is valid for the Messages API.
 *
 * Sources: Messages API https://docs.anthropic.com/en/api/messages ; stop reasons
 * https://docs.anthropic.com/en/api/handling-stop-reasons ; tool use
 * https://docs.anthropic.com/en/docs/build-with-claude/tool-use ; prompt caching
 * https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching .
 */
import Anthropic from "@anthropic-ai/sdk";
import { localize, MODEL_GONE_NOTICE, STOP_TEXT } from "../i18n.js";
import { redact } from "../log.js";
import { metrics } from "../metrics.js";
import { systemPrompt } from "../prompts.js";
import type { ToolContext, ToolImage } from "../toolbox/tool.js";
import type { ToolExecution } from "../toolbox/toolbox.js";
import { preview, type Tracer } from "../trace/tracer.js";
import {
  MODEL_RETRY_TIMING,
  type AgentDeps,
  type AgentOutcome,
  type AgentRequest,
  type ApprovalVerdict,
  type MessageParam,
  type ModelRetryTiming,
  MODEL_SILENT_LIMIT_MS,
  type ModelUsage,
  type PausedRun,
  type PendingCall,
  type RunState,
} from "./contract.js";
import { ModelUnavailableError, toModelError } from "./errors.js";
import { notRunText } from "./not-run.js";
import {
  answerOf,
  forHistory,
  isServerBlock,
  isServerError,
  offerTools,
  refusedServerTools,
  refusedTools,
  refuseTool,
} from "./server-blocks.js";
import { withSources } from "./sources.js";

type ContentBlockParam = Anthropic.Messages.ContentBlockParam;
type ToolResultBlockParam = Anthropic.Messages.ToolResultBlockParam;
type ToolUseBlock = Anthropic.Messages.ToolUseBlock;

/** Identical calls (same tool, same input) allowed per run; the next one is refused. */
export const MAX_IDENTICAL_CALLS = 2;

/** Largest output budget the loop raises `max_tokens` to after a cut-off `tool_use`, in tokens. */
export const MAX_OUTPUT_TOKENS = 64_000;

const EPHEMERAL = { type: "ephemeral" } as const;

/** What {@link resumeAgent} needs besides the saved run. */
export type ResumeDeps = AgentDeps & {
  /** The per-call context of the requester (rebuilt by the worker that resumes the run). */
  context: ToolContext;
  /**
   * Whether to call the model after the pending calls are answered. Default: true, except for a
   * `superseded` verdict (the user has moved on): the run is then closed with a short assistant
   * text so the next message is not delayed.
   */
  callModel?: boolean;
};

/** The state of the run being computed: a {@link RunState} with its history, output budget and texts for the person known. */
type LiveRun = RunState & {
  history: MessageParam[];
  maxTokens: number;
  shown: string[];
  /** The model that answers instead of the conversation's chosen one, which the API no longer serves. */
  fallbackModel?: string;
  /** After a Stop: whether the calls that change data, left to finish, did (`STOP_TEXT.finished` / `unfinished`). */
  stopNotes: string[];
};

/**
 * Answers one incoming message.
 *
 * @returns `answer` (final text and the run's messages, from the user turn to the last assistant
 *   turn; after a refusal `refused: true` and no messages) or `approval` (paused at a dangerous call; save `run` and ask about `call`).
 * @throws {ModelUnavailableError} when the SDK gave up (after its retries) or the API refused
 *   the request; `retryable` tells which. The message never contains the API key.
 */
export async function runAgent(request: AgentRequest, deps: AgentDeps): Promise<AgentOutcome> {
  const text = request.userText.trim() === "" ? "…" : request.userText;
  deps.tracer.event("user_input", {
    text: preview(redact(text)),
    user: request.context.userId,
    historyMessages: request.history.length,
    ...(request.resume ? { resumedAtTurn: request.resume.turns } : {}),
  });
  const resume = request.resume;
  const state: LiveRun = resume
    ? {
        history: request.history,
        messages: [...resume.messages],
        turns: resume.turns,
        callCounts: { ...resume.callCounts },
        maxTokens: resume.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS,
        shown: [...(resume.shown ?? [])],
        stopNotes: [],
      }
    : {
        history: request.history,
        messages: [{ role: "user", content: userContent(request, text) }],
        turns: 0,
        callCounts: {},
        maxTokens: deps.config.ANTHROPIC_MAX_TOKENS,
        shown: [],
        stopNotes: [],
      };
  if (resume) {
    // An earlier attempt stopped in this turn's calls: run them again (writes return their recorded result).
    const last = resume.messages[resume.messages.length - 1];
    const uses =
      last?.role === "assistant" && Array.isArray(last.content)
        ? last.content.filter((b): b is ToolUseBlock => b.type === "tool_use")
        : [];
    if (uses.length > 0) {
      const paused = await toolTurn(uses, resume.cutId, state, deps, request.context);
      if (paused) return paused;
    }
  }
  return continueRun(state, deps, request.context);
}

/**
 * Continues a run paused at a dangerous call, with the requester's verdict on its first
 * pending call:
 * - `approved`: the call runs (through `executeOnce` when given);
 * - `declined`: an `is_error` `tool_result` says the user declined;
 * - `expired` / `superseded`: this and every other pending call of the turn get an `is_error`
 *   `tool_result` saying the approval expired / the user moved on.
 *
 * When pending calls remain (several dangerous calls in one turn, after approved/declined), returns
 * another `approval` outcome for the next one. Before that, each remaining call that repeats one of
 * the turn already answered (same tool and input) gets that answer without running or asking, one
 * covered by a grant runs, and the next one to ask is checked again (`ToolBox.prepare`) against the
 * state the calls before it left: a call that can no longer succeed (its todo is gone) is answered
 * with the tool's reason, as in its first check, and the one after it is next. Otherwise the turn's `tool_result` blocks are sent
 * and the loop continues to an answer (or, with `callModel: false`, the run is closed with a short
 * localized assistant text). The returned `messages` are all messages of the run, from its user turn.
 *
 * @throws {ModelUnavailableError} as {@link runAgent}.
 */
export async function resumeAgent(run: PausedRun, verdict: ApprovalVerdict, deps: ResumeDeps): Promise<AgentOutcome> {
  const { context, tracer } = deps;
  const [first, ...rest] = run.pending;
  const results = [...run.results];
  const shown = [...(run.shown ?? [])];
  const closeAll = verdict === "expired" || verdict === "superseded";
  tracer.event("approval", { verdict, tool: first?.name, toolUseId: first?.toolUseId });
  const stopNotes: string[] = [];

  if (first) {
    if (verdict === "approved" && deps.stop?.aborted) {
      // Stopped before the approved call began: it is not run.
      results.push(toolResult(first.toolUseId, stoppedBeforeText(first.name), true));
    } else if (verdict === "approved") {
      const result = await runCall(first.toolUseId, first.name, first.input, deps, context, true, shown);
      noteIfStopped(deps, context, first.name, first.input, result, stopNotes);
      results.push(result);
    } else {
      results.push(
        toolResult(first.toolUseId, notRunText(first.name, verdict, deps.config.CONFIRM_TIMEOUT_SECONDS), true),
      );
    }
  }
  const remaining: PendingCall[] = [];
  if (closeAll)
    for (const call of rest)
      results.push(
        toolResult(call.toolUseId, notRunText(call.name, verdict, deps.config.CONFIRM_TIMEOUT_SECONDS), true),
      );
  else if (deps.stop?.aborted)
    for (const call of rest) results.push(toolResult(call.toolUseId, stoppedBeforeText(call.name), true));
  else {
    const answered = answeredCalls(deps, run.messages, results);
    for (const call of rest) {
      const signature = callSignature(call.name, call.input);
      const twin = answered.get(signature);
      if (twin) {
        // The same call as one of this turn already answered (decided, granted, found impossible): its answer holds.
        results.push(repeatedResult(call.toolUseId, call.name, twin, tracer));
        continue;
      }
      // A grant given meanwhile (e.g. "always allow" on the first call) covers later calls of that tool.
      const grant = await grantOf(deps, call.name);
      if (grant) {
        const result = await runGranted(call.toolUseId, call.name, call.input, grant, deps, context, shown);
        results.push(result);
        answered.set(signature, result);
        continue;
      }
      if (remaining.length === 0) {
        // Its turn to be asked: checked again against the state the calls decided before it left
        // (the todo it deletes may be gone), so nobody is asked to approve what can no longer succeed.
        const check = await deps.toolbox.prepare(call.name, call.input, context);
        if (!check.ok) {
          const result = refusedByPrecheck(tracer, call.name, call.toolUseId, check.content);
          results.push(result);
          answered.set(signature, result);
          continue;
        }
      }
      remaining.push(call);
    }
  }

  if (remaining.length > 0) {
    const next: PausedRun = { ...run, results, pending: remaining, shown };
    tracer.event("approval", {
      tool: remaining[0]!.name,
      toolUseId: remaining[0]!.toolUseId,
      input: preview(redact(JSON.stringify(remaining[0]!.input))),
    });
    return { kind: "approval", run: next, call: remaining[0]! };
  }

  const state: LiveRun = {
    history: run.history,
    messages: [...run.messages, { role: "user", content: inToolUseOrder(run.messages, results) }],
    turns: run.turns,
    callCounts: { ...run.callCounts },
    maxTokens: run.maxTokens ?? deps.config.ANTHROPIC_MAX_TOKENS,
    shown,
    stopNotes,
  };
  if (!(deps.callModel ?? verdict !== "superseded")) {
    const text = closingText(verdict, context);
    state.messages.push({ role: "assistant", content: [{ type: "text", text }] });
    tracer.event("final_answer", { text: preview(text), turns: state.turns, modelCalled: false });
    return { kind: "answer", text: withShown(text, shown), messages: state.messages };
  }
  return continueRun(state, deps, context);
}

/** The loop proper: model calls until an answer, a pause for approval, or the turn limit. */
async function continueRun(state: LiveRun, deps: AgentDeps, context: ToolContext): Promise<AgentOutcome> {
  const maxTurns = deps.config.MAX_TURNS;
  // The scope's memory as it is when the run (or its resumption) starts: the same block in every
  // call of the run, so the run's turns stay cached; a write of this run is in its tool results.
  const memory = deps.memory ? await deps.memory() : undefined;
  let resuming = false; // the previous call stopped with pause_turn
  while (state.turns < maxTurns) {
    if (deps.stop?.aborted) return stopRun(state, deps, context);
    const stopped = await deps.beforeModelCall?.();
    if (stopped !== undefined) {
      context.log.info({ turns: state.turns }, "agent run stopped before a model call: budget spent");
      if (state.messages.length === 1) {
        // Nothing happened yet (the message's first call): nothing of it is kept, as when the gate refuses a message.
        deps.tracer.event("final_answer", { text: preview(stopped), turns: state.turns, limit: "budget" });
        return { kind: "answer", text: stopped, messages: [] };
      }
      return finish(state, deps, stopped, [{ type: "text", text: stopped }], { limit: "budget" });
    }
    let response: Anthropic.Messages.Message;
    try {
      response = await callModel(state, deps, context, memory);
    } catch (error) {
      if (error instanceof StreamStopped) return stopRun(state, deps, context, error.partial);
      throw error;
    }
    const content = passBack(response.content);
    // After a pause_turn the model goes on with the same turn: its blocks join the paused message.
    const previous = state.messages[state.messages.length - 1];
    const joined =
      resuming && previous?.role === "assistant" && Array.isArray(previous.content)
        ? [...previous.content, ...content]
        : undefined;
    if (joined) state.messages[state.messages.length - 1] = { role: "assistant", content: joined };
    else if (content.length > 0) state.messages.push({ role: "assistant", content });
    const turn = joined ?? content;
    const stop = response.stop_reason;
    resuming = stop === "pause_turn";

    if (stop === "refusal") {
      // The whole run is dropped (the caller stores none of it); the trace keeps the refusal.
      const text = localize(context.locale, {
        "zh-TW": "抱歉，這個請求我無法協助。可以換個方式說明你想做的事嗎？",
        en: "Sorry, I can't help with that request. Could you describe what you need in another way?",
      });
      deps.tracer.event("final_answer", { text: preview(text), turns: state.turns, refused: true });
      return { kind: "answer", text, messages: [], refused: true };
    }

    if (stop === "model_context_window_exceeded") {
      // The context filled up while the model wrote: never delivered as a complete answer; the
      // worker shortens the conversation and asks again (https://docs.anthropic.com/en/api/handling-stop-reasons).
      deps.tracer.event("error", { where: "model_call", error: "context_window", stopReason: stop });
      throw new ModelUnavailableError(
        "context_window",
        "the model stopped with model_context_window_exceeded: the conversation does not fit the context window",
      );
    }

    const toolUses = response.content.filter((b): b is ToolUseBlock => b.type === "tool_use");
    if (toolUses.length > 0) {
      // With `max_tokens`, a final tool_use block was cut off: its input is incomplete, never run it.
      const last = response.content[response.content.length - 1];
      const cutId = stop === "max_tokens" && last?.type === "tool_use" ? last.id : undefined;
      if (cutId) state.maxTokens = Math.min(state.maxTokens * 2, MAX_OUTPUT_TOKENS);
      const paused = await toolTurn(toolUses, cutId, state, deps, context);
      if (paused) return paused;
      continue;
    }

    // A long server tool (web search) paused the turn: send it back as it is; the model resumes it.
    if (stop === "pause_turn") continue;

    // The answer is the text of the last call (after its last server block); a call that only
    // finished a paused turn's search has none, and then it is the text after the turn's last one.
    // Cited web pages follow it as numbered links.
    const text = withSources(answerOf(content, turn), context.locale);
    if (stop === "max_tokens") {
      const note = localize(context.locale, {
        "zh-TW": "（回答太長，已被截斷。）",
        en: "(The answer was too long and was cut off.)",
      });
      return finish(state, deps, text ? `${text}\n\n${note}` : note, text ? undefined : [{ type: "text", text: note }]);
    }
    if (stop !== "end_turn" && stop !== "stop_sequence") {
      context.log.warn({ stopReason: stop }, `model stopped with an unexpected stop_reason ${String(stop)}`);
    }
    if (text) return finish(state, deps, text);
    const fallback = localize(context.locale, {
      "zh-TW": "抱歉，我這次沒有產生回答。請換個方式再問一次。",
      en: "Sorry, I did not come up with an answer this time. Please try asking another way.",
    });
    return finish(state, deps, fallback, [{ type: "text", text: fallback }]);
  }

  const text = localize(context.locale, {
    "zh-TW": "抱歉，這個任務需要太多步驟，我先停在這裡。可以把問題拆小一點再問我嗎？",
    en: "Sorry, this task took too many steps, so I stopped here. Could you split it into smaller questions?",
  });
  context.log.warn({ turns: state.turns }, `agent run stopped after ${state.turns} model calls (MAX_TURNS)`);
  return finish(state, deps, text, [{ type: "text", text }], { limit: "max_turns" });
}

/**
 * Ends the run. When `append` is given, it becomes a final assistant message, or joins the last
 * message when that is the assistant's (a paused turn, a response without text); the model's own
 * answer is already in `state.messages`. The outcome's messages are the run's as the history
 * keeps them (`forHistory`: without web search results and citations).
 */
function finish(
  state: LiveRun,
  deps: AgentDeps,
  text: string,
  append?: ContentBlockParam[],
  extra: Record<string, unknown> = {},
): AgentOutcome {
  const last = state.messages[state.messages.length - 1];
  // After a paused turn (pause_turn) the last message is the assistant's: the text joins it.
  if (append && last?.role === "assistant")
    state.messages[state.messages.length - 1] = {
      role: "assistant",
      content: [
        ...(typeof last.content === "string" ? [{ type: "text" as const, text: last.content }] : last.content),
        ...append,
      ],
    };
  else if (append) state.messages.push({ role: "assistant", content: append });
  deps.tracer.event("final_answer", { text: preview(text), turns: state.turns, ...extra });
  return {
    kind: "answer",
    text: withShown(text, state.shown),
    messages: forHistory(state.messages),
    ...(extra.stopped === true ? { stopped: true } : {}),
  };
}

/**
 * Thrown inside a model call when the run's Stop (`AgentDeps.stop`) aborted it: `partial` is the
 * message as streamed so far (the SDK's snapshot), undefined when nothing had arrived.
 */
class StreamStopped extends Error {
  constructor(readonly partial: Anthropic.Messages.Message | undefined) {
    super("the person stopped the answer");
    this.name = "StreamStopped";
  }
}

/**
 * Ends a stopped run (`AgentDeps.stop`): the text the model had streamed in the stopped call
 * (`partial`; none when it had begun a tool call, whose lead-in text was no longer shown, or when
 * the stop came between calls), then the stop mark and whether a call that changes data, left to
 * finish, did. The history keeps exactly that as the run's last assistant turn; every `tool_use`
 * of the run is answered already (see `runTurn`).
 */
function stopRun(
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
  partial?: Anthropic.Messages.Message,
): AgentOutcome {
  const blocks = partial?.content ?? [];
  const written = blocks.every((b) => b.type === "text") ? textOf(blocks) : "";
  const mark = [localize(context.locale, STOP_TEXT.mark), ...state.stopNotes].join("\n");
  const text = written ? `${written}\n\n${mark}` : mark;
  context.log.info({ turns: state.turns, written: written.length }, "the answer was stopped by the person");
  deps.tracer.event("error", { where: "run", error: "stopped", turns: state.turns, written: written.length });
  const append: ContentBlockParam[] = [{ type: "text", text: mark }];
  if (written) append.unshift({ type: "text", text: written });
  return finish(state, deps, text, append, { stopped: true });
}

/** The `tool_result` of a call the person's Stop came before: it was not run. */
function stoppedBeforeText(name: string): string {
  return `The user pressed Stop before ${name} ran, so it was not run. Do not assume it happened; run it only if the user asks again.`;
}

/** The `tool_result` of a read-only call still running when the person pressed Stop: interrupted, result unknown. */
function stoppedDuringText(name: string): string {
  return `The user pressed Stop while ${name} was running: it was interrupted and its result is unknown. Run it again only if the user asks.`;
}

/**
 * After a call that changes data ran to its end while the run was stopped meanwhile: notes whether it
 * finished (`STOP_TEXT.finished` / `unfinished`, from its `tool_result`), for the stopped answer.
 */
function noteIfStopped(
  deps: AgentDeps,
  context: ToolContext,
  name: string,
  input: unknown,
  result: ToolResultBlockParam,
  notes: string[],
): void {
  if (!deps.stop?.aborted) return;
  const activity = deps.toolbox.activity(name, input, context.locale);
  notes.push(localize(context.locale, result.is_error ? STOP_TEXT.unfinished : STOP_TEXT.finished, { activity }));
}

/**
 * The answer followed by the texts the run's tools returned for the person only (see
 * {@link RunState.shown}), each after a blank line; the history keeps the model's answer alone.
 */
function withShown(text: string, shown: readonly string[]): string {
  return shown.length === 0 ? text : [text, ...shown].join("\n\n");
}

/**
 * One model call with the cached prefix; counts the turn and traces usage. When the API refuses a
 * server tool of the request (web search not enabled for the organization, a model without tool
 * search), the call is made again without it, that tool stays off for this client and model
 * until restart (`refuseTool`), and one warning names the cause.
 *
 * Every call is read as a stream, shown live or not (see {@link streamModel}): a call that sends
 * nothing for `STREAM_IDLE_SECONDS` counts as a lost connection, with or without `STREAMING`.
 *
 * With `deps.retryUntil`, a retryable failure (after the SDK's own retries; not an API that cannot be
 * reached at all, see {@link unreachable}) is tried again after
 * {@link modelRetryDelayMs} while the next attempt starts before that time (a streamed run is told
 * with a `retry` event); then, or when `context.signal` aborts a wait, the last failure is thrown
 * `exhausted`. A call that never got one byte of an answer (every attempt silent) is given up after
 * `silentLimitMs` (default `MODEL_SILENT_LIMIT_MS`, 50 s): the last attempt's idle bound is cut to
 * end there. After `busyNoticeMs` (`deps.modelRetry`, default {@link MODEL_RETRY_TIMING}) of
 * failures, or of silence before the first byte, `deps.onModelBusy` is called once.
 */
async function callModel(
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
  memory: string | undefined,
): Promise<Anthropic.Messages.Message> {
  const firstTry = Date.now();
  const timing = deps.modelRetry ?? MODEL_RETRY_TIMING;
  const idleMs = deps.config.STREAM_IDLE_SECONDS * 1000;
  const silentUntil = firstTry + (timing.silentLimitMs ?? MODEL_SILENT_LIMIT_MS);
  let failures = 0;
  let last: ModelUnavailableError | undefined;
  let busy: NodeJS.Timeout | undefined;
  let noticed = false;
  /** The current attempt is receiving its answer (a first event came). */
  let receiving = false;
  /** Some attempt got an answer of some kind (an event, or an HTTP error): the call is not silent. */
  let heard = false;
  // The busy notice: after busyNoticeMs of failures or of silence, not while an answer streams in.
  const armBusy = () => {
    if (noticed || busy || !deps.onModelBusy) return;
    busy = setTimeout(
      () => {
        busy = undefined;
        if (receiving) return;
        noticed = true;
        deps.onModelBusy?.();
      },
      Math.max(0, firstTry + timing.busyNoticeMs - Date.now()),
    );
  };
  const onFirstByte = () => {
    receiving = true;
    heard = true;
  };
  armBusy();
  try {
    for (;;) {
      receiving = false;
      const bound = heard ? idleMs : Math.max(1, Math.min(idleMs, silentUntil - Date.now()));
      try {
        return await callModelOnce(state, deps, context, memory, { idleMs: bound, onFirstByte });
      } catch (error) {
        receiving = false;
        if (error instanceof StreamStopped || deps.stop?.aborted)
          throw error instanceof StreamStopped ? error : new StreamStopped(undefined);
        if (!(error instanceof ModelUnavailableError && error.silent)) heard = true;
        const { retryUntil } = deps;
        // The deadline cut a repeat short: what the user must hear is why it was repeated.
        if (last && error instanceof ModelUnavailableError && error.reason === "aborted") throw last.asExhausted();
        if (
          !(error instanceof ModelUnavailableError) ||
          !error.retryable ||
          retryUntil === undefined ||
          unreachable(error)
        )
          throw error;
        last = error;
        const wait = modelRetryDelayMs(failures, timing);
        failures += 1;
        if (Date.now() + wait > retryUntil) throw error.asExhausted();
        // A model that never sent a byte is not asked past its silent limit (one more second at least).
        if (!heard && Date.now() + wait + 1000 > silentUntil) throw error.asExhausted();
        context.log.warn(
          { reason: error.reason, status: error.status, failures, waitMs: Math.round(wait), silent: error.silent },
          `the model call failed (${error.reason}); trying again in ${Math.round(wait)} ms`,
        );
        armBusy();
        deps.onEvent?.({ type: "retry", turn: state.turns });
        if (!(await pause(wait, runSignal(deps, context)))) {
          if (deps.stop?.aborted) throw new StreamStopped(undefined);
          throw error.asExhausted();
        }
        state.turns -= 1; // the same turn, asked again
      }
    }
  } finally {
    clearTimeout(busy);
  }
}

/**
 * True for a failure the loop does not repeat until the deadline: the Messages API could not be
 * reached at all (refused connection, unknown host, the client's timeout: usually a wrong
 * `ANTHROPIC_BASE_URL` or network, which the SDK has retried already and the job's own retries
 * try again), or the API said not to retry (`x-should-retry: false`, which the SDK honours too).
 */
function unreachable(error: ModelUnavailableError): boolean {
  const cause = error.cause;
  if (error.reason === "connection" && cause instanceof Anthropic.APIConnectionError) return true;
  return cause instanceof Anthropic.APIError && cause.headers?.get("x-should-retry") === "false";
}

/**
 * The wait before attempt `failures + 1` of a failing model call, in ms: `timing.firstWaitMs`
 * doubled per failure up to `timing.longestWaitMs` (default {@link MODEL_RETRY_TIMING}: 2 s up to
 * 10 s), of which a random half ("equal jitter",
 * https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/), so many workers that
 * met the same overload do not come back at the same moment.
 */
export function modelRetryDelayMs(
  failures: number,
  timing: Pick<ModelRetryTiming, "firstWaitMs" | "longestWaitMs"> = MODEL_RETRY_TIMING,
): number {
  const ceiling = Math.min(timing.longestWaitMs, timing.firstWaitMs * 2 ** failures);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** The signal a run's waits and read-only tools heed: the answer's deadline, and the person's Stop when given. */
function runSignal(deps: AgentDeps, context: ToolContext): AbortSignal {
  return deps.stop ? AbortSignal.any([context.signal, deps.stop]) : context.signal;
}

/**
 * The usage of a model call stopped mid-stream, or undefined when nothing had arrived: the input
 * tokens as `message_start` reported them, the output tokens {@link estimateOutputTokens} of the
 * text and tool input received (the API reports output tokens in its last event, which a stopped
 * stream never gets; it bills what was generated).
 */
function stoppedUsage(partial: Anthropic.Messages.Message | undefined): ModelUsage | undefined {
  if (!partial) return undefined;
  const written = partial.content
    .map((b) => (b.type === "text" ? b.text : "input" in b ? JSON.stringify(b.input ?? {}) : ""))
    .join("");
  return {
    input_tokens: partial.usage.input_tokens,
    output_tokens: Math.max(partial.usage.output_tokens, estimateOutputTokens(written)),
    cache_creation_input_tokens: partial.usage.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: partial.usage.cache_read_input_tokens ?? 0,
  };
}

/**
 * A rough count of the tokens of `text` the model wrote: one per CJK (or other non-Latin)
 * character, one per 4 other characters, at least 1. Used only for a stream stopped before the
 * API said its count.
 */
export function estimateOutputTokens(text: string): number {
  let wide = 0;
  let narrow = 0;
  for (const ch of text) {
    if (ch.codePointAt(0)! > 0x2e7f) wide += 1;
    else narrow += 1;
  }
  return Math.max(1, wide + Math.ceil(narrow / 4));
}

/** Waits `ms`; resolves false at once when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * One model call (and its repeats without a refused server tool): see {@link callModel}.
 * `bound.idleMs` is the call's idle bound; `bound.onFirstByte` is called at its first event.
 */
async function callModelOnce(
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
  memory: string | undefined,
  bound: { idleMs: number; onFirstByte: () => void },
): Promise<Anthropic.Messages.Message> {
  const { config, tracer, toolbox, client } = deps;
  state.turns += 1;
  for (;;) {
    const model = state.fallbackModel ?? deps.model ?? config.ANTHROPIC_MODEL;
    // Prefix order is tools, then system, then messages: one breakpoint on the last loaded tool,
    // one on the system prompt, and one on the last message so the next call of this run reads it back.
    const offered = offerTools(
      toolbox,
      [...state.history, ...withMemory(state.messages, memory)],
      new Set(refusedTools(client, model).keys()),
    );
    const offersMemory = offered.servers.some((t) => t.type.startsWith("memory_"));
    const { tools } = offered;
    const system: Anthropic.Messages.TextBlockParam[] = [
      {
        type: "text",
        text: systemPrompt({
          locale: context.locale,
          timezone: context.timezone,
          chatKind: context.chatKind,
          toolSearch: offered.servers.some((t) => t.name.startsWith("tool_search_tool_")),
          webSearch: offered.servers.some((t) => t.name === "web_search" || t.name === "web_fetch"),
          ...(deps.persona ? { persona: deps.persona } : {}),
          memory: offersMemory,
        }),
        cache_control: EPHEMERAL,
      },
    ];
    const messages = withLastBreakpoint(offered.messages);
    tracer.event("model_call", {
      model,
      turn: state.turns,
      messages: messages.length,
      tools: tools.length,
      maxTokens: state.maxTokens,
    });
    const started = performance.now();
    let response: Anthropic.Messages.Message;
    const params = { model, max_tokens: state.maxTokens, system, messages, ...(tools.length > 0 ? { tools } : {}) };
    try {
      // Read as a stream even when not shown live: the idle bound holds for every call.
      response = await streamModel(
        deps.client,
        params,
        context.signal,
        deps.onEvent ?? ignoreEvent,
        state.turns,
        serverActivity(deps, context),
        bound.idleMs,
        bound.onFirstByte,
        undefined,
        deps.stop,
      );
    } catch (error) {
      if (error instanceof StreamStopped) {
        // Tokens were spent up to the stop: the input as the API counted it, the output estimated from what arrived.
        const usage = stoppedUsage(error.partial);
        if (usage) {
          deps.onUsage?.(usage);
          metrics.modelUsage(usage);
        }
        tracer.event("model_response", {
          stopReason: "stopped_by_user",
          text: preview(redact(textOf(error.partial?.content ?? []))),
          ...(usage ? { usage } : {}),
          durationMs: Math.round(performance.now() - started),
        });
        throw error;
      }
      const refused = refusedServerTools(error, offered.servers);
      if (refused.names.length > 0) {
        for (const name of refused.names) {
          const first = !refusedTools(client, model).has(name);
          refuseTool(client, model, name, refused.reason);
          if (first)
            context.log.warn(
              { tool: name, model, reason: redact(refused.reason) },
              `${name} is off in this worker until restart: the API refused it for ${model} (${redact(refused.reason)}); the request is sent again without it`,
            );
        }
        tracer.event("error", {
          where: "model_call",
          error: "server_tool_refused",
          tools: refused.names,
          message: preview(redact(refused.reason)),
        });
        continue;
      }
      const mapped = toModelError(error);
      if (mapped instanceof ModelUnavailableError && mapped.missingModel !== undefined) {
        if (modelGone(state, deps, context, model, mapped)) continue;
      }
      const err = mapped instanceof Error ? mapped : new Error(String(mapped));
      tracer.event("error", {
        where: "model_call",
        error: err.name,
        message: preview(redact(err.message)),
        ...(mapped instanceof ModelUnavailableError
          ? { reason: mapped.reason, retryable: mapped.retryable, status: mapped.status }
          : {}),
      });
      throw mapped;
    }
    const server = response.usage.server_tool_use;
    const usage: ModelUsage = {
      input_tokens: response.usage.input_tokens,
      output_tokens: response.usage.output_tokens,
      cache_creation_input_tokens: response.usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: response.usage.cache_read_input_tokens ?? 0,
      ...(server
        ? { web_search_requests: server.web_search_requests ?? 0, web_fetch_requests: server.web_fetch_requests ?? 0 }
        : {}),
    };
    const durationMs = Math.round(performance.now() - started);
    deps.onUsage?.(usage);
    metrics.modelUsage(usage);
    tracer.event("model_response", {
      stopReason: response.stop_reason,
      text: preview(redact(textOf(response.content))),
      toolUses: response.content.filter((b) => b.type === "tool_use").map((b) => (b as ToolUseBlock).name),
      ...(response.content.some(isServerBlock)
        ? { serverToolUses: response.content.filter((b) => b.type === "server_tool_use").map((b) => b.name) }
        : {}),
      usage,
      durationMs,
    });
    context.log.debug({ turn: state.turns, stopReason: response.stop_reason, usage, durationMs }, "model response");
    return response;
  }
}

/**
 * A 404 `not_found_error` for the request's model (`error.missingModel`). For a conversation's
 * chosen model other than `ANTHROPIC_MODEL`: logs one error naming the model as the cause, falls
 * back to `ANTHROPIC_MODEL` for the rest of the run (`state.fallbackModel`), tells the people after
 * the answer ({@link MODEL_GONE_NOTICE} in the conversation's language, not kept in history) and
 * calls `deps.onModelGone` (the worker keeps the fallback for the conversation, so it is told once);
 * returns true: ask again. For `ANTHROPIC_MODEL` itself: logs one error naming `ANTHROPIC_MODEL`
 * and returns false (the failure stands: the user gets the configuration apology).
 */
function modelGone(
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
  model: string,
  error: ModelUnavailableError,
): boolean {
  const fallback = deps.config.ANTHROPIC_MODEL;
  if (model === fallback || state.fallbackModel !== undefined) {
    context.log.error(
      { model },
      `ANTHROPIC_MODEL (${model}) is not served by the Messages API (404 not_found_error): set ANTHROPIC_MODEL to a current model id`,
    );
    return false;
  }
  state.fallbackModel = fallback;
  context.log.error(
    { model, fallback, named: error.missingModel || undefined },
    `the model ${model} chosen for this conversation is not served by the Messages API (404 not_found_error); ` +
      `the conversation falls back to ANTHROPIC_MODEL (${fallback})`,
  );
  deps.tracer.event("error", { where: "model_call", error: "model_not_found", model, fallback });
  state.shown.push(localize(context.locale, MODEL_GONE_NOTICE, { gone: model, now: fallback }));
  try {
    deps.onModelGone?.(model, fallback);
  } catch (err) {
    context.log.warn({ err }, "could not keep the fallback model for the conversation");
  }
  return true;
}

/**
 * The status line of a server tool's call in a streamed answer: its `activity` and icon from the
 * toolbox (web search: `🔎 搜尋：…`); undefined for a server tool without a status line (the
 * tool search tool, which only finds tools).
 */
function serverActivity(
  deps: AgentDeps,
  context: ToolContext,
): (name: string, input: unknown) => { activity: string; icon: string } | undefined {
  return (name, input) => {
    const tool = deps.toolbox.get(name);
    if (!tool?.server) return undefined;
    return { activity: deps.toolbox.activity(name, input, context.locale), icon: tool.server.icon };
  };
}

/** The `onEvent` of a call that is not shown live. */
function ignoreEvent(): void {}

/**
 * One model call read as a stream without showing it (`messages.stream`, see {@link streamModel}):
 * a call that sends nothing for `idleMs` (no first byte, or nothing more after the last event) is
 * given up as a lost connection, where `messages.create` would wait for the client's timeout
 * (120 s) with no sign of life. For requests outside the agent loop (the compaction's summary).
 *
 * @param options.signal - aborts the call (the SDK's `APIUserAbortError`).
 * @param options.idleMs - the idle bound, ms (`STREAM_IDLE_SECONDS` * 1000).
 * @param options.timeoutMs - the whole call's limit, ms (the SDK's `timeout`); default the client's.
 * @throws as {@link streamModel}: a silent call throws a retryable `ModelUnavailableError`
 *   (`connection`, `silent`); anything else what the SDK throws (map it with `toModelError`).
 */
export function quietModelCall(
  client: Anthropic,
  params: Anthropic.Messages.MessageCreateParamsNonStreaming,
  options: { signal?: AbortSignal; idleMs: number; timeoutMs?: number },
): Promise<Anthropic.Messages.Message> {
  return streamModel(
    client,
    params,
    options.signal ?? new AbortController().signal,
    ignoreEvent,
    0,
    () => undefined,
    options.idleMs,
    () => undefined,
    options.timeoutMs,
  );
}

/**
 * One streamed model call (`messages.stream`, server-sent events): reports `model_call`, each
 * text delta, the start of each `tool_use` and `server_tool_use` block, and each server tool's
 * run (`tool_start` / `tool_end`, with `activityOf`'s status line) through `onEvent`, and resolves with the
 * accumulated message, the same object `messages.create` would have returned (tool inputs parsed
 * from their `input_json_delta` pieces, `usage` from `message_delta`).
 *
 * A call that stays silent for `idleMs` (no response headers and no event yet, or no event since
 * the last one: the SDK does not pass `ping` events on) is aborted as a lost connection.
 * `onFirstByte` is called at the call's first event; `timeoutMs` is the SDK's `timeout` of the
 * request (default the client's).
 *
 * @throws what the SDK throws: an `APIError` for an HTTP error or an `error` event mid-stream
 *   (status undefined, `error.error.type` e.g. `overloaded_error`), a connection error when the
 *   response breaks off; the caller maps it with `toModelError`. A silent stream throws a
 *   retryable {@link ModelUnavailableError} (`connection`).
 */
async function streamModel(
  client: Anthropic,
  params: Anthropic.Messages.MessageCreateParamsNonStreaming,
  signal: AbortSignal,
  onEvent: NonNullable<AgentDeps["onEvent"]>,
  turn: number,
  activityOf: (name: string, input: unknown) => { activity: string; icon: string } | undefined,
  idleMs: number,
  onFirstByte: () => void,
  timeoutMs?: number,
  stop?: AbortSignal,
): Promise<Anthropic.Messages.Message> {
  onEvent({ type: "model_call", turn });
  if (stop?.aborted) throw new StreamStopped(undefined);
  const stream = client.messages.stream(params, {
    signal,
    ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
  });
  // The person's Stop aborts the stream as the deadline's signal does (the SDK aborts its own
  // controller either way); one listener, removed when the call ends, instead of an
  // `AbortSignal.any` per call (its weak references cost every answer of the worker CPU and GC).
  const onStop = () => stream.abort();
  stop?.addEventListener("abort", onStop);
  // What has arrived so far: a stopped call keeps it.
  let latest: Anthropic.Messages.Message | undefined;
  // Silence before the first event or between two counts as a lost connection (STREAM_IDLE_SECONDS).
  let idle: NodeJS.Timeout | undefined;
  let silent = false;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      silent = true;
      stream.abort();
    }, idleMs);
  };
  arm();
  stream.on("connect", arm);
  stream.on("text", (delta) => onEvent({ type: "text", text: delta }));
  // A server tool's call is reported once its input is complete (its block stops) and ends when its result block starts.
  const shown = new Set<string>();
  let first = true;
  stream.on("streamEvent", (event, snapshot) => {
    arm();
    latest = snapshot;
    if (first) {
      first = false;
      onFirstByte();
    }
    if (event.type === "content_block_start") {
      const block = event.content_block;
      if (block.type === "tool_use" || block.type === "server_tool_use")
        onEvent({ type: "tool_use", name: block.name });
      else if (isServerBlock(block) && "tool_use_id" in block && shown.delete(block.tool_use_id))
        onEvent({ type: "tool_end", toolUseId: block.tool_use_id, ok: !isServerError(block) });
    } else if (event.type === "content_block_stop") {
      const block = snapshot.content[event.index];
      if (block?.type !== "server_tool_use") return;
      const status = activityOf(block.name, block.input);
      if (!status) return;
      shown.add(block.id);
      onEvent({
        type: "tool_start",
        toolUseId: block.id,
        name: block.name,
        activity: status.activity,
        icon: status.icon,
      });
    }
  });
  try {
    return await stream.finalMessage();
  } catch (error) {
    if (stop?.aborted && !signal.aborted) throw new StreamStopped(latest);
    if (silent && !signal.aborted) {
      throw new ModelUnavailableError(
        "connection",
        `the model's stream sent nothing for ${idleMs / 1000} s (STREAM_IDLE_SECONDS); the connection counts as lost`,
        { cause: error, silent: true },
      );
    }
    // A response that breaks off mid-stream (reset socket, truncated body) is a connection failure.
    if (error instanceof Anthropic.APIError || error instanceof Anthropic.APIUserAbortError || signal.aborted)
      throw error;
    throw new ModelUnavailableError(
      "connection",
      `the model's stream broke off: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    clearTimeout(idle);
    stop?.removeEventListener("abort", onStop);
  }
}

/**
 * Answers the tool calls of the run's last assistant turn: runs them, and either appends the
 * `tool_result` message (returns undefined: the loop goes on) or returns the `approval` outcome
 * when a dangerous call waits. When a call of the turn changes data, the run is saved first
 * (`deps.checkpoint`), so a retried job resumes here instead of asking the model again.
 */
async function toolTurn(
  toolUses: ToolUseBlock[],
  cutId: string | undefined,
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
): Promise<AgentOutcome | undefined> {
  // Dangerous calls covered by the requester's "always allow" grant run in this turn, like writes.
  // One lookup per tool name, however many calls of it the turn has.
  const lookups = new Map<string, Promise<{ expiresAt: number } | undefined>>();
  const granted = new Map<string, { expiresAt: number }>();
  for (const use of toolUses) {
    if (use.id === cutId) continue;
    if (!lookups.has(use.name)) lookups.set(use.name, grantOf(deps, use.name));
    const grant = await lookups.get(use.name);
    if (grant) granted.set(use.id, grant);
  }
  if (deps.checkpoint && toolUses.some((u) => u.id !== cutId && (isWrite(deps, u.name) || granted.has(u.id)))) {
    const checkpoint: RunState = {
      messages: state.messages,
      turns: state.turns,
      callCounts: { ...state.callCounts },
      maxTokens: state.maxTokens,
      ...(cutId ? { cutId } : {}),
      ...(state.shown.length > 0 ? { shown: [...state.shown] } : {}),
    };
    await deps.checkpoint(checkpoint);
  }
  const { results, pending } = await runTurn(toolUses, cutId, state, deps, context, granted);
  if (pending.length > 0) {
    const run: PausedRun = { ...state, results, pending };
    const call = pending[0]!;
    deps.tracer.event("approval", {
      tool: call.name,
      toolUseId: call.toolUseId,
      input: preview(redact(JSON.stringify(call.input))),
      pending: pending.length,
    });
    return { kind: "approval", run, call };
  }
  state.messages.push({ role: "user", content: results });
  return undefined;
}

/** True when `name` is a tool that may change data and runs straight away (not read-only, not dangerous). */
function isWrite(deps: AgentDeps, name: string): boolean {
  const tool = deps.toolbox.get(name);
  return tool !== undefined && !tool.readOnly && !tool.dangerous;
}

/** Runs the safe calls of one turn in order; dangerous ones are returned as pending. */
async function runTurn(
  toolUses: ToolUseBlock[],
  cutId: string | undefined,
  state: LiveRun,
  deps: AgentDeps,
  context: ToolContext,
  granted: ReadonlyMap<string, { expiresAt: number }>,
): Promise<{ results: ToolResultBlockParam[]; pending: PendingCall[] }> {
  const { toolbox, tracer } = deps;
  const results: ToolResultBlockParam[] = [];
  const pending: PendingCall[] = [];
  // The dangerous calls of the turn answered so far, by signature (see repeatedResult).
  const answered = new Map<string, ToolResultBlockParam>();
  for (const use of toolUses) {
    if (deps.stop?.aborted) {
      // The person pressed Stop: the calls not begun are answered without running (no approval is asked).
      const content = stoppedBeforeText(use.name);
      tracer.event("tool_result", { tool: use.name, toolUseId: use.id, ok: false, refused: "stopped" });
      results.push(toolResult(use.id, content, true));
      continue;
    }
    if (use.id === cutId) {
      const content =
        `Your call to ${use.name} was cut off by the output token limit, so its input is ` +
        `incomplete and it was not run. Call it again with a shorter input, or answer without it.`;
      tracer.event("tool_result", {
        tool: use.name,
        toolUseId: use.id,
        ok: false,
        refused: "truncated",
        preview: preview(content),
      });
      results.push(toolResult(use.id, content, true));
      continue;
    }
    const signature = callSignature(use.name, use.input);
    const count = (state.callCounts[signature] ?? 0) + 1;
    state.callCounts[signature] = count;
    if (count > MAX_IDENTICAL_CALLS) {
      const content =
        `This exact call (${use.name} with the same input) was already made ${count - 1} times in ` +
        `this conversation turn; calling it again will not change the result, so it was not run. ` +
        `Try a different approach, or tell the user what is blocking you.`;
      tracer.event("tool_result", {
        tool: use.name,
        toolUseId: use.id,
        ok: false,
        refused: "repeated",
        preview: preview(content),
      });
      results.push(toolResult(use.id, content, true));
      continue;
    }
    if (toolbox.get(use.name)?.dangerous) {
      const twin = answered.get(signature);
      if (twin) {
        results.push(repeatedResult(use.id, use.name, twin, tracer));
        continue;
      }
      // A call that cannot succeed (bad input, or `describe` says e.g. "no todo #7") is answered
      // now: nobody is asked to approve something that would fail anyway.
      const check = await toolbox.prepare(use.name, use.input, context);
      if (!check.ok) {
        const result = refusedByPrecheck(tracer, use.name, use.id, check.content);
        results.push(result);
        answered.set(signature, result);
        continue;
      }
      const grant = granted.get(use.id);
      if (grant) {
        const result = await runGranted(use.id, use.name, use.input, grant, deps, context, state.shown);
        noteIfStopped(deps, context, use.name, use.input, result, state.stopNotes);
        results.push(result);
        answered.set(signature, result);
      } else pending.push({ toolUseId: use.id, name: use.name, input: isRecord(use.input) ? use.input : {} });
      continue;
    }
    const write = isWrite(deps, use.name);
    const result = await runCall(use.id, use.name, use.input, deps, context, write, state.shown);
    if (write) noteIfStopped(deps, context, use.name, use.input, result, state.stopNotes);
    results.push(result);
  }
  return { results, pending };
}

/**
 * The dangerous calls of a paused turn (the `tool_use` blocks of the run's last assistant message)
 * that have their `tool_result` in `results` already, by {@link callSignature}; the first answer of
 * a signature wins.
 */
function answeredCalls(
  deps: AgentDeps,
  messages: MessageParam[],
  results: ToolResultBlockParam[],
): Map<string, ToolResultBlockParam> {
  const assistant = [...messages].reverse().find((m) => m.role === "assistant");
  const signatures = new Map<string, string>();
  if (Array.isArray(assistant?.content))
    for (const block of assistant.content)
      if (block.type === "tool_use" && deps.toolbox.get(block.name)?.dangerous)
        signatures.set(block.id, callSignature(block.name, block.input));
  const answered = new Map<string, ToolResultBlockParam>();
  for (const result of results) {
    const signature = signatures.get(result.tool_use_id);
    if (signature !== undefined && !answered.has(signature)) answered.set(signature, result);
  }
  return answered;
}

/**
 * The `tool_result` of a dangerous call that repeats one of the same turn already answered (same
 * tool, same input): it is not run and nobody is asked again; the model reads that, with the earlier
 * call's result. One approval covers what the person saw once: deleting todo #1 twice in a turn is a
 * slip of the model, and a second prompt for it could only fail (it is gone) or ask a question
 * already answered (declined).
 */
function repeatedResult(
  toolUseId: string,
  name: string,
  earlier: ToolResultBlockParam,
  tracer: AgentDeps["tracer"],
): ToolResultBlockParam {
  const content =
    `This call repeats an earlier call of this turn (${name} with the same input), so it was not run ` +
    `again and the user was not asked about it again. The earlier call's result: ${resultText(earlier)}`;
  tracer.event("tool_result", { tool: name, toolUseId, ok: false, refused: "repeated", preview: preview(content) });
  return toolResult(toolUseId, content, true);
}

/** The text of a `tool_result` block (its text blocks joined; images left out). */
function resultText(result: ToolResultBlockParam): string {
  const content = result.content;
  if (typeof content === "string") return content;
  return (content ?? [])
    .filter((b) => b.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("\n");
}

/**
 * The requester's unexpired "always allow" grant of `name`, when grants are wired in and the tool
 * accepts them (its definition does not say `alwaysAllow: false`); else undefined.
 */
async function grantOf(deps: AgentDeps, name: string): Promise<{ expiresAt: number } | undefined> {
  const tool = deps.toolbox.get(name);
  if (!deps.grantFor || !tool?.dangerous || tool.alwaysAllow === false) return undefined;
  return deps.grantFor(name);
}

/**
 * Runs a dangerous call covered by a grant, at most once per `tool_use` id (`executeOnce`, as an
 * approved call), reports it like any tool call of a streamed run (`tool_start` / `tool_end`), and
 * records in the trace that a grant, not a prompt, allowed it.
 */
async function runGranted(
  toolUseId: string,
  name: string,
  input: unknown,
  grant: { expiresAt: number },
  deps: AgentDeps,
  context: ToolContext,
  shown: string[],
): Promise<ToolResultBlockParam> {
  const { tracer } = deps;
  tracer.event("approval", {
    verdict: "granted",
    tool: name,
    toolUseId,
    grantExpiresAt: new Date(grant.expiresAt).toISOString(),
  });
  metrics.approval("granted");
  context.log.info({ tool: name, toolUseId }, "dangerous call allowed by an always-allow grant");
  return runCall(toolUseId, name, input, deps, context, true, shown);
}

/**
 * Runs one call through the toolbox and returns its `tool_result` (text and any images): reports
 * `tool_start` / `tool_end` to a streamed run, and goes through `executeOnce` (at most once per
 * `tool_use` id) when `once` (writes, approved and granted calls). Texts of the result meant for
 * the person only are added to `shown`.
 *
 * A read-only call (not `once`) heeds the person's Stop (`deps.stop`): its signal aborts, and the
 * run no longer waits for it (its `tool_result` says it was interrupted). A `once` call is neither
 * signalled nor left behind: a write is never half-undone.
 */
async function runCall(
  toolUseId: string,
  name: string,
  input: unknown,
  deps: AgentDeps,
  context: ToolContext,
  once: boolean,
  shown: string[],
): Promise<ToolResultBlockParam> {
  const { onEvent } = deps;
  // A streamed run shows how far the call has come on its status line.
  const heeded: ToolContext = !once && deps.stop ? { ...context, signal: runSignal(deps, context) } : context;
  const callContext: ToolContext = onEvent
    ? { ...heeded, onProgress: (progress) => onEvent({ type: "tool_progress", toolUseId, progress }) }
    : heeded;
  const execute = () => deps.toolbox.execute(name, input, callContext, { tracer: deps.tracer, toolUseId });
  const icon = deps.toolbox.icon(name);
  deps.onEvent?.({
    type: "tool_start",
    toolUseId,
    name,
    activity: deps.toolbox.activity(name, input, context.locale),
    ...(icon ? { icon } : {}),
  });
  const execution =
    once && deps.executeOnce
      ? await deps.executeOnce(toolUseId, execute)
      : once || !deps.stop
        ? await execute()
        : await untilStopped(execute(), deps.stop, (): ToolExecution => ({
            ok: false,
            content: stoppedDuringText(name),
            durationMs: 0,
          }));
  deps.onEvent?.({ type: "tool_end", toolUseId, ok: execution.ok });
  if (execution.forUser) shown.push(...execution.forUser);
  return toolResult(toolUseId, execution.content, !execution.ok, execution.images);
}

/** `running`'s value, or `stopped()` at once when `stop` aborts first (the running promise is left to settle unobserved). */
function untilStopped<T>(running: Promise<T>, stop: AbortSignal, stopped: () => T): Promise<T> {
  if (stop.aborted) return Promise.resolve(stopped());
  return new Promise<T>((resolve, reject) => {
    const onStop = () => resolve(stopped());
    stop.addEventListener("abort", onStop, { once: true });
    running.then(
      (value) => {
        stop.removeEventListener("abort", onStop);
        resolve(value);
      },
      (error: unknown) => {
        stop.removeEventListener("abort", onStop);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** The short assistant text that closes a run without a model call. */
function closingText(verdict: ApprovalVerdict, context: ToolContext): string {
  switch (verdict) {
    case "approved":
      return localize(context.locale, { "zh-TW": "已執行。", en: "Done." });
    case "declined":
      return localize(context.locale, { "zh-TW": "好的，已取消，沒有執行。", en: "OK, cancelled: nothing was done." });
    case "expired":
      return localize(context.locale, {
        "zh-TW": "確認逾時，操作沒有執行。",
        en: "The confirmation timed out; nothing was done.",
      });
    case "superseded":
      return localize(context.locale, {
        "zh-TW": "沒有收到確認，先前的操作已取消。",
        en: "No confirmation received; the earlier action was cancelled.",
      });
  }
}

/**
 * A `tool_result` block: the text, with image blocks when the tool returned images (MCP image
 * content), each at its place in the text (`ToolImage.at`; default after it); the text between
 * two images becomes a text block of its own, blank pieces are left out (the API refuses empty
 * text blocks).
 */
/**
 * The answer to a dangerous call its tool's check refused (`ToolBox.prepare`: bad input, or e.g.
 * "no todo #7"), traced as a `tool_result` refused by the precheck: an error tool_result with the
 * check's text, for the model to act on. Nobody was asked.
 */
function refusedByPrecheck(tracer: Tracer, tool: string, toolUseId: string, content: string): ToolResultBlockParam {
  tracer.event("tool_result", { tool, toolUseId, ok: false, refused: "precheck", preview: preview(content) });
  return toolResult(toolUseId, content, true);
}

function toolResult(toolUseId: string, content: string, isError: boolean, images?: ToolImage[]): ToolResultBlockParam {
  const text = content.trim() === "" ? "(no output)" : content;
  let body: ToolResultBlockParam["content"] = text;
  if (images?.length) {
    const blocks: Exclude<ToolResultBlockParam["content"], string | undefined> = [];
    const placed = images
      .map((image, index) => ({ image, index, at: Math.min(image.at ?? text.length, text.length) }))
      .sort((a, b) => a.at - b.at || a.index - b.index);
    let from = 0;
    for (const { image, at } of placed) {
      const piece = text.slice(from, at).trim();
      if (piece) blocks.push({ type: "text", text: piece });
      blocks.push({ type: "image", source: { type: "base64", media_type: image.mediaType, data: image.data } });
      from = Math.max(from, at);
    }
    const rest = text.slice(from).trim();
    if (rest) blocks.push({ type: "text", text: rest });
    body = blocks;
  }
  return { type: "tool_result", tool_use_id: toolUseId, content: body, ...(isError ? { is_error: true } : {}) };
}

/** Orders `tool_result` blocks like the `tool_use` blocks of the run's last assistant message. */
function inToolUseOrder(messages: MessageParam[], results: ToolResultBlockParam[]): ToolResultBlockParam[] {
  const assistant = [...messages].reverse().find((m) => m.role === "assistant");
  const order = Array.isArray(assistant?.content)
    ? assistant.content.filter((b) => b.type === "tool_use").map((b) => (b as { id: string }).id)
    : [];
  return [...results].sort((a, b) => order.indexOf(a.tool_use_id) - order.indexOf(b.tool_use_id));
}

/**
 * Assistant content to send back: exactly as received, minus empty or whitespace-only text
 * blocks (the API refuses them). `citations: null` and other response-only fields are dropped
 * from text blocks, as the request schema differs from the response schema. Server tools' calls
 * and results (web search results with their `encrypted_content`, tool search results) are kept
 * as they came: the API refuses altered ones.
 */
function passBack(content: Anthropic.Messages.ContentBlock[]): ContentBlockParam[] {
  const out: ContentBlockParam[] = [];
  for (const block of content) {
    if (block.type === "text") {
      if (block.text.trim() === "") continue;
      out.push(
        block.citations
          ? { type: "text", text: block.text, citations: block.citations as Anthropic.Messages.TextCitationParam[] }
          : { type: "text", text: block.text },
      );
    } else if (block.type === "tool_use") {
      out.push({ type: "tool_use", id: block.id, name: block.name, input: block.input });
    } else if (block.type === "server_tool_use") {
      out.push({
        type: "server_tool_use",
        id: block.id,
        name: block.name,
        input: block.input ?? {},
        ...(block.caller ? { caller: block.caller } : {}),
      });
    } else {
      out.push(block as unknown as ContentBlockParam);
    }
  }
  return out;
}

/** The first user turn's content: the text, after the message's file blocks when it has any. */
function userContent(request: AgentRequest, text: string): MessageParam["content"] {
  if (!request.userContent?.length) return text;
  return request.userText.trim() === "" ? request.userContent : [...request.userContent, { type: "text", text }];
}

/**
 * The run's messages with the memory block (`deps.memory`) as the first block of its user turn,
 * for the request only: the run's own messages (and so the history and checkpoints) never hold it.
 * Unchanged when there is no block or the run does not start with a user turn.
 */
function withMemory(messages: MessageParam[], memory: string | undefined): MessageParam[] {
  const first = messages[0];
  if (memory === undefined || first?.role !== "user") return messages;
  const blocks: ContentBlockParam[] =
    typeof first.content === "string" ? [{ type: "text", text: first.content }] : [...first.content];
  return [{ role: "user", content: [{ type: "text", text: memory }, ...blocks] }, ...messages.slice(1)];
}

/** A copy of `messages` whose last block carries a cache breakpoint (history itself is not changed). */
function withLastBreakpoint(messages: MessageParam[]): MessageParam[] {
  const last = messages[messages.length - 1];
  if (!last || last.role === "system") return messages;
  const blocks: ContentBlockParam[] =
    typeof last.content === "string" ? [{ type: "text", text: last.content }] : [...last.content];
  const tail = blocks[blocks.length - 1];
  if (!tail || (tail.type !== "text" && tail.type !== "tool_result")) return messages;
  blocks[blocks.length - 1] = { ...tail, cache_control: EPHEMERAL };
  return [...messages.slice(0, -1), { role: last.role, content: blocks } as MessageParam];
}

function textOf(content: Anthropic.Messages.ContentBlock[]): string {
  return content
    .filter((b): b is Anthropic.Messages.TextBlock => b.type === "text")
    .map((b) => b.text)
    .join("\n")
    .trim();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * JSON with object keys sorted at every depth, so `{"a":1,"b":2}` and `{"b":2,"a":1}` give the
 * same text. Arrays keep their order.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(",")}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The repeated-call guard's key of a call: the tool name and its input as {@link canonicalJson}. */
export function callSignature(name: string, input: unknown): string {
  return `${name}:${canonicalJson(input)}`;
}
