/**
 * Reminders on Telegram: the message (HTML, with a `tg://user?id=` mention in groups, which the
 * Bot API turns into a `text_mention` that notifies only that user) and its done / snooze keyboard
 * (`callback_data` `rm:d:<token>` / `rm:s:<token>`, at most 64 bytes).
 *
 * Sources: https://core.telegram.org/bots/api#formatting-options ("inline mention of a user"),
 * https://core.telegram.org/bots/api#inlinekeyboardbutton (`callback_data` 1-64 bytes).
 */
import type { InlineKeyboardMarkup } from "grammy/types";
import { localize, type Locale } from "../../src/i18n.js";
import type { ReminderMessage } from "../../src/outbound.js";
import { escapeHtml } from "./html.js";

/** The reminder's text as Telegram HTML: the owner's mention first in a group (not for a `chat:` sender). */
export function reminderHtml(reminder: ReminderMessage): string {
  const text = escapeHtml(reminder.text);
  const { userId, userName } = reminder.owner;
  if (reminder.chatKind !== "group" || !/^\d+$/.test(userId)) return text;
  return `<a href="tg://user?id=${userId}">${escapeHtml(userName)}</a> ${text}`;
}

/** The done / snooze keyboard of a reminder, labels in `locale`. */
export function reminderKeyboard(token: string, locale: Locale): InlineKeyboardMarkup {
  return {
    inline_keyboard: [
      [
        { text: localize(locale, { "zh-TW": "✅ 完成", en: "✅ Done" }), callback_data: `rm:d:${token}` },
        { text: localize(locale, { "zh-TW": "💤 稍後提醒", en: "💤 Snooze" }), callback_data: `rm:s:${token}` },
      ],
    ],
  };
}
