import { afterAll, beforeAll, expect, it } from "vitest";
import { connectRedis } from "../../src/redis.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => server.stop());

it("connects to a private redis-server and survives a restart", async () => {
  const redis = connectRedis(server.url);
  await redis.set("k", "v");
  expect(await redis.get("k")).toBe("v");
  await server.restart(50);
  expect(await redis.set("k2", "v2")).toBe("OK");
  redis.disconnect();
});

it("logs an outage as one clean warning (message and code, no stack) and its end as one info line", async () => {
  const { log, lines } = captureLogger("info");
  const redis = connectRedis(server.url, {}, log);
  await redis.ping();
  await server.restart(300);
  expect(await redis.ping()).toBe("PONG");
  const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const warnings = records.filter((r) => r.level === 40);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]!.msg).toMatch(/^redis connection problem: .+; reconnecting$/);
  expect(warnings[0]).not.toHaveProperty("err");
  expect(warnings[0]).not.toHaveProperty("stack");
  const back = records.filter((r) => r.msg === "redis connection is back");
  expect(back).toHaveLength(1);
  expect(back[0]!.level).toBe(30);
  redis.disconnect();
});
