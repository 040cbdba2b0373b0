/**
 * The demo's script (`src/demo/script.ts`), called directly: the calculator rule passes the whole
 * expression a person wrote (functions and constants of the calculator included, none of the words
 * around it) to the real calculator; a person who writes English gets answers in English where the
 * real tools, answering in the bot's language (zh-TW), have English for the same result
 * (`src/demo/english.ts`), and is told when a result stays in Chinese.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { answerResults, answerRule, type DemoTurn } from "../../src/demo/script.js";
import { localize, writtenLocale } from "../../src/i18n.js";
import type { RedisClient } from "../../src/redis.js";
import { formatReminder } from "../../src/reminders/format.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { calculate } from "../../tools/calculate.js";
import { REMINDER_SET_TEXT } from "../../tools/set_reminder.js";
import { testContext } from "../helpers/context.js";
import { useRedis } from "../helpers/use-redis.js";
import { loadShippedTools, SHIPPED_TOOLS } from "../tools/load.js";

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

describe("a person who writes in English, a bot whose tools answer in Chinese", () => {
  let redis: RedisClient;
  let toolbox: ToolBox;
  useRedis((r) => (redis = r));
  beforeAll(async () => {
    ({ toolbox } = await loadShippedTools());
  });

  const english: DemoTurn = { ...turn, tools: new Set(SHIPPED_TOOLS) };
  /** What the demo answers to `said` in English, after the real tool ran it in the bot's language (zh-TW). */
  const answered = async (said: string, locale: "zh-TW" | "en" = "zh-TW") => {
    const call = answerRule(said, english)!.content.find((b) => b.type === "tool_use");
    if (call?.type !== "tool_use") throw new Error(`no tool call for ${said}`);
    const run = await toolbox.execute(call.name, call.input, testContext({ redis, locale }));
    const reply = answerResults([{ tool: call.name, input: call.input, result: run.content, isError: !run.ok }], {
      ...english,
      locale: writtenLocale(said) ?? "en",
    });
    return { tool: run.content, answer: reply.content.map((b) => (b.type === "text" ? b.text : "")).join("") };
  };
  const HAN = /\p{Script=Han}/u;

  it("answers with the tool's own English for the same result: todos, the clock, the calculator and its refusals", async () => {
    const added = await answered("add todo buy milk");
    expect(added.tool).toBe("已新增待辦：#1 buy milk");
    expect(added.answer).toBe(
      '[demo] The add_todo tool says:\nAdded to your todos: #1 buy milk\n\nNow try "delete todo 1" to see an approval prompt.',
    );
    expect((await answered("list my todos")).answer).toBe(
      "[demo] The list_todos tool says:\nYour open todos (1):\n#1 buy milk",
    );
    const done = await answered("mark 1 done");
    expect(done.tool).toMatch(/^已完成：#1 buy milk（已完成 \d{4}-\d\d-\d\d）$/);
    expect(done.answer).toMatch(
      /^\[demo\] The complete_todo tool says:\nMarked done: #1 buy milk \(done \d{4}-\d\d-\d\d\)$/,
    );
    expect((await answered("complete todo 9")).answer).toBe(
      "[demo] The complete_todo tool did not succeed: There is no todo #9 in your list. Check the numbers with list_todos first.",
    );
    const time = await answered("what time is it in new york?");
    expect(time.tool).toMatch(HAN);
    expect(time.answer).toMatch(
      /^\[demo\] The get_current_datetime tool says:\n\w+day, \w+ \d+, \d{4} at \d+:\d\d [AP]M \(America\/New_York, UTC-[45]\)\nISO 8601: /,
    );
    expect((await answered("what is 1e308*10?")).answer).toBe(
      "[demo] The calculate tool did not succeed: The result would be too large (more than 100 digits), so it was not computed.",
    );
    expect((await answered("delete todo 1")).answer).toMatch(
      /^\[demo\] The delete_todo tool says:\nDeleted: #1 buy milk \(done /,
    );
    for (const said of ["add todo buy milk", "list my todos", "what time is it?", "what is 2^70?"])
      expect((await answered(said)).answer, said).not.toMatch(HAN);
  });

  it("a reminder's result in English; one the demo has no English for is shown saying it is in the bot's language", () => {
    const at = Date.parse("2026-03-02T08:00:00+08:00");
    const reminder = { id: 2, text: "pay the power bill", at, next: at, timezone: "Asia/Taipei" };
    const line = formatReminder(
      { ...reminder, chatId: "1", chatKind: "dm", userName: "Alice", createdAt: 0 },
      "zh-TW",
      "Asia/Taipei",
    );
    const result = localize("zh-TW", REMINDER_SET_TEXT, { line });
    const textOf = (tool: string, input: Record<string, unknown>, given: string) =>
      answerResults([{ tool, input, result: given, isError: false }], english)
        .content.map((b) => (b.type === "text" ? b.text : ""))
        .join("");
    expect(textOf("set_reminder", { text: "pay the power bill", at: "2026-03-02T08:00" }, result)).toBe(
      "[demo] The set_reminder tool says:\nReminder set: #2 pay the power bill — Monday, March 2, 2026 at 08:00 " +
        "(2026-03-02T08:00:00+08:00), once\n\nType /reminders to see your reminders.",
    );
    const forecast =
      "臺北市 36 小時天氣預報（中央氣象署）：\n・3月1日（日）白天 06:00–18:00：多雲，降雨機率 10%，氣溫 20–27°C，舒適";
    expect(textOf("get_weather", { city: "臺北市" }, forecast)).toBe(
      "[demo] The get_weather tool says (in Chinese: the tools answer in the bot's language; a real model would tell " +
        `you in English, and /settings language en switches the bot to English):\n${forecast}\n\n` +
        "(This is a recorded forecast shipped with the project: the demo does not use the network, so it is not today's weather.)",
    );
    // A result in English already, and a person writing Chinese, are answered as before.
    expect(textOf("add_todo", { title: "buy milk" }, "Added to your todos: #3 buy milk")).toMatch(
      /^\[demo\] The add_todo tool says:\nAdded to your todos: #3 buy milk\n/,
    );
    expect(
      answerResults(
        [{ tool: "add_todo", input: { title: "買牛奶" }, result: "已新增待辦：#3 買牛奶", isError: false }],
        {
          ...english,
          locale: "zh-TW",
        },
      ).content[0],
    ).toEqual({
      type: "text",
      text: "［示範］工具 add_todo 的結果：\n已新增待辦：#3 買牛奶\n\n接著試試「刪除待辦 3」，看看確認提示。",
    });
  });
});
