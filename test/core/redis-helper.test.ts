import { afterAll, beforeAll, expect, it } from "vitest";
import { connectRedis } from "../../src/redis.js";
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
