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
 * @param log - connection errors go here as warnings (message and error code, at most one per
 *   10 s), instead of ioredis' "Unhandled error event" on stderr; once the connection is ready
 *   again after an error, one info line says so.
 * @returns a connection that reconnects by itself after an outage (ioredis' default retry strategy).
 */
export function connectRedis(url: string, options: RedisOptions = {}, log?: Logger): Redis {
  const base: RedisOptions = { lazyConnect: false, enableAutoPipelining: true, ...options };
  const redis = url.startsWith("/") ? new Redis({ ...base, path: url }) : new Redis(url, base);
  let lastWarning = 0;
  let troubled = false;
  redis.on("error", (err: Error & { code?: unknown }) => {
    troubled = true;
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    // The message and code only: a socket error's stack says nothing useful here.
    log?.warn({ redis: describeRedisUrl(url), code: typeof err.code === "string" ? err.code : undefined }, `redis connection problem: ${err.message}; reconnecting`);
  });
  redis.on("ready", () => {
    if (!troubled) return;
    troubled = false;
    lastWarning = 0;
    log?.info({ redis: describeRedisUrl(url) }, "redis connection is back");
  });
  return redis;
}

/**
 * The address of a Redis URL without its password, for messages (`redis://localhost:6379/0`,
 * or the socket path).
 */
export function describeRedisUrl(url: string): string {
  if (url.startsWith("/") || !URL.canParse(url)) return url;
  const parsed = new URL(url);
  parsed.password = "";
  parsed.username = "";
  return parsed.href;
}

/**
 * Checks that Redis answers `PING` within `timeoutMs` ms, with a connection of its own that is
 * closed afterwards. Never throws.
 * @returns undefined when it answered, else the reason in a few words (the connection error).
 */
export async function pingRedis(url: string, timeoutMs: number): Promise<string | undefined> {
  const redis = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null, connectTimeout: timeoutMs });
  let cause: string | undefined; // ioredis rejects with "Connection is closed."; the event says why
  redis.on("error", (err: Error) => (cause ??= err.message));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs))),
    ]);
    return undefined;
  } catch (error) {
    return (cause ?? (error as Error).message).replace(/\.+$/, "");
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}
