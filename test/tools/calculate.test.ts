import { beforeAll, describe, expect, it } from "vitest";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { testContext } from "../helpers/context.js";
import { loadShippedTools } from "./load.js";

let toolbox: ToolBox;
beforeAll(async () => {
  ({ toolbox } = await loadShippedTools());
});

const calc = (expression: unknown, locale: "zh-TW" | "en" = "zh-TW") =>
  toolbox.execute("calculate", { expression }, testContext({ locale }));

const ALLOWED = "只能用數字、+ - * / ^ %、括號、逗號和函式名稱。";
const NAMES = "只能用數字、pi、e，以及 sqrt、round、abs、min、max、mean、floor、ceil 這些函式（不支援變數和單位）。";
const NOT_ARITHMETIC = "只能做算術，不能存取屬性、指定變數、定義函式、用矩陣或單位。";

describe("calculate: results", () => {
  it.each([
    ["0.1 + 0.2", "0.1 + 0.2 = 0.3"],
    ["(1200 + 800) * 0.05", "(1200 + 800) * 0.05 = 100"],
    ["0.3 - 0.1", "0.3 - 0.1 = 0.2"],
    ["19.99 * 3", "19.99 * 3 = 59.97"],
    ["1/3", "1/3 ≈ 0.33333333333333333333"],
    ["2^10", "2^10 = 1024"],
    ["2^64", "2^64 = 18446744073709551616"],
    ["-2^2", "-2^2 = -4"],
    ["2^-1", "2^-1 = 0.5"],
    ["5%", "5% = 0.05"],
    ["200 * 5%", "200 * 5% = 10"],
    ["100 + 5%", "100 + 5% = 105"],
    ["10 % 3", "10 % 3 = 1"],
    ["sqrt(2)", "sqrt(2) ≈ 1.4142135623730950488"],
    ["sqrt(16)", "sqrt(16) = 4"],
    ["round(2.555, 2)", "round(2.555, 2) = 2.56"],
    ["round(2.5)", "round(2.5) = 3"],
    ["abs(-7.5)", "abs(-7.5) = 7.5"],
    ["min(3, 1, 2)", "min(3, 1, 2) = 1"],
    ["max(3, 1, 2)", "max(3, 1, 2) = 3"],
    ["mean(1, 2, 3, 4)", "mean(1, 2, 3, 4) = 2.5"],
    ["floor(-1.5) + ceil(1.2)", "floor(-1.5) + ceil(1.2) = 0"],
    ["2 * pi", "2 * pi ≈ 6.2831853071795864769"],
    ["e", "e ≈ 2.7182818284590452354"],
    ["  1 +\n 2 ", "1 + 2 = 3"],
    ["１２００×３÷４", "1200*3/4 = 900"],
    ["10^100", "10^100 = 1e+100"],
  ])("%j", async (expression, expected) => {
    expect(await calc(expression)).toMatchObject({ ok: true, content: expected });
  });
});

describe("calculate: exact up to the 100-digit limit", () => {
  it.each([
    ["1e65 % 3", "1e65 % 3 = 1"],
    ["1e100 % 3", "1e100 % 3 = 1"],
    [
      "99999999999999999999999999999999999999999999999999999999999999999 % 2",
      "99999999999999999999999999999999999999999999999999999999999999999 % 2 = 1",
    ],
    [
      "123456789012345678901234567890123456789012345678901234567890123456789 % 10",
      "123456789012345678901234567890123456789012345678901234567890123456789 % 10 = 9",
    ],
    ["1e80 + 1 - 1e80", "1e80 + 1 - 1e80 = 1"],
  ])("%s", async (expression, expected) => {
    expect(await calc(expression)).toMatchObject({ ok: true, content: expected });
  });

  // Found by a tester: these were rounded to 20 significant digits and still shown after "=".
  it.each([
    ["1e20+1", "1e20+1 = 100000000000000000001"],
    ["2^70", "2^70 = 1180591620717411303424"],
    [
      "9999999999999999999999 * 9999999999999999999999",
      "9999999999999999999999 * 9999999999999999999999 = 99999999999999999999980000000000000000000001",
    ],
    ["12345678901234567890123 + 0", "12345678901234567890123 + 0 = 12345678901234567890123"],
    ["10^100 - 1", `10^100 - 1 = ${"9".repeat(100)}`],
    ["-(10^99 + 7)", `-(10^99 + 7) = -1${"0".repeat(98)}7`],
    ["2^330 / 2^300", "2^330 / 2^300 = 1073741824"],
    ["1e20 + 0.5", "1e20 + 0.5 = 100000000000000000000.5"],
    ["123456789012345678.25 * 4", "123456789012345678.25 * 4 = 493827156049382713"],
    ["1/8", "1/8 = 0.125"],
    ["2^-10", "2^-10 = 0.0009765625"],
    ["1e40 / 3 * 3", "1e40 / 3 * 3 ≈ 1e+40"],
    ["(1e25 + 1) % 7", "(1e25 + 1) % 7 = 4"],
    ["-7 % 3", "-7 % 3 = 2"],
    [
      "sqrt(152415787532388367504942236884722755800955129)",
      "sqrt(152415787532388367504942236884722755800955129) = 12345678901234567890123",
    ],
    ["sqrt(1e41)", "sqrt(1e41) ≈ 316227766016837933200"],
    ["mean(1e30, 1, 2)", "mean(1e30, 1, 2) ≈ 3.3333333333333333333e+29"],
    ["mean(1e30, 2)", "mean(1e30, 2) = 500000000000000000000000000001"],
    ["round(1e25 + 0.5)", "round(1e25 + 0.5) = 10000000000000000000000001"],
    [
      "1.5^150",
      "1.5^150 = 259232147948794494594485446.8180482548632710260963823378840992372695093800221081489085897979" +
        "68903058274437782549758243999867043174477180579595714249308002763427793979644775390625",
    ],
    ["4^0.5", "4^0.5 ≈ 2"],
    ["round(1/3, 2)", "round(1/3, 2) ≈ 0.33"],
    ["(1/3) * 3", "(1/3) * 3 ≈ 1"],
    ["sqrt(2)^2", "sqrt(2)^2 ≈ 2"],
    ["0.5^300 * 2^300", "0.5^300 * 2^300 = 1"],
  ])("%s is exact and in full, or marked ≈", async (expression, expected) => {
    expect(await calc(expression)).toMatchObject({ ok: true, content: expected });
  });

  it.each(["1e-99999999 * 1e-99999999", "0.9999999999999999999999999999^1e99", "10^(-101) * 10"])(
    "refuses %s as too close to zero",
    async (expression) => {
      expect(await calc(expression, "en")).toMatchObject({
        ok: false,
        content: "The result would be too close to zero (below 10^-100), so it was not computed.",
      });
    },
  );
});

describe("calculate: refusals", () => {
  it.each([
    ["1/0", "不能除以零。"],
    ["5 % 0", "不能除以零。"],
    ["0^-1", "不能除以零。"],
    ["x + 1", "不認得「x」：" + NAMES],
    ["5 cm", "不認得「cm」：" + NAMES],
    ["cos(1)", "不認得「cos」：" + NAMES],
    ["constructor", "不認得「constructor」：" + NAMES],
    ["constructor(1)", "不認得「constructor」：" + NAMES],
    ["__proto__", "不認得「__proto__」：" + NAMES],
    ["toString(1)", "不認得「toString」：" + NAMES],
    ["import(1)", "不認得「import」：" + NAMES],
    ["evaluate(1)", "不認得「evaluate」：" + NAMES],
    ["parse(1)", "不認得「parse」：" + NAMES],
    ["createUnit(1)", "不認得「createUnit」：" + NAMES],
    ["a.b", "算式裡有不允許的寫法（AccessorNode）：" + NOT_ARITHMETIC],
    ["pi.constructor", "算式裡有不允許的寫法（AccessorNode）：" + NOT_ARITHMETIC],
    ["1 $ 2", "算式裡有不支援的字元「$」：" + ALLOWED],
    ["x = 1", "算式裡有不支援的字元「=」：" + ALLOWED],
    ["f(x) = x", "算式裡有不支援的字元「=」：" + ALLOWED],
    ["[1, 2]", "算式裡有不支援的字元「[」：" + ALLOWED],
    ["{a: 1}", "算式裡有不支援的字元「{」：" + ALLOWED],
    ['"abc"', '算式裡有不支援的字元「"」：' + ALLOWED],
    ["3!", "算式裡有不支援的字元「!」：" + ALLOWED],
    ["1 ? 2 : 3", "算式裡有不支援的字元「?」：" + ALLOWED],
    ["1; 2", "算式裡有不支援的字元「;」：" + ALLOWED],
    ["1 # comment", "算式裡有不支援的字元「#」：" + ALLOWED],
    ["1 & 2", "算式裡有不支援的字元「&」：" + ALLOWED],
    ["sqrt(-4)", "結果不是實數（例如負數開根號）。"],
    ["(-8)^(1/3)", "結果不是實數（例如負數開根號）。"],
    ["max()", "max 需要 1-100 個參數。"],
    ["sqrt(1, 2)", "sqrt 需要 1 個參數。"],
    ["round(1.5, 99)", "round 的第二個參數要是 0 到 20 的整數。"],
    ["10^101", "結果太大（超過 100 位數），不計算。"],
    ["1e999", "結果太大（超過 100 位數），不計算。"],
    ["9^9^9", "結果太大（超過 100 位數），不計算。"],
    ["2^100000", "結果太大（超過 100 位數），不計算。"],
    ["2^-100000", "結果太接近零（小於 10^-100），不計算。"],
    ["1e60 * 1e60", "結果太大（超過 100 位數），不計算。"],
    ["", "算式是空的。"],
    [
      "1 +",
      "看不懂這個算式（Unexpected end of expression (char 4)）。只能用數字、+ - * / ^ %、括號和 sqrt、round、abs、min、max、mean、floor、ceil。",
    ],
    [
      "(1 + 2",
      "看不懂這個算式（Parenthesis ) expected (char 7)）。只能用數字、+ - * / ^ %、括號和 sqrt、round、abs、min、max、mean、floor、ceil。",
    ],
  ])("%j", async (expression, expected) => {
    expect(await calc(expression)).toMatchObject({ ok: false, content: expected });
  });

  it("refuses an expression over 200 characters, and accepts one of exactly 200", async () => {
    const exactly = `1${" + 1".repeat(49)}${" ".repeat(3)}`; // 1 + 49 * 4 + 3 = 200 characters
    expect(exactly).toHaveLength(200);
    expect(await calc(exactly)).toMatchObject({ ok: true, content: `1${" + 1".repeat(49)} = 50` });
    expect(await calc(`${exactly}1`)).toMatchObject({
      ok: false,
      content: "算式超過 200 個字元，請拆成幾個較短的算式。",
    });
  });

  it("refuses huge work without computing it, so other chats are never blocked", async () => {
    for (const expression of ["9^9^9", "2^100000", "10^10^10^10", "(1e100)^(1e100)", "1e100 ^ 1e100 ^ 1e100"]) {
      const result = await calc(expression);
      expect(result.ok).toBe(false);
      expect(result.content).toBe("結果太大（超過 100 位數），不計算。");
      expect(result.durationMs).toBeLessThan(1000); // computing 10^10^10^10 would never finish
    }
  });

  it("speaks English for the en locale", async () => {
    expect((await calc("1/0", "en")).content).toBe("Division by zero is undefined.");
    expect((await calc("y * 2", "en")).content).toBe(
      'Unknown name "y": only numbers, pi, e and the functions sqrt, round, abs, min, max, mean, floor, ceil are allowed (no variables or units).',
    );
  });

  it("reports a non-string expression as invalid input", async () => {
    expect(await calc(42)).toMatchObject({
      ok: false,
      content:
        'Invalid input for tool "calculate":\n- expression: expected text (a string), got 42\nFix these fields and call the tool again.',
    });
  });
});
