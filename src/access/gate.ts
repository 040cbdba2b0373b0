/**
 * The access gate: every adapter hands it a normalised message before anything is queued. It
 * decides, in this order, with one pipelined Redis round trip on the common path (the grants, the
 * rate limiter's counter and the two day totals are read in the same tick):
 *
 * 1. access policy (`ACCESS_POLICY`, env lists, Redis grants): strangers get a pairing code
 *    (`pairing`, DMs; at most `PAIRING_CODES_PER_USER_PER_DAY` a day each, then one note a day; at
 *    most `PAIRING_CODES_PER_PLATFORM_PER_HOUR` new ones per platform an hour, then "try again in an
 *    hour" once an hour to each new stranger, and one warning in the log),
 *    "this bot is private" once a day (`allowlist`, DMs), or silence with one note a day (groups
 *    not enabled) — in the stranger's language, who has no `/settings` yet ({@link strangerLocale});
 * 2. rate limit (`RATE_LIMIT_PER_MINUTE` per user, across chats and platforms; rate-limiter-flexible):
 *    one "slow down" per window, then silence;
 * 3. budgets (`GLOBAL_DAILY_TOKENS`, `USER_DAILY_TOKENS`; admins are exempt from the user budget;
 *    `src/usage/budget.ts`, whose guard checks them again before every model call);
 * 4. queue cap (`MAX_QUEUED_PER_CHAT`, checked atomically by the enqueue script): "busy" at most
 *    once per {@link BUSY_NOTICE_SECONDS} per conversation, across adapter processes, then silence.
 *
 * A refusal is answered from here through the platform's outbound and costs no model call;
 * nothing of a refused message is stored. Admins skip the rate limit and the user budget.
 */
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { RedisClient } from "../redis.js";
import { EnqueueError } from "../queue/errors.js";
import type { Config } from "../config.js";
import { clientLocale, localize, writtenLocale, type Locale, type Localized } from "../i18n.js";
import type { Logger } from "../log.js";
import { metrics, type RefusalReason } from "../metrics.js";
import { conversationKey, type ConversationRef, type IncomingMessage } from "../queue/incoming.js";
import type { ChatQueue } from "../queue/producer.js";
import { BUDGET_TEXT, budgetReads, budgetRefusal, type BudgetTotals } from "../usage/budget.js";
import { UsageStore } from "../usage/store.js";
import { hasAccess } from "./check.js";
import { chatPrincipals, isAdmin, userPrincipal, type AccessSubject } from "./policy.js";
import { AccessStore, PAIRING_CODES_PER_PLATFORM_PER_HOUR, PAIRING_CODES_PER_USER_PER_DAY } from "./store.js";

/**
 * The rate limiter's counting script (rate-limiter-flexible's `customIncrTtlLuaScript`; KEYS: the
 * user's counter; ARGV: [1] points consumed, [2] window in seconds, [3] points allowed per window).
 * The library's own script runs four commands per message (`SET … NX`, `INCRBY`, `PTTL`, and the
 * script call); this one runs `INCRBY` alone below the limit, `EXPIRE` with it when the count
 * starts a window, and `PTTL` only when the limit is passed (the wait the "slow down" answer
 * names). Same window as the library's: it starts with a user's first message and lasts ARGV[2]
 * seconds. Returns `{consumed, ms before the window ends}`; the ms are -1 below the limit after
 * the window's first message (not read there: the message passes).
 */
const RATE_SCRIPT = `
local consumed = redis.call('INCRBY', KEYS[1], ARGV[1])
if consumed == tonumber(ARGV[1]) then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return {consumed, 1000 * tonumber(ARGV[2])}
end
if consumed <= tonumber(ARGV[3]) then return {consumed, -1} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  ttl = 1000 * tonumber(ARGV[2])
end
return {consumed, ttl}
`;

/**
 * Seconds after a "busy" answer (a conversation over `MAX_QUEUED_PER_CHAT`) during which further
 * messages refused there for the same reason get no answer: a group whose members all write at once
 * is told once, not once per member. Measured from the answer, in Redis, so every adapter process
 * agrees.
 */
export const BUSY_NOTICE_SECONDS = 60;

/** The gate's own words. */
export const GATE_TEXT = {
  pairingCode: {
    "zh-TW":
      "嗨！這是私人機器人，需要擁有者同意才能使用。\n你的配對碼：`{code}`（1 小時內有效）\n請把這個配對碼交給機器人的擁有者，請他核准。",
    en:
      "Hi! This is a private bot: its owner has to let you in.\nYour pairing code: `{code}` " +
      "(valid for 1 hour)\nSend this code to the bot's owner and ask them to approve it.",
  },
  pairingLimited: {
    "zh-TW": "這是私人機器人。你今天已經拿過 {max} 次配對碼了，請明天再試。",
    en: "This is a private bot. You have been given {max} pairing codes today; please try again tomorrow.",
  },
  pairingBusy: {
    "zh-TW": "這是私人機器人。這一小時內要配對碼的人太多了，請一小時後再試。",
    en: "This is a private bot. Too many people asked for a pairing code this hour; please try again in an hour.",
  },
  private: {
    "zh-TW": "抱歉，這是私人機器人，只為受邀的使用者服務。",
    en: "Sorry, this is a private bot: it only serves invited users.",
  },
  groupNotEnabled: {
    "zh-TW": "這個群組尚未啟用本機器人：需要機器人管理員在這裡傳送 /enable。",
    en: "This bot is not enabled in this group: a bot admin has to send /enable here.",
  },
  slowDown: { "zh-TW": "訊息太快了，請 {seconds} 秒後再試。", en: "Slow down, please: try again in {seconds} s." },
  userBudget: BUDGET_TEXT.user,
  globalBudget: BUDGET_TEXT.global,
  busy: {
    "zh-TW": "我還在處理這個聊天的訊息，請等我回覆後再傳。",
    en: "I'm busy with this chat's earlier messages; please wait for my answers before sending more.",
  },
} satisfies Record<string, Localized>;

/** What the gate decided about a subject's access (before rate limit and budgets). */
export type AccessVerdict = { allowed: true; admin: boolean } | { allowed: false; answer: string | undefined };

/** What {@link AccessGate} needs. */
export interface AccessGateDeps {
  config: Config;
  log: Logger;
  /** The producer's fail-fast connection. */
  redis: RedisClient;
  queue: ChatQueue;
  /** Sends a refusal to the message's chat (the platform's outbound `sendAnswer`). */
  reply(to: IncomingMessage, text: string): Promise<void>;
  /**
   * The language set in a conversation (`/settings`), asked only when a served user's message is
   * refused there (slow down, budget, busy); default none: `BOT_LOCALE`.
   */
  languageOf?: (conversation: ConversationRef) => Promise<Locale | undefined>;
  /** The clock of the notice windows ({@link BUSY_NOTICE_SECONDS}), ms since the Unix epoch; default `Date.now`. */
  now?: () => number;
}

/**
 * The language a stranger's message is answered in (a pairing code, "this bot is private", a
 * group's note), since a stranger has no `/settings`: the client's language when the platform
 * tells it (Telegram's `language_code`, {@link clientLocale}), else the script the message is
 * written in ({@link writtenLocale}: `你好` → `zh-TW`, `hello` → `en`), else `fallback`
 * (`BOT_LOCALE`): a message of only digits, emoji or a file.
 */
export function strangerLocale(message: Pick<IncomingMessage, "locale" | "text">, fallback: Locale): Locale {
  return clientLocale(message.locale) ?? writtenLocale(message.text) ?? fallback;
}

/** The outcome of {@link AccessGate.admit}. */
export type Admission = "queued" | "duplicate" | "refused" | "silent";

/** See the module comment. */
export class AccessGate {
  readonly access: AccessStore;
  readonly usage: UsageStore;
  readonly #deps: AccessGateDeps;
  readonly #limiter: RateLimiterRedis;

  constructor(deps: AccessGateDeps) {
    this.#deps = deps;
    this.access = new AccessStore(deps.redis, deps.log);
    this.usage = new UsageStore(deps.redis, deps.config.TIMEZONE);
    // Key `rate:{platform:userId}`: the hash tag is the user (personal data).
    this.#limiter = new RateLimiterRedis({
      storeClient: deps.redis,
      keyPrefix: "rate",
      points: deps.config.RATE_LIMIT_PER_MINUTE,
      duration: 60,
      customIncrTtlLuaScript: RATE_SCRIPT,
    });
  }

  /**
   * Checks a message and queues it when it passes; answers a refusal itself.
   * @returns `queued` / `duplicate` when it was accepted, `refused` when it was answered with a
   *   refusal, `silent` when it was dropped on purpose (group not enabled, repeated slow-down).
   * @throws {EnqueueError} when Redis could not be reached (nothing was queued): the adapter
   *   answers with its "try again" message.
   */
  async admit(message: IncomingMessage): Promise<Admission> {
    const { config } = this.#deps;
    message.receivedAt ??= Date.now();
    metrics.received(message);
    const subject = subjectOf(message);
    const admin = isAdmin(config, subject);
    // Everything below is issued in one tick: ioredis auto-pipelining sends it as one write.
    const access = this.#accessRead(subject);
    const rate = admin ? Promise.resolve(undefined) : this.#consume(subject);
    const totals = this.#budgetRead(subject);
    let allowed: boolean;
    let limited: RateLimiterRes | undefined;
    let budget: BudgetTotals;
    try {
      [allowed, limited, budget] = await Promise.all([access, rate, totals]);
    } catch (error) {
      throw new EnqueueError(`could not check access: ${(error as Error).message}`, { cause: error });
    }
    if (!allowed) {
      const answer = await this.#strangerAnswer(message, strangerLocale(message, config.BOT_LOCALE)).catch(
        (error: unknown) => {
          throw new EnqueueError(`could not check access: ${(error as Error).message}`, { cause: error });
        },
      );
      return this.#refuse(message, answer, "stranger");
    }
    // Asked only on the way to a refusal: the common path costs nothing more.
    const locale = async () => (await this.#deps.languageOf?.(message).catch(() => undefined)) ?? config.BOT_LOCALE;
    if (limited) {
      // One answer per window: the first message over the limit.
      const first = limited.consumedPoints === config.RATE_LIMIT_PER_MINUTE + 1;
      const seconds = Math.max(1, Math.ceil(limited.msBeforeNext / 1000));
      return this.#refuse(
        message,
        first ? localize(await locale(), GATE_TEXT.slowDown, { seconds }) : undefined,
        "rate_limit",
      );
    }
    const spent = budgetRefusal(config, subject, budget);
    if (spent) {
      // In the conversation's language when one is set there.
      const language = await locale();
      const text =
        language === config.BOT_LOCALE
          ? spent.text
          : (budgetRefusal({ ...config, BOT_LOCALE: language }, subject, budget)?.text ?? spent.text);
      return this.#refuse(message, text, spent.scope === "global" ? "global_budget" : "user_budget");
    }
    const result = await this.#deps.queue.enqueue(message, { maxQueued: config.MAX_QUEUED_PER_CHAT });
    if (result === "full") {
      // Once per window and conversation; the mark is read only here, never for a message under the cap.
      const told = await this.#busyNoticeDue(message);
      return this.#refuse(message, told ? localize(await locale(), GATE_TEXT.busy) : undefined, "queue_full");
    }
    return result === "duplicate" ? "duplicate" : "queued";
  }

  /**
   * Whether the conversation of `message`, over its queue cap, is told "busy" now (not told in the
   * last {@link BUSY_NOTICE_SECONDS}). When Redis fails here it is told: a notice too many is better
   * than a message dropped without a word.
   */
  async #busyNoticeDue(message: IncomingMessage): Promise<boolean> {
    const now = (this.#deps.now ?? Date.now)();
    try {
      return await this.access.noticeDue("busy", conversationKey(message), now, BUSY_NOTICE_SECONDS * 1000);
    } catch (error) {
      this.#deps.log.warn({ err: error, chatId: message.chatId }, "could not read the busy notice's mark; telling");
      return true;
    }
  }

  /**
   * The access decision alone, for commands: allowed (and whether an admin), or the stranger's
   * answer (a pairing code, "private" once a day, a group note once a day, or undefined = silence).
   * @throws when Redis fails.
   */
  async check(subject: AccessSubject & { userName: string; locale: Locale }): Promise<AccessVerdict> {
    const admin = isAdmin(this.#deps.config, subject);
    if (await this.#accessRead(subject)) return { allowed: true, admin };
    return { allowed: false, answer: await this.#strangerAnswer(subject, subject.locale) };
  }

  #accessRead(subject: AccessSubject): Promise<boolean> {
    return hasAccess(this.#deps.config, this.access, subject);
  }

  async #consume(subject: AccessSubject): Promise<RateLimiterRes | undefined> {
    try {
      await this.#limiter.consume(`{${userPrincipal(subject)}}`);
      return undefined;
    } catch (error) {
      if (error instanceof RateLimiterRes) return error;
      throw error;
    }
  }

  async #budgetRead(subject: AccessSubject): Promise<BudgetTotals> {
    const want = budgetReads(this.#deps.config, subject);
    if (!want.user && !want.all) return {};
    const { user, all } = await this.usage.dayTotals(subject.platform, subject.userId, want);
    return { user: user?.budget, all: all?.budget };
  }

  /**
   * What a stranger is told, in `locale`, or undefined for silence; the pairing notes `locale`, so
   * "you are in" is said in it too. @throws when Redis fails.
   */
  async #strangerAnswer(subject: AccessSubject & { userName: string }, locale: Locale): Promise<string | undefined> {
    const { config } = this.#deps;
    if (subject.chatKind === "group") {
      return (await this.access.firstTime("group", chatPrincipals(subject)[0]!))
        ? localize(locale, GATE_TEXT.groupNotEnabled)
        : undefined;
    }
    if (config.ACCESS_POLICY === "allowlist") {
      return (await this.access.firstTime("private", userPrincipal(subject)))
        ? localize(locale, GATE_TEXT.private)
        : undefined;
    }
    const pairing = await this.access.pair({
      platform: subject.platform,
      userId: subject.userId,
      userName: subject.userName,
      chatId: subject.chatId,
      locale,
    });
    if (pairing.status === "limited") {
      // Said once a day; later requests that day are counted (npm run access -- list) and get silence.
      return (await this.access.firstTime("pairing-limit", userPrincipal(subject)))
        ? localize(locale, GATE_TEXT.pairingLimited, { max: PAIRING_CODES_PER_USER_PER_DAY })
        : undefined;
    }
    if (pairing.status === "busy") {
      // The platform's hourly limit (a flood of new accounts): said once an hour to each, then silence; logged once an hour.
      if (await this.access.firstTime("pairing-flood", subject.platform, 3600))
        this.#deps.log.warn(
          { platform: subject.platform, perHour: PAIRING_CODES_PER_PLATFORM_PER_HOUR },
          "pairing codes for new strangers are used up for this hour (a flood of new accounts?); see npm run access -- list",
        );
      return (await this.access.firstTime("pairing-busy", userPrincipal(subject), 3600))
        ? localize(locale, GATE_TEXT.pairingBusy)
        : undefined;
    }
    if (pairing.status === "new")
      this.#deps.log.info(
        { platform: subject.platform, userId: subject.userId },
        "pairing code given; see npm run access -- list",
      );
    return localize(locale, GATE_TEXT.pairingCode, { code: pairing.code });
  }

  async #refuse(
    message: IncomingMessage,
    answer: string | undefined,
    reason: keyof typeof REFUSAL_REASONS,
  ): Promise<Admission> {
    this.#deps.log.info(
      {
        platform: message.platform,
        chatId: message.chatId,
        userId: message.userId,
        reason,
        answered: answer !== undefined,
      },
      `message refused: ${reason}`,
    );
    metrics.refused(message.platform, REFUSAL_REASONS[reason]);
    if (answer === undefined) return "silent";
    try {
      await this.#deps.reply(message, answer);
    } catch (error) {
      this.#deps.log.error({ err: error, chatId: message.chatId }, "could not send a refusal");
    }
    return "refused";
  }
}

/** The `reason` label of `bot_messages_refused_total` for each refusal of the gate. */
const REFUSAL_REASONS = {
  stranger: "access",
  rate_limit: "rate",
  global_budget: "budget",
  user_budget: "budget",
  queue_full: "queue",
} as const satisfies Record<string, RefusalReason>;

/** The access subject of a message. */
export function subjectOf(message: IncomingMessage): AccessSubject & { userName: string } {
  return {
    platform: message.platform,
    chatId: message.chatId,
    chatKind: message.chatKind,
    userId: message.userId,
    userName: message.userName,
    guildId: message.reply.guildId,
  };
}
