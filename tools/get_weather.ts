/**
 * get_weather: the 36-hour forecast of a Taiwan county or city from the CWA open-data REST API
 * (dataset F-C0032-001; client in `cwa/client.ts`, place names in `cwa/cities.ts`).
 */
import { z } from "zod";
import type { Locale } from "../src/config.js";
import { localize } from "../src/i18n.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";
import { CWA_LOCATIONS, resolveCity } from "./cwa/cities.js";
import { CwaError, DEFAULT_CWA_TIMEOUT_MS, fetchForecast, type ForecastWindow } from "./cwa/client.js";

let requestTimeoutMs = DEFAULT_CWA_TIMEOUT_MS;

/**
 * Changes the limit of one CWA request, in ms (default 10 000). For tests, so a timeout test
 * does not wait 10 s. Returns the previous value.
 */
export function setWeatherRequestTimeout(ms: number): number {
  const previous = requestTimeoutMs;
  requestTimeoutMs = ms;
  return previous;
}

const ZH_WEEKDAYS = ["日", "一", "二", "三", "四", "五", "六"];
const EN_WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const EN_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function partOfDay(hour: number, locale: Locale): string {
  const i = hour < 6 ? 0 : hour < 12 ? 1 : hour < 18 ? 2 : 3;
  return locale === "en"
    ? ["early morning", "daytime", "afternoon", "night"][i]!
    : ["凌晨", "白天", "下午", "晚上"][i]!;
}

/**
 * A CWA window (`yyyy-MM-dd HH:mm:ss`, Taipei time) in words:
 * `3月1日（日）凌晨 00:00–06:00`, `3月1日（日）晚上 18:00–隔天 06:00`; en `Sun 1 Mar, night 18:00–06:00 next day`.
 */
export function describeWindow(window: Pick<ForecastWindow, "startTime" | "endTime">, locale: Locale): string {
  const [startDate = "", startClock = ""] = window.startTime.split(" ");
  const [endDate = "", endClock = ""] = window.endTime.split(" ");
  const [y, m, d] = startDate.split("-").map(Number) as [number, number, number];
  const weekday = new Date(Date.UTC(y, m - 1, d)).getUTCDay();
  const from = startClock.slice(0, 5);
  const to = endClock.slice(0, 5);
  const nextDay = endDate !== startDate;
  const part = partOfDay(Number(startClock.slice(0, 2)), locale);
  if (locale === "en")
    return `${EN_WEEKDAYS[weekday]} ${d} ${EN_MONTHS[m - 1]}, ${part} ${from}–${to}${nextDay ? " next day" : ""}`;
  return `${m}月${d}日（${ZH_WEEKDAYS[weekday]}）${part} ${from}–${nextDay ? "隔天 " : ""}${to}`;
}

function formatWindow(w: ForecastWindow, locale: Locale): string {
  return localize(
    locale,
    {
      "zh-TW": "・{when}：{wx}，降雨機率 {pop}%，氣溫 {temp}°C，{ci}",
      en: "- {when}: {wx}, chance of rain {pop}%, {temp} °C, {ci}",
    },
    {
      when: describeWindow(w, locale),
      wx: w.weather,
      pop: w.rainChance,
      temp: w.minTemp === w.maxTemp ? w.minTemp : `${w.minTemp}–${w.maxTemp}`,
      ci: w.comfort,
    },
  );
}

function failure(error: CwaError, city: string, locale: Locale): ToolError {
  const texts: Record<Exclude<CwaError["kind"], "aborted">, { "zh-TW": string; en: string }> = {
    auth: {
      "zh-TW":
        "中央氣象署拒絕了這個 API 金鑰（HTTP {status}）：金鑰未設定或不正確。請告訴使用者天氣查詢暫時無法使用，需要管理員檢查 CWA_API_KEY。",
      en:
        "The Central Weather Administration refused the API key (HTTP {status}): it is missing or " +
        "wrong. Tell the user weather is unavailable for now and the bot's admin must check " +
        "CWA_API_KEY.",
    },
    status: {
      "zh-TW": "中央氣象署的服務出錯（HTTP {status}），請稍後再試。",
      en: "The Central Weather Administration's service failed (HTTP {status}). Try again later.",
    },
    unsuccessful: {
      "zh-TW": '中央氣象署回覆查詢失敗（success 不是 "true"），請稍後再試。',
      en: 'The Central Weather Administration reported the query as failed (success is not "true"). Try again later.',
    },
    shape: {
      "zh-TW": "中央氣象署回傳的不是 36 小時預報的格式，無法解讀，請稍後再試。",
      en: "The Central Weather Administration answered with data that is not the 36-hour forecast format, so it cannot be read. Try again later.",
    },
    "no-location": {
      "zh-TW": "中央氣象署沒有回傳{city}的預報（地點清單是空的），請稍後再試。",
      en: "The Central Weather Administration returned no forecast for {city} (empty location list). Try again later.",
    },
    timeout: {
      "zh-TW": "中央氣象署在 {seconds} 秒內沒有回應，請稍後再試。",
      en: "The Central Weather Administration did not answer within {seconds} s. Try again later.",
    },
    network: {
      "zh-TW": "連不上中央氣象署的服務，請稍後再試。",
      en: "The Central Weather Administration's service could not be reached. Try again later.",
    },
  };
  if (error.kind === "aborted")
    return new ToolError(localize(locale, { "zh-TW": "天氣查詢已取消。", en: "The weather request was cancelled." }));
  return new ToolError(
    localize(locale, texts[error.kind], {
      status: error.status ?? "",
      city,
      seconds: Math.round(requestTimeoutMs / 100) / 10,
    }),
  );
}

/** Why the tool is skipped when `DEFAULT_CITY` is not a county or city of Taiwan (the value is not repeated). */
const DEFAULT_CITY_PROBLEM =
  `DEFAULT_CITY is not one of Taiwan's 22 counties and cities; set it to one of ` +
  `${CWA_LOCATIONS.join(", ")} (台/臺, a missing 市/縣, Simplified characters and English names ` +
  `such as Kaohsiung also work)`;

/**
 * The get_weather tool: `{ city? }` → the 36-hour forecast; skipped at start-up without `CWA_API_KEY` or when
 * `DEFAULT_CITY` is not a county or city of Taiwan; failures are ToolErrors without the key.
 */
export default defineTool({
  name: "get_weather",
  title: { "zh-TW": "天氣預報", en: "Weather forecast" },
  summary: {
    "zh-TW": "中央氣象署的臺灣各縣市 36 小時天氣預報。",
    en: "The Central Weather Administration's 36-hour forecast for Taiwan's counties and cities.",
  },
  description: [
    "Get the official 36-hour weather forecast (Central Weather Administration of Taiwan) for " +
      "one of Taiwan's 22 counties and cities: weather, chance of rain, temperature range and " +
      "comfort for three time windows.",
    "Use it when the user asks about weather, rain, temperature or whether to bring an umbrella in a place in Taiwan, today or tomorrow.",
    "Only Taiwan's counties and cities are covered (e.g. 臺北市, 新竹縣, Kaohsiung): for a township " +
      "or district pass the county or city it belongs to; do not use it for places outside " +
      "Taiwan or for forecasts beyond 36 hours.",
    "Without a city it uses the bot's default city.",
  ].join(" "),
  tags: ["info", "daily"],
  readOnly: true,
  input: z.object({
    city: z
      .string()
      .max(50)
      .optional()
      .describe(
        "County or city of Taiwan as the user wrote it (Traditional or Simplified, Chinese or " +
          "English), e.g. 台北, 高市, 新竹縣, 宜兰, Taichung. Omit for the default city.",
      ),
  }),
  setup(config) {
    const problems: string[] = [];
    if (!config.CWA_API_KEY) problems.push("CWA_API_KEY is not set (get a free key at https://opendata.cwa.gov.tw)");
    if (!resolveCity(config.DEFAULT_CITY).ok) problems.push(DEFAULT_CITY_PROBLEM);
    if (problems.length > 0) throw new Error(problems.join("; "));
  },
  activity: ({ city }, locale) =>
    localize(
      locale,
      { "zh-TW": "查詢天氣：{city}", en: "Checking the weather: {city}" },
      { city: city ?? localize(locale, { "zh-TW": "預設城市", en: "default city" }) },
    ),
  async run({ city }, context) {
    const { locale, config } = context;
    const asked = city?.trim() || config.DEFAULT_CITY;
    const match = resolveCity(asked);
    if (!match.ok) {
      throw new ToolError(
        localize(
          locale,
          {
            "zh-TW":
              "「{input}」不是臺灣的縣市。天氣查詢只涵蓋臺灣的 22 個縣市（不含鄉鎮市區，也不含其他國家）：{names}。鄉鎮市區請改用它所屬的縣市。",
            en:
              '"{input}" is not a county or city of Taiwan. Weather covers only Taiwan\'s 22 counties ' +
              "and cities (not townships or districts, not other countries): {names}. For a township, " +
              "use the county or city it belongs to.",
          },
          { input: asked, names: CWA_LOCATIONS.join(locale === "en" ? ", " : "、") },
        ),
      );
    }
    const key = config.CWA_API_KEY;
    if (!key)
      throw new ToolError(
        localize(locale, {
          "zh-TW": "天氣查詢沒有設定 API 金鑰（CWA_API_KEY）。",
          en: "Weather has no API key configured (CWA_API_KEY).",
        }),
      );

    let forecast;
    try {
      forecast = await fetchForecast({
        base: config.CWA_API_BASE,
        key,
        locationName: match.name,
        signal: context.signal,
        timeoutMs: requestTimeoutMs,
      });
    } catch (error) {
      if (!(error instanceof CwaError)) throw error;
      context.log.warn(
        { tool: "get_weather", city: match.name, kind: error.kind, status: error.status },
        `CWA request failed: ${error.kind}`,
      );
      throw failure(error, match.name, locale);
    }

    const lines = [
      localize(
        locale,
        {
          "zh-TW": "{city} 36 小時天氣預報（中央氣象署）：",
          en: "36-hour forecast for {city} (Central Weather Administration):",
        },
        { city: forecast.locationName },
      ),
      ...forecast.windows.map((w) => formatWindow(w, locale)),
    ];
    if (match.ambiguous) {
      lines.push(
        localize(
          locale,
          {
            "zh-TW": "註：「{input}」同時是{city}和{other}，這裡查的是{city}；要查{other}請說「{other}」。",
            en: 'Note: "{input}" can mean {city} or {other}; this is {city}. Ask for {other} to get the county.',
          },
          { input: match.ambiguous.input, city: match.name, other: match.ambiguous.other },
        ),
      );
    }
    return lines.join("\n");
  },
});
