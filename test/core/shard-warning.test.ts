/**
 * Discord shard variables without `DISCORD_TOKEN`: start-up goes on (like the other Discord-only
 * variables, which a shared .env may hold) and says once that they are ignored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBot } from "../../src/app.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const WARNING =
  "DISCORD_SHARDS / DISCORD_SHARD_COUNT are set but DISCORD_TOKEN is not: no Discord adapter runs in this process, so they are ignored";

async function warningsOf(env: Record<string, string>): Promise<string[]> {
  const config = testConfig({ ROLE: "adapter", ...env });
  const { log, lines } = captureLogger("info");
  const { toolbox } = await loadTools({ config, log });
  const bot = await startBot({
    config,
    log,
    redisUrl: redis.url,
    toolbox,
    role: "adapter",
    adapters: [],
    prefix: "shard-warning",
  });
  await bot.stop();
  return lines
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => l.level === 40)
    .map((l) => l.msg);
}

describe("Discord shard variables without DISCORD_TOKEN", () => {
  it("start anyway with one warning that they are ignored", async () => {
    expect(
      (await warningsOf({ DISCORD_SHARD_COUNT: "4", DISCORD_SHARDS: "0-1" })).filter((m) => m === WARNING),
    ).toHaveLength(1);
    expect(await warningsOf({})).not.toContain(WARNING);
  }, 60_000);
});
