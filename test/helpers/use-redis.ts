/**
 * A redis-server per test file (or `describe` block) with one connection to it, registered as
 * vitest hooks; kept apart from `redis.ts`, which scripts (the benchmarks) import without vitest.
 */
import { afterAll, beforeAll } from "vitest";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { startRedis, type TestRedis } from "./redis.js";

/**
 * Starts a redis-server and connects to it before the tests of the enclosing file or `describe`
 * block (`beforeAll`), and closes the connection and stops the server after them (`afterAll`).
 * @param onReady receives the connection and the server once both are up.
 */
export function useRedis(onReady: (redis: RedisClient, server: TestRedis) => void): void {
  let server: TestRedis | undefined;
  let redis: RedisClient | undefined;
  beforeAll(async () => {
    server = await startRedis();
    redis = connectRedis(server.url);
    onReady(redis, server);
  });
  afterAll(async () => {
    await redis?.quit().catch(() => redis?.disconnect());
    await server?.stop();
  });
}
