/**
 * The daily budgets (`USER_DAILY_TOKENS` per person, `GLOBAL_DAILY_TOKENS` for the whole bot),
 * checked in two places with the same rule and the same words:
 *
 * - by the access gate when a message arrives (`src/access/gate.ts`, {@link budgetRefusal}), so a
 *   message from someone whose budget is spent costs no model call;
 * - before **every** model call ({@link budgetGuard}): each turn of a run, a run resumed after an
 *   approval, and any other model call made for a person. The run dependencies of the worker
 *   (`runDeps` in `src/worker/context.ts`) carry it as the agent loop's `beforeModelCall`, so every
 *   caller of `runAgent` / `resumeAgent` gets it; code that calls the model directly calls the guard
 *   itself first (`assertBudget`, which throws `BudgetSpentError`).
 *
 * The guard reads what Redis has recorded (after awaiting the run's own recordings still in
 * flight), so concurrent runs of one person can together overshoot a budget by at most the model
 * call each has in flight: none of them starts another call once the recorded total reached it.
 * Admins (`ADMIN_USERS`, and the console's operator) are exempt from the user budget, not from
 * the global one. Both count budget tokens: what a person is billed, as input tokens (input × 1,
 * cache writes × 1.25, cache reads × 0.1, output × the model's output/input price ratio:
 * {@link outputWeightFor}, `budgetTokensOf` of `src/usage/store.ts`), recorded with each call.
 */
import { isAdmin } from "../access/policy.js";
import { pricesFor, type Config } from "../config.js";
import { englishNoun, localize, type Localized } from "../i18n.js";
import { BUDGET_WEIGHTS, nextDayStart, type UsageStore } from "./store.js";

/**
 * The weight of one output token in the budget tokens of a call of `model`: its output price over
 * its input price in `MODEL_PRICES` ({@link pricesFor}: its own entry, else the default prices),
 * or 5 ({@link BUDGET_WEIGHTS}) when `MODEL_PRICES` is unset or prices input at 0.
 */
export function outputWeightFor(config: Pick<Config, "MODEL_PRICES">, model: string): number {
  const prices = pricesFor(config, model);
  return prices && prices.input > 0 ? prices.output / prices.input : BUDGET_WEIGHTS.output;
}

/** The budget messages (the gate's refusal and a run stopped by the guard say the same). */
export const BUDGET_TEXT = {
  user: {
    "zh-TW": "你今天的用量已達上限（{budget} tokens），將在 {reset}（{zone}）重置。",
    en: "You have used today's budget ({budget} {tokens}). It resets at {reset} ({zone}).",
  },
  global: {
    "zh-TW": "機器人今天的總用量已達上限，將在 {reset}（{zone}）重置。",
    en: "The bot has used its budget for today. It resets at {reset} ({zone}).",
  },
} satisfies Record<string, Localized>;

/** Which budget is spent: the person's or the whole bot's. */
export type BudgetScope = keyof typeof BUDGET_TEXT;

/** Whose budget: a person on a platform (`platform:userId`, as the usage store keys them). */
export interface BudgetOwner {
  platform: string;
  userId: string;
}

/** Today's recorded budget tokens of the person and of the whole bot; absent = not read. */
export interface BudgetTotals {
  user?: number | undefined;
  all?: number | undefined;
}

/** Which totals a check needs for `owner`: the person's unless an admin or no user budget, the bot's when a global budget is set. */
export function budgetReads(
  config: Pick<Config, "USER_DAILY_TOKENS" | "GLOBAL_DAILY_TOKENS" | "ADMIN_USERS">,
  owner: BudgetOwner,
): { user: boolean; all: boolean } {
  return { user: config.USER_DAILY_TOKENS > 0 && !isAdmin(config, owner), all: config.GLOBAL_DAILY_TOKENS > 0 };
}

/**
 * The spent budget, when one is: the global budget first (`GLOBAL_DAILY_TOKENS` reached), then the
 * person's (`USER_DAILY_TOKENS` reached; never for an admin). A budget of 0 is no budget.
 * @returns the scope and the localized message (with the budget, and when and in which zone it resets), or undefined.
 */
export function budgetRefusal(
  config: Pick<Config, "USER_DAILY_TOKENS" | "GLOBAL_DAILY_TOKENS" | "ADMIN_USERS" | "TIMEZONE" | "BOT_LOCALE">,
  owner: BudgetOwner,
  totals: BudgetTotals,
  at = Date.now(),
): { scope: BudgetScope; text: string } | undefined {
  const reads = budgetReads(config, owner);
  if (reads.all && (totals.all ?? 0) >= config.GLOBAL_DAILY_TOKENS)
    return { scope: "global", text: budgetText(config, "global", at) };
  if (reads.user && (totals.user ?? 0) >= config.USER_DAILY_TOKENS)
    return { scope: "user", text: budgetText(config, "user", at) };
  return undefined;
}

/** The message for a spent budget of `scope`, in `BOT_LOCALE`: the budget, and when (next midnight in `TIMEZONE`) it resets. */
export function budgetText(
  config: Pick<Config, "USER_DAILY_TOKENS" | "TIMEZONE" | "BOT_LOCALE">,
  scope: BudgetScope,
  at = Date.now(),
): string {
  const zone = config.TIMEZONE;
  const reset = new Intl.DateTimeFormat("sv-SE", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).format(nextDayStart(at, zone));
  return localize(config.BOT_LOCALE, BUDGET_TEXT[scope], {
    reset,
    zone,
    budget: config.USER_DAILY_TOKENS,
    tokens: englishNoun(config.USER_DAILY_TOKENS, "token"),
  });
}

/**
 * Reads today's totals of `owner` and of the bot (only those a budget needs; no Redis command when
 * none is set) and says whether a model call may be made.
 * @returns undefined when the call may go, else the spent budget's scope and message.
 * @throws when Redis fails (the caller fails like on any Redis failure: no unchecked model call).
 */
export async function checkBudget(
  usage: UsageStore,
  config: Pick<Config, "USER_DAILY_TOKENS" | "GLOBAL_DAILY_TOKENS" | "ADMIN_USERS" | "TIMEZONE" | "BOT_LOCALE">,
  owner: BudgetOwner,
): Promise<{ scope: BudgetScope; text: string } | undefined> {
  const want = budgetReads(config, owner);
  if (!want.user && !want.all) return undefined;
  const totals = await usage.dayTotals(owner.platform, owner.userId, want);
  return budgetRefusal(config, owner, { user: totals.user?.budget, all: totals.all?.budget });
}

/**
 * The check to make before every model call for `owner`: the agent loop's `beforeModelCall`
 * (see the module comment). Each call first awaits `settled()` (the recordings of the run's own
 * earlier responses still in flight), so a run never starts a call its own usage already forbids.
 *
 * @param settled - resolves once the caller's usage recordings so far are in Redis; default none.
 * @returns a function giving undefined (go on) or the budget message that ends the run without the call.
 *   It throws when Redis fails.
 */
export function budgetGuard(
  usage: UsageStore,
  config: Pick<Config, "USER_DAILY_TOKENS" | "GLOBAL_DAILY_TOKENS" | "ADMIN_USERS" | "TIMEZONE" | "BOT_LOCALE">,
  owner: BudgetOwner,
  settled: () => Promise<unknown> = () => Promise.resolve(),
): () => Promise<string | undefined> {
  return async () => {
    await settled();
    return (await checkBudget(usage, config, owner))?.text;
  };
}

/**
 * A daily budget is spent: thrown by {@link assertBudget} before a model call that must not be
 * made. Final (`retryable: false`); `userMessage` is the budget message.
 */
export class BudgetSpentError extends Error {
  readonly retryable = false;
  /**
   * @param scope - whose budget: the person's or the whole bot's.
   * @param text - the budget message (in `BOT_LOCALE`).
   */
  constructor(
    readonly scope: BudgetScope,
    readonly text: string,
  ) {
    super(
      scope === "global"
        ? "the bot's daily token budget (GLOBAL_DAILY_TOKENS) is spent"
        : "the person's daily token budget (USER_DAILY_TOKENS) is spent",
    );
    this.name = "BudgetSpentError";
  }

  /** What the user reads: the budget message. */
  userMessage(): string {
    return this.text;
  }
}

/**
 * For code that calls the model directly (not through `runAgent`): call it right before each
 * model call made for `owner` (a summary of their conversation, a scheduled task's work).
 * @throws {BudgetSpentError} when a budget is spent (make no call); a Redis error when the totals cannot be read.
 */
export async function assertBudget(
  usage: UsageStore,
  config: Pick<Config, "USER_DAILY_TOKENS" | "GLOBAL_DAILY_TOKENS" | "ADMIN_USERS" | "TIMEZONE" | "BOT_LOCALE">,
  owner: BudgetOwner,
): Promise<void> {
  const spent = await checkBudget(usage, config, owner);
  if (spent) throw new BudgetSpentError(spent.scope, spent.text);
}
