/**
 * The approvals feature: the buttons of an approval prompt (`ap:<approval id>:y|n|a`: approve,
 * decline, always allow; checked and recorded by the core's decider, `PressCore.decide`), `/permissions`
 * and its revoke buttons (`pm:…`: "always allow" grants), the `decisions` queue whose jobs resume
 * the paused runs (`src/worker/decision.ts`), and the grants of a conversation, which move with it.
 * It lends the core of an adapter process its decider (`AdapterServices.decide`: presses and
 * reactions on a prompt, accepted decisions queued) and a worker's answers the confirmation flow
 * (`AnswerServices.approvals`: asking, a superseded approval, the expiry jobs, closing on `/reset`;
 * `flow.ts`, `store.ts`, `wiring.ts`): the agent loop itself pauses on every dangerous call. Where a
 * prompt cannot be edited (LINE), `/reset`'s reply says that the pending confirmations were
 * cancelled (`Started.beforeReset`, {@link RESET_CLOSED}).
 */
import { scanKeys } from "../redis.js";
import { conversationKey, conversationOf } from "../queue/incoming.js";
import { localize, type Locale, type Localized } from "../i18n.js";
import { defineFeature, PRESS_AGAIN, type ButtonAnswer, type ButtonPress, type PressCore } from "../feature.js";
import { moveKey, globEscape } from "../conversations/keys.js";
import { PERMISSION_TEXT, permissionsListing, pressPermissionButton, revokeByName } from "../commands/permissions.js";
import { DECISIONS_QUEUE } from "../queue/keys.js";
import { CRASHES_BEFORE_SKIP } from "../worker/pipeline.js";
import { answerDecision } from "../worker/decision.js";
import { decideForGroup, decisionNotice, type DecisionRequest } from "./decider.js";
import { grantStoreFor, type GrantStore } from "./grants.js";
import { approvalDecider, approvalFlow } from "./wiring.js";

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

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/** A press on an approval prompt's button: checked and recorded by the decider (the requester, or a group's admin for the group). */
async function pressApproval(press: ButtonPress, locale: Locale, core: PressCore): Promise<ButtonAnswer> {
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
      ...(press.reply ? { reply: press.reply } : {}),
    };
    const result = await decideForGroup(core, request, press);
    core.log.info(
      { via: "button", deciderId: press.userId, status: result.status },
      `approval button: ${result.status}`,
    );
    return {
      kind: "approvals",
      notice: decisionNotice(result, locale),
      ...(result.status === "accepted" ? { removeButtons: true } : {}),
    };
  } catch (error) {
    core.log.error({ err: error, platform: press.platform }, "approval decision failed");
    return { kind: "approvals", notice: localize(locale, PRESS_AGAIN), failed: true };
  }
}

/** A press on a `/permissions` revoke button: only the owner's press revokes, their grant in the pressed message's conversation. */
async function pressPermission(
  press: ButtonPress,
  locale: Locale,
  grants: GrantStore,
  core: PressCore,
): Promise<ButtonAnswer> {
  try {
    const answer = await pressPermissionButton(
      {
        data: press.data,
        platform: press.platform,
        chatId: press.chatId,
        ...(press.topicId ? { topicId: press.topicId } : {}),
        userId: press.userId,
      },
      grants,
      locale,
    );
    return { kind: "approvals", notice: answer.notice, ...(answer.revoked ? { dropButton: true } : {}) };
  } catch (error) {
    core.log.error({ err: error, platform: press.platform, chatId: press.chatId }, "/permissions revoke button failed");
    return { kind: "approvals", notice: localize(locale, PERMISSION_TEXT.tryAgain) };
  }
}

/**
 * The line `/reset`'s reply adds where the pending approvals it closes keep their prompts as sent
 * (`Outbound.promptsStayAsSent`: LINE; Telegram and Discord edit the prompt instead): one
 * approval, or several (a group's members each had one open).
 */
export const RESET_CLOSED = {
  one: d("待確認的操作已取消。", "The action waiting for confirmation was cancelled."),
  many: d("待確認的操作都已取消。", "The actions waiting for confirmation were cancelled."),
} satisfies Record<string, Localized>;

/** The approvals feature (see the module comment). */
export const approvalsFeature = defineFeature<GrantStore>({
  name: "approvals",
  // The decider of the presses and reactions on approval prompts (`AdapterServices.decide`), its decisions queued for a worker.
  start({ config, log, redis, prefix }) {
    const decider = approvalDecider({ config, redis, prefix, log });
    return {
      state: grantStoreFor(redis, config, log),
      lends: { decide: (request) => decider.decide(request) },
      // `/reset` closes the pending approvals; where the prompt cannot say so (LINE), its reply does.
      beforeReset: async (conversation, place) => {
        if (!place.promptsStayAsSent) return undefined;
        const pending = await decider.pendingBeforeReset(conversation);
        return pending === 0 ? undefined : pending === 1 ? RESET_CLOSED.one : RESET_CLOSED.many;
      },
      close: () => decider.close(),
    };
  },
  // A worker's confirmation flow (`AnswerServices.approvals`): a paused run's prompt, a superseded approval, the expiry jobs, `/reset`.
  worker({ config, log, bullRedis, redis, prefix, toolbox, client, history, tracerFor }) {
    // Pending hints on the conversations' Redis: the worker reads them with the history (one `MGET`).
    const wired = approvalFlow({
      config,
      log,
      redis: bullRedis,
      hints: redis,
      prefix,
      toolbox,
      client,
      history,
      tracerFor,
    });
    return { lends: { approvals: wired.flow }, close: () => wired.close() };
  },
  commands: [
    {
      name: "permissions",
      description: d(
        "你在這裡「一律允許」的工具；加上工具名稱即可撤銷",
        "Tools you always allow here; add a tool name to revoke it",
      ),
      access: "everyone",
      option: {
        name: "tool",
        description: d("撤銷這個工具的一律允許（工具名稱）", "Revoke the always-allow of this tool (its name)"),
        required: false,
      },
      async run(inv, services, grants) {
        const asker = { ...conversationOf(inv), userId: inv.userId, locale: inv.locale };
        const tool = inv.args.trim().split(/\s+/)[0] ?? "";
        if (tool !== "") return revokeByName(asker, tool, grants);
        return permissionsListing({ ...asker, timezone: services.config.TIMEZONE }, grants);
      },
    },
  ],
  buttons: {
    prefixes: ["ap:", "pm:"],
    press: (press, locale, grants, core) =>
      press.data.startsWith("pm:") ? pressPermission(press, locale, grants, core) : pressApproval(press, locale, core),
  },
  queues: [
    {
      // Decisions resume paused runs; a queue of their own, so a decision never waits behind a chat.
      name: DECISIONS_QUEUE,
      fastTakeOver: true,
      maxStalledCount: CRASHES_BEFORE_SKIP,
      processor: ({ answer }) => ({ process: (job) => answerDecision(answer, job) }),
    },
  ],
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
});
