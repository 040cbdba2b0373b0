/**
 * What is checked before each occurrence of a task, as the access gate checks a message before it
 * is queued (`src/access/gate.ts`): whether the owner is still served where the task runs (a DM:
 * the user; a group: the chat, or its Discord server), and whether the day budgets leave room.
 * Read-only: no pairing code, no note, no rate-limit point is spent by an occurrence.
 */
import type { AccessStore } from "../access/store.js";
import { allowedByEnv, chatPrincipals, isAdmin, userPrincipal, type AccessSubject } from "../access/policy.js";
import type { Config } from "../config.js";
import type { UsageStore } from "../usage/store.js";

/** Why an occurrence may not run: the owner or chat is not served any more, or a day budget is spent. */
export type TaskRefusal = "access" | "user_budget" | "global_budget";

/**
 * Whether `subject` (the task's owner, in the task's chat) may be served now, and within budget.
 * @returns undefined when the occurrence may run, else why not.
 * @throws when Redis fails.
 */
export async function occurrenceRefusal(config: Config, stores: { access: AccessStore; usage: UsageStore }, subject: AccessSubject): Promise<TaskRefusal | undefined> {
  const admin = isAdmin(config, subject);
  const served =
    config.ACCESS_POLICY === "open" ||
    subject.platform === "console" ||
    admin ||
    allowedByEnv(config, subject) ||
    (subject.chatKind === "dm" ? await stores.access.hasUser(userPrincipal(subject)) : await stores.access.hasAnyChat(chatPrincipals(subject)));
  if (!served) return "access";
  const wantUser = !admin && config.USER_DAILY_TOKENS > 0;
  const wantAll = config.GLOBAL_DAILY_TOKENS > 0;
  if (!wantUser && !wantAll) return undefined;
  const { user, all } = await stores.usage.dayTotals(subject.platform, subject.userId, { user: wantUser, all: wantAll });
  if (wantAll && (all?.tokens ?? 0) >= config.GLOBAL_DAILY_TOKENS) return "global_budget";
  if (wantUser && (user?.tokens ?? 0) >= config.USER_DAILY_TOKENS) return "user_budget";
  return undefined;
}
