import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { loadShippedTools } from "./load.js";

let toolbox: ToolBox;
beforeAll(async () => {
  ({ toolbox } = await loadShippedTools());
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(new Date("2026-11-29T07:04:05.678Z"));
});
afterEach(() => {
  vi.useRealTimers();
});

const run = (input: unknown, overrides = {}) => toolbox.execute("get_current_datetime", input, testContext(overrides));

describe("get_current_datetime", () => {
  it("answers in zh-TW in the default zone (TIMEZONE, Asia/Taipei) with an ISO 8601 line", async () => {
    expect(await run({})).toMatchObject({
      ok: true,
      content: "2026年11月29日 星期日 下午3:04（Asia/Taipei，UTC+8）\nISO 8601：2026-11-29T15:04:05+08:00",
    });
  });

  it("answers in English for the en locale", async () => {
    expect((await run({}, { locale: "en" })).content).toBe(
      "Sunday, November 29, 2026 at 3:04 PM (Asia/Taipei, UTC+8)\nISO 8601: 2026-11-29T15:04:05+08:00",
    );
  });

  it("uses the context's time zone when none is asked for", async () => {
    const config = testConfig({ TIMEZONE: "Europe/London" });
    expect((await run({}, { config, timezone: config.TIMEZONE })).content).toBe(
      "2026年11月29日 星期日 清晨7:04（Europe/London，UTC）\nISO 8601：2026-11-29T07:04:05+00:00",
    );
  });

  it("takes an IANA zone: half-hour offsets, negative offsets, daylight saving, any letter case", async () => {
    expect((await run({ timezone: "Asia/Kolkata" })).content).toBe(
      "2026年11月29日 星期日 中午12:34（Asia/Kolkata，UTC+5:30）\nISO 8601：2026-11-29T12:34:05+05:30",
    );
    expect((await run({ timezone: "America/New_York" })).content).toBe(
      "2026年11月29日 星期日 凌晨2:04（America/New_York，UTC-5）\nISO 8601：2026-11-29T02:04:05-05:00",
    );
    vi.setSystemTime(new Date("2026-07-01T12:00:00Z"));
    expect((await run({ timezone: "america/new_york" }, { locale: "en" })).content).toBe(
      "Wednesday, July 1, 2026 at 8:00 AM (America/New_York, UTC-4)\nISO 8601: 2026-07-01T08:00:00-04:00",
    );
    expect((await run({ timezone: "UTC" }, { locale: "en" })).content).toBe(
      "Wednesday, July 1, 2026 at 12:00 PM (UTC, UTC)\nISO 8601: 2026-07-01T12:00:00+00:00",
    );
  });

  it("crosses the date line correctly", async () => {
    vi.setSystemTime(new Date("2026-11-29T11:30:00Z"));
    expect((await run({ timezone: "Pacific/Kiritimati" })).content).toBe(
      "2026年11月30日 星期一 凌晨1:30（Pacific/Kiritimati，UTC+14）\nISO 8601：2026-11-30T01:30:00+14:00",
    );
    expect((await run({ timezone: "Pacific/Pago_Pago" })).content).toBe(
      "2026年11月29日 星期日 凌晨12:30（Pacific/Pago_Pago，UTC-11）\nISO 8601：2026-11-29T00:30:00-11:00",
    );
    vi.setSystemTime(new Date("2026-11-29T07:04:05.678Z"));
    expect((await run({ timezone: "Pacific/Kiritimati" })).content).toBe(
      "2026年11月29日 星期日 晚上9:04（Pacific/Kiritimati，UTC+14）\nISO 8601：2026-11-29T21:04:05+14:00",
    );
  });

  it.each(["Mars/Olympus", "+08:00", "CST", "Taipei", "UTC+8", "Asia/Taipei; rm -rf"])(
    "refuses %j with a clear error",
    async (zone) => {
      const result = await run({ timezone: zone });
      expect(result.ok).toBe(false);
      expect(result.content).toBe(
        `「${zone}」不是 IANA 時區名稱。請用像 Asia/Taipei、Asia/Tokyo、Europe/London、America/New_York 或 UTC 這樣的名稱（不要用 +08:00 或 CST 這類縮寫）。`,
      );
    },
  );

  it("refuses an unknown zone in English for the en locale", async () => {
    expect((await run({ timezone: "Nowhere/Land" }, { locale: "en" })).content).toBe(
      '"Nowhere/Land" is not an IANA time zone name. Use a name like Asia/Taipei, Asia/Tokyo, ' +
        "Europe/London, America/New_York or UTC (not an offset like +08:00 or an abbreviation like " +
        "CST).",
    );
  });
});
