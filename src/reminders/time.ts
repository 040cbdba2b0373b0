/**
 * Times of reminders: reading the `at` the model gives (ISO 8601, local to the user's time zone
 * when it has no offset), the cron pattern of a repeat, and a time written out for the user.
 * Time-zone arithmetic is luxon's (the same library BullMQ's cron parser uses).
 */
import { DateTime } from "luxon";
import type { Locale } from "../config.js";
import type { Repeat } from "./store.js";
import { englishCount } from "../i18n.js";

/** Least time ahead a new reminder may be, in ms (the issue: less than 10 s ahead is refused). */
export const MIN_AHEAD_MS = 10_000;
/** Most time ahead a new reminder may be, in ms (one year of 366 days). */
export const MAX_AHEAD_MS = 366 * 24 * 3600 * 1000;

/** Most negative UTC offset any place uses, in minutes (−12:00, Baker Island). */
export const MIN_UTC_OFFSET_MINUTES = -12 * 60;
/** Most positive UTC offset any place uses, in minutes (+14:00, Kiribati's Line Islands). */
export const MAX_UTC_OFFSET_MINUTES = 14 * 60;

/** The offset written at the end of an ISO 8601 date-time (`+08:00`, `-0500`, `+09`), without `Z`. */
const OFFSET = /([+-])(\d{2}):?(\d{2})?$/;

/** `minutes` as an ISO 8601 offset: `+08:00`, `-04:00`. */
function offsetText(minutes: number): string {
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/**
 * How a wall-clock time (no offset) reads in `timeZone`: the instants it names, earliest first —
 * one normally, two in the hour a DST change repeats (clocks go back), none in the hour one skips
 * (clocks go forward). `wall` is the time read as if it were UTC, in ms.
 */
function wallInstants(wall: number, timeZone: string): number[] {
  const zone = DateTime.fromMillis(wall, { zone: timeZone }).zone;
  const day = 24 * 3600 * 1000;
  const offsets = new Set([zone.offset(wall - day), zone.offset(wall), zone.offset(wall + day)]);
  return [...offsets]
    .map((offset) => wall - offset * 60_000)
    .filter((ms) => zone.offset(ms) * 60_000 === wall - ms)
    .sort((a, b) => a - b);
}

/**
 * Reads an ISO 8601 date-time: `2026-12-01T08:00`, `2026-12-01T08:00:00+08:00`, `…Z`. Without an
 * offset it is a wall-clock time in `timeZone`: a time that occurs twice there (the hour a DST
 * change repeats, e.g. `2027-11-07T01:30` in America/New_York) is the first, the earlier instant
 * (01:30 EDT, −04:00), as a person most likely means; a time the change skips (`2027-03-14T02:30`
 * there) is moved on by the length of the gap (03:30 EDT), as luxon does. See {@link wallTimeNote}.
 *
 * @returns ms since the Unix epoch, or an English reason the model can act on: no time part, not
 *   ISO, not a valid date, or an offset outside −12:00…+14:00 (no place uses it, e.g. `+25:00`).
 */
export function parseAt(at: string, timeZone: string): number | string {
  const text = at.trim();
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(text)) {
    return (
      `"${at}" is not an ISO 8601 date-time: write it like 2026-12-01T08:00 (in the user's time ` +
      `zone ${timeZone}) or with an offset, e.g. 2026-12-01T08:00+08:00`
    );
  }
  const iso = text.replace(" ", "T");
  const written = OFFSET.exec(iso.slice(16));
  if (written) {
    const minutes = Number(written[3] ?? "0");
    const total = (written[1] === "-" ? -1 : 1) * (Number(written[2]) * 60 + minutes);
    if (minutes >= 60 || total < MIN_UTC_OFFSET_MINUTES || total > MAX_UTC_OFFSET_MINUTES)
      return (
        `"${at}" has the UTC offset ${written[0]}, which no place uses (offsets run from -12:00 to ` +
        `+14:00): write the time without an offset (it is then in the user's time zone ${timeZone}) ` +
        `or with the offset of the place meant, e.g. 2026-12-01T08:00+08:00`
      );
  }
  const dt = DateTime.fromISO(iso, { zone: timeZone });
  if (!dt.isValid)
    return `"${at}" is not a valid date-time (${dt.invalidExplanation ?? dt.invalidReason ?? "unreadable"}): write it like 2026-12-01T08:00`;
  if (written || /Z$/i.test(iso)) return dt.toMillis();
  const wall = DateTime.fromISO(iso, { zone: "UTC" }).toMillis();
  return wallInstants(wall, timeZone)[0] ?? dt.toMillis();
}

/**
 * A note for the model when the `at` it gave is a wall-clock time (no offset) that a DST change
 * in `timeZone` makes ambiguous or skips, saying which instant {@link parseAt} took:
 * `2027-11-07T01:30 occurs twice in America/New_York (clocks go back); it is taken as the first,
 * 2027-11-07T01:30:00-04:00 (write 2027-11-07T01:30-05:00 for the second).` or
 * `2027-03-14T02:30 does not exist in America/New_York (clocks go forward); it is taken as
 * 2027-03-14T03:30:00-04:00.`
 *
 * @returns that sentence, or undefined for an ordinary time, a time with an offset and anything
 *   {@link parseAt} refuses. Never throws.
 */
export function wallTimeNote(at: string, timeZone: string): string | undefined {
  const text = at.trim().replace(" ", "T");
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(text) || OFFSET.test(text.slice(16)) || /Z$/i.test(text)) return undefined;
  const parsed = parseAt(text, timeZone);
  if (typeof parsed === "string") return undefined;
  const wall = DateTime.fromISO(text, { zone: "UTC" });
  if (!wall.isValid) return undefined;
  const instants = wallInstants(wall.toMillis(), timeZone);
  if (instants.length === 2) {
    const second = DateTime.fromMillis(instants[1]!, { zone: timeZone });
    return (
      `${text} occurs twice in ${timeZone} (clocks go back); it is taken as the first, ` +
      `${timeIso(parsed, timeZone)} (write ${text}${offsetText(second.offset)} for the second).`
    );
  }
  if (instants.length === 0)
    return `${text} does not exist in ${timeZone} (clocks go forward); it is taken as ${timeIso(parsed, timeZone)}.`;
  return undefined;
}

/**
 * Checks the first time of something scheduled (a reminder, a task) from the `at` the model gives:
 * read by {@link parseAt}, cut to whole seconds (cron patterns have seconds), at least
 * {@link MIN_AHEAD_MS} (10 s) and at most {@link MAX_AHEAD_MS} (a year) after `now`.
 *
 * @param at - the model's ISO 8601 date-time (local to `timeZone` when it has no offset).
 * @param timeZone - IANA time zone of the user, e.g. `Asia/Taipei`.
 * @param noun - what is scheduled, in the reasons: `reminder` or `task`.
 * @param now - ms since the Unix epoch (default `Date.now()`).
 * @returns the time in ms since the Unix epoch (whole seconds), or an English reason the model can
 *   act on: not ISO 8601, in the past, less than 10 s ahead, more than a year ahead.
 */
export function checkScheduledTime(
  at: string,
  timeZone: string,
  noun: "reminder" | "task",
  now = Date.now(),
): number | string {
  const parsed = parseAt(at, timeZone);
  if (typeof parsed === "string") return parsed;
  const when = Math.floor(parsed / 1000) * 1000;
  if (when <= now)
    return (
      `${timeIso(when, timeZone)} is in the past (now it is ${timeIso(now, timeZone)}): ask the ` +
      `user for a future time, or check the date with get_current_datetime.`
    );
  if (when < now + MIN_AHEAD_MS)
    return `${timeIso(when, timeZone)} is less than 10 seconds from now (${timeIso(now, timeZone)}): a ${noun} must be at least 10 seconds ahead.`;
  if (when > now + MAX_AHEAD_MS) {
    return (
      `${timeIso(when, timeZone)} is more than one year ahead: ` +
      `${noun === "task" ? "tasks can be scheduled" : "reminders can be set"} at most one year ` +
      `ahead.`
    );
  }
  return when;
}

/**
 * The cron patterns (with seconds, as BullMQ's cron parser reads them) of a repeat, at the
 * wall-clock time of `first` in `timeZone`: daily `s m h * * *`, weekdays `s m h * * 1-5`, weekly
 * on its weekday, monthly on its day of the month. A monthly repeat on a day that some months do
 * not have fires on the last day of those months instead: the 31st is `L` (cron-parser's last day
 * of the month), the 29th and 30th are two patterns, that day in every month but February and
 * `L` in February (the 28th, or the 29th in leap years). Every other repeat is one pattern.
 *
 * @returns one pattern, or two (each becomes its own job scheduler; no date matches both).
 */
export function repeatPatterns(repeat: Repeat, first: number, timeZone: string): string[] {
  const dt = DateTime.fromMillis(first, { zone: timeZone });
  const clock = `${dt.second} ${dt.minute} ${dt.hour}`;
  switch (repeat) {
    case "daily":
      return [`${clock} * * *`];
    case "weekdays":
      return [`${clock} * * 1-5`];
    case "weekly":
      return [`${clock} * * ${dt.weekday % 7}`];
    case "monthly":
      if (dt.day === 31) return [`${clock} L * *`];
      if (dt.day >= 29) return [`${clock} ${dt.day} 1,3-12 *`, `${clock} L 2 *`];
      return [`${clock} ${dt.day} * *`];
  }
}

/**
 * The day of the month of a monthly repeat that starts at `first` in `timeZone` when some months
 * lack it (29, 30 or 31: those months get the reminder on their last day), else undefined.
 */
export function monthEndDay(repeat: Repeat | undefined, first: number, timeZone: string): number | undefined {
  if (repeat !== "monthly") return undefined;
  const day = DateTime.fromMillis(first, { zone: timeZone }).day;
  return day >= 29 ? day : undefined;
}

/** A time for the user: `2026年12月1日 星期二 08:00` / `Tuesday, December 1, 2026 at 08:00`, in `timeZone`. */
export function timeInWords(ms: number, timeZone: string, locale: Locale): string {
  const dt = DateTime.fromMillis(ms, { zone: timeZone }).setLocale(locale === "en" ? "en-US" : "zh-TW");
  return dt.toLocaleString({
    year: "numeric",
    month: "long",
    day: "numeric",
    weekday: "long",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
}

/** The ISO 8601 form with the zone's offset, milliseconds dropped: `2026-12-01T08:00:00+08:00`. */
export function timeIso(ms: number, timeZone: string): string {
  return (
    DateTime.fromMillis(ms, { zone: timeZone }).set({ millisecond: 0 }).toISO({ suppressMilliseconds: true }) ??
    new Date(ms).toISOString()
  );
}

/** A duration in words, rounded: `45 秒` / `45 seconds` (under 90 s), `3 分鐘` / `3 minutes`, `2 小時` / `2 hours`, `1 天` / `1 day`. */
export function durationInWords(ms: number, locale: Locale): string {
  const seconds = Math.max(1, Math.round(ms / 1000));
  const minutes = Math.round(seconds / 60);
  const [n, unit] =
    seconds < 90
      ? [seconds, "second"]
      : minutes < 120
        ? [minutes, "minute"]
        : minutes < 48 * 60
          ? [Math.round(minutes / 60), "hour"]
          : [Math.round(minutes / 1440), "day"];
  if (locale === "en") return englishCount(n, unit);
  return `${n} ${{ second: "秒", minute: "分鐘", hour: "小時", day: "天" }[unit]}`;
}

/**
 * A repeat in words of `locale`. With `monthEnd` (see {@link monthEndDay}), a monthly repeat says
 * what shorter months get: `每月 31 日（沒有 31 日的月份在月底）` / `monthly on the 31st (on the last day of shorter months)`.
 */
export function repeatInWords(repeat: Repeat | undefined, locale: Locale, monthEnd?: number): string {
  if (repeat === "monthly" && monthEnd !== undefined) {
    return locale === "en"
      ? `monthly on the ${monthEnd}${monthEnd === 31 ? "st" : "th"} (on the last day of shorter months)`
      : `每月 ${monthEnd} 日（沒有 ${monthEnd} 日的月份在月底）`;
  }
  const words = {
    none: { "zh-TW": "不重複", en: "once" },
    daily: { "zh-TW": "每天", en: "daily" },
    weekdays: { "zh-TW": "每個工作日（週一到週五）", en: "weekdays (Mon-Fri)" },
    weekly: { "zh-TW": "每週", en: "weekly" },
    monthly: { "zh-TW": "每月", en: "monthly" },
  }[repeat ?? "none"];
  return words[locale] ?? words["zh-TW"];
}
