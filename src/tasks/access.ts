/**
 * What is checked before each occurrence of a task, with the same rules as for a message: whether
 * the owner is still served where the task runs (`hasAccess` of `src/access/check.ts`: a DM the
 * user, a group its chat or Discord server), and whether the day budgets leave room
 * (`checkBudget` of `src/usage/budget.ts`; every model call of the run is checked again by the
 * run's own budget guard). Read-only: no pairing code, no note, no rate-limit point is spent.
 */
import { hasAccess } from "../access/check.js";
import type { AccessSubject } from "../access/policy.js";
import type { AccessStore } from "../access/store.js";
import type { Config } from "../config.js";
import { checkBudget, type BudgetScope } from "../usage/budget.js";
import type { UsageStore } from "../usage/store.js";

/** Why an occurrence may not run: the owner or chat is not served any more, or a day budget is spent (whose, with its message in `BOT_LOCALE`). */
export type TaskRefusal = { kind: "access" } | { kind: "budget"; scope: BudgetScope; text: string };

/**
 * Whether `subject` (the task's owner, in the task's chat) may be served now, and within budget.
 * @returns undefined when the occurrence may run, else why not.
 * @throws when Redis fails.
 */
export async function occurrenceRefusal(
  config: Config,
  stores: { access: AccessStore; usage: UsageStore },
  subject: AccessSubject,
): Promise<TaskRefusal | undefined> {
  if (!(await hasAccess(config, stores.access, subject))) return { kind: "access" };
  const spent = await checkBudget(stores.usage, config, subject);
  return spent ? { kind: "budget", scope: spent.scope, text: spent.text } : undefined;
}
