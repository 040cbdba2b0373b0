/**
 * The agent loop's contract, fixed before its implementation so the worker and the approval
 * flow can be built against it. The implementation is `src/agent/loop.ts`.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Config } from "../config.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import type { ToolContext } from "../toolbox/tool.js";
import type { Tracer } from "../trace/tracer.js";

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
}

/** One incoming message to answer. */
export interface AgentRequest {
  /** The chat's history: valid for the Messages API (starts with a user turn, tool exchanges complete). */
  history: MessageParam[];
  /** The user's text as the model should see it (in groups prefixed with the speaker's name by the worker). */
  userText: string;
  context: ToolContext;
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
