/**
 * The Redis connection of the command-line tools (`npm run trace`, `npm run access`): one place
 * that finds the bot's Redis, fails fast with a message that says what to run, and cleans up.
 */
import path from "node:path";
import { startLocalRedis, type LocalRedis } from "../local-redis.js";
import { redact } from "../log.js";
import { connectRedis, describeRedisUrl, isClusterAddress, type RedisClient } from "../redis.js";
import { processIo, type CliIo } from "./io.js";

/**
 * Runs `fn` with a Redis connection and returns its exit code.
 *
 * @param redisUrl - `REDIS_URL` (a URL or a unix socket path) or the Redis Cluster of
 *   `REDIS_CLUSTER_NODES` (`redisAddress` of `src/redis.ts`); when undefined, the private
 *   redis-server of this folder (`.data/redis`, see `src/local-redis.ts`) is reused, or started
 *   for this command and stopped again afterwards unless another process took it up meanwhile.
 * @param fn - the command; its result is the process's exit code.
 * @param io - where the line about an unreachable Redis goes; default the process's stderr.
 * @returns `fn`'s exit code, or 2 (after printing one line to `io.err`, with any password or secret
 *   redacted) when the private server cannot be started or Redis cannot be reached. The connection
 *   is closed and the private server's lease given back in every case.
 */
export async function withCliRedis(
  redisUrl: string | undefined,
  fn: (redis: RedisClient) => Promise<number>,
  io: CliIo = processIo,
): Promise<number> {
  let local: LocalRedis | undefined;
  if (!redisUrl) {
    try {
      local = await startLocalRedis({ dir: path.resolve(".data", "redis") });
    } catch (error) {
      io.err(
        `REDIS_URL is not set and the private redis-server could not be started: ${redact((error as Error).message)}`,
      );
      return 2;
    }
    redisUrl = local.url;
  }
  // Fail fast, once: no reconnect loop, no queued commands; ioredis waits disconnectTimeout (2 s by
  // default) on a socket that never connected before the process can exit.
  const redis = connectRedis(redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 5000,
    disconnectTimeout: 200,
  });
  let socketError: Error | undefined;
  redis.on("error", (error: Error) => (socketError ??= error));
  try {
    try {
      await redis.connect();
    } catch (error) {
      // `connect` rejects with "Connection is closed."; the socket's own error says why (ECONNREFUSED, ENOENT, ...).
      const cause = socketError ?? error;
      const reason = redact(cause instanceof Error ? cause.message : String(cause));
      io.err(
        `Redis at ${displayAddress(redisUrl)} could not be reached (${reason}): start the bot (npm ` +
          `start) or set REDIS_URL (REDIS_CLUSTER_NODES for a cluster) to the Redis it uses.`,
      );
      return 2;
    }
    return await fn(redis);
  } finally {
    redis.disconnect();
    await local?.stop();
  }
}

/** `redisUrl` for a message: a socket path relative to the current folder, a URL without its password. */
function displayAddress(redisUrl: string): string {
  if (isClusterAddress(redisUrl)) return describeRedisUrl(redisUrl);
  if (redisUrl.startsWith("/")) {
    const relative = path.relative(process.cwd(), redisUrl);
    return relative.startsWith("..") ? redisUrl : relative;
  }
  if (!URL.canParse(redisUrl)) return "the configured address";
  const url = new URL(redisUrl);
  url.password = "";
  url.username = "";
  return url.href;
}
