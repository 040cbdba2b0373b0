/**
 * Redis connections (ioredis), shared by the queue, the worker, history, approvals and tools.
 * This is the one place connections are opened: to one Redis (`REDIS_URL`, or the private
 * redis-server) or to a Redis Cluster (`REDIS_CLUSTER_NODES`), see {@link connectRedis}.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { Config } from "./config.js";
import type { Logger } from "./log.js";

/**
 * A connection as the stores, queues and tools use it: one Redis, or a Redis Cluster (ioredis
 * routes each command by its key's hash slot). Code that runs a Lua script or `MULTI` over several
 * keys must give them one hash tag (`{…}`), see `src/queue/keys.ts`.
 */
export type RedisClient = Redis | Cluster;

/** The scheme of a cluster address (see {@link clusterAddress}); `rediss-cluster:` with TLS. */
const CLUSTER_SCHEMES = ["redis-cluster:", "rediss-cluster:"] as const;

/** One seed node of a Redis Cluster. */
export interface ClusterNode {
  host: string;
  port: number;
}

/**
 * The address of a Redis Cluster as one string, so it travels where a `REDIS_URL` does (the
 * `redisUrl` of `startBot`, the CLIs, the tests): `redis-cluster://[:password@]host:port,host:port`,
 * or `rediss-cluster://…` for TLS. The password is URL-encoded. Build it with this function; it is
 * not meant to be written by hand (operators set `REDIS_CLUSTER_NODES` and `REDIS_PASSWORD`).
 *
 * @param nodes - the seed nodes (at least one; ioredis discovers the rest with `CLUSTER SLOTS`).
 * @param options.password - `AUTH` password of every node (`REDIS_PASSWORD`).
 * @param options.tls - connect with TLS (entries written `rediss://host:port`).
 */
export function clusterAddress(
  nodes: readonly ClusterNode[],
  options: { password?: string; tls?: boolean } = {},
): string {
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : "";
  const list = nodes.map((n) => `${n.host.includes(":") ? `[${n.host}]` : n.host}:${n.port}`).join(",");
  return `${options.tls ? "rediss" : "redis"}-cluster://${auth}${list}`;
}

/** True when `address` is a cluster address ({@link clusterAddress}). */
export function isClusterAddress(address: string): boolean {
  return CLUSTER_SCHEMES.some((s) => address.startsWith(`${s}//`));
}

/**
 * The parts of a cluster address.
 * @throws when `address` is not one (a programming error: addresses come from {@link clusterAddress}).
 */
export function parseClusterAddress(address: string): { nodes: ClusterNode[]; password?: string; tls: boolean } {
  const scheme = CLUSTER_SCHEMES.find((s) => address.startsWith(`${s}//`));
  if (!scheme) throw new Error("not a Redis Cluster address");
  let rest = address.slice(scheme.length + 2);
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    password = decodeURIComponent(rest.slice(0, at).replace(/^[^:]*:/, "")) || undefined;
    rest = rest.slice(at + 1);
  }
  const nodes = rest.split(",").map((entry) => {
    const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(entry);
    if (!match) throw new Error("a Redis Cluster address lists host:port entries");
    return { host: match[1] ?? match[2]!, port: Number(match[3]) };
  });
  return { nodes, password, tls: scheme === "rediss-cluster:" };
}

/**
 * The Redis the configuration names: `REDIS_URL`, or the cluster of `REDIS_CLUSTER_NODES` (with
 * `REDIS_PASSWORD`) as a {@link clusterAddress}; undefined when neither is set (the private
 * redis-server is used then).
 */
export function redisAddress(
  config: Pick<Config, "REDIS_URL" | "REDIS_CLUSTER_NODES" | "REDIS_PASSWORD">,
): string | undefined {
  if (config.REDIS_URL) return config.REDIS_URL;
  const cluster = config.REDIS_CLUSTER_NODES;
  return cluster ? clusterAddress(cluster.nodes, { password: config.REDIS_PASSWORD, tls: cluster.tls }) : undefined;
}

/** True for a connection to a Redis Cluster. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/**
 * Every key matching `pattern` (a `SCAN MATCH` glob) on every node (every master of a cluster), each once.
 * A full `SCAN` of the keyspace: only for rare one-off work (a chat's migration, clearing the demo
 * at its start), never on a message's path.
 * @throws when Redis is unreachable.
 */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = isCluster(redis) ? redis.nodes("master") : [redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== "0");
  }
  return [...new Set(found)];
}

/**
 * ioredis options of a worker's connection (BullMQ's workers and queues, and the answers' own keys):
 *
 * - `maxRetriesPerRequest: null`: BullMQ's guidance for workers (a blocking command must wait through
 *   a reconnect rather than fail). Source: https://docs.bullmq.io/guide/going-to-production
 * - `enableAutoPipelining: false`: with auto-pipelining, every command builds an ioredis `Pipeline`,
 *   whose constructor copies every script defined on the connection (`built/Pipeline.js`). BullMQ
 *   defines 65 on the connection it is given, our stores a dozen more, so each command paid about
 *   30 µs and its garbage (0.4 µs per script, measured with ioredis 5.11); Bull's and BullMQ's users
 *   also report jobs failing with it on (taskforcesh/bullmq#457, OptimalBits/bull#2276). Commands issued
 *   together still travel together: each is written at once, before the replies of the others.
 *   `docs/worker-path.md` ("Auto-pipelining") has the figures.
 */
export const WORKER_REDIS_OPTIONS: RedisOptions = { maxRetriesPerRequest: null, enableAutoPipelining: false };

/**
 * Opens a Redis connection.
 *
 * @param url - `redis://[:password@]host:port[/db]`, `rediss://…`, the absolute path of a unix
 *   socket, or a Redis Cluster address ({@link clusterAddress}, from `REDIS_CLUSTER_NODES`):
 *   then an ioredis `Cluster` is returned, which finds every master from the seed nodes and sends
 *   each command to the master of its key's hash slot.
 * @param options - extra ioredis options. A worker's connection takes {@link WORKER_REDIS_OPTIONS}
 *   (no auto-pipelining; `maxRetriesPerRequest: null`, BullMQ's guidance). Auto-pipelining is on
 *   unless `enableAutoPipelining: false`. For a
 *   cluster, `lazyConnect`, `enableOfflineQueue`, `enableAutoPipelining` and `retryStrategy` (as
 *   `clusterRetryStrategy`) apply to the cluster, the rest to each node's connection.
 * @param log - connection errors go here as warnings (message and error code, at most one per
 *   10 s), instead of ioredis' "Unhandled error event" on stderr; once the connection is ready
 *   again after an error, one info line says so.
 * @returns a connection that reconnects by itself after an outage (ioredis' default retry strategy).
 */
export function connectRedis(url: string, options: RedisOptions = {}, log?: Logger): RedisClient {
  const base: RedisOptions = { lazyConnect: false, enableAutoPipelining: true, ...options };
  const redis = isClusterAddress(url)
    ? openCluster(url, base)
    : url.startsWith("/")
      ? new Redis({ ...base, path: url })
      : new Redis(url, base);
  let lastWarning = 0;
  let troubled = false;
  onConnectionError(redis, (err: Error & { code?: unknown }, node?: string) => {
    troubled = true;
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    // The message and code only: a socket error's stack says nothing useful here.
    log?.warn(
      { redis: describeRedisUrl(url), node, code: typeof err.code === "string" ? err.code : undefined },
      `redis connection problem: ${err.message}; reconnecting`,
    );
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
 * Calls `handler` on the connection's errors. A `Cluster` reports a node's connection failure (one
 * master down, a seed node unreachable) as `"node error"` with the node's `host:port`, and only
 * a failure of the whole cluster as `"error"` (ioredis `built/cluster/index.js`), so both are heard.
 */
function onConnectionError(redis: RedisClient, handler: (err: Error, node?: string) => void): void {
  redis.on("error", (err: Error) => handler(err));
  if (isCluster(redis)) redis.on("node error", (err: Error, node: string) => handler(err, node));
}

/**
 * An ioredis `Cluster` for a cluster address. With TLS, node addresses are used as they are
 * (`dnsLookup`), as ioredis advises for managed clusters (AWS ElastiCache, MemoryDB) whose
 * certificates name the configured endpoint.
 */
function openCluster(address: string, options: RedisOptions): Cluster {
  const { nodes, password, tls } = parseClusterAddress(address);
  const { lazyConnect, enableOfflineQueue, enableAutoPipelining, retryStrategy, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    lazyConnect,
    enableOfflineQueue,
    enableAutoPipelining,
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
    redisOptions: { ...nodeOptions, ...(password ? { password } : {}), ...(tls ? { tls: {} } : {}) },
    ...(tls ? { dnsLookup: (host, callback) => callback(null, host) } : {}),
  };
  return new Cluster(nodes, clusterOptions);
}

/**
 * The address of a Redis URL or cluster address without its password, for messages
 * (`redis://localhost:6379/0`, the socket path, `redis-cluster://10.0.0.1:7000,10.0.0.2:7000`).
 */
export function describeRedisUrl(url: string): string {
  if (isClusterAddress(url)) {
    const { nodes, tls } = parseClusterAddress(url);
    return clusterAddress(nodes, { tls });
  }
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
  const redis = connectRedis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
  });
  let cause: string | undefined; // ioredis rejects with "Connection is closed." (a cluster: "Failed to refresh slots cache."); the event says why
  onConnectionError(redis, (err) => (cause ??= err.message));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.connect().then(() => redis.ping()),
      new Promise(
        (_resolve, reject) =>
          (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)),
      ),
    ]);
    return undefined;
  } catch (error) {
    return (cause ?? (error as Error).message).replace(/\.+$/, "");
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}

/**
 * Start-up stops with this when a Redis may evict keys (its `maxmemory-policy` is not
 * `noeviction`). Its message names the node and the policy, and says what to change.
 */
export class RedisEvictionError extends Error {
  constructor(nodes: { node: string; policy: string }[]) {
    const list = nodes.map((n) => `${n.policy} on ${n.node}`).join(", ");
    super(
      `Redis may evict keys (maxmemory-policy ${list}): when memory runs short it would delete queued jobs, job locks, ` +
        `histories and pending approvals, so BullMQ loses jobs and locks. Set maxmemory-policy to noeviction on every ` +
        `Redis node (redis.conf \`maxmemory-policy noeviction\`, \`CONFIG SET maxmemory-policy noeviction\`, or the ` +
        `parameter group of a managed Redis); with noeviction a full Redis refuses writes instead, and the bot answers "try again".`,
    );
    this.name = "RedisEvictionError";
  }
}

/**
 * The `maxmemory-policy` of one node: from `INFO memory` (allowed on managed services that
 * disable `CONFIG`), else `CONFIG GET maxmemory-policy`; undefined when neither answers it.
 */
async function evictionPolicyOf(node: Redis): Promise<string | undefined> {
  const info = await node.info("memory").catch(() => "");
  const line = /^maxmemory_policy:(\S+)/m.exec(info);
  if (line) return line[1];
  const reply = await node.config("GET", "maxmemory-policy").catch(() => undefined);
  return Array.isArray(reply) && typeof reply[1] === "string" ? reply[1] : undefined;
}

/**
 * Refuses a Redis that may evict keys: checks `maxmemory-policy` on the node, or on every master
 * of a cluster. A node that answers neither `INFO memory` nor `CONFIG GET` (a managed Redis that
 * hides both) cannot be checked: it is accepted with one warning that names it, since refusing
 * would make such a service unusable.
 *
 * @param redis - a connection (it is used, not closed); a cluster's masters are found from it.
 * @param log - the warning for nodes that could not be checked.
 * @throws {RedisEvictionError} when a node's policy is anything but `noeviction`; the connection's
 *   own error when Redis cannot be reached.
 */
export async function assertNoEviction(redis: RedisClient, log?: Logger): Promise<void> {
  await redis.ping(); // waits for the connection (a cluster: until its slots are known)
  const nodes: Redis[] = isCluster(redis) ? redis.nodes("master") : [redis];
  const policies = await Promise.all(
    nodes.map(async (node) => ({ node: nodeName(node), policy: await evictionPolicyOf(node) })),
  );
  const evicting = policies.filter(
    (p): p is { node: string; policy: string } => p.policy !== undefined && p.policy !== "noeviction",
  );
  if (evicting.length > 0) throw new RedisEvictionError(evicting);
  const unknown = policies.filter((p) => p.policy === undefined).map((p) => p.node);
  if (unknown.length > 0) {
    log?.warn(
      { nodes: unknown },
      "could not read maxmemory-policy (INFO and CONFIG are not allowed): make sure it is noeviction, or BullMQ may lose jobs and locks when memory runs short",
    );
  }
}

/** `host:port` (or the socket path) of one connection, for messages. */
function nodeName(node: Redis): string {
  const { host, port, path } = node.options;
  return path ?? `${host ?? "localhost"}:${port ?? 6379}`;
}

/** How one node keeps its data across a restart: the append-only file, RDB snapshots, nothing, or unknown (not readable). */
export type RedisPersistence = "aof" | "rdb" | "none" | "unknown";

/**
 * The persistence of one node: `aof` when `INFO persistence` says `aof_enabled:1`; else from
 * `CONFIG GET save` (`rdb` with save points, `none` with `save ""`); else `rdb` when `INFO` counts
 * snapshots taken (`rdb_saves`), `unknown` when neither is readable (a managed Redis that hides
 * `CONFIG` and saves by its own schedule).
 */
export async function persistenceOf(node: Redis): Promise<RedisPersistence> {
  const info = await node.info("persistence").catch(() => "");
  if (/^aof_enabled:1/m.test(info)) return "aof";
  const reply = await node.config("GET", "save").catch(() => undefined);
  if (Array.isArray(reply) && typeof reply[1] === "string") return reply[1].trim() === "" ? "none" : "rdb";
  return /^rdb_saves:[1-9]/m.test(info) ? "rdb" : "unknown";
}

/**
 * Warns about a Redis that keeps nothing across a restart: one warning per node (or cluster master)
 * with neither the append-only file nor RDB save points, naming the node and what a restart loses
 * (queued messages, pending approvals, todos, reminders) and how to turn AOF on. Nodes whose
 * persistence cannot be read get one info line. Never throws; a Redis it cannot reach is skipped.
 *
 * @param redis - a connection (used, not closed).
 */
async function warnIfNotPersistent(redis: RedisClient, log: Logger): Promise<void> {
  try {
    await redis.ping();
    const nodes: Redis[] = isCluster(redis) ? redis.nodes("master") : [redis];
    const found = await Promise.all(
      nodes.map(async (node) => ({ node: nodeName(node), persistence: await persistenceOf(node) })),
    );
    const none = found.filter((f) => f.persistence === "none").map((f) => f.node);
    for (const node of none) {
      log.warn(
        { node },
        `Redis at ${node} keeps nothing across a restart (appendonly no, no save points): a restart or crash of Redis silently loses queued messages, ` +
          `pending approvals, todos and reminders. Turn the append-only file on (redis.conf \`appendonly yes\`, or \`CONFIG SET appendonly yes\` ` +
          `then \`CONFIG REWRITE\`; see docs/operations.md, "Redis must keep its data")`,
      );
    }
    const unknown = found.filter((f) => f.persistence === "unknown").map((f) => f.node);
    if (unknown.length > 0)
      log.info(
        { nodes: unknown },
        "could not read whether Redis keeps its data across a restart (INFO persistence and CONFIG are not allowed): make sure AOF or snapshots are on",
      );
  } catch {
    // Unreachable now: the eviction check has said so already.
  }
}

/**
 * The start-up checks of a Redis, on a short connection of its own to `url` (closed afterwards):
 * {@link assertNoEviction} (refuses a Redis that may evict keys), then {@link warnIfNotPersistent}
 * (warns about one that keeps nothing across a restart). A Redis that cannot be reached within
 * 10 s is not refused here (the bot's own connections wait through an outage): one warning says
 * the policy was not checked.
 *
 * @throws {RedisEvictionError} when a node may evict keys.
 */
export async function checkRedisAtStart(url: string, log: Logger): Promise<void> {
  const redis = connectRedis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    connectTimeout: 10_000,
  });
  redis.on("error", () => {}); // the outcome is reported below
  try {
    await redis.connect();
    await assertNoEviction(redis, log);
    await warnIfNotPersistent(redis, log);
  } catch (error) {
    if (error instanceof RedisEvictionError) throw error;
    log.warn(
      { redis: describeRedisUrl(url) },
      `could not check Redis's maxmemory-policy (${(error as Error).message}); it must be noeviction`,
    );
  } finally {
    redis.disconnect();
  }
}
