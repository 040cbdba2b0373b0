/** Where LINE voice replies are served (`adapters/line/voice.ts`) and which `LINE_PUBLIC_URL` is accepted. */
import { expect, it } from "vitest";
import { voicePath, voiceUrl } from "../../adapters/line/voice.js";
import { testConfig } from "../helpers/config.js";

it("serves voice replies beside the webhook path, under LINE_PUBLIC_URL", () => {
  expect(voicePath("/line/webhook")).toBe("/line/voice");
  expect(voicePath("/webhook")).toBe("/voice");
  expect(voicePath("/a/b/hook/")).toBe("/a/b/voice");
  const id = "0123456789abcdef0123456789abcdef";
  expect(voiceUrl("https://bot.example.com", "/line/webhook", id)).toBe(`https://bot.example.com/line/voice/${id}.mp3`);
  expect(voiceUrl("https://example.com/tw-bot", "/line/webhook", id)).toBe(
    `https://example.com/tw-bot/line/voice/${id}.mp3`,
  );
});

it("LINE_PUBLIC_URL must be https (LINE fetches audio only over HTTPS); a trailing slash is dropped", () => {
  expect(testConfig({ LINE_PUBLIC_URL: "https://bot.example.com/" }).LINE_PUBLIC_URL).toBe("https://bot.example.com");
  expect(testConfig({}).LINE_PUBLIC_URL).toBeUndefined();
  expect(() => testConfig({ LINE_PUBLIC_URL: "http://bot.example.com" })).toThrow(/LINE_PUBLIC_URL/);
  expect(() => testConfig({ LINE_PUBLIC_URL: "https://bot.example.com/?x=1" })).toThrow(/LINE_PUBLIC_URL/);
});
