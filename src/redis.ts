/**
 * Redis connections (ioredis), shared by the queue, the worker, history, approvals and tools.
 */
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "./log.js";

/**
 * Opens a Redis connection.
 *
 * @param url - `redis://[:password@]host:port[/db]`, `rediss://…`, or the absolute path of a unix socket.
 * @param options - extra ioredis options. BullMQ workers need `maxRetriesPerRequest: null`
 *   (BullMQ's guidance: blocking commands must wait through a reconnect rather than fail).
 * @param log - connection errors go here as warnings (at most one per 10 s), instead of ioredis'
 *   "Unhandled error event" on stderr.
 * @returns a connection that reconnects by itself after an outage (ioredis' default retry strategy).
 */
export function connectRedis(url: string, options: RedisOptions = {}, log?: Logger): Redis {
  const base: RedisOptions = { lazyConnect: false, enableAutoPipelining: true, ...options };
  const redis = url.startsWith("/") ? new Redis({ ...base, path: url }) : new Redis(url, base);
  let lastWarning = 0;
  redis.on("error", (err: Error) => {
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    log?.warn({ err: { message: err.message } }, `redis connection problem: ${err.message}; reconnecting`);
  });
  return redis;
}
