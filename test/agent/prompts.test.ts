/**
 * The system prompt: what it says, and that it stays stable per chat kind (so caching works).
 */
import { describe, expect, it } from "vitest";
import { systemPrompt } from "../../src/prompts.js";

describe("systemPrompt", () => {
  it("is a Taiwan assistant that answers in the user's language, Traditional Chinese by default", () => {
    const prompt = systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "dm" });
    expect(prompt).toContain("Taiwan");
    expect(prompt).toContain("Answer in the language the user writes in");
    expect(prompt).toContain("Traditional Chinese as written in Taiwan");
    expect(prompt).toContain("never Simplified Chinese");
    expect(prompt).toContain("Asia/Taipei");
    expect(systemPrompt({ locale: "en", timezone: "Asia/Taipei", chatKind: "dm" })).toContain("When it is unclear, use English");
  });

  it("tells the model to use tools for time, weather and arithmetic, and not to delete finished todos", () => {
    const prompt = systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "dm" });
    expect(prompt).toMatch(/time tool/);
    expect(prompt).toMatch(/weather tool/);
    expect(prompt).toMatch(/arithmetic .*calculator/);
    expect(prompt).toContain("never delete it unless they clearly ask");
  });

  it("is identical for the same options at any time, and differs only by chat kind", () => {
    const a = systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "group" });
    const b = systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "group" });
    expect(a).toBe(b);
    expect(a).toContain("group chat");
    expect(a).toContain("`[Name] text`");
    expect(a).not.toBe(systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "dm" }));
    expect(a).not.toMatch(/\d{1,2}:\d{2}/);
  });

  it("states only the date when `now` is given, in the chat's time zone", () => {
    // 2026-11-29 17:30 UTC is already 2026-11-30 in Taipei
    const prompt = systemPrompt({ locale: "zh-TW", timezone: "Asia/Taipei", chatKind: "dm", now: new Date("2026-11-29T17:30:00Z") });
    expect(prompt).toContain("Today's date is 2026-11-30 (Asia/Taipei)");
    expect(prompt).not.toContain("17:30");
  });
});
