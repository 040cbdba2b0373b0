/**
 * Token usage and budgets: every model response's `usage` is added here (by the worker), per user
 * and per chat, per day (days in `TIMEZONE`) and per month, kept {@link USAGE_KEEP_DAYS} days.
 * The access gate reads the day totals of the user and of the whole bot in the same pipelined
 * call as the access check ({@link UsageStore.dayTotalsCommands}).
 *
 * Keys (all built here): `usage:{u:<platform>:<userId>}:d:<YYYY-MM-DD>` and `…:m:<YYYY-MM>` (hash
 * tag per user: personal data), `usage:{c:<platform>:<chatId>}:…` per chat, `usage:{all}:…` for
 * the whole bot plus `usage:{all}:top:d:<day>`, a sorted set of users by tokens that day. Each hash
 * holds the fields `in`, `out`, `cw` (cache writes), `cr` (cache reads), `calls`, `ws` / `wf`
 * (web searches and web fetches the API ran, `usage.server_tool_use`), `pd`: micro-USD by
 * which the calls' own model prices (`MODEL_PRICES` per model) differ from the default prices
 * (signed; absent while every call was of a model at the default price), so the estimated cost
 * ({@link costOf}) is each model's tokens at its own price, `vs` (seconds of voice messages and
 * audio files transcribed, {@link UsageStore.recordVoice}), `bt`, the budget tokens: each call's
 * billed-equivalent tokens ({@link budgetTokensOf}), what the daily budgets count (the top set is
 * ranked by budget tokens too), and `sc` (characters spoken in voice replies,
 * {@link UsageStore.recordSpeech}).
 *
 * For the console's usage page (docs/console.md) the bot's script of each call also adds the
 * chat's budget tokens to `usage:{all}:topc:d:<day>` (chats by budget tokens that day) and the
 * call's counts to `usage:{all}:models:d:<day>`, fields `<field>:<model>` (`in`, `out`, `cw`,
 * `cr`, `ws`, `wf`, `bt`, `calls`): the bot's usage by model. Same script, same round trip.
 */
import type { RedisClient } from "../redis.js";

/** Days usage is kept. */
export const USAGE_KEEP_DAYS = 400;

/**
 * One model response's usage, as the Messages API reports it: tokens, and the server tool calls
 * it billed (`usage.server_tool_use`; absent = none).
 */
export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** Web searches the API ran (and bills) in this call. */
  web_search_requests?: number;
  /** Web fetches the API ran in this call. */
  web_fetch_requests?: number;
}

/**
 * The weights of the budget tokens ({@link budgetTokensOf}), relative to an input token, as the
 * Messages API bills them: a cache read costs 0.1 × the input price, a 5-minute cache write 1.25 ×
 * ("Prompt caching", pricing table: https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pricing).
 * `output` is the weight of an output token when the model has no price in `MODEL_PRICES`: 5, the
 * output/input price ratio of every current Claude model (e.g. USD 3 / 15 per million tokens).
 */
export const BUDGET_WEIGHTS = { input: 1, cacheWrite: 1.25, cacheRead: 0.1, output: 5 } as const;

/**
 * The budget tokens of one model response: its billed-equivalent input tokens, input × 1 + cache
 * writes × 1.25 + cache reads × 0.1 + output × `outputWeight` (the model's output/input price
 * ratio), rounded to a whole token.
 * @param outputWeight - price of an output token over an input token's for the call's model;
 *   default {@link BUDGET_WEIGHTS}.output (5). Not finite or negative counts as the default.
 */
export function budgetTokensOf(usage: ModelUsage, outputWeight: number = BUDGET_WEIGHTS.output): number {
  const n = (v: number) => Math.max(0, Number(v) || 0);
  const weight = Number.isFinite(outputWeight) && outputWeight >= 0 ? outputWeight : BUDGET_WEIGHTS.output;
  return Math.round(
    n(usage.input_tokens) * BUDGET_WEIGHTS.input +
      n(usage.cache_creation_input_tokens) * BUDGET_WEIGHTS.cacheWrite +
      n(usage.cache_read_input_tokens) * BUDGET_WEIGHTS.cacheRead +
      n(usage.output_tokens) * weight,
  );
}

/** Totals of one period: the four token kinds, their sum, the budget tokens, the number of model calls and the web searches and fetches. */
export interface UsageTotals {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  /** input + output + cacheWrite + cacheRead: the raw token count (not what a budget counts). */
  tokens: number;
  /**
   * Budget tokens: the calls' billed-equivalent tokens ({@link budgetTokensOf}), what the daily
   * budgets count. A hash written before they were recorded (no `bt`) is counted from its four
   * kinds at the default weights.
   */
  budget: number;
  calls: number;
  /** Web searches the API ran (billed per search). */
  webSearches: number;
  /** Web fetches the API ran. */
  webFetches: number;
  /** Micro-USD by which these calls cost more (or less, negative) at their models' own prices than at the default prices (absent = 0). */
  priceDelta?: number;
  /** Seconds of voice messages and audio files transcribed (as the platforms announced them, rounded up). */
  voiceSeconds: number;
  /** Characters (code points) sent to the speech endpoint for voice replies (absent = 0). */
  spokenCharacters?: number;
}

/** Whose usage: the person who asked and the chat it was asked in. */
export interface UsageOwner {
  platform: string;
  userId: string;
  chatId: string;
}

const FIELDS = ["in", "out", "cw", "cr", "calls", "ws", "wf", "vs", "pd", "bt", "sc"] as const;

/**
 * KEYS: day hash, month hash, [top people set, top chats set, models hash of the day]. ARGV: ttl
 * seconds, in, out, cw, cr, ws, wf, pd (signed micro-USD), bt (budget tokens), [person, chat, model].
 * Adds the nonzero counts and one call to both hashes; with the bot's keys also the budget tokens
 * to the person's and the chat's scores, and the counts, budget tokens and call to the model's
 * fields (`<field>:<model>`) of the day's models hash.
 */
const ADD_SCRIPT = `
local ttl = tonumber(ARGV[1])
local pd = tonumber(ARGV[8])
for k = 1, 2 do
  local names = {'in', 'out', 'cw', 'cr', 'ws', 'wf'}
  for i = 1, 6 do
    local n = tonumber(ARGV[i + 1])
    if n > 0 then redis.call('HINCRBY', KEYS[k], names[i], n) end
  end
  redis.call('HINCRBY', KEYS[k], 'bt', tonumber(ARGV[9]))
  if pd ~= 0 then redis.call('HINCRBY', KEYS[k], 'pd', pd) end
  redis.call('HINCRBY', KEYS[k], 'calls', 1)
  redis.call('EXPIRE', KEYS[k], ttl)
end
if KEYS[3] then
  redis.call('ZINCRBY', KEYS[3], tonumber(ARGV[9]), ARGV[10])
  redis.call('EXPIRE', KEYS[3], ttl)
end
if KEYS[4] then
  redis.call('ZINCRBY', KEYS[4], tonumber(ARGV[9]), ARGV[11])
  redis.call('EXPIRE', KEYS[4], ttl)
end
if KEYS[5] then
  local names = {'in', 'out', 'cw', 'cr', 'ws', 'wf'}
  for i = 1, 6 do
    local n = tonumber(ARGV[i + 1])
    if n > 0 then redis.call('HINCRBY', KEYS[5], names[i] .. ':' .. ARGV[12], n) end
  end
  redis.call('HINCRBY', KEYS[5], 'bt:' .. ARGV[12], tonumber(ARGV[9]))
  redis.call('HINCRBY', KEYS[5], 'calls:' .. ARGV[12], 1)
  redis.call('EXPIRE', KEYS[5], ttl)
end
return 1
`;

/**
 * KEYS: day hash, month hash. ARGV: ttl seconds, amount, [field: `vs` (default) or `sc`]. Adds the
 * amount to that field of both (no model call counted).
 */
const VOICE_SCRIPT = `
local field = ARGV[3] or 'vs'
for k = 1, 2 do
  redis.call('HINCRBY', KEYS[k], field, tonumber(ARGV[2]))
  redis.call('EXPIRE', KEYS[k], tonumber(ARGV[1]))
end
return 1
`;

/**
 * The script as two commands of a fixed key count (2: a user's or chat's; 3: the bot's, with the
 * top set): ioredis routes a command (and groups it for auto-pipelining on a Redis Cluster) by its
 * first argument, which must therefore be a key, not a key count.
 */
type RedisWithUsage = RedisClient & {
  usageAdd(day: string, month: string, ...args: (string | number)[]): Promise<number>;
  usageAddTop(
    day: string,
    month: string,
    top: string,
    topChats: string,
    models: string,
    ...args: (string | number)[]
  ): Promise<number>;
  usageVoice(day: string, month: string, ttl: number, amount: number, field?: "vs" | "sc"): Promise<number>;
};

/** The day (`YYYY-MM-DD`) and month (`YYYY-MM`) of `at` (ms) in `timeZone`. */
export function periodOf(at: number, timeZone: string): { day: string; month: string } {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  }).formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "00";
  const month = `${get("year")}-${get("month")}`;
  return { day: `${month}-${get("day")}`, month };
}

/**
 * When the day of `at` ends in `timeZone` (the next 00:00 there), in ms since the epoch.
 * Found by stepping forward a minute at a time from a close guess, so daylight-saving zones work too.
 */
export function nextDayStart(at: number, timeZone: string): number {
  const today = periodOf(at, timeZone).day;
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(at);
  const hour = Number(parts.find((p) => p.type === "hour")?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === "minute")?.value ?? 0);
  let guess = at + ((23 - hour) * 60 + (59 - minute)) * 60_000;
  guess -= guess % 60_000;
  while (periodOf(guess, timeZone).day === today) guess += 60_000;
  // back to the first minute of the new day
  while (periodOf(guess - 60_000, timeZone).day !== today) guess -= 60_000;
  return guess;
}

/** Totals from an `HMGET … in out cw cr calls ws wf vs pd bt sc` reply. */
export function totalsOf(values: (string | null)[] | undefined): UsageTotals {
  const n = (i: number) => Number(values?.[i] ?? 0) || 0;
  const totals = {
    input: n(0),
    output: n(1),
    cacheWrite: n(2),
    cacheRead: n(3),
    calls: n(4),
    webSearches: n(5),
    webFetches: n(6),
    voiceSeconds: n(7),
  };
  const budget =
    values?.[9] !== null && values?.[9] !== undefined
      ? n(9)
      : budgetTokensOf({
          input_tokens: totals.input,
          output_tokens: totals.output,
          cache_creation_input_tokens: totals.cacheWrite,
          cache_read_input_tokens: totals.cacheRead,
        });
  return {
    ...totals,
    tokens: totals.input + totals.output + totals.cacheWrite + totals.cacheRead,
    budget,
    ...(n(8) !== 0 ? { priceDelta: n(8) } : {}),
    ...(n(10) !== 0 ? { spokenCharacters: n(10) } : {}),
  };
}

/** Usage in Redis; see the module comment. */
export class UsageStore {
  readonly #redis: RedisClient;
  readonly #timeZone: string;

  /**
   * @param redis - any connection (the worker's for writes, the producer's for reads).
   * @param timeZone - IANA zone whose days and months the periods follow (`TIMEZONE`).
   */
  constructor(redis: RedisClient, timeZone: string) {
    this.#redis = redis;
    this.#timeZone = timeZone;
    if (!("usageAdd" in redis)) redis.defineCommand("usageAdd", { numberOfKeys: 2, lua: ADD_SCRIPT });
    if (!("usageAddTop" in redis)) redis.defineCommand("usageAddTop", { numberOfKeys: 5, lua: ADD_SCRIPT });
    if (!("usageVoice" in redis)) redis.defineCommand("usageVoice", { numberOfKeys: 2, lua: VOICE_SCRIPT });
  }

  /** The key of a user's (`u:platform:userId`), chat's (`c:platform:chatId`) or the bot's (`all`) hash of a period. */
  static key(owner: string, period: "d" | "m", value: string): string {
    return `usage:{${owner}}:${period}:${value}`;
  }

  /** The sorted set of users by tokens on `day`. */
  static topKey(day: string): string {
    return `usage:{all}:top:d:${day}`;
  }

  /** The sorted set of chats (`platform:chatId`) by budget tokens on `day`. */
  static topChatsKey(day: string): string {
    return `usage:{all}:topc:d:${day}`;
  }

  /**
   * The hash of the whole bot's usage by model on `day`: fields `<field>:<model>` (`in`, `out`,
   * `cw`, `cr`, `ws`, `wf`, `bt`, `calls`, as in the day hash).
   */
  static modelsKey(day: string): string {
    return `usage:{all}:models:d:${day}`;
  }

  /**
   * Adds one model response's usage for `owner` (user, chat and the whole bot, day and month), in
   * one pipelined round trip of three scripts.
   * @param priceDelta - micro-USD by which this call costs more (negative: less) at its model's own
   *   price than at the default price ({@link priceDeltaOf}); default 0.
   * @param outputWeight - the call's model's output/input price ratio, for its budget tokens
   *   ({@link budgetTokensOf}; `outputWeightFor` of `src/usage/budget.ts`); default 5.
   * @param model - the call's model id, for the bot's usage by model ({@link modelsKey}); default
   *   `?` (unknown). Cut to 100 characters.
   * @throws when Redis fails (the caller logs it; an answer is never held back by it).
   */
  async record(
    owner: UsageOwner,
    usage: ModelUsage,
    at = Date.now(),
    priceDelta = 0,
    outputWeight: number = BUDGET_WEIGHTS.output,
    model = "?",
  ): Promise<void> {
    const { day, month } = periodOf(at, this.#timeZone);
    const ttl = USAGE_KEEP_DAYS * 86_400;
    const counts = [
      usage.input_tokens,
      usage.output_tokens,
      usage.cache_creation_input_tokens,
      usage.cache_read_input_tokens,
      usage.web_search_requests ?? 0,
      usage.web_fetch_requests ?? 0,
    ].map((n) => Math.max(0, Math.floor(Number(n) || 0)));
    counts.push(Math.round(Number(priceDelta) || 0), budgetTokensOf(usage, outputWeight));
    const redis = this.#redis as RedisWithUsage;
    const user = `u:${owner.platform}:${owner.userId}`;
    const chat = `c:${owner.platform}:${owner.chatId}`;
    await Promise.all([
      redis.usageAdd(UsageStore.key(user, "d", day), UsageStore.key(user, "m", month), ttl, ...counts),
      redis.usageAdd(UsageStore.key(chat, "d", day), UsageStore.key(chat, "m", month), ttl, ...counts),
      redis.usageAddTop(
        UsageStore.key("all", "d", day),
        UsageStore.key("all", "m", month),
        UsageStore.topKey(day),
        UsageStore.topChatsKey(day),
        UsageStore.modelsKey(day),
        ttl,
        ...counts,
        `${owner.platform}:${owner.userId}`,
        `${owner.platform}:${owner.chatId}`,
        (model || "?").slice(0, 100),
      ),
    ]);
  }

  /**
   * Adds `seconds` of transcribed voice for `owner` (user, chat and the whole bot, day and month),
   * rounded up to whole seconds; nothing for 0 or less.
   * @throws when Redis fails (the caller logs it).
   */
  async recordVoice(owner: UsageOwner, seconds: number, at = Date.now()): Promise<void> {
    const whole = Math.ceil(Number(seconds) || 0);
    if (whole <= 0) return;
    const { day, month } = periodOf(at, this.#timeZone);
    const ttl = USAGE_KEEP_DAYS * 86_400;
    const redis = this.#redis as RedisWithUsage;
    await Promise.all(
      [`u:${owner.platform}:${owner.userId}`, `c:${owner.platform}:${owner.chatId}`, "all"].map((who) =>
        redis.usageVoice(UsageStore.key(who, "d", day), UsageStore.key(who, "m", month), ttl, whole),
      ),
    );
  }

  /**
   * Adds `characters` spoken in a voice reply for `owner` (user, chat and the whole bot, day and
   * month); nothing for 0 or less.
   * @throws when Redis fails (the caller logs it).
   */
  async recordSpeech(owner: UsageOwner, characters: number, at = Date.now()): Promise<void> {
    const whole = Math.floor(Number(characters) || 0);
    if (whole <= 0) return;
    const { day, month } = periodOf(at, this.#timeZone);
    const ttl = USAGE_KEEP_DAYS * 86_400;
    const redis = this.#redis as RedisWithUsage;
    await Promise.all(
      [`u:${owner.platform}:${owner.userId}`, `c:${owner.platform}:${owner.chatId}`, "all"].map((who) =>
        redis.usageVoice(UsageStore.key(who, "d", day), UsageStore.key(who, "m", month), ttl, whole, "sc"),
      ),
    );
  }

  /**
   * Reads the day totals of a user and/or of the whole bot (`want`). The commands are issued at once
   * (on the adapter's connection, ioredis auto-pipelining sends them with the other commands of the
   * same tick in one write), so the access gate's checks cost one round trip.
   */
  async dayTotals(
    platform: string,
    userId: string,
    want: { user: boolean; all: boolean },
    at = Date.now(),
  ): Promise<{ user?: UsageTotals; all?: UsageTotals }> {
    const { day } = periodOf(at, this.#timeZone);
    const [user, all] = await Promise.all([
      want.user
        ? this.#redis.hmget(UsageStore.key(`u:${platform}:${userId}`, "d", day), ...FIELDS).then(totalsOf)
        : undefined,
      want.all ? this.#redis.hmget(UsageStore.key("all", "d", day), ...FIELDS).then(totalsOf) : undefined,
    ]);
    return { user, all };
  }

  /** The key counting `platform`'s push requests in `month` (`YYYY-MM`): `usage:{all}:pushes:<platform>:<month>`. */
  static pushKey(platform: string, month: string): string {
    return `usage:{all}:pushes:${platform}:${month}`;
  }

  /**
   * Counts one push request of `platform` (LINE: each counts against the channel's monthly message
   * quota) in the month of `at` (`TIMEZONE`); the count is kept 40 days.
   * @returns the month's count so far.
   * @throws when Redis fails.
   */
  async recordPush(platform: string, at = Date.now()): Promise<number> {
    const key = UsageStore.pushKey(platform, periodOf(at, this.#timeZone).month);
    const results = await this.#redis
      .multi()
      .incr(key)
      .expire(key, 40 * 86_400)
      .exec();
    return Number(results?.[0]?.[1] ?? 0);
  }

  /** `platform`'s push requests in the month of `at` ({@link recordPush}). @throws when Redis fails. */
  async pushesThisMonth(platform: string, at = Date.now()): Promise<number> {
    return Number((await this.#redis.get(UsageStore.pushKey(platform, periodOf(at, this.#timeZone).month))) ?? 0);
  }

  /** A user's totals today and this month. */
  async userTotals(
    platform: string,
    userId: string,
    at = Date.now(),
  ): Promise<{ day: UsageTotals; month: UsageTotals }> {
    const { day, month } = periodOf(at, this.#timeZone);
    const owner = `u:${platform}:${userId}`;
    const [d, m] = await Promise.all([
      this.#redis.hmget(UsageStore.key(owner, "d", day), ...FIELDS),
      this.#redis.hmget(UsageStore.key(owner, "m", month), ...FIELDS),
    ]);
    return { day: totalsOf(d), month: totalsOf(m) };
  }

  /** A chat's totals today and this month. */
  async chatTotals(
    platform: string,
    chatId: string,
    at = Date.now(),
  ): Promise<{ day: UsageTotals; month: UsageTotals }> {
    const { day, month } = periodOf(at, this.#timeZone);
    const owner = `c:${platform}:${chatId}`;
    const [d, m] = await Promise.all([
      this.#redis.hmget(UsageStore.key(owner, "d", day), ...FIELDS),
      this.#redis.hmget(UsageStore.key(owner, "m", month), ...FIELDS),
    ]);
    return { day: totalsOf(d), month: totalsOf(m) };
  }

  /** The whole bot's totals today and this month. */
  async botTotals(at = Date.now()): Promise<{ day: UsageTotals; month: UsageTotals }> {
    const { day, month } = periodOf(at, this.#timeZone);
    const [d, m] = await Promise.all([
      this.#redis.hmget(UsageStore.key("all", "d", day), ...FIELDS),
      this.#redis.hmget(UsageStore.key("all", "m", month), ...FIELDS),
    ]);
    return { day: totalsOf(d), month: totalsOf(m) };
  }

  /**
   * The whole bot's usage on each of the `count` days ending with the day of `at` (days in
   * `TIMEZONE`), oldest first: the day's totals and its totals by model (from the day's models
   * hash, {@link modelsKey}; empty for days recorded before it existed). One pipelined read.
   * @throws when Redis fails.
   */
  async botDays(count: number, at = Date.now()): Promise<DayUsage[]> {
    const days = daysEndingAt(periodOf(at, this.#timeZone).day, count);
    const [totals, models] = await Promise.all([
      Promise.all(days.map((day) => this.#redis.hmget(UsageStore.key("all", "d", day), ...FIELDS))),
      Promise.all(days.map((day) => this.#redis.hgetall(UsageStore.modelsKey(day)))),
    ]);
    return days.map((day, i) => ({ day, totals: totalsOf(totals[i]), models: modelTotalsOf(models[i] ?? {}) }));
  }

  /**
   * The `limit` people (`kind` `people`: `platform:userId`) or chats (`chats`: `platform:chatId`)
   * with the most budget tokens over the `count` days ending with the day of `at`, most first
   * (ZUNION of the days' sorted sets: Redis 6.2+).
   * @throws when Redis fails.
   */
  async topOver(
    kind: "people" | "chats",
    count: number,
    limit: number,
    at = Date.now(),
  ): Promise<{ name: string; tokens: number }[]> {
    const keyOf = kind === "people" ? UsageStore.topKey : UsageStore.topChatsKey;
    const keys = daysEndingAt(periodOf(at, this.#timeZone).day, count).map(keyOf);
    const flat = await this.#redis.zunion(keys.length, ...keys, "WITHSCORES");
    const out: { name: string; tokens: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ name: flat[i]!, tokens: Number(flat[i + 1]) });
    return out.sort((a, b) => b.tokens - a.tokens || a.name.localeCompare(b.name)).slice(0, limit);
  }

  /** The `limit` users with the most budget tokens today (`platform:userId`, budget tokens), most first. */
  async topUsers(limit = 10, at = Date.now()): Promise<{ user: string; tokens: number }[]> {
    const { day } = periodOf(at, this.#timeZone);
    const flat = await this.#redis.zrevrange(UsageStore.topKey(day), 0, limit - 1, "WITHSCORES");
    const out: { user: string; tokens: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ user: flat[i]!, tokens: Number(flat[i + 1]) });
    return out;
  }
}

/** The whole bot's usage of one day ({@link UsageStore.botDays}). */
export interface DayUsage {
  /** `YYYY-MM-DD` in `TIMEZONE`. */
  day: string;
  totals: UsageTotals;
  /** Totals by model id; `?` = calls recorded without a model. Empty for days recorded before usage by model was. */
  models: Map<string, UsageTotals>;
}

/**
 * The `count` calendar days ending with `day` (`YYYY-MM-DD`), oldest first. Calendar arithmetic on
 * the date itself (no clock), so a daylight-saving change never skips or repeats a day.
 */
export function daysEndingAt(day: string, count: number): string[] {
  const [y, m, d] = day.split("-").map(Number) as [number, number, number];
  const end = Date.UTC(y, m - 1, d);
  const out: string[] = [];
  for (let i = count - 1; i >= 0; i -= 1) out.push(new Date(end - i * 86_400_000).toISOString().slice(0, 10));
  return out;
}

/** Totals by model from a models hash (`<field>:<model>` fields, {@link UsageStore.modelsKey}), sorted by model id. */
export function modelTotalsOf(hash: Record<string, string>): Map<string, UsageTotals> {
  const byModel = new Map<string, Record<string, string>>();
  for (const [field, value] of Object.entries(hash)) {
    const colon = field.indexOf(":");
    if (colon < 0) continue;
    const model = field.slice(colon + 1);
    let fields = byModel.get(model);
    if (!fields) byModel.set(model, (fields = {}));
    fields[field.slice(0, colon)] = value;
  }
  return new Map(
    [...byModel.keys()].sort().map((model) => {
      const fields = byModel.get(model)!;
      return [model, totalsOf(FIELDS.map((name) => fields[name] ?? null))];
    }),
  );
}

/**
 * Estimated cost of `totals` in USD: tokens at prices per million tokens, web searches at
 * `webSearch` USD per 1,000 searches (the API bills each search; web fetch costs only its tokens).
 */
export function costOf(totals: UsageTotals, prices: PriceList): number {
  const tokens =
    (totals.input * prices.input +
      totals.output * prices.output +
      totals.cacheWrite * prices.cacheWrite +
      totals.cacheRead * prices.cacheRead) /
    1_000_000;
  return Math.max(
    0,
    tokens + (totals.webSearches * (prices.webSearch ?? 0)) / 1000 + (totals.priceDelta ?? 0) / 1_000_000,
  );
}

/** Prices: tokens in USD per million, web searches in USD per 1,000 (`ModelPrices` of `src/config.ts`). */
type PriceList = { input: number; output: number; cacheWrite: number; cacheRead: number; webSearch?: number };

/**
 * Micro-USD by which one call's `usage` costs more (negative: less) at `own` prices (its model's)
 * than at `base` prices (the default): what {@link UsageStore.record} adds to `pd`. 0 when either is missing.
 */
export function priceDeltaOf(usage: ModelUsage, own: PriceList | undefined, base: PriceList | undefined): number {
  if (!own || !base || own === base) return 0;
  const totals = {
    input: usage.input_tokens,
    output: usage.output_tokens,
    cacheWrite: usage.cache_creation_input_tokens,
    cacheRead: usage.cache_read_input_tokens,
    webSearches: usage.web_search_requests ?? 0,
  };
  const cost = (p: PriceList) =>
    (totals.input * p.input +
      totals.output * p.output +
      totals.cacheWrite * p.cacheWrite +
      totals.cacheRead * p.cacheRead) /
      1_000_000 +
    (totals.webSearches * (p.webSearch ?? 0)) / 1000;
  return Math.round((cost(own) - cost(base)) * 1_000_000);
}
