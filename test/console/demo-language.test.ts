/**
 * The demo's scripted model answers in the language the person wrote in (newcomer round 4: a
 * zh-TW user got English text), `BOT_LOCALE` only when the words do not tell: through the real
 * Anthropic SDK client against the demo model on loopback, as the bot calls it.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDemoModel, type DemoModel } from "../../src/demo/model.js";
import { writtenLocale } from "../../src/i18n.js";

let model: DemoModel;
let client: Anthropic;
beforeAll(async () => {
  model = await startDemoModel({ locale: "en", deltaMs: 0 });
  client = new Anthropic({ apiKey: "demo-key-unused", baseURL: model.url, maxRetries: 0 });
});
afterAll(() => model?.close());

const tools = [
  { name: "calculate", description: "calc", input_schema: { type: "object" as const, properties: {} } },
  { name: "get_current_datetime", description: "clock", input_schema: { type: "object" as const, properties: {} } },
];

const textOf = (content: Anthropic.ContentBlock[]) => content.map((b) => (b.type === "text" ? b.text : "")).join("");

it("writtenLocale: East Asian characters → zh-TW, Latin letters only → en, neither → undefined", () => {
  expect(writtenLocale("現在幾點")).toBe("zh-TW");
  expect(writtenLocale("幫我算 2*3 ok")).toBe("zh-TW");
  expect(writtenLocale("what time is it")).toBe("en");
  expect(writtenLocale("1+1 = ?")).toBeUndefined();
  // An exponent's e is part of a number, not a word: the default language answers it.
  expect(writtenLocale("1e308*10")).toBeUndefined();
  expect(writtenLocale("2.5E-3 * 4")).toBeUndefined();
  expect(writtenLocale("what is 1e3 * 2?")).toBe("en");
  expect(writtenLocale("3 eggs")).toBe("en");
  expect(writtenLocale("👍")).toBeUndefined();
});

it("a question in Chinese is answered in Chinese though BOT_LOCALE is en, its tool results too; English in English", async () => {
  const asked = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools,
    messages: [{ role: "user", content: "現在幾點？" }],
  });
  expect(asked.stop_reason).toBe("tool_use");
  expect(textOf(asked.content)).toMatch(/^［示範］/);
  const call = asked.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
  expect(call.name).toBe("get_current_datetime");
  // The turn of tool results follows the question's language.
  const answered = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools,
    messages: [
      { role: "user", content: "現在幾點？" },
      { role: "assistant", content: asked.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: call.id, content: "2026-12-07 14:00 (Asia/Taipei)" }],
      },
    ],
  });
  expect(textOf(answered.content)).toMatch(/^［示範］/);
  expect(textOf(answered.content)).not.toMatch(/\[demo\]/);

  const english = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools,
    messages: [{ role: "user", content: "what time is it?" }],
  });
  expect(textOf(english.content)).toMatch(/^\[demo\] /);
});

it("words that tell no language get BOT_LOCALE's answer; a zh-TW demo answers English words in English", async () => {
  const numbers = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools,
    messages: [{ role: "user", content: "2*3" }],
  });
  expect(textOf(numbers.content)).toMatch(/^\[demo\] /);

  const zh = await startDemoModel({ locale: "zh-TW", deltaMs: 0 });
  try {
    const zhClient = new Anthropic({ apiKey: "demo-key-unused", baseURL: zh.url, maxRetries: 0 });
    const help = await zhClient.messages.create({
      model: "claude-demo",
      max_tokens: 1024,
      tools,
      messages: [{ role: "user", content: "hello, what can you do?" }],
    });
    expect(textOf(help.content)).toMatch(/^\[demo\] This is the demo/);
    const 中文 = await zhClient.messages.create({
      model: "claude-demo",
      max_tokens: 1024,
      tools,
      messages: [{ role: "user", content: "你好" }],
    });
    expect(textOf(中文.content)).toMatch(/^［示範］這是示範模式/);
    // A group's "[Name #code]" label is not the person's words.
    const labelled = await zhClient.messages.create({
      model: "claude-demo",
      max_tokens: 1024,
      tools,
      messages: [{ role: "user", content: "[Alice #a1b2] 你好" }],
    });
    expect(textOf(labelled.content)).toMatch(/^［示範］/);
  } finally {
    await zh.close();
  }
});

it("a tool result in the bot's Chinese is answered in English to English words, with the tool's own English for it", async () => {
  const calc = [tools[0]!];
  const asked = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools: calc,
    messages: [{ role: "user", content: "what is 1e308*10?" }],
  });
  const call = asked.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")!;
  expect(call.input).toEqual({ expression: "1e308*10" });
  const answered = await client.messages.create({
    model: "claude-demo",
    max_tokens: 1024,
    tools: calc,
    messages: [
      { role: "user", content: "what is 1e308*10?" },
      { role: "assistant", content: asked.content },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: call.id, content: "結果太大（超過 100 位數），不計算。", is_error: true },
        ],
      },
    ],
  });
  expect(textOf(answered.content)).toBe(
    "[demo] The calculate tool did not succeed: The result would be too large (more than 100 digits), so it was not computed.",
  );
});
