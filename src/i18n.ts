/**
 * The bot's own messages in its locales. Each module keeps its strings next to the code that
 * sends them and picks one with {@link localize}, so there is no central catalogue to edit.
 */
import type { Locale } from "./config.js";

export type { Locale } from "./config.js";

/** One message in every locale the bot speaks. */
export type Localized = Record<Locale, string>;

/**
 * Picks the text for `locale`, replacing `{name}` placeholders with `params[name]`.
 * An unknown placeholder is left as it is. Never throws.
 */
export function localize(locale: Locale, texts: Localized, params: Record<string, string | number> = {}): string {
  const text = texts[locale] ?? texts["zh-TW"];
  return text.replace(/\{(\w+)\}/g, (m, k: string) => (k in params ? String(params[k]) : m));
}

/** Han, kana and Hangul characters, CJK punctuation and full-width forms: text written in an East Asian script. */
const EAST_ASIAN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff00-\uffef]/u;

/** The `e` of a number in scientific notation (`1e308`, `2.5e-3`): part of the number, not a word. */
const EXPONENT_E = /(?<=\d\.?)[eE](?=[-+]?\d)/g;

/**
 * The locale a text is written in, by its letters (a guess for scripted answers: the demo's and
 * the fakes' model, not the bot's setting): `zh-TW` when it has East Asian characters (Han, kana,
 * Hangul, CJK punctuation), `en` when it has Latin letters and none of those; undefined when it
 * has neither (`1+1`, `1e308*10`: an exponent's `e` is no letter of a word; an emoji), so the
 * caller's default applies.
 */
export function writtenLocale(text: string): Locale | undefined {
  if (EAST_ASIAN.test(text)) return "zh-TW";
  return /[A-Za-z]/.test(text.replace(EXPONENT_E, "")) ? "en" : undefined;
}

/**
 * One of the bot's locales for a client's language tag (Telegram's `language_code`, Discord's
 * `locale`: IETF tags such as `zh-hant`, `zh-TW`, `en-US`), matched by its primary subtag
 * (`zh` → `zh-TW`, `en` → `en`); undefined for any other language or none, so the caller's
 * default applies.
 */
export function clientLocale(tag: string | undefined): Locale | undefined {
  const primary = tag?.trim().toLowerCase().split(/[-_]/)[0];
  if (primary === "zh") return "zh-TW";
  if (primary === "en") return "en";
  return undefined;
}

const ENGLISH_PLURAL = new Intl.PluralRules("en");

/**
 * An English noun for a count, by CLDR's plural rules (`Intl.PluralRules`): `1` → `part`, `0` and
 * `2` → `parts`; `noun` is the singular, `plural` the plural (default: the singular and `-s`; give
 * it for `search` → `searches`, `process` → `processes`). The one place English texts choose
 * between singular and plural: for the `en` text of a {@link Localized} (as a parameter: Chinese
 * nouns do not change with the count) and for the English-only lines of the command-line tools.
 */
export function englishNoun(count: number, noun: string, plural = `${noun}s`): string {
  return ENGLISH_PLURAL.select(count) === "one" ? noun : plural;
}

/**
 * A count and its English noun ({@link englishNoun}): `1 file`, `3 files`, `0 files`; `shown` is
 * how the number is written (default `String(count)`, e.g. `1,234` for a formatted one).
 */
export function englishCount(count: number, noun: string, plural?: string, shown = String(count)): string {
  return `${shown} ${englishNoun(count, noun, plural)}`;
}

/**
 * The short status shown while the model stays busy and the bot keeps trying (after about 10 s of
 * failed model calls): the live status line of a streamed answer, or one short message that the
 * answer replaces (or that is deleted before an apology).
 */
/**
 * Told once to a conversation whose chosen model (`/settings model`) the Messages API no longer
 * serves (404 `not_found_error`): `{gone}` is that model, `{now}` the one answering instead
 * (`ANTHROPIC_MODEL`).
 */
export const MODEL_GONE_NOTICE: Localized = {
  "zh-TW": "ℹ️ 這個對話選用的模型 {gone} 已停止提供，現在改由 {now} 回答（可用 /settings 更改）。",
  en: "ℹ️ The model chosen for this conversation, {gone}, is no longer available; {now} answers now (change it with /settings).",
};

export const MODEL_BUSY_NOTICE: Localized = {
  "zh-TW": "⏳ AI 服務目前忙碌，仍在嘗試中…",
  en: "⏳ The model is busy, still trying…",
};

/**
 * The words of Stop (issue 42, `src/stop/`): the mark a stopped answer ends with, its notes about
 * a call that changes data (left to finish, never half-undone), the live answer's button and
 * status, and what a press or `/stop` is answered.
 */
export const STOP_TEXT = {
  mark: { "zh-TW": "⏹ 已停止", en: "⏹ Stopped" },
  finished: {
    "zh-TW": "「{activity}」在停止前已開始，並已完成。",
    en: "“{activity}” had already started and finished.",
  },
  unfinished: {
    "zh-TW": "「{activity}」在停止前已開始，但沒有完成。",
    en: "“{activity}” had already started but did not finish.",
  },
  button: { "zh-TW": "⏹ 停止", en: "⏹ Stop" },
  stopping: { "zh-TW": "⏹ 正在停止…", en: "⏹ Stopping…" },
  pressed: { "zh-TW": "正在停止這個回答。", en: "Stopping this answer." },
  finishedAlready: {
    "zh-TW": "這個回答已經寫完了，沒有東西可以停止。",
    en: "This answer has already finished: nothing to stop.",
  },
  nothing: {
    "zh-TW": "目前沒有正在寫的回答可以停止。",
    en: "No answer is being written here right now: nothing to stop.",
  },
  notYours: {
    "zh-TW": "只有提問的人或群組管理員可以停止這個回答。",
    en: "Only the person who asked or a group admin can stop this answer.",
  },
} satisfies Record<string, Localized>;
