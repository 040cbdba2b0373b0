/**
 * The `/usage` texts (and `npm run access -- usage`): tokens, web searches and seconds of voice
 * transcribed today and this month,
 * the budget left (in budget tokens, with a line saying how they are counted) and when it resets,
 * the estimated cost when `MODEL_PRICES` is set (searches included); `/usage all` adds the top users.
 */
import type { Config } from "../config.js";
import { englishNoun, localize, type Locale } from "../i18n.js";
import { outputWeightFor } from "../usage/budget.js";
import { BUDGET_WEIGHTS, costOf, nextDayStart, periodOf, type UsageTotals } from "../usage/store.js";

/**
 * The line saying what a budget counts: billed-equivalent tokens, with the weights and the output
 * weight of `ANTHROPIC_MODEL` ({@link outputWeightFor}: its output/input price ratio, else 5).
 */
export function budgetRuleLine(config: Pick<Config, "MODEL_PRICES" | "ANTHROPIC_MODEL">, locale: Locale): string {
  const ratio = Number(outputWeightFor(config, config.ANTHROPIC_MODEL).toFixed(2));
  return localize(
    locale,
    {
      "zh-TW":
        "額度以計費等值 tokens 計算：輸入 ×{input}、快取寫入 ×{cw}、快取讀取 ×{cr}、輸出 ×{ratio}（模型輸出與輸入的價格比）。",
      en:
        "Budgets count billed-equivalent tokens: input ×{input}, cache writes ×{cw}, cache reads ×{cr}, " +
        "output ×{ratio} (the model's output/input price ratio).",
    },
    { input: BUDGET_WEIGHTS.input, cw: BUDGET_WEIGHTS.cacheWrite, cr: BUDGET_WEIGHTS.cacheRead, ratio },
  );
}

/** `2026-12-01 00:00` in `timeZone`. */
export function formatMoment(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat("sv-SE", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).format(at);
}

/**
 * One line of totals: `1234 tokens in 3 model calls (input 1000, output 200, cache write 0, cache read 34)`
 * (`1 token in 1 model call` for one: every English count by `englishNoun`),
 * followed by `; 2 web searches, 1 web fetch` when the API ran any, `, 65 s of voice transcribed`
 * when voice messages were transcribed and `, 420 characters of voice replies` when answers were
 * spoken (neither priced: the speech services bill them themselves).
 */
export function formatTotals(locale: Locale, t: UsageTotals): string {
  const tokens = localize(
    locale,
    {
      "zh-TW": "{tokens} tokens，{calls} 次模型呼叫（輸入 {input}、輸出 {output}、快取寫入 {cw}、快取讀取 {cr}）",
      en: "{tokens} {tokenNoun} in {calls} model {callNoun} (input {input}, output {output}, cache write {cw}, cache read {cr})",
    },
    {
      tokens: t.tokens,
      tokenNoun: englishNoun(t.tokens, "token"),
      calls: t.calls,
      callNoun: englishNoun(t.calls, "call"),
      input: t.input,
      output: t.output,
      cw: t.cacheWrite,
      cr: t.cacheRead,
    },
  );
  const server = [
    t.webSearches > 0
      ? localize(
          locale,
          { "zh-TW": "網頁搜尋 {n} 次", en: "{n} web {searches}" },
          { n: t.webSearches, searches: englishNoun(t.webSearches, "search", "searches") },
        )
      : "",
    t.webFetches > 0
      ? localize(
          locale,
          { "zh-TW": "讀取網頁 {n} 次", en: "{n} web {fetches}" },
          { n: t.webFetches, fetches: englishNoun(t.webFetches, "fetch", "fetches") },
        )
      : "",
    t.voiceSeconds > 0
      ? localize(locale, { "zh-TW": "語音轉文字 {n} 秒", en: "{n} s of voice transcribed" }, { n: t.voiceSeconds })
      : "",
    (t.spokenCharacters ?? 0) > 0
      ? localize(
          locale,
          { "zh-TW": "語音回覆 {n} 字", en: "{n} {characters} of voice replies" },
          { n: t.spokenCharacters ?? 0, characters: englishNoun(t.spokenCharacters ?? 0, "character") },
        )
      : "",
  ].filter((part) => part !== "");
  return server.length === 0
    ? tokens
    : `${tokens}${locale === "zh-TW" ? "；" : "; "}${server.join(locale === "zh-TW" ? "、" : ", ")}`;
}

/** `$0.0123`: an estimated cost in USD. */
function usd(amount: number): string {
  return `$${amount < 1 ? amount.toFixed(4) : amount.toFixed(2)}`;
}

/**
 * The `/usage` text of one user.
 * @param totals - the user's totals today and this month.
 * @param budgeted - false for admins (no user budget).
 */
export function formatUserUsage(
  config: Config,
  locale: Locale,
  totals: { day: UsageTotals; month: UsageTotals },
  budgeted: boolean,
  now = Date.now(),
): string {
  const zone = config.TIMEZONE;
  const { day, month } = periodOf(now, zone);
  const reset = formatMoment(nextDayStart(now, zone), zone);
  const lines = [
    localize(
      locale,
      { "zh-TW": "**今天**（{day}，{zone}）：{totals}", en: "**Today** ({day}, {zone}): {totals}" },
      { day, zone, totals: formatTotals(locale, totals.day) },
    ),
    localize(
      locale,
      { "zh-TW": "**本月**（{month}）：{totals}", en: "**This month** ({month}): {totals}" },
      { month, totals: formatTotals(locale, totals.month) },
    ),
  ];
  if (!budgeted || config.USER_DAILY_TOKENS === 0) {
    lines.push(localize(locale, { "zh-TW": "每日額度：無上限。", en: "Daily budget: no limit." }));
  } else {
    const left = Math.max(0, config.USER_DAILY_TOKENS - totals.day.budget);
    lines.push(
      localize(
        locale,
        {
          "zh-TW": "每日額度：剩 {left} / {budget} tokens（今天已計 {used}），{reset}（{zone}）重置。",
          en: "Daily budget: {left} of {budget} {tokens} left ({used} counted today); resets at {reset} ({zone}).",
        },
        {
          left,
          budget: config.USER_DAILY_TOKENS,
          tokens: englishNoun(config.USER_DAILY_TOKENS, "token"),
          used: totals.day.budget,
          reset,
          zone,
        },
      ),
      budgetRuleLine(config, locale),
    );
  }
  if (config.MODEL_PRICES) {
    lines.push(
      localize(
        locale,
        {
          "zh-TW": "估計費用：今天 {day}，本月 {month}（美元）。",
          en: "Estimated cost: today {day}, this month {month} (USD).",
        },
        {
          day: usd(costOf(totals.day, config.MODEL_PRICES)),
          month: usd(costOf(totals.month, config.MODEL_PRICES)),
        },
      ),
    );
  }
  return lines.join("\n");
}

/** The `/usage all` text: the whole bot today and this month, and the top users today (by budget tokens). */
export function formatAllUsage(
  config: Config,
  locale: Locale,
  bot: { day: UsageTotals; month: UsageTotals },
  top: { user: string; tokens: number }[],
  now = Date.now(),
): string {
  const zone = config.TIMEZONE;
  const { day, month } = periodOf(now, zone);
  const lines = [
    localize(
      locale,
      { "zh-TW": "**整個機器人今天**（{day}，{zone}）：{totals}", en: "**Whole bot today** ({day}, {zone}): {totals}" },
      { day, zone, totals: formatTotals(locale, bot.day) },
    ),
    localize(
      locale,
      { "zh-TW": "**本月**（{month}）：{totals}", en: "**This month** ({month}): {totals}" },
      { month, totals: formatTotals(locale, bot.month) },
    ),
  ];
  if (config.GLOBAL_DAILY_TOKENS > 0) {
    lines.push(
      localize(
        locale,
        {
          "zh-TW": "全體每日額度：剩 {left} / {budget} tokens（今天已計 {used}）。",
          en: "Bot daily budget: {left} of {budget} {tokens} left ({used} counted today).",
        },
        {
          left: Math.max(0, config.GLOBAL_DAILY_TOKENS - bot.day.budget),
          budget: config.GLOBAL_DAILY_TOKENS,
          tokens: englishNoun(config.GLOBAL_DAILY_TOKENS, "token"),
          used: bot.day.budget,
        },
      ),
      budgetRuleLine(config, locale),
    );
  }
  if (config.MODEL_PRICES) {
    lines.push(
      localize(
        locale,
        {
          "zh-TW": "估計費用：今天 {day}，本月 {month}（美元）。",
          en: "Estimated cost: today {day}, this month {month} (USD).",
        },
        { day: usd(costOf(bot.day, config.MODEL_PRICES)), month: usd(costOf(bot.month, config.MODEL_PRICES)) },
      ),
    );
  }
  lines.push("", localize(locale, { "zh-TW": "**今天用量最多的使用者：**", en: "**Top users today:**" }));
  if (top.length === 0) lines.push(localize(locale, { "zh-TW": "（今天還沒有用量）", en: "(no usage yet today)" }));
  top.forEach((t, i) =>
    lines.push(
      `${i + 1}. \`${t.user}\` — ${localize(
        locale,
        { "zh-TW": "額度計 {n} tokens", en: "{n} budget {tokens}" },
        { n: t.tokens, tokens: englishNoun(t.tokens, "token") },
      )}`,
    ),
  );
  return lines.join("\n");
}
