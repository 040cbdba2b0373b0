/**
 * Reminder helpers without the stack: reading `at`, repeat patterns, words, button tokens, and the
 * store's limit on real Redis.
 */
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { buttonToken, listCancelData, parseButton, reminderText } from "../../src/reminders/format.js";
import { addReminder, listReminders, MAX_ACTIVE_REMINDERS, type Reminder } from "../../src/reminders/store.js";
import {
  checkScheduledTime,
  durationInWords,
  monthEndDay,
  parseAt,
  repeatInWords,
  repeatPatterns,
  timeIso,
  wallTimeNote,
} from "../../src/reminders/time.js";
import { useRedis } from "../helpers/use-redis.js";

const ZONE = "Asia/Taipei";

describe("parseAt", () => {
  it("reads a time without offset in the time zone, and one with an offset or Z as given", () => {
    expect(parseAt("2026-12-01T08:00", ZONE)).toBe(Date.parse("2026-12-01T00:00:00Z"));
    expect(parseAt("2026-12-01 08:00:30", ZONE)).toBe(Date.parse("2026-12-01T00:00:30Z"));
    expect(parseAt("2026-12-01T08:00+09:00", ZONE)).toBe(Date.parse("2026-11-30T23:00:00Z"));
    expect(parseAt("2026-12-01T08:00:00Z", ZONE)).toBe(Date.parse("2026-12-01T08:00:00Z"));
    expect(parseAt("2026-03-08T02:30", "America/New_York")).toBe(Date.parse("2026-03-08T07:30:00Z")); // inside the DST gap: luxon moves it on
  });
  it("refuses a date without a time, words and impossible dates with a reason", () => {
    expect(parseAt("2026-12-01", ZONE)).toMatch(/not an ISO 8601 date-time/);
    expect(parseAt("tomorrow 8am", ZONE)).toMatch(/not an ISO 8601 date-time/);
    expect(parseAt("2026-02-30T08:00", ZONE)).toMatch(/not a valid date-time/);
  });
});

describe("parseAt across DST changes and offsets", () => {
  const NY = "America/New_York";
  it("a wall time a fall-back repeats is the first (EDT), and the note says so and how to get the second", () => {
    expect(parseAt("2027-11-07T01:30", NY)).toBe(Date.parse("2027-11-07T05:30:00Z")); // 01:30 EDT, not 06:30Z (EST)
    expect(timeIso(parseAt("2027-11-07T01:30", NY) as number, NY)).toBe("2027-11-07T01:30:00-04:00");
    expect(wallTimeNote("2027-11-07T01:30", NY)).toBe(
      "2027-11-07T01:30 occurs twice in America/New_York (clocks go back); it is taken as the first, " +
        "2027-11-07T01:30:00-04:00 (write 2027-11-07T01:30-05:00 for the second).",
    );
    // the second, asked for with its offset, is kept as given
    expect(parseAt("2027-11-07T01:30-05:00", NY)).toBe(Date.parse("2027-11-07T06:30:00Z"));
    expect(wallTimeNote("2027-11-07T01:30-05:00", NY)).toBeUndefined();
    // either side of the repeated hour is unambiguous
    expect(parseAt("2027-11-07T00:59", NY)).toBe(Date.parse("2027-11-07T04:59:00Z"));
    expect(parseAt("2027-11-07T02:00", NY)).toBe(Date.parse("2027-11-07T07:00:00Z"));
    expect(wallTimeNote("2027-11-07T02:00", NY)).toBeUndefined();
    // a half-hour change (Lord Howe Island): the first 01:45 is +11:00
    expect(parseAt("2027-04-04T01:45", "Australia/Lord_Howe")).toBe(Date.parse("2027-04-03T14:45:00Z"));
  });
  it("a wall time a spring-forward skips moves on by the gap (02:30 → 03:30 EDT), and the note says so", () => {
    expect(parseAt("2027-03-14T02:30", NY)).toBe(Date.parse("2027-03-14T07:30:00Z"));
    expect(timeIso(parseAt("2027-03-14T02:30", NY) as number, NY)).toBe("2027-03-14T03:30:00-04:00");
    expect(wallTimeNote("2027-03-14T02:30", NY)).toBe(
      "2027-03-14T02:30 does not exist in America/New_York (clocks go forward); it is taken as 2027-03-14T03:30:00-04:00.",
    );
    expect(wallTimeNote("2026-12-01T08:00", ZONE)).toBeUndefined();
  });
  it("refuses an offset no place uses (outside -12:00…+14:00, or 60 minutes or more), keeps the extremes", () => {
    const reason =
      "has the UTC offset +25:00, which no place uses (offsets run from -12:00 to +14:00): write the time " +
      "without an offset (it is then in the user's time zone Asia/Taipei) or with the offset of the place " +
      "meant, e.g. 2026-12-01T08:00+08:00";
    expect(parseAt("2026-12-08T08:00+25:00", ZONE)).toBe(`"2026-12-08T08:00+25:00" ${reason}`);
    // refused as such even when the time it would give is in the future (it was only refused as "in the past")
    const now = Date.parse("2026-12-01T00:00:00Z");
    expect(checkScheduledTime("2026-12-08T08:00+25:00", ZONE, "reminder", now)).toBe(
      `"2026-12-08T08:00+25:00" ${reason}`,
    );
    expect(checkScheduledTime("2026-12-08T08:00-12:01", ZONE, "task", now)).toMatch(
      /UTC offset -12:01, which no place uses/,
    );
    expect(parseAt("2026-12-08T08:00+1401", ZONE)).toMatch(/UTC offset \+1401, which no place uses/);
    expect(parseAt("2026-12-08T08:00+05:60", ZONE)).toMatch(/UTC offset \+05:60, which no place uses/);
    expect(parseAt("2026-12-08T08:00:00+25", ZONE)).toMatch(/UTC offset \+25, which no place uses/);
    expect(parseAt("2026-12-08T08:00+14:00", ZONE)).toBe(Date.parse("2026-12-07T18:00:00Z"));
    expect(parseAt("2026-12-08T08:00-12:00", ZONE)).toBe(Date.parse("2026-12-08T20:00:00Z"));
    expect(parseAt("2026-12-08T08:00+05:45", ZONE)).toBe(Date.parse("2026-12-08T02:15:00Z"));
  });
});

describe("checkScheduledTime", () => {
  const now = Date.parse("2026-12-01T00:00:00.500Z"); // 08:00:00.5 in Taipei
  it("gives whole seconds for a time between 10 s and a year ahead", () => {
    expect(checkScheduledTime("2026-12-01T08:00:11.900", ZONE, "task", now)).toBe(Date.parse("2026-12-01T00:00:11Z"));
    expect(checkScheduledTime("2027-12-01T08:00", ZONE, "reminder", now)).toBe(Date.parse("2027-12-01T00:00:00Z"));
  });
  it("answers a reason naming what is scheduled: past, under 10 s, over a year, not ISO", () => {
    expect(checkScheduledTime("2026-12-01T07:59", ZONE, "task", now)).toBe(
      "2026-12-01T07:59:00+08:00 is in the past (now it is 2026-12-01T08:00:00+08:00): ask the " +
        "user for a future time, or check the date with get_current_datetime.",
    );
    expect(checkScheduledTime("2026-12-01T08:00:05", ZONE, "reminder", now)).toMatch(
      /less than 10 seconds from now .*: a reminder must be at least 10 seconds ahead\.$/,
    );
    expect(checkScheduledTime("2026-12-01T08:00:05", ZONE, "task", now)).toMatch(
      /a task must be at least 10 seconds ahead\.$/,
    );
    expect(checkScheduledTime("2028-01-01T08:00", ZONE, "reminder", now)).toMatch(
      /more than one year ahead: reminders can be set at most one year ahead\.$/,
    );
    expect(checkScheduledTime("2028-01-01T08:00", ZONE, "task", now)).toMatch(
      /more than one year ahead: tasks can be scheduled at most one year ahead\.$/,
    );
    expect(checkScheduledTime("soon", ZONE, "task", now)).toMatch(/not an ISO 8601 date-time/);
  });
});

describe("repeatPatterns", () => {
  const at = Date.parse("2026-12-01T00:00:05Z"); // Tuesday 08:00:05 in Taipei
  it("keeps the wall-clock time of the first occurrence in the time zone", () => {
    expect(repeatPatterns("daily", at, ZONE)).toEqual(["5 0 8 * * *"]);
    expect(repeatPatterns("weekdays", at, ZONE)).toEqual(["5 0 8 * * 1-5"]);
    expect(repeatPatterns("weekly", at, ZONE)).toEqual(["5 0 8 * * 2"]);
    expect(repeatPatterns("monthly", at, ZONE)).toEqual(["5 0 8 1 * *"]);
    expect(repeatPatterns("weekly", Date.parse("2026-12-06T01:00:00Z"), ZONE)).toEqual(["0 0 9 * * 0"]); // Sunday
  });

  it("gives a monthly repeat on the 29th-31st the last day of shorter months", () => {
    const on = (iso: string) => Date.parse(`${iso}+08:00`);
    expect(repeatPatterns("monthly", on("2026-12-28T08:00:00"), ZONE)).toEqual(["0 0 8 28 * *"]);
    expect(repeatPatterns("monthly", on("2026-12-29T08:00:00"), ZONE)).toEqual(["0 0 8 29 1,3-12 *", "0 0 8 L 2 *"]);
    expect(repeatPatterns("monthly", on("2026-12-30T08:00:00"), ZONE)).toEqual(["0 0 8 30 1,3-12 *", "0 0 8 L 2 *"]);
    expect(repeatPatterns("monthly", on("2026-12-31T08:00:00"), ZONE)).toEqual(["0 0 8 L * *"]);
    expect(monthEndDay("monthly", on("2026-12-31T08:00:00"), ZONE)).toBe(31);
    expect(monthEndDay("monthly", on("2026-12-28T08:00:00"), ZONE)).toBeUndefined();
    expect(monthEndDay("daily", on("2026-12-31T08:00:00"), ZONE)).toBeUndefined();
    expect(repeatInWords("monthly", "zh-TW", 31)).toBe("每月 31 日（沒有 31 日的月份在月底）");
    expect(repeatInWords("monthly", "en", 30)).toBe("monthly on the 30th (on the last day of shorter months)");
    expect(repeatInWords("monthly", "zh-TW")).toBe("每月");
  });
});

describe("words", () => {
  it("durations in seconds, minutes, hours and days", () => {
    expect(durationInWords(4000, "zh-TW")).toBe("4 秒");
    expect(durationInWords(600_000, "zh-TW")).toBe("10 分鐘");
    expect(durationInWords(3 * 3600_000, "en")).toBe("3 hours");
    expect(durationInWords(3 * 86_400_000, "en")).toBe("3 days");
    expect(durationInWords(60_000, "en")).toBe("60 seconds");
  });
  it("ISO with the offset and no milliseconds", () => {
    expect(timeIso(Date.parse("2026-12-01T00:00:00.123Z"), ZONE)).toBe("2026-12-01T08:00:00+08:00");
  });
  it("says how late a reminder is only past a minute", () => {
    const r = { text: "開會", timezone: ZONE } as Reminder;
    expect(reminderText(r, 0, 59_000, "zh-TW")).toBe("⏰ 開會");
    expect(reminderText(r, Date.parse("2026-12-01T00:00:00Z"), 5 * 60_000, "zh-TW")).toMatch(
      /^⏰ 開會\n（晚了 5 分鐘：原定 .+08:00，當時機器人沒有在執行）$/,
    );
  });
});

describe("button tokens", () => {
  it("round-trip, and fit Telegram's 64-byte callback_data for the longest ids", () => {
    const owner = { platform: "telegram" as const, userId: "chat:-1001234567890123" };
    const due = Date.parse("2027-12-31T23:59:59Z");
    const data = `rm:s:${buttonToken(owner, 999_999, due)}`;
    expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
    expect(parseButton(data)).toEqual({
      action: "s",
      userId: "chat:-1001234567890123",
      reminderId: 999_999,
      dueAt: due,
    });
    expect(parseButton(`rm:c:${buttonToken({ platform: "discord", userId: "123456789012345678" }, 3)}`)).toEqual({
      action: "c",
      userId: "123456789012345678",
      reminderId: 3,
    });
  });
  it("a /reminders list's cancel buttons say which list they are in (one person's, a group's for its admins)", () => {
    const owner = { platform: "telegram" as const, userId: "chat:-1001234567890123" };
    for (const [view, mark] of [
      ["list", "l"],
      ["group", "g"],
    ] as const) {
      const data = listCancelData(view, owner, 999_999_999);
      expect(data.startsWith(`rm:c${mark}:`)).toBe(true);
      expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
      expect(parseButton(data)).toEqual({ action: "c", userId: owner.userId, reminderId: 999_999_999, view });
    }
    // Only a cancel is shown in a list, without an occurrence.
    expect(parseButton("rm:dl:123.4.abc")).toBeUndefined();
    expect(parseButton("rm:cl:123.4.abc")).toBeUndefined();
    expect(parseButton("rm:cx:123.4")).toBeUndefined();
  });
  it("refuses anything else", () => {
    expect(parseButton("ap:abc:y")).toBeUndefined();
    expect(parseButton("rm:d:123.4")).toBeUndefined(); // done needs an occurrence
    expect(parseButton("rm:x:123.4.abc")).toBeUndefined();
  });
});

describe("store", () => {
  let redis: RedisClient;
  useRedis((connection) => (redis = connection));
  it("gives out ids in order, never more than 50 active even when added in parallel; fired one-offs do not count", async () => {
    const owner = { platform: "discord" as const, userId: "42" };
    const base = {
      text: "x",
      at: Date.now() + 60_000,
      next: Date.now() + 60_000,
      timezone: ZONE,
      chatId: "1",
      chatKind: "dm" as const,
      userName: "A",
      createdAt: Date.now(),
    };
    await addReminder(redis, owner, { ...base, next: undefined, firedAt: Date.now() });
    const added = await Promise.all(Array.from({ length: 60 }, () => addReminder(redis, owner, base)));
    expect(added.filter(Boolean)).toHaveLength(MAX_ACTIVE_REMINDERS);
    expect(
      added
        .filter(Boolean)
        .map((r) => r!.id)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    expect(await listReminders(redis, owner)).toHaveLength(51);
    expect(await listReminders(redis, owner, Date.now() + 4 * 86_400_000)).toHaveLength(50); // the fired one-off is gone after 3 days
  });
});
