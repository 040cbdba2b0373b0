/**
 * Approval prompts on Discord: the buttons' `custom_id` tokens, the reactions, and the texts.
 *
 * A button's `custom_id` is at most 100 characters
 * (https://discord.com/developers/docs/interactions/message-components#button-object).
 * Ours is `ap:<approvalId>:y`, `ap:<approvalId>:n` or `ap:<approvalId>:a` ("always allow", when
 * the prompt offers it): the approval id is the opaque random token from Redis, so the button
 * carries no data of its own.
 */
import { localize, type Locale } from "../../src/i18n.js";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type { ApprovalPrompt } from "../../src/outbound.js";
import { CLOSED_APPROVAL_ID } from "../../src/buttons.js";
import { sliceUnits } from "../../src/cut.js";
import { plainContent } from "./plain.js";

/** The reaction that approves, added by the bot to every prompt. */
export const APPROVE_EMOJI = "✅";
/** The reaction that declines, added by the bot to every prompt. */
export const DECLINE_EMOJI = "❌";

/** Longest `custom_id` Discord accepts, in characters. */
export const MAX_CUSTOM_ID = 100;

/**
 * The `custom_id` of a prompt button: approve (`true`), decline (`false`) or always allow (`"always"`).
 * @throws {RangeError} when the approval id is not 1-90 characters of `[A-Za-z0-9_-]`.
 */
export function approvalCustomId(approvalId: string, approve: boolean | "always"): string {
  if (!/^[A-Za-z0-9_-]{1,90}$/.test(approvalId))
    throw new RangeError("approval id must be 1-90 characters of A-Z, a-z, 0-9, _ and -");
  return `ap:${approvalId}:${approve === "always" ? "a" : approve ? "y" : "n"}`;
}

/** The decision a reaction stands for; `undefined` for any other emoji. */
export function reactionDecision(emoji: string | null): boolean | undefined {
  if (emoji === APPROVE_EMOJI) return true;
  if (emoji === DECLINE_EMOJI) return false;
  return undefined;
}

/** Button labels in the bot's locale. */
export function buttonLabels(locale: Locale): { approve: string; decline: string; always: string } {
  return {
    approve: localize(locale, { "zh-TW": "確認", en: "Confirm" }),
    decline: localize(locale, { "zh-TW": "取消", en: "Cancel" }),
    always: localize(locale, { "zh-TW": "一律允許", en: "Always allow" }),
  };
}

/**
 * The action row of a prompt: 確認 (green, style 3) and 取消 (red, style 4), and 一律允許
 * (blurple, style 1) when `alwaysAllow`. When `closed` is given the prompt keeps 確認 and 取消,
 * disabled; the chosen one keeps its colour, the other turns grey (the outcome text says whether
 * it was "always allow").
 */
export function promptComponents(
  approvalId: string,
  locale: Locale,
  closed?: ApprovalVerdict,
  alwaysAllow = false,
): unknown[] {
  const labels = buttonLabels(locale);
  const id = closed ? CLOSED_APPROVAL_ID : approvalId;
  return [
    {
      type: 1,
      components: [
        {
          type: 2,
          style: closed && closed !== "approved" ? 2 : 3,
          label: labels.approve,
          custom_id: approvalCustomId(id, true),
          disabled: Boolean(closed),
        },
        {
          type: 2,
          style: closed && closed !== "declined" ? 2 : 4,
          label: labels.decline,
          custom_id: approvalCustomId(id, false),
          disabled: Boolean(closed),
        },
        ...(alwaysAllow && !closed
          ? [{ type: 2, style: 1, label: labels.always, custom_id: approvalCustomId(id, "always"), disabled: false }]
          : []),
      ],
    },
  ];
}

/**
 * The prompt's text: what will happen, who may decide, and when it expires (a Discord timestamp
 * `<t:unix:R>`, which each reader's client shows in their own time zone and language). The action
 * and the name are plain text, shown as they are ({@link plainContent}: Markdown escaped); the
 * escaped action is cut to 1500 characters so the message stays within Discord's 2000.
 */
export function promptText(prompt: ApprovalPrompt, locale: Locale): string {
  // Plain words with names and values people chose: shown as they are, not as Markdown.
  const plain = plainContent(prompt.action);
  const action = plain.length > 1500 ? `${sliceUnits(plain, 1499)}…` : plain;
  const unix = Math.floor(prompt.expiresAt / 1000);
  return localize(
    locale,
    {
      "zh-TW": "⚠️ 需要確認：{action}\n只有 **{name}** 可以決定：按下按鈕，或回應 {yes} / {no}。<t:{unix}:R>到期。",
      en: "⚠️ Confirmation needed: {action}\nOnly **{name}** can decide: press a button, or react {yes} / {no}. Expires <t:{unix}:R>.",
    },
    { action, name: plainContent(sliceUnits(prompt.requesterName, 100)), yes: APPROVE_EMOJI, no: DECLINE_EMOJI, unix },
  );
}

/** The icon shown before the outcome text of a closed prompt. */
export function outcomeIcon(outcome: ApprovalVerdict): string {
  switch (outcome) {
    case "approved":
      return "✅";
    case "declined":
      return "❌";
    case "expired":
      return "⌛";
    case "superseded":
      return "↩️";
  }
}
