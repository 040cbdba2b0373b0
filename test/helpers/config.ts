/**
 * Configuration for tests: the real schema over a small environment, no secrets required.
 */
import { loadConfig, type Config } from "../../src/config.js";

/**
 * A valid configuration with test defaults, overridden by `env`. The bot answers everyone
 * (`ACCESS_POLICY=open`) and neither the rate limit, the queue cap nor the user budget gets in
 * the way of tests about something else; the access tests set their own values. Streaming is off
 * (answers sent whole, as before it existed); the streaming tests turn it on.
 */
export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig(
    {
      LOG_LEVEL: "silent",
      STREAMING: "off",
      ACCESS_POLICY: "open",
      RATE_LIMIT_PER_MINUTE: "10000",
      MAX_QUEUED_PER_CHAT: "10000",
      USER_DAILY_TOKENS: "0",
      ...env,
    },
    { purpose: "inspect" },
  );
}
