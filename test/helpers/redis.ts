/**
 * A real, private redis-server for a test file: started on a unix socket in a temporary folder,
 * so test files never share data and never race for a port. {@link startRedisCluster} starts a
 * three-master Redis Cluster instead (the end-to-end tests run on both, see `vitest.config.ts`).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { freePorts } from "./ports.js";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis, type RedisOptions } from "ioredis";
import { clusterAddress, isCluster, type RedisClient } from "../../src/redis.js";

/** A running test Redis. */
export interface TestRedis {
  /**
   * Usable by `connectRedis` and as `startBot`'s `redisUrl`: the unix socket path, or a cluster's
   * address (`redis-cluster://127.0.0.1:<port>,…`, see `clusterAddress` in `src/redis.ts`).
   */
  url: string;
  /** The environment a child process (`npm run access`, `npm start`) needs to reach it: `REDIS_URL`, or `REDIS_CLUSTER_NODES`. */
  env: Record<string, string>;
  /** Stops the server (data is lost). */
  stop(): Promise<void>;
  /** Stops and starts the server on the same socket (an outage of about `downMs` ms). */
  restart(downMs?: number): Promise<void>;
}

/** Starts redis-server with `args` and resolves once it answers PING on `probe` (5 s at most). */
async function launch(args: string[], probe: RedisOptions): Promise<ChildProcess> {
  const child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${stderr}`);
    const client = new Redis({ ...probe, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {}); // expected while the server starts
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return child;
    } catch {
      client.disconnect();
      if (Date.now() > deadline) {
        await kill(child);
        throw new Error(`redis-server did not start: ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

const launchOnSocket = (socket: string, dir: string, extra: string[]) =>
  launch(
    [
      "--port",
      "0",
      "--unixsocket",
      socket,
      "--unixsocketperm",
      "700",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
      ...extra,
    ],
    { path: socket },
  );

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

/**
 * Starts redis-server (must be on PATH; `.ci/run` installs it).
 * @param extra - more redis-server arguments, e.g. `["--maxmemory-policy", "allkeys-lru"]`.
 * @throws when redis-server is missing or does not answer within 5 s.
 */
export async function startRedis(extra: string[] = []): Promise<TestRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), "bot-redis-"));
  const socket = path.join(dir, "redis.sock");
  let child = await launchOnSocket(socket, dir, extra);
  return {
    url: socket,
    env: { REDIS_URL: socket },
    async stop() {
      await kill(child);
      await rm(dir, { recursive: true, force: true });
    },
    async restart(downMs = 0) {
      await kill(child);
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      child = await launchOnSocket(socket, dir, extra);
    },
  };
}

/** Resolves once every node says `cluster_state:ok` and knows all 16384 slots (20 s at most). */
async function clusterReady(ports: number[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await Promise.all(
      ports.map(async (port) => {
        const client = new Redis({
          host: "127.0.0.1",
          port,
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        client.on("error", () => {});
        try {
          await client.connect();
          const info = await client.cluster("INFO");
          return /cluster_state:ok/.test(info) && /cluster_slots_ok:16384/.test(info);
        } catch {
          return false;
        } finally {
          client.disconnect();
        }
      }),
    );
    if (states.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error("the test Redis Cluster did not become ready within 20 s");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts a Redis Cluster of three masters and no replicas on free ports of 127.0.0.1
 * (`redis-server --cluster-enabled yes`, joined with `redis-cli --cluster create … --cluster-replicas 0
 * --cluster-yes`; both come with the Debian/Ubuntu `redis-server` package), each node in a
 * folder of its own under a temporary folder. `restart` restarts every node on the same ports;
 * they keep the cluster's layout (`nodes.conf`) but, like {@link startRedis}, not the data.
 *
 * @throws when redis-server or redis-cli is missing, or the cluster is not ready within 20 s.
 */
export async function startRedisCluster(): Promise<TestRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), "bot-redis-cluster-"));
  let children: ChildProcess[] = [];
  let ports: number[] = [];
  let busPorts: number[] = [];
  const startNodes = () =>
    ports.map(async (port, i) => {
      const nodeDir = path.join(dir, `node-${i}`);
      await mkdir(nodeDir, { recursive: true });
      const args = [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        String(busPorts[i]),
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "5000",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        nodeDir,
      ];
      return launch(args, { host: "127.0.0.1", port });
    });
  try {
    // A port taken between freePorts and the launch (another test file) makes a node exit: try new ports.
    for (let attempt = 1; ; attempt += 1) {
      const six = await freePorts(6);
      ports = six.slice(0, 3);
      busPorts = six.slice(3);
      const started = await Promise.allSettled(startNodes());
      children = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
      if (children.length === 3) break;
      await Promise.all(children.map(kill));
      if (attempt === 3) throw (started.find((s) => s.status === "rejected") as PromiseRejectedResult).reason;
    }
    await promisify(execFile)(
      "redis-cli",
      ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"],
      { timeout: 30_000 },
    );
    await clusterReady(ports);
  } catch (error) {
    await Promise.all(children.map(kill));
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const nodes = ports.map((port) => ({ host: "127.0.0.1", port }));
  return {
    url: clusterAddress(nodes),
    env: { REDIS_CLUSTER_NODES: nodes.map((n) => `${n.host}:${n.port}`).join(",") },
    async stop() {
      await Promise.all(children.map(kill));
      await rm(dir, { recursive: true, force: true });
    },
    async restart(downMs = 0) {
      await Promise.all(children.map(kill));
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      children = await Promise.all(startNodes());
      await clusterReady(ports);
    },
  };
}

/**
 * The keys matching `pattern` on every master (`SCAN` of each node: on a Redis Cluster a plain
 * `KEYS` or `SCAN` sees only the node it happens to reach), sorted.
 */
export async function keysEverywhere(redis: RedisClient, pattern: string): Promise<string[]> {
  await redis.ping(); // a cluster knows its masters once connected
  const keys: string[] = [];
  for (const node of isCluster(redis) ? redis.nodes("master") : [redis]) {
    let cursor = "0";
    do {
      const [next, found] = await node.scan(cursor, "MATCH", pattern, "COUNT", 500);
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
  }
  return keys.sort();
}
