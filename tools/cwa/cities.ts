/**
 * Taiwan's 22 counties and cities as the CWA names them, and the rules that turn what people
 * type (台北, 北市, 臺北縣, 宜兰, 花莲县, Ｔａｉｐｅｉ, Taipei, New Taipei City, Kao-hsiung, 新竹…) into one of those names.
 * No side effects: the tool loader imports this module.
 */

/**
 * The 22 `locationName` values of CWA dataset F-C0032-001, in the usual north-to-south order
 * (the recorded responses in `test/fixtures/cwa` use exactly these; 臺, never 台).
 */
export const CWA_LOCATIONS = [
  "臺北市",
  "新北市",
  "基隆市",
  "桃園市",
  "新竹市",
  "新竹縣",
  "苗栗縣",
  "臺中市",
  "彰化縣",
  "南投縣",
  "雲林縣",
  "嘉義市",
  "嘉義縣",
  "臺南市",
  "高雄市",
  "屏東縣",
  "宜蘭縣",
  "花蓮縣",
  "臺東縣",
  "澎湖縣",
  "金門縣",
  "連江縣",
] as const;

/** One of the 22 CWA location names. */
export type CwaLocation = (typeof CWA_LOCATIONS)[number];

/** The outcome of {@link resolveCity}. */
export type CityMatch =
  /** `ambiguous` names the other place the input could mean (新竹 → city 新竹市, other 新竹縣). */
  { ok: true; name: CwaLocation; ambiguous?: { input: string; other: CwaLocation } } | { ok: false };

/**
 * Simplified → Traditional for exactly the characters that differ in the 22 names, their short
 * forms and the prefixes this module accepts (縣, 園, 雲, 義, 東, 蘭, 蓮, 門, 連, 馬, 灣, 華, 國;
 * 台/臺 is handled separately). A table rather than a converter library (opencc-js 1.4.2 is a
 * 2.6 MB package of dictionaries) because the set of names is closed: the table was checked
 * against OpenCC's `tw → cn` conversion of every name and alias, and test/tools/places.test.ts
 * spells every Simplified form out.
 */
const SIMPLIFIED_TO_TRADITIONAL = new Map<string, string>(
  Object.entries({
    县: "縣",
    园: "園",
    云: "雲",
    义: "義",
    东: "東",
    兰: "蘭",
    莲: "蓮",
    门: "門",
    连: "連",
    马: "馬",
    湾: "灣",
    华: "華",
    国: "國",
  }),
);

/** Short forms and former names (after 台 → 臺), e.g. 北市, 高市, 馬祖, and the counties merged into cities in 2010/2014. */
const CHINESE_ALIASES = new Map<string, CwaLocation>(
  Object.entries({
    北市: "臺北市",
    新北: "新北市",
    北縣: "新北市",
    臺北縣: "新北市",
    基市: "基隆市",
    桃市: "桃園市",
    桃縣: "桃園市",
    桃園縣: "桃園市",
    竹市: "新竹市",
    竹縣: "新竹縣",
    中市: "臺中市",
    臺中縣: "臺中市",
    中縣: "臺中市",
    嘉市: "嘉義市",
    嘉縣: "嘉義縣",
    南市: "臺南市",
    臺南縣: "臺南市",
    高市: "高雄市",
    高雄縣: "高雄市",
    馬祖: "連江縣",
    金馬: "金門縣",
  } satisfies Record<string, CwaLocation>),
);

/**
 * English names and romanisations without the "city"/"county" word, lower case and without spaces,
 * hyphens or apostrophes: the city form and, where one exists, the county form. Covers the official
 * English names (Taipei, Kaohsiung, Hsinchu…), Hanyu Pinyin (Taibei, Gaoxiong, Xinzhu…), Wade–Giles
 * (Chi-lung, Chia-i, I-lan…) and the old European names (Pescadores, Quemoy).
 */
const ENGLISH = new Map<string, { city?: CwaLocation; county?: CwaLocation }>(
  Object.entries({
    taipei: { city: "臺北市" },
    taibei: { city: "臺北市" },
    newtaipei: { city: "新北市" },
    xinbei: { city: "新北市" },
    keelung: { city: "基隆市" },
    jilong: { city: "基隆市" },
    chilung: { city: "基隆市" },
    taoyuan: { city: "桃園市" },
    hsinchu: { city: "新竹市", county: "新竹縣" },
    xinzhu: { city: "新竹市", county: "新竹縣" },
    miaoli: { county: "苗栗縣" },
    taichung: { city: "臺中市" },
    taizhong: { city: "臺中市" },
    changhua: { county: "彰化縣" },
    zhanghua: { county: "彰化縣" },
    nantou: { county: "南投縣" },
    yunlin: { county: "雲林縣" },
    chiayi: { city: "嘉義市", county: "嘉義縣" },
    chiai: { city: "嘉義市", county: "嘉義縣" },
    jiayi: { city: "嘉義市", county: "嘉義縣" },
    tainan: { city: "臺南市" },
    kaohsiung: { city: "高雄市" },
    gaoxiong: { city: "高雄市" },
    pingtung: { county: "屏東縣" },
    pingdong: { county: "屏東縣" },
    yilan: { county: "宜蘭縣" },
    ilan: { county: "宜蘭縣" },
    hualien: { county: "花蓮縣" },
    hualian: { county: "花蓮縣" },
    taitung: { county: "臺東縣" },
    taidong: { county: "臺東縣" },
    penghu: { county: "澎湖縣" },
    pescadores: { county: "澎湖縣" },
    kinmen: { county: "金門縣" },
    jinmen: { county: "金門縣" },
    quemoy: { county: "金門縣" },
    lienchiang: { county: "連江縣" },
    lianjiang: { county: "連江縣" },
    matsu: { county: "連江縣" },
    mazu: { county: "連江縣" },
  } satisfies Record<string, { city?: CwaLocation; county?: CwaLocation }>),
);

/** The words that say "city" or "county" after an English or romanised name: English, Hanyu Pinyin (shi, xian), Wade–Giles (hsien). */
const ENGLISH_KIND = /(county|city|xian|hsien|shi)$/;

const KNOWN = new Set<string>(CWA_LOCATIONS);

function isLocation(name: string): name is CwaLocation {
  return KNOWN.has(name);
}

/**
 * Resolves a place name to a CWA location name. Accepts full-width characters (NFKC), 台 or 臺,
 * Simplified characters (宜兰, 花莲县), a missing 市/縣 suffix, a 臺灣/台湾 prefix, common short
 * forms and old county names, and English names and romanisations (case, spaces, hyphens and
 * apostrophes ignored, optional "City"/"County"/"Shi"/"Xian"/"Hsien", a trailing ", Taiwan").
 * When a name fits both a city and a county (新竹, 嘉義, Hsinchu, Chiayi) the city is chosen and
 * `ambiguous` says so. Never throws.
 *
 * @param input - what the user typed, e.g. `台中`, `云林县`, `Kaohsiung`, `臺北縣`.
 * @returns `{ ok: false }` for anything that is not one of Taiwan's 22 counties and cities.
 */
export function resolveCity(input: string): CityMatch {
  const text = [...input.normalize("NFKC").trim().replace(/\s+/g, "")]
    .map((char) => (char === "台" ? "臺" : (SIMPLIFIED_TO_TRADITIONAL.get(char) ?? char)))
    .join("");
  if (text === "") return { ok: false };
  if (isLocation(text)) return { ok: true, name: text };

  const zh = text.replace(/^(?:臺灣|中華民國)/, "");
  if (isLocation(zh)) return { ok: true, name: zh };
  const alias = CHINESE_ALIASES.get(zh);
  if (alias) return { ok: true, name: alias };
  if (!/[市縣]$/.test(zh)) {
    const city = `${zh}市`;
    const county = `${zh}縣`;
    if (isLocation(city) && isLocation(county))
      return { ok: true, name: city, ambiguous: { input: input.trim(), other: county } };
    if (isLocation(city)) return { ok: true, name: city };
    if (isLocation(county)) return { ok: true, name: county };
  }

  if (!/^[A-Za-z,.'’‘-]+$/.test(text)) return { ok: false };
  const en = text
    .toLowerCase()
    .replace(/[^a-z]/g, "")
    .replace(/(?:taiwan|roc)$/, "");
  const word = ENGLISH_KIND.exec(en)?.[1];
  const kind = word === undefined ? undefined : word === "city" || word === "shi" ? "city" : "county";
  const base = word === undefined ? en : en.slice(0, -word.length);
  const entry = ENGLISH.get(base);
  if (!entry) return { ok: false };
  if (kind === "county" && entry.city === "臺北市") return { ok: true, name: "新北市" }; // Taipei County became New Taipei City in 2010
  if (kind === "county")
    return entry.county
      ? { ok: true, name: entry.county }
      : entry.city
        ? { ok: true, name: entry.city }
        : { ok: false };
  if (kind === "city") return entry.city ? { ok: true, name: entry.city } : { ok: true, name: entry.county! };
  if (entry.city && entry.county)
    return { ok: true, name: entry.city, ambiguous: { input: input.trim(), other: entry.county } };
  return { ok: true, name: (entry.city ?? entry.county)! };
}
