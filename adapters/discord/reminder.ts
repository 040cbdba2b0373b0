/**
 * Reminders on Discord: the content (`<@id>` first in a guild channel, with
 * `allowed_mentions: { users: [id] }` so only the owner is pinged), the done / snooze buttons
 * (`custom_id` `rm:d:<token>` / `rm:s:<token>`, at most 100 characters) and the nonce that makes a
 * resend of the same occurrence return the first message (`enforce_nonce`).
 *
 * Sources: https://discord.com/developers/docs/resources/message#allowed-mentions-object,
 * https://discord.com/developers/docs/resources/message#create-message-jsonform-params (`nonce`
 * up to 25 characters, `enforce_nonce`), https://discord.com/developers/docs/components/reference#button.
 */
import { createHash } from "node:crypto";
import { localize, type Locale } from "../../src/i18n.js";
import type { ReminderMessage } from "../../src/outbound.js";
import { plainContent } from "./plain.js";

/** The message body of a reminder: content (its plain text shown as it is, {@link plainContent}), pings, buttons, nonce. */
export function reminderBody(reminder: ReminderMessage, locale: Locale): Record<string, unknown> {
  const { userId } = reminder.owner;
  const mention = reminder.chatKind === "group" && /^\d+$/.test(userId);
  return {
    content: mention ? `<@${userId}> ${plainContent(reminder.text)}` : plainContent(reminder.text),
    allowed_mentions: mention ? { parse: [], users: [userId] } : { parse: [] },
    components: reminderComponents(reminder.token, locale),
    nonce: reminderNonce(reminder.token),
    enforce_nonce: true,
  };
}

/** One action row: ✅ 完成 (`rm:d:<token>`) and 💤 稍後提醒 (`rm:s:<token>`), labels in `locale`. */
export function reminderComponents(token: string, locale: Locale): Record<string, unknown>[] {
  return [
    {
      type: 1,
      components: [
        {
          type: 2,
          style: 3,
          label: localize(locale, { "zh-TW": "✅ 完成", en: "✅ Done" }),
          custom_id: `rm:d:${token}`,
        },
        {
          type: 2,
          style: 2,
          label: localize(locale, { "zh-TW": "💤 稍後提醒", en: "💤 Snooze" }),
          custom_id: `rm:s:${token}`,
        },
      ],
    },
  ];
}

/** A 25-character nonce of the occurrence (the token names it): a resend within minutes returns the first message. */
export function reminderNonce(token: string): string {
  return createHash("sha256").update(token).digest("base64url").slice(0, 25);
}
