/**
 * The LINE message objects the bot sends: text (at most {@link LINE_TEXT_LIMIT} characters), text
 * with quick reply buttons (postback actions), and buttons templates (approval prompts, reminders).
 * LINE renders no Markdown (it would show `**今天**` as it is), so answers and command replies, which
 * are Markdown, are sent as plain text ({@link markdownToPlain} of `src/plain-text.ts`), split as
 * Discord splits (`adapters/discord/split.ts`: never a cut surrogate pair). What the core hands over
 * as plain text is shown as it is, never read as Markdown: an approval prompt's action and the
 * requester's name, a reminder's text and its owner's name, a notice (what is approved must read as
 * what will run, and a reminder as it was set: a task's `**list my todos**`, an MCP call's
 * `*_old_*.log`, a reminder's `**drink** water` keep their characters).
 *
 * Sources (limits): https://developers.line.biz/en/reference/messaging-api/#text-message (5,000
 * characters), #buttons (text 160 characters, 4 actions), #template-messages (`altText` 400),
 * #postback-action (`label` 20, `data` 300, `displayText` 300), #items-object (13 quick reply buttons).
 */
import type { messagingApi } from "@line/bot-sdk";
import { localize, type Locale } from "../../src/i18n.js";
import type { ApprovalPrompt, NoticeButton, ReminderMessage } from "../../src/outbound.js";
import { splitMessage } from "../discord/split.js";
import { markdownToPlain } from "../../src/plain-text.js";

/** Longest text message, in characters (UTF-16 code units, the stricter count). */
export const LINE_TEXT_LIMIT = 5000;
/** Most message objects in one reply or push request. */
export const LINE_MESSAGES_PER_CALL = 5;
/** Longest action label. */
export const LINE_LABEL_LIMIT = 20;
/** Longest postback `data`. */
export const LINE_POSTBACK_DATA_LIMIT = 300;
/** Longest buttons-template text (no image, no title). */
export const LINE_TEMPLATE_TEXT_LIMIT = 160;
/** Most quick reply buttons on one message. */
export const LINE_QUICK_REPLY_LIMIT = 13;

/** `text` cut to `max` UTF-16 units, ending in `…` when cut (never inside a surrogate pair). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  if (/[\uD800-\uDBFF]/.test(text[end - 1] ?? "")) end--;
  return `${text.slice(0, end)}…`;
}

/** Plain text as messages' texts of at most {@link LINE_TEXT_LIMIT} characters; none when it has no visible text. */
export function plainChunks(text: string): string[] {
  return splitMessage(text, LINE_TEXT_LIMIT).filter((chunk) => chunk.trim() !== "");
}

/** An answer (Markdown) as plain text messages of at most {@link LINE_TEXT_LIMIT} characters; none when it has no visible text. */
export function answerChunks(text: string): string[] {
  return plainChunks(markdownToPlain(text));
}

/** A text message. */
export function textMessage(text: string): messagingApi.TextMessage {
  return { type: "text", text: cut(text, LINE_TEXT_LIMIT) };
}

/** A postback action: `label` cut to 20 characters, `displayText` (what the chat shows the presser wrote) the label. */
export function postback(label: string, data: string): messagingApi.PostbackAction {
  if (data.length > LINE_POSTBACK_DATA_LIMIT)
    throw new RangeError(`postback data over ${LINE_POSTBACK_DATA_LIMIT} characters`);
  const shown = cut(label, LINE_LABEL_LIMIT);
  return { type: "postback", label: shown, data, displayText: shown };
}

/**
 * A text message with quick reply buttons (at most 13; more are left out), e.g. a command's reply
 * with buttons (its Markdown made plain by the caller) or a notice; `text` is plain, sent as it is.
 */
export function withQuickReply(text: string, buttons: NoticeButton[]): messagingApi.TextMessage {
  const message = textMessage(text);
  if (buttons.length === 0) return message;
  return {
    ...message,
    quickReply: {
      items: buttons
        .slice(0, LINE_QUICK_REPLY_LIMIT)
        .map((b) => ({ type: "action", action: postback(b.label, b.data) })),
    },
  };
}

/** A buttons template: `text` cut to 160 characters, `altText` (shown in notifications and old clients) to 400. */
export function buttonsTemplate(text: string, actions: messagingApi.Action[]): messagingApi.TemplateMessage {
  return {
    type: "template",
    altText: cut(text, 400),
    template: { type: "buttons", text: cut(text, LINE_TEMPLATE_TEXT_LIMIT), actions: actions.slice(0, 4) },
  };
}

/**
 * The approval prompt (the action and the name as they are: plain text, see the module comment):
 * the whole text as a text message when it is longer than a template holds,
 * then a buttons template (確認 / 取消, and 一律允許 when offered) whose postbacks carry
 * `ap:<approvalId>:y|n|a`; only the requester's press decides (the core checks it). The paused
 * answer's lead line (`prompt.lead`, Markdown made plain) comes first, as a text message.
 */
export function approvalMessages(prompt: ApprovalPrompt, locale: Locale, timezone: string): messagingApi.Message[] {
  const time = new Intl.DateTimeFormat(locale === "zh-TW" ? "zh-TW" : "en-GB", {
    timeZone: timezone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23", // "00:02" after midnight; `hour12: false` gives zh-TW "24:02"
  }).format(new Date(prompt.expiresAt));
  const text = localize(
    locale,
    {
      "zh-TW": "⚠️ 需要你的確認：{action}\n只有 {name} 可以決定，{time} 前有效。",
      en: "⚠️ Confirmation needed: {action}\nOnly {name} can decide, until {time}.",
    },
    { action: prompt.action, name: prompt.requesterName, time },
  );
  const actions = [
    postback(localize(locale, { "zh-TW": "✅ 確認", en: "✅ Confirm" }), `ap:${prompt.approvalId}:y`),
    postback(localize(locale, { "zh-TW": "❌ 取消", en: "❌ Cancel" }), `ap:${prompt.approvalId}:n`),
    ...(prompt.alwaysAllow
      ? [postback(localize(locale, { "zh-TW": "🔓 一律允許", en: "🔓 Always allow" }), `ap:${prompt.approvalId}:a`)]
      : []),
  ];
  // The paused answer's lead line (Markdown: a grant given, a request closed, a transcript) first.
  const lead = prompt.lead !== undefined ? [textMessage(markdownToPlain(prompt.lead))] : [];
  if (text.length <= LINE_TEMPLATE_TEXT_LIMIT) return [...lead, buttonsTemplate(text, actions)];
  const question = localize(
    locale,
    { "zh-TW": "⚠️ 要執行嗎？（{name}）", en: "⚠️ Go ahead? ({name})" },
    {
      name: cut(prompt.requesterName, 60),
    },
  );
  return [...lead, textMessage(text), buttonsTemplate(question, actions)];
}

/**
 * A reminder: the owner's name first in a group (LINE has no mention a bot can make in a plain
 * text message), then the text as it was set (plain, see the module comment), as a buttons
 * template with 完成 (`rm:d:<token>`) and 稍後提醒 (`rm:s:<token>`); a text longer than a template
 * holds goes first as a text message.
 */
export function reminderMessages(reminder: ReminderMessage, locale: Locale): messagingApi.Message[] {
  const text = reminder.chatKind === "group" ? `${reminder.owner.userName} ${reminder.text}` : reminder.text;
  const actions = [
    postback(localize(locale, { "zh-TW": "✅ 完成", en: "✅ Done" }), `rm:d:${reminder.token}`),
    postback(localize(locale, { "zh-TW": "💤 稍後提醒", en: "💤 Snooze" }), `rm:s:${reminder.token}`),
  ];
  if (text.length <= LINE_TEMPLATE_TEXT_LIMIT) return [buttonsTemplate(text, actions)];
  return [textMessage(text), buttonsTemplate("⏰", actions)];
}
