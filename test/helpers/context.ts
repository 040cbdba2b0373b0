/**
 * A per-call tool context for tests.
 */
import type { RedisClient } from "../../src/redis.js";
import { silentLogger } from "../../src/log.js";
import type { ToolContext } from "../../src/toolbox/tool.js";
import { testConfig } from "./config.js";

/** A context for user `u1` in a Telegram DM, overridable field by field. `redis` must be given when a tool uses it. */
export function testContext(overrides: Partial<ToolContext> = {}): ToolContext {
  const config = overrides.config ?? testConfig();
  return {
    platform: "telegram",
    chatId: "100",
    chatKind: "dm",
    userId: "u1",
    userName: "Alice",
    locale: config.BOT_LOCALE,
    timezone: config.TIMEZONE,
    signal: new AbortController().signal,
    log: silentLogger,
    redis: undefined as unknown as RedisClient,
    config,
    ...overrides,
  };
}
