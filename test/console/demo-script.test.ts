/**
 * The demo's script (`src/demo/script.ts`), called directly: the calculator rule passes the whole
 * expression a person wrote (functions and constants of the calculator included, none of the words
 * around it) to the real calculator.
 */
import { expect, it } from "vitest";
import { answerRule, type DemoTurn } from "../../src/demo/script.js";
import { calculate } from "../../tools/calculate.js";

const turn: DemoTurn = {
  locale: "en",
  timezone: "Asia/Taipei",
  tools: new Set(["calculate", "get_current_datetime"]),
  memory: new Map(),
  now: Date.parse("2026-03-01T10:00:00+08:00"),
};

/** The expressions of the calculate calls the script makes for `text`. */
function expressionsOf(text: string): unknown[] {
  return (answerRule(text, turn)?.content ?? []).flatMap((b) =>
    b.type === "tool_use" && b.name === "calculate" ? [b.input.expression] : [],
  );
}

it("the calculator rule keeps the calculator's functions and constants, and leaves the sentence around them", () => {
  const cases: [string, string][] = [
    ["sqrt(2)*3", "sqrt(2)*3"],
    ["幫我算 sqrt(2)*3 是多少", "sqrt(2)*3"],
    ["what is sqrt(2)*3?", "sqrt(2)*3"],
    ["what is 2^70?", "2^70"],
    ["what is pi * 2?", "pi * 2"],
    ["計算 π×2", "π*2"],
    ["e^2", "e^2"],
    ["2 * e", "2 * e"],
    ["abs(-5) + 3 是多少？", "abs(-5) + 3"],
    ["round(2.345, 2)", "round(2.345, 2)"],
    ["what is max(1, 2, 3)?", "max(1, 2, 3)"],
    ["mean(1,2,3)/2", "mean(1,2,3)/2"],
    ["what is sqrt(2)?", "sqrt(2)"],
    ["sqrt (2) * 3", "sqrt (2) * 3"],
    // A function the calculator does not have is passed too: it says it does not know it, instead of
    // the number without it being calculated.
    ["sin(30) + 1", "sin(30) + 1"],
    // Punctuation of the sentence is not the expression's.
    ["1+1，謝謝", "1+1"],
    ["what's (2+3)*4, then 5", "(2+3)*4"],
    ["(see 2+3)", "2+3"],
    ["what is 2+3.", "2+3"],
    ["e.g. 2+3", "2+3"],
    ["5 − 3", "5 - 3"],
    // As before: exponents, discounts.
    ["1e308*10", "1e308*10"],
    ["幫我算 1E308 × 10", "1E308 * 10"],
    ["3e+2 - 1 是多少", "3e+2 - 1"],
    ["(1200 + 800) * 0.05", "(1200 + 800) * 0.05"],
    ["3897 打八五折", "3897 * 85%"],
    ["15% off 3897", "3897 * 85%"],
  ];
  for (const [said, expression] of cases) expect(expressionsOf(said), said).toEqual([expression]);
  // Words, a number alone, a constant alone: nothing to calculate.
  for (const said of ["3 eggs + 2 eggs", "2.5e-3", "50%", "I like pi", "pi"])
    expect(expressionsOf(said), said).toEqual([]);
  // What the calculator answers to them.
  expect(calculate("sqrt(2)*3", "en")).toBe("sqrt(2)*3 ≈ 4.2426406871192851464");
  expect(calculate("2^70", "en")).toBe("2^70 = 1180591620717411303424");
  expect(() => calculate("sin(30) + 1", "en")).toThrow(/Unknown name "sin"/);
});
