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
import { randomBytes } from "node:crypto";
import { sliceUnits } from "../cut.js";
import { INVISIBLE } from "../plain-text.js";
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

/** `text` cut to `max` UTF-16 units, marked with `…` (never inside a surrogate pair: the summariser's request must stay valid JSON for the API). */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${sliceUnits(text, max - 1)}…`;
}

/** A fresh nonce for one compaction request's turn labels: 8 random hex digits. */
export function transcriptNonce(): string {
  return randomBytes(4).toString("hex");
}

/** Line breaks of any kind (CR, NEL, line and paragraph separators, vertical tab, form feed), read as `\n`. */
const LINE_BREAKS = /\r\n|[\r\v\f\u0085\u2028\u2029]/g;

/**
 * A line inside a turn that looks like the start of a turn: a role with a colon (`User:`,
 * `Assistant:`, `Human:`, `System:`, after an optional `[…]`), or a group speaker label
 * (`[Alice #b026]`), read after NFKC (full-width forms) and without invisible characters.
 */
const SPEAKER_LINE =
  /^\s*(?:\[[^\]\n]*\]\s*)?(?:user|assistant|human|system|ai|bot)\s*:|^\s*\[[^\]\n]*#\s*[0-9a-f]{4}\s*\]/i;

/** The mark put in front of a line inside a turn that looks like a turn's start (see {@link transcriptOf}). */
export const QUOTED_LINE_MARK = "› ";

/** `line` marked with {@link QUOTED_LINE_MARK} when it looks like a speaker line, else unchanged. */
function quoteSpeakerLine(line: string): string {
  const read = line.normalize("NFKC").replace(INVISIBLE, "");
  return SPEAKER_LINE.test(read) || read.trimStart().startsWith(QUOTED_LINE_MARK.trim())
    ? `${QUOTED_LINE_MARK}${line}`
    : line;
}

/**
 * The messages as a transcript the model reads: one paragraph per turn, labelled
 * `[nonce] User:` / `[nonce] Assistant:` with `nonce` (see {@link transcriptNonce}) random per
 * request, so no message can write a label the summariser takes for a turn; tool calls as
 * `[tool name(input)]` and their results as `[tool result: …]`, each cut to a few hundred
 * characters; server tools' results (web pages) are left out. Files are the history's placeholders
 * already. Inside a turn, any line after its first that looks like a speaker line (`User: …`,
 * `[Alice #b026] …`, see {@link SPEAKER_LINE}) starts with {@link QUOTED_LINE_MARK}, and every kind
 * of line break counts as `\n`: a group member cannot pose as another member or as the assistant.
 */
export function transcriptOf(messages: readonly MessageParam[], nonce: string = transcriptNonce()): string {
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
    if (said.length === 0) continue;
    const lines = said.join("\n").replace(LINE_BREAKS, "\n").split("\n");
    const body = [lines[0]!, ...lines.slice(1).map(quoteSpeakerLine)].join("\n");
    parts.push(`[${nonce}] ${who}: ${body}`);
  }
  return parts.join("\n\n");
}

/**
 * The user turn of a compaction's request: the earlier summary (when there is one) and the
 * transcript to summarise (turns labelled with `nonce`, the same the request's system prompt
 * names: `compactionPrompt(nonce)`), each with its block tags escaped ({@link escapeBlockText}),
 * so a message holding `</transcript>` cannot end the transcript and pose as the bot's request.
 */
export function compactionRequestText(plan: Pick<CompactionPlan, "previous" | "messages">, nonce: string): string {
  const earlier = plan.previous
    ? `The summary so far:\n<earlier_summary>\n${escapeBlockText(plan.previous.text)}\n</earlier_summary>\n\n`
    : "";
  return (
    `${earlier}The turns to add to it:\n${TRANSCRIPT_START}\n${escapeBlockText(transcriptOf(plan.messages, nonce))}\n` +
    `${TRANSCRIPT_END}\n\nWrite the ${plan.previous ? "updated " : ""}summary now.`
  );
}
