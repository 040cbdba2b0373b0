/**
 * Every common written form of Taiwan's 22 counties and cities resolves (issue 12, item 6):
 * 台/臺, with or without 市/縣, Simplified characters, full-width characters, English names and
 * romanisations, any case, surrounding spaces. One table row per place; each form is also tried
 * with spaces around it, and each Latin form in upper case, lower case and full width.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { CWA_LOCATIONS, resolveCity, type CwaLocation } from "../../tools/cwa/cities.js";
import { startFakeCwa, type FakeCwa } from "../fakes/cwa.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { loadShippedTools } from "./load.js";

/** Every form we promise, per place. Bare 新竹/嘉義/Hsinchu/Chiayi are the city (with a note, tested below). */
const FORMS: Record<CwaLocation, string[]> = {
  臺北市: [
    "臺北市",
    "台北市",
    "臺北",
    "台北",
    "北市",
    "臺灣臺北市",
    "台湾台北市",
    "Taipei",
    "Taipei City",
    "Taibei",
    "T'ai-pei",
    "Taibei Shi",
    "Taipei, Taiwan",
  ],
  新北市: [
    "新北市",
    "新北",
    "臺北縣",
    "台北縣",
    "台北县",
    "北縣",
    "北县",
    "New Taipei",
    "New Taipei City",
    "Taipei County",
    "Xinbei",
    "Taibei Xian",
  ],
  基隆市: ["基隆市", "基隆", "基市", "Keelung", "Keelung City", "Jilong", "Chi-lung"],
  桃園市: ["桃園市", "桃園", "桃园市", "桃园", "桃園縣", "桃园县", "桃市", "Taoyuan", "Taoyuan City", "Tao-yuan"],
  新竹市: ["新竹市", "竹市", "Hsinchu City", "Xinzhu Shi"],
  新竹縣: ["新竹縣", "新竹县", "竹縣", "竹县", "Hsinchu County", "Xinzhu Xian", "Hsin-chu Hsien"],
  苗栗縣: ["苗栗縣", "苗栗县", "苗栗", "Miaoli", "Miaoli County"],
  臺中市: [
    "臺中市",
    "台中市",
    "臺中",
    "台中",
    "中市",
    "台中縣",
    "台中县",
    "Taichung",
    "Taichung City",
    "Taizhong",
    "T'ai-chung",
  ],
  彰化縣: ["彰化縣", "彰化县", "彰化", "Changhua", "Changhua County", "Zhanghua"],
  南投縣: ["南投縣", "南投县", "南投", "Nantou", "Nantou County"],
  雲林縣: ["雲林縣", "云林县", "雲林", "云林", "Yunlin", "Yunlin County"],
  嘉義市: ["嘉義市", "嘉义市", "嘉市", "Chiayi City", "Jiayi Shi"],
  嘉義縣: ["嘉義縣", "嘉义县", "嘉縣", "嘉县", "Chiayi County", "Jiayi Xian", "Chia-i Hsien"],
  臺南市: ["臺南市", "台南市", "臺南", "台南", "南市", "台南縣", "台南县", "Tainan", "Tainan City"],
  高雄市: ["高雄市", "高雄", "高市", "高雄縣", "高雄县", "Kaohsiung", "Kaohsiung City", "Kao-hsiung", "Gaoxiong"],
  屏東縣: ["屏東縣", "屏东县", "屏東", "屏东", "Pingtung", "Pingtung County", "P'ing-tung", "Pingdong"],
  宜蘭縣: ["宜蘭縣", "宜兰县", "宜蘭", "宜兰", "Yilan", "Yilan County", "Ilan", "I-lan"],
  花蓮縣: ["花蓮縣", "花莲县", "花蓮", "花莲", "Hualien", "Hualien County", "Hualian"],
  臺東縣: ["臺東縣", "台東縣", "台东县", "臺東", "台東", "台东", "Taitung", "Taitung County", "T'ai-tung", "Taidong"],
  澎湖縣: ["澎湖縣", "澎湖县", "澎湖", "Penghu", "Penghu County", "Pescadores"],
  金門縣: ["金門縣", "金门县", "金門", "金门", "金馬", "金马", "Kinmen", "Kinmen County", "Jinmen", "Quemoy"],
  連江縣: [
    "連江縣",
    "连江县",
    "連江",
    "连江",
    "馬祖",
    "马祖",
    "Lienchiang",
    "Lienchiang County",
    "Lianjiang",
    "Matsu",
    "Mazu",
  ],
};

/** ASCII letters and punctuation to their full-width forms (U+FF01–U+FF5E), spaces to the ideographic space. */
function fullWidth(text: string): string {
  return [...text]
    .map((c) => (c === " " ? "\u3000" : c >= "!" && c <= "~" ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c))
    .join("");
}

function variants(form: string): string[] {
  const out = [form, `  ${form} `, `\u3000${form}\u3000`];
  if (/[A-Za-z]/.test(form))
    out.push(form.toUpperCase(), form.toLowerCase(), fullWidth(form), `\t${form.toLowerCase()}\n`);
  return out;
}

const ROWS = Object.entries(FORMS).flatMap(([name, forms]) =>
  forms.flatMap((form) => variants(form).map((input) => [input, name] as const)),
);

describe("every written form of the 22 counties and cities", () => {
  it("covers each of the 22 with Chinese, Simplified and English forms", () => {
    expect(Object.keys(FORMS).sort()).toEqual([...CWA_LOCATIONS].sort());
    for (const forms of Object.values(FORMS)) {
      expect(forms.some((f) => /[A-Za-z]/.test(f))).toBe(true);
      expect(forms.some((f) => /[縣市]$/.test(f))).toBe(true);
    }
  });

  it.each(ROWS)("%j → %s", (input, name) => {
    expect(resolveCity(input)).toMatchObject({ ok: true, name });
  });

  it.each([
    ["新竹", "新竹市", "新竹縣"],
    ["Hsinchu", "新竹市", "新竹縣"],
    ["Xinzhu", "新竹市", "新竹縣"],
    ["嘉義", "嘉義市", "嘉義縣"],
    ["嘉义", "嘉義市", "嘉義縣"],
    ["Chiayi", "嘉義市", "嘉義縣"],
    ["Chia-i", "嘉義市", "嘉義縣"],
  ])("%j fits a city and a county: the city %s, noting %s", (input, name, other) => {
    expect(resolveCity(input)).toEqual({ ok: true, name, ambiguous: { input, other } });
  });

  it.each([
    "板橋",
    "板桥",
    "信義區",
    "东京",
    "Tokyo",
    "Taipei 101",
    "Shi",
    "County",
    "Taiwan",
    "台湾",
    "县",
    "Hsinchuu",
    "Taipei Province",
    "",
  ])("%j is still not a county or city", (input) => {
    expect(resolveCity(input)).toEqual({ ok: false });
  });
});

describe("get_weather with written forms", () => {
  let fake: FakeCwa;
  let toolbox: ToolBox;
  let config: Config;
  beforeAll(async () => {
    fake = await startFakeCwa();
    config = testConfig({ CWA_API_KEY: fake.key, CWA_API_BASE: fake.base });
    ({ toolbox } = await loadShippedTools(config));
  });
  afterAll(async () => {
    await fake.close();
  });

  it.each([
    ["宜兰", "宜蘭縣"],
    ["花莲县", "花蓮縣"],
    ["\u3000台东 ", "臺東縣"],
    ["ＨＵＡＬＩＥＮ", "花蓮縣"],
    ["Hsinchu County", "新竹縣"],
  ])("%j asks CWA for %s", async (city, name) => {
    const result = await toolbox.execute("get_weather", { city }, testContext({ config }));
    expect(result.ok).toBe(true);
    expect(result.content.split("\n")[0]).toBe(`${name} 36 小時天氣預報（中央氣象署）：`);
  });

  it("answers a form that does not resolve with the tool error listing the 22 valid names", async () => {
    const result = await toolbox.execute("get_weather", { city: "宜兰乡" }, testContext({ config }));
    expect(result).toMatchObject({
      ok: false,
      content: `「宜兰乡」不是臺灣的縣市。天氣查詢只涵蓋臺灣的 22 個縣市（不含鄉鎮市區，也不含其他國家）：${CWA_LOCATIONS.join("、")}。鄉鎮市區請改用它所屬的縣市。`,
    });
  });
});
