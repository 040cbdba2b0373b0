/**
 * The compaction commands: `/context [part]` (the conversation's size against `COMPACT_AT_TOKENS`,
 * what was summarised, and one part of the summary) and `/compact` (compacts now: a job of the
 * `compactions` queue, run by a worker, and shows the new summary's first part).
 */
import type { CompactNowResult } from "./queue.js";
import type { CommandInvocation, CommandServices } from "../commands/command.js";
import { englishNoun, localize, type Localized } from "../i18n.js";
import { conversationOf, type ConversationRef } from "../queue/incoming.js";

/** What `/context` shows of a conversation. */
export interface ContextReport {
  /** Tokens of the conversation's last model request, when an answer recorded them. */
  tokens?: number | undefined;
  /** Messages stored verbatim in the history. */
  messages: number;
  /** Messages summarised so far, over every compaction. */
  summarized: number;
  /** Compactions made so far. */
  compactions: number;
  /** The current summary, when there is one. */
  summary?: string | undefined;
}

/** The compaction feature's state in an adapter process: what its commands use. */
export interface CompactionCommands {
  /** @throws when Redis is unreachable. */
  context(conversation: ConversationRef): Promise<ContextReport>;
  /**
   * Compacts the conversation now and waits for it (a job of the `compactions` queue, run by a worker).
   * @throws when Redis is unreachable.
   */
  compactNow(
    conversation: ConversationRef,
    owner: { platform: string; userId: string; chatId: string },
  ): Promise<CompactNowResult>;
}

/** Words of the compaction commands. */
export const COMPACTION_TEXT = {
  contextSize: {
    "zh-TW": "對話大小：約 {tokens} tokens（超過 {limit} 時會自動壓縮）",
    en: "Conversation size: about {tokens} {tokenNoun} (compacted automatically past {limit})",
  },
  contextSizeUnknown: {
    "zh-TW": "對話大小：還沒有紀錄（超過 {limit} tokens 時會自動壓縮）",
    en: "Conversation size: not recorded yet (compacted automatically past {limit} {limitNoun})",
  },
  contextCounts: {
    "zh-TW": "已摘要 {summarized} 則訊息（壓縮 {compactions} 次），保留原文 {messages} 則。",
    en: "{summarized} {summarizedNoun} summarised ({compactions} {compactionsNoun}), {messages} kept verbatim.",
  },
  contextNoSummary: {
    "zh-TW": "還沒有摘要：目前保留全部 {messages} 則訊息的原文。",
    en: "No summary yet: every message is kept verbatim ({messages} {messagesNoun}).",
  },
  contextSummary: { "zh-TW": "目前的摘要：", en: "Current summary:" },
  contextPart: { "zh-TW": "摘要（第 {part}/{parts} 段）：", en: "Summary (part {part} of {parts}):" },
  contextMore: {
    "zh-TW": "（摘要還有 {rest} 段：傳送 /context {next} 看下一段）",
    en: "(The summary has {rest} more {restNoun}: send /context {next} for the next one)",
  },
  contextNoPart: { "zh-TW": "摘要只有 {parts} 段。", en: "The summary has only {parts} {partsNoun}." },
  compacted: {
    "zh-TW": "已壓縮對話：到目前為止摘要了 {summarized} 則訊息，最近 {kept} 則保留原文。新的摘要：",
    en: "Compacted: {summarized} {summarizedNoun} summarised so far, the latest {kept} kept verbatim. The new summary:",
  },
  compactNothing: {
    "zh-TW": "目前還不需要壓縮：最近 {turns} 輪對話本來就會保留原文（現在有 {kept} 則訊息）。",
    en: "Nothing to compact yet: the latest {turns} {turnsNoun} always stay verbatim anyway ({kept} {keptNoun} now).",
  },
  compactFailed: {
    "zh-TW": "這次壓縮沒有成功（AI 服務暫時無法使用），對話維持原樣，稍後會自動再試。",
    en: "The compaction did not succeed this time (the AI service is unavailable); the conversation stays as it is and it will be retried later.",
  },
  compactPending: {
    "zh-TW": "壓縮還在進行中，稍後傳送 /context 查看新的摘要。",
    en: "The compaction is still running; send /context in a moment to see the new summary.",
  },
} satisfies Record<string, Localized>;

/** Characters of the summary shown in one `/context` reply (well within Discord's 2000 and Telegram's 4096). */
export const CONTEXT_PART_CHARS = 1500;

/** `text` in parts of at most {@link CONTEXT_PART_CHARS} UTF-16 units, cut at a line break or space when one is near, never inside a surrogate pair. */
export function summaryParts(text: string): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > CONTEXT_PART_CHARS) {
    let at = Math.max(rest.lastIndexOf("\n", CONTEXT_PART_CHARS), rest.lastIndexOf(" ", CONTEXT_PART_CHARS));
    if (at < CONTEXT_PART_CHARS / 2) at = CONTEXT_PART_CHARS;
    const code = rest.charCodeAt(at - 1);
    if (code >= 0xd800 && code <= 0xdbff) at -= 1;
    parts.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at).trimStart();
  }
  if (rest !== "") parts.push(rest);
  return parts;
}

/** `/context [part]`: the conversation's size against `COMPACT_AT_TOKENS`, what was summarised, and one part of the summary. */
export async function contextReply(
  inv: CommandInvocation,
  services: CommandServices,
  own: CompactionCommands,
): Promise<string> {
  const report = await own.context(conversationOf(inv));
  const limit = services.config.COMPACT_AT_TOKENS.toLocaleString("en-US");
  const limitNoun = englishNoun(services.config.COMPACT_AT_TOKENS, "token");
  const lines = [
    report.tokens !== undefined
      ? localize(inv.locale, COMPACTION_TEXT.contextSize, {
          tokens: report.tokens.toLocaleString("en-US"),
          tokenNoun: englishNoun(report.tokens, "token"),
          limit,
        })
      : localize(inv.locale, COMPACTION_TEXT.contextSizeUnknown, { limit, limitNoun }),
  ];
  if (report.summary === undefined) {
    lines.push(
      localize(inv.locale, COMPACTION_TEXT.contextNoSummary, {
        messages: report.messages,
        messagesNoun: englishNoun(report.messages, "message"),
      }),
    );
    return lines.join("\n");
  }
  lines.push(
    localize(inv.locale, COMPACTION_TEXT.contextCounts, {
      summarized: report.summarized,
      summarizedNoun: englishNoun(report.summarized, "message"),
      compactions: report.compactions,
      compactionsNoun: englishNoun(report.compactions, "compaction"),
      messages: report.messages,
    }),
  );
  const parts = summaryParts(report.summary);
  const asked = Number.parseInt(inv.args.trim(), 10);
  const part = Number.isInteger(asked) && asked >= 1 ? asked : 1;
  if (part > parts.length)
    return [
      ...lines,
      localize(inv.locale, COMPACTION_TEXT.contextNoPart, {
        parts: parts.length,
        partsNoun: englishNoun(parts.length, "part"),
      }),
    ].join("\n");
  lines.push(
    "",
    parts.length > 1
      ? localize(inv.locale, COMPACTION_TEXT.contextPart, { part, parts: parts.length })
      : localize(inv.locale, COMPACTION_TEXT.contextSummary),
    parts[part - 1]!,
  );
  if (part < parts.length)
    lines.push(
      "",
      localize(inv.locale, COMPACTION_TEXT.contextMore, {
        rest: parts.length - part,
        restNoun: englishNoun(parts.length - part, "part"),
        next: part + 1,
      }),
    );
  return lines.join("\n");
}

/** `/compact`: compacts now (a worker runs it) and shows the new summary's first part. */
export async function compactReply(
  inv: CommandInvocation,
  services: CommandServices,
  own: CompactionCommands,
): Promise<string> {
  const result = await own.compactNow(conversationOf(inv), {
    platform: inv.platform,
    userId: inv.userId,
    chatId: inv.chatId,
  });
  switch (result.outcome) {
    case "compacted": {
      const parts = summaryParts(result.summary);
      const lines = [
        localize(inv.locale, COMPACTION_TEXT.compacted, {
          summarized: result.summarized,
          summarizedNoun: englishNoun(result.summarized, "message"),
          kept: result.kept,
        }),
        parts[0] ?? "",
      ];
      if (parts.length > 1)
        lines.push(
          "",
          localize(inv.locale, COMPACTION_TEXT.contextMore, {
            rest: parts.length - 1,
            restNoun: englishNoun(parts.length - 1, "part"),
            next: 2,
          }),
        );
      return lines.join("\n");
    }
    case "nothing":
      return localize(inv.locale, COMPACTION_TEXT.compactNothing, {
        turns: services.config.COMPACT_KEEP_TURNS,
        turnsNoun: englishNoun(services.config.COMPACT_KEEP_TURNS, "turn"),
        kept: result.kept,
        keptNoun: englishNoun(result.kept, "message"),
      });
    case "failed":
      return localize(inv.locale, COMPACTION_TEXT.compactFailed);
    default:
      return localize(inv.locale, COMPACTION_TEXT.compactPending);
  }
}
