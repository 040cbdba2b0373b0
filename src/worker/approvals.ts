/**
 * The worker's hook points for confirming dangerous tools (issue 8). The approval store
 * (`src/approvals/`) implements {@link ApprovalHooks}; until it is wired in, {@link unavailableApprovals}
 * tells the user that confirmation is not available and changes nothing.
 */
import type { PausedOutcome } from "../agent/contract.js";
import type { Locale } from "../config.js";
import { localize } from "../i18n.js";
import type { Logger } from "../log.js";
import { destinationOf, type Outbound } from "../outbound.js";
import type { IncomingMessage } from "../queue/incoming.js";

/** What the worker calls around approvals. Each method may throw; a throw is treated like any job failure. */
export interface ApprovalHooks {
  /**
   * The loop paused at a dangerous call while answering `message`: save the run (with an expiry),
   * post the prompt through `outbound`, schedule the timeout. Called at most once per message
   * unless the job is retried after a crash inside this call (make it idempotent per message id).
   */
  begin(message: IncomingMessage, outcome: PausedOutcome, outbound: Outbound): Promise<void>;
  /**
   * Called before `message` is handled: close the pending approval of its sender in its
   * conversation (if any) as `superseded` (finish its run so the history stays valid, edit its
   * prompt). Other people's approvals, and the sender's in other conversations, stay open.
   */
  supersedePending(message: IncomingMessage): Promise<void>;
  /**
   * Processes one job of the `decisions` queue (its data as the decider queued it).
   * `lastAttempt` is true on the job's final attempt, when a failure must end with a message to the user.
   */
  handleDecision(data: unknown, job?: { lastAttempt: boolean }): Promise<void>;
}

/**
 * Hooks for a bot without the approval store: a dangerous call is not run; the user is told that
 * confirmation is unavailable (in `locale`), and the paused run is dropped (nothing is appended to
 * the history, so it stays valid).
 */
export function unavailableApprovals(locale: Locale, log: Logger): ApprovalHooks {
  return {
    async begin(message, outcome, outbound) {
      log.warn({ tool: outcome.call.name }, "a dangerous tool needs confirmation, but no approval store is configured");
      await outbound.sendAnswer(
        destinationOf(message),
        localize(locale, {
          "zh-TW": "這個動作（{tool}）需要你確認，但目前無法進行確認，所以沒有執行。",
          en: "This action ({tool}) needs your confirmation, but confirmation is unavailable right now, so nothing was done.",
        }, { tool: outcome.call.name }),
      );
    },
    async supersedePending() {},
    async handleDecision(data) {
      log.warn({ data }, "a decision arrived, but no approval store is configured; ignored");
    },
  };
}
