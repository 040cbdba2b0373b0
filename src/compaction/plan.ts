/**
 * What a compaction summarises: the older part of a conversation's stored history, cut only at a
 * valid point, and that part written out as a plain-text transcript for the model.
 *
 * The cut is always in front of a user text turn (a `U` line of the history value, see
 * `src/history/store.ts`): the kept part starts validly, and no `tool_use` is separated from its
 * `tool_result` (a user text turn never carries a `tool_result`). The last `keepTurns` user text
 * turns, with everything after them, stay verbatim.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { silentLogger, type Logger } from "../log.js";
import { MessageParamSchema } from "../history/message.js";
import { SummarySchema, type Summary } from "../history/summary.js";
import { escapeBlockText } from "../block-text.js";
import { TRANSCRIPT_END, TRANSCRIPT_START } from "../prompts.js";
import { decodeRecord } from "../records.js";

/** Most characters of the transcript one compaction sends (about 50 000 tokens): its own request never overflows. */
export const MAX_TRANSCRIPT_CHARS = 200_000;

/** Most characters of one tool input or tool result in the transcript. */
const MAX_TOOL_CHARS = 600;

/** Most characters of one text block in the transcript. */
const MAX_TEXT_CHARS = 8_000;

/** What a compaction will replace. */
export interface CompactionPlan {
  /**
   * The exact start of the stored value that is replaced (the old summary line, the summarised
   * messages and their tags): the swap checks that the history still starts with it.
   */
  prefix: string;
  /** The summary already there (merged into the new one). */
  previous?: Summary;
  /** The messages summarised, oldest first. */
  messages: MessageParam[];
  /** Messages of the history that stay verbatim. */
  kept: number;
}

/**
 * Plans the compaction of a stored history value `raw`: everything in front of the
 * `keepTurns`-th last user text turn, shortened (at an earlier user text turn) when its transcript
 * would pass `maxChars`. Lines that cannot be read (damaged JSON) are replaced too and summarised
 * as nothing.
 *
 * @returns undefined when there is nothing to summarise (fewer than `keepTurns + 1` user text turns).
 */
export function planCompaction(
  raw: string,
  keepTurns: number,
  maxChars = MAX_TRANSCRIPT_CHARS,
  log: Logger = silentLogger,
): CompactionPlan | undefined {
  const lines = raw.split("\n");
  let previous: Summary | undefined;
  let first = 0;
  if (lines[0]?.startsWith("S")) {
    previous = decodeRecord(SummarySchema, lines[0].slice(1), "conversation summary", log);
    first = 1;
  }
  const userTurns: number[] = [];
  for (let i = first; i < lines.length; i += 1) if (lines[i]!.startsWith("U")) userTurns.push(i);
  if (userTurns.length <= keepTurns) return undefined;
  // The line where the kept part starts: the keepTurns-th last user text turn.
  let cut = userTurns[userTurns.length - keepTurns]!;
  const messagesIn = (end: number): MessageParam[] => {
    const out: MessageParam[] = [];
    for (let i = first; i < end; i += 1) {
      const line = lines[i]!;
      if (line === "" || line.startsWith("#")) continue;
      const message = decodeRecord(
        MessageParamSchema,
        line.startsWith("U") ? line.slice(1) : line,
        "history message",
        log,
      );
      if (message) out.push(message);
    }
    return out;
  };
  let messages = messagesIn(cut);
  // Too long for one request: summarise the oldest runs that fit (at least one); the next compaction goes on.
  while (transcriptOf(messages).length > maxChars) {
    const earlier = userTurns.filter((i) => i < cut);
    if (earlier.length <= 1) break; // one run left: its transcript's blocks are cut to size already
    cut = earlier[Math.floor(earlier.length / 2)]!;
    messages = messagesIn(cut);
  }
  if (messages.length === 0) return undefined;
  const kept = lines.slice(cut).filter((l) => l !== "" && !l.startsWith("#")).length;
  return {
    prefix: lines
      .slice(0, cut)
      .map((l) => `${l}\n`)
      .join(""),
    ...(previous ? { previous } : {}),
    messages,
    kept,
  };
}

/** `text` cut to `max` characters, marked with `…`. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The messages as a transcript the model reads: one paragraph per turn (`User:` / `Assistant:`),
 * tool calls as `[tool name(input)]` and their results as `[result: …]`, each cut to a few hundred
 * characters; server tools' results (web pages) are left out. Files are the history's placeholders already.
 */
export function transcriptOf(messages: readonly MessageParam[]): string {
  const parts: string[] = [];
  for (const message of messages) {
    const who = message.role === "user" ? "User" : "Assistant";
    const blocks =
      typeof message.content === "string" ? [{ type: "text" as const, text: message.content }] : message.content;
    const said: string[] = [];
    for (const block of blocks) {
      switch (block.type) {
        case "text":
          if (block.text.trim() !== "") said.push(cut(block.text, MAX_TEXT_CHARS));
          break;
        case "tool_use":
        case "server_tool_use":
          said.push(`[tool ${block.name}(${cut(JSON.stringify(block.input ?? {}), MAX_TOOL_CHARS)})]`);
          break;
        case "tool_result": {
          const content =
            typeof block.content === "string"
              ? block.content
              : (block.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ");
          said.push(`[${block.is_error ? "tool error" : "tool result"}: ${cut(content, MAX_TOOL_CHARS)}]`);
          break;
        }
        default:
          break;
      }
    }
    if (said.length > 0) parts.push(`${who}: ${said.join("\n")}`);
  }
  return parts.join("\n\n");
}

/**
 * The user turn of a compaction's request: the earlier summary (when there is one) and the
 * transcript to summarise, each with its block tags escaped ({@link escapeBlockText}), so a
 * message holding `</transcript>` cannot end the transcript and pose as the bot's request.
 */
export function compactionRequestText(plan: Pick<CompactionPlan, "previous" | "messages">): string {
  const earlier = plan.previous
    ? `The summary so far:\n<earlier_summary>\n${escapeBlockText(plan.previous.text)}\n</earlier_summary>\n\n`
    : "";
  return (
    `${earlier}The turns to add to it:\n${TRANSCRIPT_START}\n${escapeBlockText(transcriptOf(plan.messages))}\n` +
    `${TRANSCRIPT_END}\n\nWrite the ${plan.previous ? "updated " : ""}summary now.`
  );
}
