/**
 * The contract for deciding an approval from a platform event (button press, reaction, console
 * answer). The implementation (Redis-backed, atomic) lives beside this file; adapters depend
 * only on this interface.
 */
import type { ApprovalVerdict } from "../agent/contract.js";
import { localize, type Locale } from "../i18n.js";
import type { Platform } from "../queue/incoming.js";
import { durationInWords } from "../reminders/time.js";

/** A decision someone tried to make on an approval prompt. */
export interface DecisionRequest {
  /** The opaque token from the button's `callback_data` / `custom_id`, or the prompt's approval id. */
  approvalId: string;
  platform: Platform;
  /** Who pressed or reacted (same id scheme as `IncomingMessage.userId`). */
  deciderId: string;
  approve: boolean;
  /**
   * "Always allow": approve this call and let the worker record a grant for the requester × tool ×
   * conversation (`ALWAYS_ALLOW_DAYS`). Implies `approve`. Refused (`always_refused`) when the
   * prompt did not offer it.
   */
  always?: boolean;
  /**
   * The press's own way to answer, when the platform gives one (LINE: the postback event's reply
   * token, single use, valid about a minute from `replyTokenAt`, ms): the answer that follows an
   * accepted decision goes out with it while it is valid, instead of as a push. Carried into the
   * decision job unchanged; never part of the decision itself.
   */
  reply?: DecisionReply;
}

/** See {@link DecisionRequest.reply}. */
export interface DecisionReply {
  replyToken: string;
  /** When the press happened, ms since the Unix epoch. */
  replyTokenAt: number;
}

/**
 * What happened to a decision:
 * - `accepted`: the first valid decision; it was queued for a worker, which runs or declines the tool;
 * - `not_found`: no such approval, or it expired;
 * - `lost`: no such approval, and Redis lost its data since it could have been asked (the bot lost its state);
 * - `already_decided`: it was decided before (by its requester, or closed by their new message);
 *   nothing changed. Said to whoever pressed, the requester or not. `verdict` says how, when known:
 *   also after the record was deleted, until the prompt's own expiry (see `approval:decided:<id>` in `store.ts`);
 * - `not_requester`: it is still open, and only `requesterName` may decide; nothing changed;
 * - `always_refused`: "always allow" was asked for a tool that refuses grants (`alwaysAllow: false`;
 *   its prompt has no such button); nothing changed, the requester may still confirm or cancel.
 * An accepted "always allow" carries `always` (with the grant's length in ms when known).
 */
export type DecisionResult =
  | { status: "accepted"; approve: boolean; always?: { grantMs?: number } }
  | { status: "not_found" }
  | { status: "lost" }
  | { status: "already_decided"; verdict?: DecidedVerdict }
  | { status: "not_requester"; requesterName: string }
  | { status: "always_refused" };

/**
 * How an approval that is no longer open was decided, as a later press is told: confirmed
 * (`approved`, also "always allow"), cancelled (`declined`), or closed by the requester's new
 * message (`superseded`). An expired approval is not decided: a press on it is `not_found`.
 */
export type DecidedVerdict = Extract<ApprovalVerdict, "approved" | "declined" | "superseded">;

/** The {@link DecidedVerdict}s, for checking a value read back from Redis. */
export const DECIDED_VERDICTS: readonly DecidedVerdict[] = ["approved", "declined", "superseded"];

/** Checks a decision and, when it is the first valid one, queues it. */
export interface ApprovalDecider {
  /** Never throws for a refused decision (see {@link DecisionResult}); throws only when Redis is unreachable. */
  decide(request: DecisionRequest): Promise<DecisionResult>;
}

/**
 * Decides with `decider`, and when the decider is not the requester of an approval asked on behalf
 * of a Telegram group (an anonymous admin's message: requester `chat:<group id>`) but administers
 * that group, decides it as the group: any administrator may answer for the group. Nobody else's
 * request is decided by an administrator (the second attempt is refused as `not_requester` too).
 *
 * @param group.chatId - the chat of the pressed prompt.
 * @param group.isGroupAdmin - whether the presser administers that chat (Telegram `getChatMember`);
 *   absent where the platform has no such requests (only the requester decides).
 * @throws what `decider.decide` throws (Redis unreachable).
 */
export async function decideForGroup(
  decider: ApprovalDecider,
  request: DecisionRequest,
  group: { chatId: string; isGroupAdmin?: () => Promise<boolean> },
): Promise<DecisionResult> {
  const result = await decider.decide(request);
  const asGroup = `chat:${group.chatId}`;
  if (
    result.status !== "not_requester" ||
    !group.isGroupAdmin ||
    request.deciderId === asGroup ||
    !(await group.isGroupAdmin())
  )
    return result;
  return decider.decide({ ...request, deciderId: asGroup });
}

/** The notice of an `already_decided` press, by how it was decided (`unknown`: not said). */
const ALREADY_DECIDED = {
  approved: { "zh-TW": "這個請求已經確認過了。", en: "This request was already confirmed." },
  declined: { "zh-TW": "這個請求已經取消了。", en: "This request was already cancelled." },
  superseded: {
    "zh-TW": "這個請求已經結束了：收到新訊息，未確認，未執行。",
    en: "This request was already closed: a new message came, so it was not done.",
  },
  unknown: { "zh-TW": "這個請求已經處理過了。", en: "This request was already decided." },
} as const;

/**
 * The short notice shown to the person who pressed (Telegram toast, Discord ephemeral reply).
 * Returns the text in `locale`.
 */
export function decisionNotice(result: DecisionResult, locale: Locale): string {
  switch (result.status) {
    case "accepted":
      if (result.always) {
        return result.always.grantMs
          ? localize(
              locale,
              {
                "zh-TW": "已確認，處理中…之後 {duration}內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。",
                en: "Confirmed, working on it… For the next {duration} you will not be asked again for this tool here (/permissions to revoke).",
              },
              { duration: durationInWords(result.always.grantMs, locale) },
            )
          : localize(locale, {
              "zh-TW": "已確認，處理中…之後你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。",
              en: "Confirmed, working on it… You will not be asked again for this tool here (/permissions to revoke).",
            });
      }
      return result.approve
        ? localize(locale, { "zh-TW": "已確認，處理中…", en: "Confirmed, working on it…" })
        : localize(locale, { "zh-TW": "已取消。", en: "Cancelled." });
    case "always_refused":
      return localize(locale, {
        "zh-TW": "這個動作不能設為一律允許，請按「確認」或「取消」。",
        en: "This action cannot be always allowed; press Confirm or Cancel.",
      });
    case "not_found":
      return localize(locale, {
        "zh-TW": "這個確認請求已過期或不存在。",
        en: "This request has expired or no longer exists.",
      });
    case "lost":
      return localize(locale, {
        "zh-TW": "抱歉，機器人的資料遺失了（資料庫重新啟動後是空的），這個確認請求已無法處理。請再說一次你的需求。",
        en: "Sorry, the bot lost its stored data (its database restarted empty), so this request can no longer be handled. Please ask again.",
      });
    case "already_decided":
      return localize(locale, ALREADY_DECIDED[result.verdict ?? "unknown"]);
    case "not_requester":
      return localize(
        locale,
        { "zh-TW": "只有 {name} 可以決定。", en: "Only {name} can decide." },
        { name: result.requesterName },
      );
  }
}
