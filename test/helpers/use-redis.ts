/**
 * The Redis of a test file, for vitest only (kept apart from `redis.ts`, which scripts such as the
 * benchmarks import without vitest): a redis-server per file (or `describe` block) with one
 * connection to it, registered as hooks, and the Redis of the end-to-end stack.
 */
import "./test-clusters.js"; // the type of the provided `testClusters`
import { afterAll, beforeAll, inject } from "vitest";
import { connectRedis, isCluster, type RedisClient } from "../../src/redis.js";
import { startRedis, startRedisCluster, type TestRedis } from "./redis.js";

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

/**
 * The Redis of the end-to-end stack: in the `cluster` project (`TEST_REDIS=cluster`) the Redis
 * Cluster of this test worker, started by the project's global setup (`./test-clusters.ts`) and
 * emptied here (`FLUSHALL` on every master) for the file, whose `stop` leaves it running for the
 * next file (`restart` is not offered: no cluster-listed file restarts its Redis); a cluster of
 * the file's own when there is none (a run without that setup); else one redis-server of its own.
 */
export async function startTestRedis(): Promise<TestRedis> {
  if (process.env.TEST_REDIS !== "cluster") return startRedis();
  const shared = inject("testClusters")?.[Number(process.env.VITEST_POOL_ID ?? "1") - 1];
  if (!shared) return startRedisCluster();
  const redis = connectRedis(shared.url);
  try {
    await redis.ping(); // a cluster knows its masters once connected
    await Promise.all((isCluster(redis) ? redis.nodes("master") : [redis]).map((node) => node.flushall()));
  } finally {
    redis.disconnect();
  }
  return {
    ...shared,
    async stop() {},
    restart() {
      return Promise.reject(
        new Error("the shared test cluster is not restarted (startRedisCluster starts one to restart)"),
      );
    },
  };
}
