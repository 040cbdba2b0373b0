/**
 * The agent loop's contract, fixed before its implementation so the worker and the approval
 * flow can be built against it. The implementation is `src/agent/loop.ts`.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Config } from "../config.js";
import type { ExecuteOnce } from "../toolbox/once.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import type { ToolContext } from "../toolbox/tool.js";
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
  checkpoint?: (run: RunCheckpoint) => Promise<void>;
  /**
   * Streaming: when given, every model call is streamed (the SDK's `messages.stream`) and the run
   * reports what happens as it happens (see {@link AgentEvent}); without it the loop calls
   * `messages.create` as before. Called synchronously; must not throw.
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
}

/**
 * What a streamed run reports while it works, in order:
 * - `model_call`: a model call starts (text of an earlier call is final by now);
 * - `text`: a piece of the text the model is writing in this call;
 * - `tool_use`: the model began a `tool_use` block in this call, so the text written in the call
 *   so far leads into a tool call (it is not the answer);
 * - `tool_start` / `tool_end`: a tool call of the turn runs, with a short `activity` in the
 *   user's words (the tool's `activity`, default its name) / ended (`ok` false when it failed).
 *   A server tool the API runs inside the model call (web search: `icon` `🔎`) reports them too,
 *   with its `server_tool_use` id, once its input is complete and when its result arrives; the
 *   tool search tool reports nothing but `tool_use`.
 * Dangerous calls waiting for approval and calls refused without running report nothing.
 */
export type AgentEvent =
  | { type: "model_call"; turn: number }
  | { type: "text"; text: string }
  | { type: "tool_use"; name: string }
  | { type: "tool_start"; toolUseId: string; name: string; activity: string; icon?: string }
  | { type: "tool_end"; toolUseId: string; ok: boolean };

/**
 * A run saved before it changed data: JSON-serialisable. Its last message is the assistant turn
 * whose tool calls were about to run.
 */
export interface RunCheckpoint {
  /** Messages of the run so far, from its user turn to the assistant turn with the calls. */
  messages: MessageParam[];
  /** Model calls made so far. */
  turns: number;
  /** The repeated-call guard's counts before this turn's calls. */
  callCounts: Record<string, number>;
  /** Output budget (tokens) of the next model call. */
  maxTokens: number;
  /** The id of a `tool_use` cut off by `max_tokens` in that turn (never run). */
  cutId?: string;
}

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
  resume?: RunCheckpoint;
}

/** A dangerous `tool_use` waiting for its requester's approval. */
export interface PendingCall {
  toolUseId: string;
  name: string;
  input: Record<string, unknown>;
}

/**
 * A run paused at a dangerous call: JSON-serialisable, saved in Redis by the approval flow and
 * resumed by any worker process. Its fields are the loop's business.
 */
export interface SuspendedRun {
  /** Messages of this run so far (starting with the user turn), ending with the assistant turn holding the pending call. */
  messages: MessageParam[];
  /** The history the run started from (needed to continue calling the model). */
  history: MessageParam[];
  /** `tool_result` blocks already computed for the other calls of the paused turn, in order. */
  results: Anthropic.Messages.ToolResultBlockParam[];
  /** Dangerous calls of the paused turn still waiting, first is the one being asked about. */
  pending: PendingCall[];
  /** Model calls made so far. */
  turns: number;
  /** Signatures of calls made so far with their counts (for the repeated-call guard). */
  callCounts: Record<string, number>;
  /** Output budget (tokens) of the next model call, when raised after a `max_tokens` stop. */
  maxTokens?: number;
}

/** How the requester answered, or why no answer came. */
export type ApprovalVerdict = "approved" | "declined" | "expired" | "superseded";

/**
 * The result of a run:
 * - `answer`: the final text for the user and the messages to append to the history (starting
 *   with the user turn, ending with an assistant turn; valid for the Messages API). With
 *   `refused: true` the model refused (`stop_reason: "refusal"`): `text` is a short apology and
 *   nothing of the run may be stored in the history (the API docs say to remove or rephrase the
 *   refused turn before continuing: https://docs.anthropic.com/en/api/handling-stop-reasons).
 * - `approval`: the run is paused at a dangerous call; save `run` and ask the requester about `call`.
 */
export type AgentOutcome =
  | { kind: "answer"; text: string; messages: MessageParam[]; refused?: boolean }
  | { kind: "approval"; run: SuspendedRun; call: PendingCall };
