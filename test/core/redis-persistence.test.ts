/**
 * The start-up warning about a Redis that keeps nothing across a restart (`checkRedisAtStart` in
 * `src/redis.ts`, called by `startBot`), against real redis-servers: the test helper's own
 * (`--appendonly no --save ""`), one with the append-only file, one with RDB save points, and one
 * that hides `INFO` and `CONFIG`. The cluster case (one warning per master) is in `redis-cluster.test.ts`.
 */
import type { Redis } from "ioredis";
import { afterEach, expect, it } from "vitest";
import { startBot } from "../../src/app.js";
import { connectRedis, persistenceOf } from "../../src/redis.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Starts the bot (adapter role, no adapters) on `server` and returns its log records. */
async function startUpLog(url: string): Promise<{ level: number; msg: string; node?: string; nodes?: string[] }[]> {
  const { log, lines } = captureLogger("info");
  const bot = await startBot({
    config: testConfig({ ACCESS_POLICY: "pairing" }),
    log,
    redisUrl: url,
    toolbox: new ToolBox(),
    role: "adapter",
    adapters: [],
  });
  await bot.stop();
  return lines.map((l) => JSON.parse(l) as { level: number; msg: string; node?: string });
}

const WARNING = "keeps nothing across a restart";

it("no AOF and no save points: one warning naming the node, what a restart loses and how to turn AOF on", async () => {
  server = await startRedis();
  const records = await startUpLog(server.url);
  const warnings = records.filter((r) => r.level === 40);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatchObject({ node: server.url });
  expect(warnings[0]!.msg).toBe(
    `Redis at ${server.url} keeps nothing across a restart (appendonly no, no save points): a restart or crash of Redis silently loses queued messages, ` +
      "pending approvals, todos and reminders. Turn the append-only file on (redis.conf `appendonly yes`, or `CONFIG SET appendonly yes` then " +
      '`CONFIG REWRITE`; see docs/operations.md, "Redis must keep its data")',
  );
  // Still started: a warning, not a refusal.
  expect(records.some((r) => r.msg === "stopped")).toBe(true);
});

it("the append-only file on, or RDB save points: no warning", async () => {
  for (const extra of [
    ["--appendonly", "yes"],
    ["--save", "3600 1"],
  ]) {
    server = await startRedis(extra);
    const redis = connectRedis(server.url);
    expect(await persistenceOf(redis as Redis)).toBe(extra[0] === "--appendonly" ? "aof" : "rdb");
    redis.disconnect();
    const records = await startUpLog(server.url);
    expect(
      records.filter((r) => r.level >= 40),
      extra.join(" "),
    ).toEqual([]);
    await server.stop();
    server = undefined;
  }
});

it("a Redis that hides INFO and CONFIG (as some managed services do): no warning, one info line asking to make sure", async () => {
  server = await startRedis();
  const admin = connectRedis(server.url);
  await admin.call("ACL", "SETUSER", "default", "-info", "-config");
  admin.disconnect();
  const records = await startUpLog(server.url);
  expect(records.filter((r) => r.msg.includes(WARNING))).toEqual([]);
  const line = records.find((r) => r.msg.startsWith("could not read whether Redis keeps its data"));
  expect(line).toMatchObject({ level: 30, nodes: [server.url] });
});
