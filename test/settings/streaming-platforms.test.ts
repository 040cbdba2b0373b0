/**
 * The streaming setting is offered only where an answer can grow as it is written: Telegram,
 * Discord and the console, not LINE (its messages cannot be edited; docs/line.md).
 */
import { expect, it } from "vitest";
import { pressSettingsButton, settingsCommand, type SettingsAsker } from "../../src/commands/settings.js";
import type { CommandReply } from "../../src/commands/command.js";
import { silentLogger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

const config = testConfig({ STREAMING: "on" });
const asker = (platform: "telegram" | "line", chatId: string): SettingsAsker => ({
  platform,
  chatId,
  chatKind: "dm",
  userId: chatId,
  locale: "en",
});
const listing = async (a: SettingsAsker) =>
  (await settingsCommand(a, "", { config, settings: new SettingsStore(redis, config, silentLogger) })) as CommandReply;

it("LINE's /settings lists no streaming and offers no streaming button; Telegram's does both", async () => {
  const telegram = await listing(asker("telegram", "11"));
  expect(telegram.text).toContain("• Streaming answers: on");
  expect(telegram.buttons?.some((b) => b.data.startsWith("st:s:"))).toBe(true);
  const line = await listing(asker("line", "U1"));
  expect(line.text).not.toContain("Streaming");
  expect(line.buttons?.some((b) => b.data.startsWith("st:s:"))).toBe(false);
});

it("LINE refuses /settings streaming and a streaming button's data, saying why; nothing is stored", async () => {
  const settings = new SettingsStore(redis, config, silentLogger);
  const services = { config, settings };
  const refusal = "LINE messages cannot be edited: every answer is sent whole, so there is no streaming here.";
  expect(await settingsCommand(asker("line", "U2"), "streaming off", services)).toBe(refusal);
  const pressed = await pressSettingsButton(asker("line", "U2"), "st:s:off", services);
  expect(pressed.changed).toBe(false);
  expect(pressed.notice).toBe(refusal);
  expect((await settings.read({ platform: "line", chatId: "U2" })).streaming).toBe(true);
  expect(await settingsCommand(asker("telegram", "12"), "streaming off", services)).toBe(
    "Done: streaming answers off.",
  );
});
