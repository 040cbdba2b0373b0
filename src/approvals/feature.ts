/**
 * The approvals feature: the buttons of an approval prompt (`ap:<approval id>:y|n|a`: approve,
 * decline, always allow) and of `/permissions` (`pm:…`: revoke an "always allow" grant), and the
 * grants of a conversation, which move with it.
 */
import { scanKeys } from "../redis.js";
import { conversationKey } from "../queue/incoming.js";
import { localize } from "../i18n.js";
import { PRESS_AGAIN, type ButtonAnswer, type ButtonPress, type Feature, type PressParts } from "../feature.js";
import type { Locale } from "../i18n.js";
import { moveKey, globEscape } from "../conversations/keys.js";
import { decideForGroup, decisionNotice, type DecisionRequest } from "./decision.js";

/** The approval id on the buttons of a closed prompt (Discord keeps them, disabled): never a real approval. */
export const CLOSED_APPROVAL_ID = "closed";

/**
 * Approval button data: `ap:<approval id>:y` (approve), `:n` (decline), `:a` (always allow). Ids are at most 90
 * characters (Discord's `custom_id` is at most 100).
 */
const APPROVAL_BUTTON = /^ap:([A-Za-z0-9_-]{1,90}):([yna])$/;

/** Reads approval button data; undefined for anything else. `always` implies `approve`. */
export function parseApprovalButton(
  data: string,
): { approvalId: string; approve: boolean; always: boolean } | undefined {
  const m = APPROVAL_BUTTON.exec(data);
  return m ? { approvalId: m[1]!, approve: m[2] !== "n", always: m[2] === "a" } : undefined;
}

/** A press on an approval prompt's button: checked and recorded by the decider (the requester, or a group's admin for the group). */
async function pressApproval(press: ButtonPress, locale: Locale, parts: PressParts): Promise<ButtonAnswer> {
  const parsed = parseApprovalButton(press.data);
  if (!parsed || parsed.approvalId === CLOSED_APPROVAL_ID)
    return { kind: "approvals", notice: decisionNotice({ status: "not_found" }, locale) };
  try {
    const request: DecisionRequest = {
      approvalId: parsed.approvalId,
      platform: press.platform,
      deciderId: press.userId,
      approve: parsed.approve,
      ...(parsed.always ? { always: true } : {}),
    };
    const result = await decideForGroup(parts.approvals, request, press);
    parts.log.info(
      { via: "button", deciderId: press.userId, status: result.status },
      `approval button: ${result.status}`,
    );
    return {
      kind: "approvals",
      notice: decisionNotice(result, locale),
      ...(result.status === "accepted" ? { removeButtons: true } : {}),
    };
  } catch (error) {
    parts.log.error({ err: error, platform: press.platform }, "approval decision failed");
    return { kind: "approvals", notice: localize(locale, PRESS_AGAIN), failed: true };
  }
}

/** A press on a `/permissions` revoke button: only the owner's press revokes, their grant in the pressed message's conversation. */
async function pressPermission(press: ButtonPress, locale: Locale, parts: PressParts): Promise<ButtonAnswer> {
  const answer = await parts.commands.pressPermission({
    data: press.data,
    platform: press.platform,
    chatId: press.chatId,
    ...(press.topicId ? { topicId: press.topicId } : {}),
    userId: press.userId,
    locale,
  });
  return { kind: "approvals", notice: answer.notice, ...(answer.revoked ? { dropButton: true } : {}) };
}

/** The approvals feature (see the module comment). */
export const approvalsFeature: Feature = {
  name: "approvals",
  buttons: {
    prefixes: ["ap:", "pm:"],
    press: (press, locale, parts) =>
      press.data.startsWith("pm:") ? pressPermission(press, locale, parts) : pressApproval(press, locale, parts),
  },
  conversation: {
    stores: [
      {
        // "Always allow" grants: `grants:{<platform>:<userId>}:<conversation>`, one hash per person (src/approvals/grants.ts).
        name: "grants",
        move: async (redis, from, to) => {
          for (const key of await scanKeys(redis, `grants:{${from.platform}:*}:${globEscape(conversationKey(from))}`)) {
            const target = key.slice(0, key.length - conversationKey(from).length) + conversationKey(to);
            await moveKey(redis, key, target);
          }
        },
      },
    ],
  },
};
