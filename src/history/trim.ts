/**
 * Trimming a chat's history so that what is sent to the model stays valid for the Messages API
 * (see the invariants in DESIGN.md): it starts with a user *text* turn, every `tool_use` is
 * answered in the next user message, and it ends with a finished assistant turn.
 *
 * The cut point only ever moves towards the newer end, to the next user text turn: a trim point
 * that falls inside a tool exchange is moved past it, never cut through it.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";

/** Default rough size budget of the history sent to the model, in characters of its JSON (about 25k tokens). */
export const DEFAULT_HISTORY_MAX_CHARS = 100_000;

/** Limits of {@link trimHistory}. */
export interface TrimLimits {
  /** Most messages kept (`HISTORY_MAX_MESSAGES`). */
  maxMessages: number;
  /** Rough size budget: most characters of the kept messages' JSON. Default {@link DEFAULT_HISTORY_MAX_CHARS}. */
  maxChars?: number;
}

/**
 * True when `message` is a user turn a history may start with: role `user`, at least one non-empty
 * text, and no `tool_result` block (a `tool_result` answers a `tool_use` of the turn before it).
 */
export function isUserTextTurn(message: MessageParam): boolean {
  if (message.role !== "user") return false;
  if (typeof message.content === "string") return message.content.trim().length > 0;
  let text = false;
  for (const block of message.content) {
    if (block.type === "tool_result") return false;
    if (block.type === "text" && block.text.trim().length > 0) text = true;
  }
  return text;
}

/** True when `message` is an assistant turn that does not wait for a `tool_result`. */
function isFinishedAssistantTurn(message: MessageParam): boolean {
  if (message.role !== "assistant") return false;
  if (typeof message.content === "string") return message.content.trim().length > 0;
  return (
    message.content.length > 0 && !message.content.some((b) => b.type === "tool_use" || b.type === "server_tool_use")
  );
}

/** Index of the first user text turn at or after `from`, or `messages.length` when there is none. */
function nextUserTextTurn(messages: readonly MessageParam[], from: number): number {
  let i = from;
  while (i < messages.length && !isUserTextTurn(messages[i]!)) i += 1;
  return i;
}

/**
 * Returns the newest part of `messages` that fits the limits and is valid to send:
 *
 * 1. keeps at most `maxMessages` from the newest end;
 * 2. drops leading messages until the first user text turn (an assistant turn, or a user turn of
 *    only `tool_result` blocks, is never a start);
 * 3. while the JSON is longer than `maxChars`, drops the oldest exchange (up to the next user text turn);
 * 4. drops trailing messages until the last is a finished assistant turn (no pending `tool_use`).
 *
 * Never throws; returns `[]` when nothing valid is left. Does not modify `messages`.
 *
 * @param sizes - each message's JSON length in characters when the caller already knows it (the
 *   store reads JSON from Redis); computed with `JSON.stringify` otherwise.
 */
export function trimHistory(
  messages: readonly MessageParam[],
  limits: TrimLimits,
  sizes?: readonly number[],
): MessageParam[] {
  const maxChars = limits.maxChars ?? DEFAULT_HISTORY_MAX_CHARS;
  let start = Math.max(0, messages.length - limits.maxMessages);
  start = nextUserTextTurn(messages, start);
  let end = messages.length;
  while (end > start && !isFinishedAssistantTurn(messages[end - 1]!)) end -= 1;

  const size = (i: number) => sizes?.[i] ?? JSON.stringify(messages[i]).length;
  let total = 0;
  for (let i = start; i < end; i += 1) total += size(i);
  while (start < end && total > maxChars) {
    const next = nextUserTextTurn(messages, start + 1);
    for (let i = start; i < Math.min(next, end); i += 1) total -= size(i);
    start = next;
  }
  return start < end ? messages.slice(start, end) : [];
}
