/**
 * A conversation's summary (compaction, `src/compaction/`): what the model wrote about the turns
 * a compaction replaced. It is stored as the first line of the conversation's history value
 * (`S{…}`, see `store.ts`), so one read gives history and summary, and one script swaps them.
 *
 * In a request it comes first, as a user turn marked `<conversation_summary>…</conversation_summary>`
 * ({@link summaryTurn}): after the cached prefix (tools, then system), so compaction never changes
 * that prefix, and before the history, which starts with a user text turn (the API joins
 * consecutive user turns: https://docs.anthropic.com/en/api/messages).
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { z } from "zod";
import { escapeBlockText } from "../block-text.js";

/** The stored summary (JSON after the `S` of the history's first line). */
export const SummarySchema = z.object({
  /** The summary text the model wrote. */
  text: z.string().min(1),
  /** Messages summarised in all, over every compaction of the conversation. */
  summarized: z.number().int().nonnegative(),
  /** Compactions made so far. */
  compactions: z.number().int().positive(),
  /** When the latest compaction was swapped in, ms since the Unix epoch. */
  at: z.number().int().nonnegative(),
  /**
   * Estimated tokens of the conversation's next request right after this compaction (the last
   * measured request, less the summary request's input, plus the summary's output tokens), which
   * `/context` shows until a later run measures the size itself; absent when nothing was measured.
   */
  tokens: z.number().int().nonnegative().optional(),
  /** Id of the latest run tag (`RunTag.messageId`) the compaction saw: a tag with another id was written after it. */
  after: z.string().optional(),
});

/** See {@link SummarySchema}. */
export type Summary = z.output<typeof SummarySchema>;

/** The history line holding `summary` (with its `\n`). */
export function summaryLine(summary: Summary): string {
  return `S${JSON.stringify(summary)}\n`;
}

/** The opening and closing marks of the summary turn. */
export const SUMMARY_OPEN = "<conversation_summary>";
export const SUMMARY_CLOSE = "</conversation_summary>";

/**
 * The user turn a request starts with when the conversation has a summary: the summary between
 * {@link SUMMARY_OPEN} and {@link SUMMARY_CLOSE}, said to be a summary of earlier conversation.
 * Block tags in the summary (it was written from people's messages) are escaped by
 * {@link escapeBlockText}, so `</conversation_summary>` in it cannot close the turn's block.
 */
export function summaryTurn(summary: Summary): MessageParam {
  return {
    role: "user",
    content: [
      {
        type: "text",
        text:
          `${SUMMARY_OPEN}\nA summary of the earlier part of this conversation (older turns were ` +
          `replaced by it; the turns after it are verbatim):\n\n${escapeBlockText(summary.text)}\n${SUMMARY_CLOSE}`,
      },
    ],
  };
}

/** The history as a request sends it: the summary turn first when there is a summary, then `messages`. */
export function withSummary(read: { messages: MessageParam[]; summary?: Summary | undefined }): MessageParam[] {
  return read.summary ? [summaryTurn(read.summary), ...read.messages] : read.messages;
}
