import { Writable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import type { ToolContext } from "../../src/toolbox/tool.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { CWA_LOCATIONS, resolveCity } from "../../tools/cwa/cities.js";
import { CwaError, fetchForecast, parseForecast } from "../../tools/cwa/client.js";
import { setWeatherRequestTimeout } from "../../tools/get_weather.js";
import { readCwaFixture, startFakeCwa, type FakeCwa } from "../fakes/cwa.js";
import { toolsMain } from "../../src/cli/tools.js";
import { runCli } from "../helpers/cli.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { loadShippedTools, TOOLS_DIR } from "./load.js";

let fake: FakeCwa;
let config: Config;
let toolbox: ToolBox;
let logText = "";

beforeAll(async () => {
  fake = await startFakeCwa();
  config = testConfig({ CWA_API_KEY: fake.key, CWA_API_BASE: fake.base });
  ({ toolbox } = await loadShippedTools(config));
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  fake.mode = "ok";
  fake.fixture = "2026-03-01";
  fake.requests.length = 0;
});

/** A context whose log lines (debug and up, no secrets registered) are collected in `logText`. */
function context(overrides: Partial<ToolContext> = {}): ToolContext {
  const log = createLogger({
    level: "debug",
    pretty: false,
    destination: new Writable({
      write(chunk, _encoding, done) {
        logText += String(chunk);
        done();
      },
    }),
  });
  return testContext({ config, log, ...overrides });
}

const weather = (input: unknown, overrides: Partial<ToolContext> = {}) =>
  toolbox.execute("get_weather", input, context(overrides));

const TAIPEI_2026 = [
  "臺北市 36 小時天氣預報（中央氣象署）：",
  "・3月1日（日）凌晨 00:00–06:00：陰短暫陣雨，降雨機率 50%，氣溫 20°C，稍有寒意至舒適",
  "・3月1日（日）白天 06:00–18:00：陰時多雲短暫陣雨，降雨機率 40%，氣溫 20–27°C，稍有寒意至舒適",
  "・3月1日（日）晚上 18:00–隔天 06:00：陰時多雲，降雨機率 20%，氣溫 19–24°C，稍有寒意至舒適",
].join("\n");

const UNKNOWN_LIST = CWA_LOCATIONS.join("、");

describe("city names", () => {
  it.each([
    ["臺北市", "臺北市"],
    ["台北市", "臺北市"],
    ["台北", "臺北市"],
    ["台中", "臺中市"],
    ["臺南", "臺南市"],
    ["台東", "臺東縣"],
    ["北市", "臺北市"],
    ["高市", "高雄市"],
    ["新北", "新北市"],
    ["馬祖", "連江縣"],
    ["金門", "金門縣"],
    ["澎湖", "澎湖縣"],
    ["臺北縣", "新北市"],
    ["台北縣", "新北市"],
    ["高雄縣", "高雄市"],
    ["桃園縣", "桃園市"],
    ["新竹縣", "新竹縣"],
    ["嘉義市", "嘉義市"],
    ["Taipei", "臺北市"],
    ["taipei city", "臺北市"],
    ["Taipei County", "新北市"],
    ["Kaohsiung", "高雄市"],
    ["New Taipei", "新北市"],
    ["New Taipei City", "新北市"],
    ["Taichung, Taiwan", "臺中市"],
    ["Hsinchu County", "新竹縣"],
    ["Chiayi City", "嘉義市"],
    ["Yilan", "宜蘭縣"],
    ["Matsu", "連江縣"],
    ["  高雄市 ", "高雄市"],
  ])("%j → %s", (input, name) => {
    expect(resolveCity(input)).toEqual({ ok: true, name });
  });

  it.each([
    ["新竹", "新竹市", "新竹縣"],
    ["嘉義", "嘉義市", "嘉義縣"],
    ["Hsinchu", "新竹市", "新竹縣"],
    ["chiayi", "嘉義市", "嘉義縣"],
  ])("%j fits a city and a county: the city %s, noting %s", (input, name, other) => {
    expect(resolveCity(input)).toEqual({ ok: true, name, ambiguous: { input, other } });
  });

  it.each(["板橋", "信義區", "Tokyo", "東京", "", "Taipei 101", "市", "constructor"])(
    "%j is not a county or city",
    (input) => {
      expect(resolveCity(input)).toEqual({ ok: false });
    },
  );

  it("every one of the 22 names resolves to itself and is in both recordings", () => {
    for (const fixture of ["2026-03-01", "2025-03-09"] as const) {
      const doc = readCwaFixture(fixture) as { records: { location: { locationName: string }[] } };
      expect(doc.records.location.map((l) => l.locationName).sort()).toEqual([...CWA_LOCATIONS].sort());
    }
    for (const name of CWA_LOCATIONS) expect(resolveCity(name)).toEqual({ ok: true, name });
  });
});

describe("get_weather: forecasts from the recordings", () => {
  it("shows the three windows of 臺北市 and sends the key (in the Authorization header, never the URL) and the CWA name", async () => {
    expect(await weather({ city: "台北" })).toMatchObject({ ok: true, content: TAIPEI_2026 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.pathname).toBe("/api/v1/rest/datastore/F-C0032-001");
    expect(fake.authorizations[0]).toBe(fake.key);
    expect(fake.requests[0]!.searchParams.has("Authorization")).toBe(false);
    expect(fake.requests[0]!.href).not.toContain(fake.key);
    expect(fake.requests[0]!.searchParams.get("locationName")).toBe("臺北市");
  });

  it("uses DEFAULT_CITY without a city", async () => {
    expect((await weather({})).content).toBe(TAIPEI_2026);
    const kaohsiungDefault = testConfig({ CWA_API_KEY: fake.key, CWA_API_BASE: fake.base, DEFAULT_CITY: "高雄" });
    expect((await weather({ city: " " }, { config: kaohsiungDefault })).content.split("\n")[0]).toBe(
      "高雄市 36 小時天氣預報（中央氣象署）：",
    );
  });

  it("sorts the windows by start time whatever order the API sends", async () => {
    fake.mode = "reverse";
    expect((await weather({ city: "臺北市" })).content).toBe(TAIPEI_2026);
  });

  it("reads several cities from the 2026 recording", async () => {
    expect((await weather({ city: "Kaohsiung" })).content).toBe(
      [
        "高雄市 36 小時天氣預報（中央氣象署）：",
        "・3月1日（日）凌晨 00:00–06:00：陰天，降雨機率 20%，氣溫 21–22°C，舒適",
        "・3月1日（日）白天 06:00–18:00：多雲時晴，降雨機率 20%，氣溫 21–29°C，舒適",
        "・3月1日（日）晚上 18:00–隔天 06:00：晴時多雲，降雨機率 20%，氣溫 24–27°C，舒適",
      ].join("\n"),
    );
    expect((await weather({ city: "馬祖" })).content).toBe(
      [
        "連江縣 36 小時天氣預報（中央氣象署）：",
        "・3月1日（日）凌晨 00:00–06:00：陰短暫陣雨，降雨機率 80%，氣溫 13°C，寒冷",
        "・3月1日（日）白天 06:00–18:00：陰短暫陣雨，降雨機率 80%，氣溫 13–18°C，寒冷至稍有寒意",
        "・3月1日（日）晚上 18:00–隔天 06:00：陰時多雲短暫陣雨，降雨機率 30%，氣溫 14–15°C，寒冷",
      ].join("\n"),
    );
  });

  it("reads several cities from the 2025 recording (windows starting at noon)", async () => {
    fake.fixture = "2025-03-09";
    expect((await weather({ city: "台中" })).content).toBe(
      [
        "臺中市 36 小時天氣預報（中央氣象署）：",
        "・3月9日（日）下午 12:00–18:00：晴時多雲，降雨機率 0%，氣溫 21–25°C，舒適",
        "・3月9日（日）晚上 18:00–隔天 06:00：晴時多雲，降雨機率 0%，氣溫 16–21°C，稍有寒意至舒適",
        "・3月10日（一）白天 06:00–18:00：晴時多雲，降雨機率 0%，氣溫 16–26°C，稍有寒意至舒適",
      ].join("\n"),
    );
    expect((await weather({ city: "臺北縣" })).content).toBe(
      [
        "新北市 36 小時天氣預報（中央氣象署）：",
        "・3月9日（日）下午 12:00–18:00：多雲，降雨機率 10%，氣溫 19–21°C，稍有寒意",
        "・3月9日（日）晚上 18:00–隔天 06:00：多雲時晴，降雨機率 10%，氣溫 17–19°C，稍有寒意",
        "・3月10日（一）白天 06:00–18:00：晴時多雲，降雨機率 10%，氣溫 17–25°C，稍有寒意至舒適",
      ].join("\n"),
    );
  });

  it("picks the city for 新竹 / 嘉義 / Hsinchu and says so", async () => {
    expect((await weather({ city: "新竹" })).content).toBe(
      [
        "新竹市 36 小時天氣預報（中央氣象署）：",
        "・3月1日（日）凌晨 00:00–06:00：陰短暫陣雨，降雨機率 40%，氣溫 19–20°C，稍有寒意至舒適",
        "・3月1日（日）白天 06:00–18:00：陰時多雲短暫陣雨，降雨機率 30%，氣溫 19–24°C，稍有寒意至舒適",
        "・3月1日（日）晚上 18:00–隔天 06:00：多雲時陰短暫陣雨，降雨機率 30%，氣溫 19–22°C，稍有寒意至舒適",
        "註：「新竹」同時是新竹市和新竹縣，這裡查的是新竹市；要查新竹縣請說「新竹縣」。",
      ].join("\n"),
    );
    expect((await weather({ city: "嘉義" })).content.split("\n").at(-1)).toBe(
      "註：「嘉義」同時是嘉義市和嘉義縣，這裡查的是嘉義市；要查嘉義縣請說「嘉義縣」。",
    );
    expect((await weather({ city: "Hsinchu" }, { locale: "en" })).content).toBe(
      [
        "36-hour forecast for 新竹市 (Central Weather Administration):",
        "- Sun 1 Mar, early morning 00:00–06:00: 陰短暫陣雨, chance of rain 40%, 19–20 °C, 稍有寒意至舒適",
        "- Sun 1 Mar, daytime 06:00–18:00: 陰時多雲短暫陣雨, chance of rain 30%, 19–24 °C, 稍有寒意至舒適",
        "- Sun 1 Mar, night 18:00–06:00 next day: 多雲時陰短暫陣雨, chance of rain 30%, 19–22 °C, 稍有寒意至舒適",
        'Note: "Hsinchu" can mean 新竹市 or 新竹縣; this is 新竹市. Ask for 新竹縣 to get the county.',
      ].join("\n"),
    );
    expect((await weather({ city: "新竹縣" })).content.split("\n")).toHaveLength(4);
  });
});

describe("get_weather: failures", () => {
  it("refuses a place that is not a county or city, listing the 22, without calling the API", async () => {
    expect(await weather({ city: "板橋" })).toMatchObject({
      ok: false,
      content: `「板橋」不是臺灣的縣市。天氣查詢只涵蓋臺灣的 22 個縣市（不含鄉鎮市區，也不含其他國家）：${UNKNOWN_LIST}。鄉鎮市區請改用它所屬的縣市。`,
    });
    expect(await weather({ city: "Tokyo" }, { locale: "en" })).toMatchObject({
      ok: false,
      content:
        `"Tokyo" is not a county or city of Taiwan. Weather covers only Taiwan's 22 counties and ` +
        `cities (not townships or districts, not other countries): ${CWA_LOCATIONS.join(", ")}. ` +
        `For a township, use the county or city it belongs to.`,
    });
    expect(fake.requests).toHaveLength(0);
  });

  it.each([
    [
      "status403",
      "中央氣象署拒絕了這個 API 金鑰（HTTP 403）：金鑰未設定或不正確。請告訴使用者天氣查詢暫時無法使用，需要管理員檢查 CWA_API_KEY。",
    ],
    ["status500", "中央氣象署的服務出錯（HTTP 500），請稍後再試。"],
    ["success-false", '中央氣象署回覆查詢失敗（success 不是 "true"），請稍後再試。'],
    ["empty", "中央氣象署沒有回傳臺北市的預報（地點清單是空的），請稍後再試。"],
    ["fileapi", "中央氣象署回傳的不是 36 小時預報的格式，無法解讀，請稍後再試。"],
    ["not-json", "中央氣象署回傳的不是 36 小時預報的格式，無法解讀，請稍後再試。"],
  ] as const)("%s is a clear error without the key", async (mode, message) => {
    fake.mode = mode;
    logText = "";
    const result = await weather({ city: "臺北市" });
    expect(result).toMatchObject({ ok: false, content: message });
    expect(result.content).not.toContain(fake.key);
    expect(logText).toContain("CWA request failed");
    expect(logText).not.toContain(fake.key);
  });

  it("a wrong key is a 401 with a clear error that never shows either key", async () => {
    const wrong = testConfig({ CWA_API_KEY: "WRONG-KEY-9876543210", CWA_API_BASE: fake.base });
    logText = "";
    const result = await weather({ city: "高雄" }, { config: wrong });
    expect(result).toMatchObject({
      ok: false,
      content:
        "中央氣象署拒絕了這個 API 金鑰（HTTP 401）：金鑰未設定或不正確。請告訴使用者天氣查詢暫時無法使用，需要管理員檢查 CWA_API_KEY。",
    });
    expect(logText).not.toContain("WRONG-KEY-9876543210");
    expect(result.content).not.toContain("WRONG-KEY-9876543210");
    expect((await weather({ city: "高雄" }, { config: wrong, locale: "en" })).content).toBe(
      "The Central Weather Administration refused the API key (HTTP 401): it is missing or " +
        "wrong. Tell the user weather is unavailable for now and the bot's admin must check " +
        "CWA_API_KEY.",
    );
  });

  it("gives up after the request timeout (10 s; shortened here) with a clear error", async () => {
    fake.mode = "hang";
    const previous = setWeatherRequestTimeout(300);
    try {
      logText = "";
      const result = await weather({ city: "臺北市" });
      expect(result).toMatchObject({ ok: false, content: "中央氣象署在 0.3 秒內沒有回應，請稍後再試。" });
      expect(result.durationMs).toBeGreaterThanOrEqual(290);
      expect(logText).not.toContain(fake.key);
    } finally {
      setWeatherRequestTimeout(previous);
    }
    expect(previous).toBe(10_000);
  });

  it("an unreachable server is a clear error without the key", async () => {
    const gone = await startFakeCwa();
    await gone.close();
    const unreachable = testConfig({ CWA_API_KEY: fake.key, CWA_API_BASE: gone.base });
    logText = "";
    const result = await weather({ city: "臺北市" }, { config: unreachable });
    expect(result).toMatchObject({ ok: false, content: "連不上中央氣象署的服務，請稍後再試。" });
    expect(logText).not.toContain(fake.key);
  });
});

describe("CWA client", () => {
  it("an unknown locationName comes back as success with an empty list, which is an error", async () => {
    const error = await fetchForecast({ base: fake.base, key: fake.key, locationName: "板橋區" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CwaError);
    expect(error).toMatchObject({ kind: "no-location", message: "CWA returned no forecast for 板橋區" });
  });

  it("the fake refuses a key in the URL, so the client's header is what it checks", async () => {
    const inUrl = await fetch(
      `${fake.base}/v1/rest/datastore/F-C0032-001?Authorization=${fake.key}&locationName=${encodeURIComponent("臺北市")}`,
    );
    expect(inUrl.status).toBe(400);
    const withoutHeader = await fetch(
      `${fake.base}/v1/rest/datastore/F-C0032-001?locationName=${encodeURIComponent("臺北市")}`,
    );
    expect(withoutHeader.status).toBe(401);
  });

  it("the fake filters comma-separated names like the API", async () => {
    const response = await fetch(
      `${fake.base}/v1/rest/datastore/F-C0032-001?locationName=${encodeURIComponent("臺北市,高雄市,台中市")}`,
      { headers: { authorization: fake.key } },
    );
    const body = (await response.json()) as { records: { location: { locationName: string }[] } };
    expect(body.records.location.map((l) => l.locationName).sort()).toEqual(["臺北市", "高雄市"].sort());
  });

  it("rejects the file-API document and a REST document missing an element, naming what is wrong", () => {
    expect(() => parseForecast(readCwaFixture("fileapi"), "臺北市")).toThrow(
      "CWA answered with a document that is not the REST datastore shape",
    );
    const doc = readCwaFixture("2026-03-01") as {
      records: { location: { locationName: string; weatherElement: { elementName: string }[] }[] };
    };
    const taipei = doc.records.location.find((l) => l.locationName === "臺北市")!;
    taipei.weatherElement = taipei.weatherElement.filter((e) => e.elementName !== "CI");
    expect(() => parseForecast(doc, "臺北市")).toThrow("CWA's forecast for 臺北市 has no CI element");
  });

  it("stops when the caller's signal aborts", async () => {
    fake.mode = "hang";
    const controller = new AbortController();
    const pending = fetchForecast({
      base: fake.base,
      key: fake.key,
      locationName: "臺北市",
      signal: controller.signal,
    }).catch((e: unknown) => e);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ kind: "aborted" });
  });
});

describe("DEFAULT_CITY at start-up", () => {
  const names = CWA_LOCATIONS.join(", ");

  it("skips the tool with one warning naming the valid cities when DEFAULT_CITY is not one of the 22", async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "info",
      pretty: false,
      destination: new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }),
    });
    const { toolbox: loaded, skipped } = await loadTools({
      config: testConfig({ CWA_API_KEY: fake.key, DEFAULT_CITY: "Paris" }),
      dirs: [TOOLS_DIR],
      log,
    });
    expect(loaded.get("get_weather")).toBeUndefined();
    expect(loaded.get("get_current_datetime")).toBeDefined(); // the others still load
    expect(skipped).toEqual([
      {
        name: "get_weather",
        file: "tools/get_weather.ts",
        reason:
          `DEFAULT_CITY is not one of Taiwan's 22 counties and cities; set it to one of ${names} ` +
          `(台/臺, a missing 市/縣, Simplified characters and English names such as Kaohsiung also work)`,
      },
    ]);
    expect(CWA_LOCATIONS).toHaveLength(22);
    const warnings = lines
      .map((l) => JSON.parse(l) as { level: number; tool: string; msg: string })
      .filter((r) => r.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toBe(`tool get_weather skipped: ${skipped[0]!.reason}`);
  });

  it("gives both reasons at once without a key and with a wrong city", async () => {
    const { skipped } = await loadShippedTools(testConfig({ DEFAULT_CITY: "台北區" }));
    expect(skipped.map((s) => s.reason)).toEqual([
      `CWA_API_KEY is not set (get a free key at https://opendata.cwa.gov.tw); DEFAULT_CITY is ` +
        `not one of Taiwan's 22 counties and cities; set it to one of ${names} (台/臺, a missing 市/縣,` +
        ` Simplified characters and English names such as Kaohsiung also work)`,
    ]);
  });

  it.each(["臺北市", "台中", "高市", "Kaohsiung City", "新竹", " hualien "])(
    "accepts %j after the usual normalisation",
    async (city) => {
      const { toolbox: loaded, skipped } = await loadShippedTools(
        testConfig({ CWA_API_KEY: fake.key, DEFAULT_CITY: city }),
      );
      expect(skipped).toEqual([]);
      expect(loaded.get("get_weather")).toBeDefined();
    },
  );

  it("npm run tools shows why the tool was skipped", async () => {
    const env = { ...process.env, CWA_API_KEY: "CWA-CLI-TEST-KEY-0001", DEFAULT_CITY: "Paris", LOG_LEVEL: "silent" };
    const { stdout } = await runCli(toolsMain, ["--json"], env);
    const listing = JSON.parse(stdout) as { skipped: { name: string; reason: string }[] };
    expect(listing.skipped).toEqual([
      {
        name: "get_weather",
        file: "tools/get_weather.ts",
        reason: expect.stringContaining(
          `DEFAULT_CITY is not one of Taiwan's 22 counties and cities; set it to one of ${names}`,
        ),
      },
    ]);
    expect(stdout).not.toContain("CWA-CLI-TEST-KEY-0001");
  }, 30_000);
});
