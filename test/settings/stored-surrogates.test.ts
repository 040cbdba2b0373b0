/**
 * A settings record a version before messages were made well-formed stored with half an emoji in
 * its persona (JSON's escape `\ud800`, which Redis' Lua `cjson` refuses) keeps its settings when
 * another one is changed: the set script no longer replaces a record it cannot decode with an
 * empty one.
 */
import { expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

it("changing a setting keeps a persona stored with a lone surrogate, read and written back with U+FFFD", async () => {
  const chat = { platform: "telegram" as const, chatId: "21" };
  const key = conversationKeys(chat).settings;
  await redis.set(key, JSON.stringify({ persona: "a pirate \ud83d who sings", streaming: "off" }));
  const settings = new SettingsStore(redis, testConfig(), silentLogger);
  await settings.set(chat, "language", "en");
  expect(await settings.records(chat)).toEqual({
    own: { persona: "a pirate \ufffd who sings", streaming: "off", language: "en" },
  });
  expect(await redis.get(key)).not.toMatch(/\\u[dD][89a-fA-F]/);
});
