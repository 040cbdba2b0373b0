/**
 * Approval prompts on Telegram: an inline keyboard whose buttons carry `ap:<approvalId>:y|n`, and
 * `ap:<approvalId>:a` ("always allow") when the prompt offers it.
 *
 * Source: Bot API `InlineKeyboardButton.callback_data`, "1-64 bytes"
 * (https://core.telegram.org/bots/api#inlinekeyboardbutton).
 */
import type { InlineKeyboardMarkup } from "grammy/types";
import type { Config } from "../../src/config.js";
import { localize, type Locale } from "../../src/i18n.js";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type { ApprovalPrompt } from "../../src/outbound.js";
import { escapeHtml } from "./html.js";

/** Longest `callback_data`, in bytes (UTF-8), per the Bot API. */
export const CALLBACK_DATA_MAX_BYTES = 64;

const CALLBACK = /^ap:([A-Za-z0-9_-]{1,59}):([yna])$/;

/**
 * The `callback_data` of a button: `ap:<approvalId>:y` (approve), `…:n` (decline) or `…:a` (`"always"`: always allow);
 * presses are read by the core (`parseApprovalButton` of `src/buttons.ts`).
 * @throws {Error} when the approval id is not 1-59 characters of `A-Z a-z 0-9 _ -` (the data would not fit 64 bytes).
 */
export function callbackData(approvalId: string, approve: boolean | "always"): string {
  const data = `ap:${approvalId}:${approve === "always" ? "a" : approve ? "y" : "n"}`;
  if (!CALLBACK.test(data))
    throw new Error(
      `approval id must be 1-59 characters of A-Z, a-z, 0-9, _ and - (got ${approvalId.length} characters)`,
    );
  return data;
}

/**
 * The keyboard: 確認 / 取消 (in `locale`) in one row, and, when `alwaysAllow`, 一律允許 in a
 * second row (a long label must not squeeze the first two).
 */
export function approvalKeyboard(approvalId: string, locale: Locale, alwaysAllow = false): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      [
        {
          text: localize(locale, { "zh-TW": "✅ 確認", en: "✅ Confirm" }),
          callback_data: callbackData(approvalId, true),
        },
        {
          text: localize(locale, { "zh-TW": "❌ 取消", en: "❌ Cancel" }),
          callback_data: callbackData(approvalId, false),
        },
      ],
      ...(alwaysAllow
        ? [[{ text: localize(locale, ALWAYS_ALLOW_LABEL), callback_data: callbackData(approvalId, "always") }]]
        : []),
    ],
  };
}

/** The label of the "always allow" button. */
const ALWAYS_ALLOW_LABEL = { "zh-TW": "🔓 一律允許", en: "🔓 Always allow" } as const;

/**
 * The prompt text (Telegram HTML): the action, who may decide, and the expiry as a local time
 * (`TIMEZONE`) with the minutes left.
 *
 * @param now - the current time in ms since the Unix epoch (for the minutes left).
 */
export function approvalPromptHtml(prompt: ApprovalPrompt, config: Config, now = Date.now()): string {
  const locale = prompt.locale ?? config.BOT_LOCALE;
  const time = new Intl.DateTimeFormat(locale === "zh-TW" ? "zh-TW" : "en-GB", {
    timeZone: config.TIMEZONE,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23", // "00:02" after midnight; `hour12: false` gives zh-TW "24:02"
  }).format(new Date(prompt.expiresAt));
  const minutes = Math.max(1, Math.round((prompt.expiresAt - now) / 60_000));
  const title = localize(locale, { "zh-TW": "⚠️ 需要你的確認", en: "⚠️ Confirmation needed" });
  const who = localize(
    locale,
    {
      "zh-TW": "只有 {name} 可以決定，{time} 前有效（約 {minutes} 分鐘）。",
      en: "Only {name} can decide, until {time} (about {minutes} min).",
    },
    { name: escapeHtml(prompt.requesterName), time, minutes },
  );
  return `<b>${title}</b>\n${quotedHtml(prompt.action)}\n\n${who}`;
}

/**
 * Plain text as Telegram HTML, with each run of quoted lines (`> text`, or `>` alone for an empty
 * line: how the core quotes a multi-line value, e.g. an MCP call's input) as one `blockquote`.
 */
function quotedHtml(text: string): string {
  const out: string[] = [];
  let quote: string[] = [];
  const flush = () => {
    if (quote.length > 0) out.push(`<blockquote>${quote.join("\n")}</blockquote>`);
    quote = [];
  };
  for (const line of text.split("\n")) {
    if (line === ">" || line.startsWith("> ")) quote.push(escapeHtml(line.slice(2)));
    else {
      flush();
      out.push(escapeHtml(line));
    }
  }
  flush();
  return out.join("\n");
}

/**
 * The edited prompt (Telegram HTML): the core's text, with the outcome mark in front unless the
 * text already starts with it (the core's `outcomeText` does), so the mark is never doubled.
 */
export function approvalOutcomeHtml(outcome: ApprovalVerdict, text: string): string {
  const mark = { approved: "✅", declined: "❌", expired: "⌛", superseded: "↩️" }[outcome];
  return text.startsWith(mark) ? escapeHtml(text) : `${mark} ${escapeHtml(text)}`;
}
