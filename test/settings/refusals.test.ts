/**
 * A typed `/settings <name> <value>` whose value the setting does not take is refused with what it
 * takes and how to type it, in the conversation's language, like the refusal of an unknown model
 * (which lists the models offered); nothing is stored.
 */
import { expect, it } from "vitest";
import { settingsCommand, type SettingsAsker } from "../../src/commands/settings.js";
import { silentLogger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { SettingsStore } from "../../src/settings/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

const config = testConfig({ STREAMING: "on", TTS_BASE_URL: "http://127.0.0.1:9/v1" });
const keyOf = (chatId: string) => conversationKeys({ platform: "telegram", chatId }).settings;
const asker = (locale: "zh-TW" | "en", chatKind: "dm" | "group" = "dm"): SettingsAsker => ({
  platform: "telegram",
  chatId: chatKind === "dm" ? "41" : "-41",
  chatKind,
  userId: "41",
  locale,
  isGroupAdmin: async () => true,
});

it("/settings streaming maybe: says it takes on or off and how to type it, in English and in Chinese", async () => {
  const services = { config, settings: new SettingsStore(redis, config, silentLogger) };
  expect(await settingsCommand(asker("en"), "streaming maybe", services)).toBe(
    "“maybe” is not an option for streaming. Available: on, off, e.g. /settings streaming off.",
  );
  expect(await settingsCommand(asker("zh-TW"), "streaming maybe", services)).toBe(
    "「maybe」不是邊寫邊顯示的選項。可用：on、off，例如 /settings streaming off。",
  );
  expect(await settingsCommand(asker("en"), "streaming", services)).toBe(
    "Say which option for streaming: on, off, e.g. /settings streaming off.",
  );
  expect(await settingsCommand(asker("zh-TW"), "streaming", services)).toBe(
    "請寫出邊寫邊顯示的選項：on、off，例如 /settings streaming off。",
  );
  expect(await redis.exists(keyOf("41"))).toBe(0);
});

it("the language, replies in a group and voice replies are refused the same way", async () => {
  const services = { config, settings: new SettingsStore(redis, config, silentLogger) };
  expect(await settingsCommand(asker("en"), "language klingon", services)).toBe(
    "“klingon” is not an option for the language. Available: zh-TW, en, e.g. /settings language en.",
  );
  expect(await settingsCommand(asker("zh-TW", "group"), "replies some", services)).toBe(
    "「some」不是群組裡回覆的選項。可用：mention、all，例如 /settings replies all。",
  );
  expect(await settingsCommand(asker("en"), "voice loud", services)).toBe(
    "“loud” is not an option for voice replies. Available: off, when-spoken, always, e.g. /settings voice when-spoken.",
  );
  expect(await redis.exists(keyOf("41"))).toBe(0);
  expect(await redis.exists(keyOf("-41"))).toBe(0);
});

it("a refused value, setting name or model is quoted back well-formed: a lone surrogate as U+FFFD, a control as a space", async () => {
  const services = { config, settings: new SettingsStore(redis, config, silentLogger) };
  expect(await settingsCommand(asker("en"), "language x\ud800", services)).toBe(
    "“x\ufffd” is not an option for the language. Available: zh-TW, en, e.g. /settings language en.",
  );
  const unknownSetting = await settingsCommand(asker("en"), "fo\udc00o", services);
  expect(unknownSetting).toContain("“fo\ufffdo”");
  const unknownModel = await settingsCommand(asker("en"), "model claude\u001b[2J\ud83d", services);
  expect(typeof unknownModel === "string" ? unknownModel : JSON.stringify(unknownModel)).toContain("claude [2J\ufffd");
  for (const text of [unknownSetting, unknownModel])
    expect(JSON.stringify(text)).not.toMatch(/\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|\\u001b/i);
});
