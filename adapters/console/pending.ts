/**
 * The approval prompt still open in the terminal chat's conversation, shown again when
 * `npm run chat` starts, so `y`/`n` can answer it (the approval outlives the process that showed
 * its prompt: it is saved in Redis until it is decided or expires).
 */
import type { ApprovalStore, RequesterRef } from "../../src/approvals/store.js";
import { destinationOf } from "../../src/outbound.js";
import type { ConsoleOutbound } from "./outbound.js";

/** What {@link showPendingApproval} reads and updates in the approval store. */
export type PendingApprovals = Pick<ApprovalStore, "pendingId" | "get" | "setPrompt">;

/**
 * Writes the pending approval prompt of `requester` (the terminal's user in the console
 * conversation) again through `outbound` (which then maps
 * `y`/`n` to it) and saves the new prompt on the approval, when one is pending and not expired.
 *
 * @param parts.now - the current time, ms since the Unix epoch (default `Date.now()`).
 * @returns the approval's id when a prompt was shown, else undefined.
 * @throws when Redis is unreachable.
 */
export async function showPendingApproval(parts: {
  approvals: PendingApprovals;
  outbound: ConsoleOutbound;
  requester: RequesterRef;
  now?: number;
}): Promise<string | undefined> {
  const id = await parts.approvals.pendingId(parts.requester);
  if (!id) return undefined;
  const record = await parts.approvals.get(id);
  if (!record || record.status !== "pending" || record.expiresAt <= (parts.now ?? Date.now())) return undefined;
  const ref = await parts.outbound.sendApprovalPrompt(destinationOf(record.message), {
    approvalId: id,
    action: record.action,
    requesterName: record.requesterName,
    expiresAt: record.expiresAt,
    ...(record.alwaysAllow ? { alwaysAllow: true } : {}),
    locale: record.locale,
  });
  await parts.approvals.setPrompt(id, ref);
  return id;
}
