/**
 * The agent loop's contract, fixed before its implementation so the worker and the approval
 * flow can be built against it. The implementation is `src/agent/loop.ts`.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import type { Config } from "../config.js";
import { MessageParamSchema } from "../history/message.js";
import type { ExecuteOnce } from "../toolbox/once.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import type { ToolContext, ToolProgress } from "../toolbox/tool.js";
import type { Tracer } from "../trace/tracer.js";
import type { ModelUsage } from "../usage/store.js";

/** A message of the Messages API, as stored in history. */
export type MessageParam = Anthropic.Messages.MessageParam;

/** What one run needs besides its input. */
export interface AgentDeps {
  /** The real SDK client (its `baseURL` may point at a fake in tests). */
  client: Anthropic;
  config: Config;
  /** The tools offered in this context. */
  toolbox: ToolBox;
  tracer: Tracer;
  /** The model of this run's requests (the conversation's `model` setting); default `ANTHROPIC_MODEL`. */
  model?: string;
  /** The conversation's persona, added to the system prompt (`SystemPromptOptions.persona`); default none. */
  persona?: string;
  /**
   * Called with each model response's `usage` (tokens of the four kinds), right after the response
   * arrives; the worker records it per user and chat (`src/usage/store.ts`). Must not throw.
   */
  onUsage?: (usage: ModelUsage) => void;
  /**
   * Runs a call that changes data at most once per `tool_use` id (`ExecutionLedger.executeOnce`):
   * used for every tool that does not declare `readOnly`, and for approved dangerous calls.
   * Default: run it directly.
   */
  executeOnce?: ExecuteOnce;
  /**
   * Saves the run before the first call of a turn that changes data (a tool without `readOnly`),
   * so a retried job resumes it with {@link AgentRequest.resume} instead of asking the model
   * again (which would give new `tool_use` ids and run the write twice). Default: none.
   */
  checkpoint?: (run: RunState) => Promise<void>;
  /**
   * Streaming: when given, the run reports what happens as it happens (see {@link AgentEvent});
   * without it nothing is shown live. Every model call is read as a stream either way (the SDK's
   * `messages.stream`), so a silent call is bounded by `STREAM_IDLE_SECONDS`. Called
   * synchronously; must not throw.
   */
  onEvent?: (event: AgentEvent) => void;
  /**
   * The requester's "always allow" grant of the dangerous tool `tool` in this conversation, when
   * one has not expired (read from Redis once per tool name in each turn of tool calls, and again
   * for the calls still waiting after an approval decision: a revoke counts from the next turn).
   * A call of a tool whose definition does not say `alwaysAllow: false` runs without asking when
   * this returns a grant (through `executeOnce`, like an approved call); the trace records the grant.
   * Default: none (every dangerous call is asked about).
   * @throws when Redis is unreachable (the run fails like any Redis failure).
   */
  grantFor?: (tool: string) => Promise<{ expiresAt: number } | undefined>;
  /**
   * The memory block of the run's scope (`src/memory/notes.ts`), or undefined when it has none:
   * read once when the run (or its resumption) starts calling the model, and put before the run's
   * user turn in every request of the run (never in the stored messages). Default: none.
   * @throws when Redis is unreachable (the run fails like any Redis failure).
   */
  memory?: () => Promise<string | undefined>;
  /**
   * Asked before every model call of the run: its first, each later turn, the continuation of a
   * paused turn, and the first call of a run resumed after an approval or from a checkpoint.
   * Undefined lets the call go; a text ends the run there without the call, with that text as its
   * answer (the worker's run dependencies give `budgetGuard` of `src/usage/budget.ts`: the budget
   * message once a daily token budget is spent). The run's messages stay valid for the history:
   * its calls so far are answered, and the text closes it as an assistant turn (a fresh run stopped
   * before its first call keeps no messages). Default: none.
   * @throws when Redis is unreachable (the run fails like any Redis failure, before the call).
   */
  beforeModelCall?: () => Promise<string | undefined>;
  /**
   * When given (ms since the Unix epoch, the answer's deadline): a model call that fails with a
   * retryable `ModelUnavailableError` (529 overloaded, 429, 5xx, a stream that broke off or fell silent; not an API that cannot be reached at all)
   * after the SDK's own retries is made again, with a growing, jittered wait between attempts
   * (`modelRetryDelayMs`), as long as the next attempt starts before this time; then the last
   * failure is thrown marked `exhausted` (not retryable: the job would not do better). Default:
   * none, the failure is thrown at once.
   */
  retryUntil?: number;
  /**
   * Called when a model call has been failing and retried, or silent (not one byte of an answer
   * yet, with or without streaming), for {@link MODEL_BUSY_NOTICE_MS} and the loop keeps trying
   * (at most once per model call): the worker shows a short "the model is busy,
   * still trying" status. Must not throw.
   */
  onModelBusy?: () => void;
  /**
   * Called once when the run's model (`model`, the conversation's choice) is not served by the
   * Messages API (404 `not_found_error`) and the run falls back to `ANTHROPIC_MODEL` (`fallback`):
   * the worker keeps the fallback as the conversation's model. Must not throw (a throw is logged).
   */
  onModelGone?: (model: string, fallback: string) => void;
  /** The waits of a failing model call's repeats (see {@link AgentDeps.retryUntil}); default {@link MODEL_RETRY_TIMING}. */
  modelRetry?: ModelRetryTiming;
  /**
   * The person's Stop (`src/stop/`): when it aborts, the model call being streamed is aborted (what
   * it wrote so far stays), read-only tool calls running are signalled and no longer waited for,
   * calls not started yet are not run, while a call that changes data (a write, an approved or
   * granted dangerous call) is left to finish, never half-undone. The run then ends with an
   * `answer` outcome marked `stopped` whose messages are valid for the history (every `tool_use`
   * answered; an interrupted call's `tool_result` says so). Default: none (a run is never stopped).
   */
  stop?: AbortSignal;
}

/** After how long a model call that keeps failing is reported through `AgentDeps.onModelBusy`, in ms. */
export const MODEL_BUSY_NOTICE_MS = 10_000;

/**
 * How long a model call may stay entirely silent (not one byte of an answer, however often it is
 * asked again) before the loop gives up, in ms: with the time a message waits and the apology's
 * delivery, a person whose model never answers hears so within 60 s of the message (issue 38
 * item 1) instead of at the answer's deadline.
 */
export const MODEL_SILENT_LIMIT_MS = 50_000;

/** The waits of a failing model call's repeats (`AgentDeps.modelRetry`), in ms. */
export interface ModelRetryTiming {
  /** The ceiling of the first wait between two attempts, doubled per failure (see `modelRetryDelayMs`). */
  firstWaitMs: number;
  /** The longest ceiling of a wait. */
  longestWaitMs: number;
  /**
   * After how long of failures, or of silence (no first byte yet), `AgentDeps.onModelBusy` is called.
   */
  busyNoticeMs: number;
  /**
   * After how long a call that never got a byte of an answer is given up (thrown `exhausted`),
   * whatever `AgentDeps.retryUntil` says; default {@link MODEL_SILENT_LIMIT_MS}.
   */
  silentLimitMs?: number;
}

/**
 * The bot's waits between a failing model call's repeats: 2 s doubled per failure up to 10 s (of
 * which a random half, see `modelRetryDelayMs`), the busy notice after {@link MODEL_BUSY_NOTICE_MS}.
 * Tests give shorter ones through `AgentDeps.modelRetry`.
 */
export const MODEL_RETRY_TIMING: Readonly<ModelRetryTiming> = {
  firstWaitMs: 2000,
  longestWaitMs: 10_000,
  busyNoticeMs: MODEL_BUSY_NOTICE_MS,
  silentLimitMs: MODEL_SILENT_LIMIT_MS,
};

/**
 * What a streamed run reports while it works, in order:
 * - `model_call`: a model call starts (text of an earlier call is final by now);
 * - `retry`: the model call of this turn failed and will be made again (`AgentDeps.retryUntil`):
 *   the text it streamed is void, the new attempt streams the call's text from its beginning;
 * - `text`: a piece of the text the model is writing in this call;
 * - `tool_use`: the model began a `tool_use` block in this call, so the text written in the call
 *   so far leads into a tool call (it is not the answer);
 * - `tool_start` / `tool_end`: a tool call of the turn runs, with a short `activity` in the
 *   user's words (the tool's `activity`, default its name) / ended (`ok` false when it failed);
 *   `tool_progress`: a running call reported how far it has come (`ToolContext.onProgress`).
 *   A server tool the API runs inside the model call (web search: `icon` `🔎`) reports them too,
 *   with its `server_tool_use` id, once its input is complete and when its result arrives; the
 *   tool search tool reports nothing but `tool_use`.
 * Dangerous calls waiting for approval and calls refused without running report nothing.
 */
export type AgentEvent =
  | { type: "model_call"; turn: number }
  | { type: "retry"; turn: number }
  | { type: "text"; text: string }
  | { type: "tool_use"; name: string }
  | { type: "tool_start"; toolUseId: string; name: string; activity: string; icon?: string }
  | { type: "tool_end"; toolUseId: string; ok: boolean }
  | { type: "tool_progress"; toolUseId: string; progress: ToolProgress };

/** One model response's `usage`, in tokens (absent cache counts are 0); declared with the usage store. */
export type { ModelUsage } from "../usage/store.js";

/** One incoming message to answer. */
export interface AgentRequest {
  /** The chat's history: valid for the Messages API (starts with a user turn, tool exchanges complete). */
  history: MessageParam[];
  /** The user's text as the model should see it (in groups prefixed with the speaker's name by the worker). */
  userText: string;
  /**
   * Blocks the user turn starts with, before its text: the message's images, PDF documents and
   * text files (`src/worker/media.ts`). With them an empty `userText` adds no text block.
   */
  userContent?: Anthropic.Messages.ContentBlockParam[];
  context: ToolContext;
  /** A checkpoint of this same message's run saved by an earlier attempt: continue it (its calls run through `executeOnce`). */
  resume?: RunState;
}

/** A dangerous `tool_use` waiting for its requester's approval. */
export const PendingCallSchema = z.object({
  toolUseId: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});

/** See {@link PendingCallSchema}. */
export type PendingCall = z.output<typeof PendingCallSchema>;

/** A `tool_result` block as stored in a paused run: its `tool_use_id`, the API's other fields kept as they are. */
const ToolResultSchema = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
}) as unknown as z.ZodType<Anthropic.Messages.ToolResultBlockParam>;

/**
 * A run of the agent loop, JSON-serialisable: the one state the loop carries from one model call to
 * the next, and the one form in which a run is saved in Redis —
 * - as a checkpoint before a turn that changes data (`AgentDeps.checkpoint`; a retried job
 *   resumes it with `AgentRequest.resume` instead of asking the model again), without `history`,
 *   `results` and `pending`;
 * - as a run paused at a dangerous call ({@link PausedRun}, in the approval record; any worker
 *   process resumes it with `resumeAgent`).
 * Decoded from Redis with this schema (`decodeRecord`); its fields are the loop's business.
 */
export const RunStateSchema = z.object({
  /** Messages of the run so far, from its user turn; saved, it ends with the assistant turn whose calls were about to run (or wait). */
  messages: z.array(MessageParamSchema).min(1),
  /** The history the run started from: kept in a paused run (its model calls go on from it); a checkpoint's retry reads the history again. */
  history: z.array(MessageParamSchema).optional(),
  /** Model calls made so far. */
  turns: z.number().int().nonnegative(),
  /** The repeated-call guard's counts (call signature → calls made). */
  callCounts: z.record(z.string(), z.number().int().nonnegative()),
  /** Output budget (tokens) of the next model call, when raised after a `max_tokens` stop; default `ANTHROPIC_MAX_TOKENS`. */
  maxTokens: z.number().int().positive().optional(),
  /** The id of a `tool_use` of the last assistant turn that was cut off by `max_tokens` (never run). */
  cutId: z.string().optional(),
  /** Paused: `tool_result` blocks already computed for the other calls of the paused turn, in order. */
  results: z.array(ToolResultSchema).optional(),
  /** Paused: dangerous calls of the paused turn still waiting; the first is the one being asked about. */
  pending: z.array(PendingCallSchema).optional(),
  /**
   * Texts of the run's tool results meant for the person only (MCP content with `audience:
   * ["user"]`), in call order: they follow the answer, and never reach the model.
   */
  shown: z.array(z.string()).optional(),
});

/** See {@link RunStateSchema}. */
export type RunState = z.output<typeof RunStateSchema>;

/** A {@link RunState} paused at a dangerous call: with the history it started from, the turn's other results and the waiting calls. */
export const PausedRunSchema = RunStateSchema.required({ history: true, results: true, pending: true });

/** See {@link PausedRunSchema}. */
export type PausedRun = z.output<typeof PausedRunSchema>;

/**
 * How an approval ended: the requester approved or declined, nobody decided in time (`expired`),
 * or the requester wrote again instead (`superseded`). The one name for it in the loop (what the
 * model is told), the approval store (the record's status), the decision jobs and the prompt's
 * outcome.
 */
export type ApprovalVerdict = "approved" | "declined" | "expired" | "superseded";

/**
 * The result of a run:
 * - `answer`: the final text for the user and the messages to append to the history (starting
 *   with the user turn, ending with an assistant turn; valid for the Messages API; none when
 *   `beforeModelCall` stopped a fresh run before its first call: nothing of it is kept). With
 *   `refused: true` the model refused (`stop_reason: "refusal"`): `text` is a short apology and
 *   nothing of the run may be stored in the history (the API docs say to remove or rephrase the
 *   refused turn before continuing: https://docs.anthropic.com/en/api/handling-stop-reasons).
 * - `approval`: the run is paused at a dangerous call; save `run` and ask the requester about `call`.
 * With `stopped: true` the person pressed Stop (`AgentDeps.stop`): `text` is what was written so far
 * followed by the stop mark (`⏹ 已停止`) and whether a call that changes data finished; the
 * messages keep exactly that.
 */
export type AgentOutcome =
  | { kind: "answer"; text: string; messages: MessageParam[]; refused?: boolean; stopped?: boolean }
  | { kind: "approval"; run: PausedRun; call: PendingCall };

/** A run paused at a dangerous call, as `runAgent` / `resumeAgent` return it: save `run`, ask about `call`. */
export type PausedOutcome = Extract<AgentOutcome, { kind: "approval" }>;
