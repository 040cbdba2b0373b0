/**
 * get_current_datetime: the current date, weekday, time and time zone, with `Intl` only.
 */
import { z } from "zod";
import type { Locale } from "../src/config.js";
import { localize } from "../src/i18n.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";

/**
 * The IANA name of `zone` in its usual letter case (`asia/taipei` → `Asia/Taipei`), or undefined when it is
 * not an IANA time zone. Offsets such as `+08:00` and abbreviations such as `CST` are refused
 * (abbreviations are ambiguous; the model should pass a zone name).
 */
export function canonicalTimeZone(zone: string): string | undefined {
  const name = zone.trim();
  if (!/^(?:[A-Za-z][A-Za-z0-9_+-]*\/)*[A-Za-z][A-Za-z0-9_+-]*$/.test(name)) return undefined;
  if (!name.includes("/") && !/^(?:UTC|GMT|Etc\/\w+)$/i.test(name)) return undefined;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  // Keep the name the user gave (ICU would turn Asia/Kolkata into Asia/Calcutta), with its usual letter case when known.
  const lower = name.toLowerCase();
  const known = [...Intl.supportedValuesOf("timeZone"), "UTC", resolved].find((z) => z.toLowerCase() === lower);
  return known ?? name;
}

/** Offset of `zone` from UTC at `date`, in minutes (Taipei: 480). */
export function offsetMinutes(date: Date, zone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const wall = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  return Math.round((wall - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
}

/** ISO 8601 local time with offset, seconds precision: `2026-11-29T15:04:05+08:00`. */
export function isoWithOffset(date: Date, zone: string): string {
  const offset = offsetMinutes(date, zone);
  const local = new Date(Math.floor(date.getTime() / 1000) * 1000 + offset * 60_000);
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  const hh = String(Math.floor(abs / 60)).padStart(2, "0");
  const mm = String(abs % 60).padStart(2, "0");
  return `${local.toISOString().slice(0, 19)}${sign}${hh}:${mm}`;
}

/** `UTC+8`, `UTC+5:30`, `UTC-3`, `UTC`. */
function utcLabel(offset: number): string {
  if (offset === 0) return "UTC";
  const abs = Math.abs(offset);
  const minutes = abs % 60;
  return `UTC${offset < 0 ? "-" : "+"}${Math.floor(abs / 60)}${minutes ? `:${String(minutes).padStart(2, "0")}` : ""}`;
}

/**
 * The answer text for `date` in `zone`:
 * zh-TW `2026年11月29日 星期日 下午3:04（Asia/Taipei，UTC+8）` and `ISO 8601：2026-11-29T15:04:05+08:00`;
 * en `Sunday, November 29, 2026 at 3:04 PM (Asia/Taipei, UTC+8)` and `ISO 8601: …`.
 */
export function describeNow(date: Date, zone: string, locale: Locale): string {
  const readable = new Intl.DateTimeFormat(locale === "en" ? "en-US" : "zh-TW", {
    timeZone: zone,
    dateStyle: "full",
    timeStyle: "short",
  })
    .format(date)
    .replace(/[\u202f\u00a0]/g, " "); // ICU puts narrow no-break spaces in "3:04 PM"; plain spaces read the same everywhere
  const offset = offsetMinutes(date, zone);
  return localize(
    locale,
    { "zh-TW": "{readable}（{zone}，{utc}）\nISO 8601：{iso}", en: "{readable} ({zone}, {utc})\nISO 8601: {iso}" },
    { readable, zone, utc: utcLabel(offset), iso: isoWithOffset(date, zone) },
  );
}

/** The get_current_datetime tool: `{ timezone? }` → readable date and time plus an ISO 8601 line (see {@link describeNow}). */
export default defineTool({
  name: "get_current_datetime",
  title: { "zh-TW": "日期與時間", en: "Date and time" },
  summary: {
    "zh-TW": "現在的日期、星期與時間，也可以查其他時區。",
    en: "Today's date, weekday and time, also in other time zones.",
  },
  description: [
    "Get the current date, weekday, time and time zone, plus an ISO 8601 timestamp with offset to compute with.",
    'Use it whenever the answer depends on today\'s date or the time now ("what day is it", ' +
      '"how many days until…", due dates such as "tomorrow"), since you do not know the current ' +
      "time.",
    "Pass `timezone` (an IANA name like Europe/London) only when the user asks about another place; otherwise the user's time zone is used.",
    "Not for converting arbitrary dates or doing date arithmetic by itself.",
  ].join(" "),
  tags: ["info", "daily"],
  readOnly: true,
  input: z.object({
    timezone: z
      .string()
      .max(64)
      .optional()
      .describe("IANA time zone name, e.g. Asia/Taipei, America/New_York, UTC. Omit for the user's own zone."),
  }),
  activity: ({ timezone }, locale) =>
    localize(
      locale,
      { "zh-TW": "查詢時間{zone}", en: "Checking the time{zone}" },
      { zone: timezone ? (locale === "en" ? `: ${timezone}` : `：${timezone}`) : "" },
    ),
  run({ timezone }, context) {
    const wanted = timezone?.trim() ? timezone : context.timezone;
    const zone = canonicalTimeZone(wanted);
    if (!zone) {
      throw new ToolError(
        localize(
          context.locale,
          {
            "zh-TW":
              "「{zone}」不是 IANA 時區名稱。請用像 Asia/Taipei、Asia/Tokyo、Europe/London、America/New_York 或 UTC 這樣的名稱（不要用 +08:00 或 CST 這類縮寫）。",
            en:
              '"{zone}" is not an IANA time zone name. Use a name like Asia/Taipei, Asia/Tokyo, ' +
              "Europe/London, America/New_York or UTC (not an offset like +08:00 or an abbreviation like " +
              "CST).",
          },
          { zone: wanted },
        ),
      );
    }
    return describeNow(new Date(), zone, context.locale);
  },
});
