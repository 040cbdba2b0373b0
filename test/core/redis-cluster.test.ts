/**
 * Redis Cluster support (`src/redis.ts`): the cluster address, one connection type for one Redis
 * and a cluster, BullMQ prefixes with hash tags, and the start-up refusal of a Redis that may evict
 * keys — against real redis-servers (one node configured `allkeys-lru`, and a three-master cluster).
 */
import { Queue } from "bullmq";
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBot } from "../../src/app.js";
import { secretValues } from "../../src/config.js";
import { bullPrefix, CHATS_QUEUE, conversationKeys } from "../../src/queue/keys.js";
import {
  assertNoEviction,
  clusterAddress,
  connectRedis,
  describeRedisUrl,
  isCluster,
  parseClusterAddress,
  redisAddress,
  RedisEvictionError,
} from "../../src/redis.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, startRedisCluster, type TestRedis } from "../helpers/redis.js";

describe("configuration", () => {
  it("REDIS_CLUSTER_NODES and REDIS_PASSWORD become one cluster address; rediss:// entries mean TLS", () => {
    const config = testConfig({
      REDIS_CLUSTER_NODES: " 10.0.0.1:7000, redis://node-2.example:7001 ,[::1]:7002",
      REDIS_PASSWORD: "p@ss:w/rd",
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "node-2.example", port: 7001 },
        { host: "::1", port: 7002 },
      ],
      tls: false,
    });
    const address = redisAddress(config)!;
    expect(parseClusterAddress(address)).toEqual({
      nodes: config.REDIS_CLUSTER_NODES!.nodes,
      password: "p@ss:w/rd",
      tls: false,
    });
    expect(describeRedisUrl(address)).toBe("redis-cluster://10.0.0.1:7000,node-2.example:7001,[::1]:7002");
    expect(secretValues(config)).toContain("p@ss:w/rd");
    const tls = testConfig({ REDIS_CLUSTER_NODES: "rediss://a.example:6379,rediss://b.example:6379" });
    expect(parseClusterAddress(redisAddress(tls)!).tls).toBe(true);
  });

  it("refuses malformed node lists, mixed TLS, a cluster beside REDIS_URL and a password without a cluster, naming the variable only", () => {
    for (const bad of [
      "10.0.0.1",
      "10.0.0.1:0",
      "10.0.0.1:70000",
      "http://a:1",
      "redis://a:1,rediss://b:2",
      "a:1,,b:x",
    ]) {
      expect(() => testConfig({ REDIS_CLUSTER_NODES: bad }), bad).toThrow(
        /REDIS_CLUSTER_NODES: must list Redis Cluster nodes as host:port/,
      );
    }
    expect(() => testConfig({ REDIS_CLUSTER_NODES: "a:1", REDIS_URL: "redis://b:2" })).toThrow(
      /REDIS_CLUSTER_NODES: cannot be used together with REDIS_URL/,
    );
    expect(() => testConfig({ REDIS_PASSWORD: "secret-password" })).toThrow(
      /REDIS_PASSWORD: is used only with REDIS_CLUSTER_NODES/,
    );
    try {
      testConfig({ REDIS_PASSWORD: "secret-password" });
    } catch (error) {
      expect((error as Error).message).not.toContain("secret-password");
    }
  });
});

describe("a three-master Redis Cluster", () => {
  let cluster: TestRedis;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => cluster?.stop());

  it("connectRedis opens an ioredis Cluster that reaches every master; BullMQ prefixes are hash-tagged per queue", async () => {
    const redis = connectRedis(cluster.url);
    try {
      expect(redis).toBeInstanceOf(Cluster);
      await redis.ping();
      expect(isCluster(redis) && redis.nodes("master")).toHaveLength(3);
      expect(bullPrefix(redis, CHATS_QUEUE)).toBe("{bull:chats}");
      expect(bullPrefix(redis, "reminders", "e2e")).toBe("{e2e:reminders}");
      // A queue with the tagged prefix works (its scripts touch many keys of one slot).
      const queue = new Queue(CHATS_QUEUE, { connection: redis, prefix: bullPrefix(redis, CHATS_QUEUE) });
      await queue.add("x", { n: 1 }, { jobId: "j1" });
      expect(await queue.getJobCounts("waiting")).toEqual({ waiting: 1 });
      await queue.close();
      // Conversations spread: their keys land on different masters.
      const slots = new Set<number>();
      for (let i = 0; i < 20; i += 1) {
        const key = conversationKeys({ platform: "telegram", chatId: String(i) }).inbox;
        slots.add(Number(await redis.cluster("KEYSLOT", key)));
      }
      expect(slots.size).toBeGreaterThan(10);
    } finally {
      redis.disconnect();
    }
  });

  it("start-up refuses a cluster one of whose masters may evict keys, naming that node", async () => {
    const redis = connectRedis(cluster.url);
    await redis.ping();
    const [first, second] = isCluster(redis) ? redis.nodes("master") : [];
    const { log, lines } = captureLogger("info");
    try {
      await second!.config("SET", "maxmemory-policy", "volatile-lru");
      const start = startBot({
        config: testConfig(),
        log,
        redisUrl: cluster.url,
        toolbox: new ToolBox(),
        role: "adapter",
        adapters: [],
      });
      await expect(start).rejects.toThrow(RedisEvictionError);
      await expect(start).rejects.toThrow(`maxmemory-policy volatile-lru on 127.0.0.1:${second!.options.port}`);
      expect(lines.join("")).toContain("start-up failed: Redis may evict keys");
      await second!.config("SET", "maxmemory-policy", "noeviction");
      await expect(assertNoEviction(redis)).resolves.toBeUndefined();
      expect(first!.options.port).not.toBe(second!.options.port);
    } finally {
      await second!.config("SET", "maxmemory-policy", "noeviction");
      redis.disconnect();
    }
  });

  it("start-up warns once per master that keeps nothing across a restart, naming it; a master with AOF on is not named", async () => {
    const redis = connectRedis(cluster.url);
    await redis.ping();
    const masters = isCluster(redis) ? redis.nodes("master") : [];
    const { log, lines } = captureLogger("info");
    try {
      await masters[0]!.config("SET", "appendonly", "yes");
      const bot = await startBot({
        config: testConfig(),
        log,
        redisUrl: cluster.url,
        toolbox: new ToolBox(),
        role: "adapter",
        adapters: [],
      });
      await bot.stop();
      const warnings = lines
        .map((l) => JSON.parse(l) as { level: number; msg: string; node?: string })
        .filter((r) => r.level === 40 && r.msg.includes("keeps nothing across a restart"));
      expect(warnings.map((w) => w.node).sort()).toEqual(
        masters
          .slice(1)
          .map((m) => `127.0.0.1:${m.options.port}`)
          .sort(),
      );
      expect(warnings[0]!.msg).toContain("loses queued messages, pending approvals, todos and reminders");
    } finally {
      await masters[0]!.config("SET", "appendonly", "no");
      redis.disconnect();
    }
  });

  // Last of this block: it shuts one master down.
  it("one master down: the rate-limited connection warning names that node and the cause (ioredis reports it as 'node error')", async () => {
    const { log, lines } = captureLogger("info");
    const redis = connectRedis(cluster.url, {}, log);
    try {
      await redis.ping();
      const victim = isCluster(redis) ? redis.nodes("master")[1]! : undefined;
      const node = `127.0.0.1:${victim!.options.port}`;
      await victim!.call("SHUTDOWN", "NOSAVE").catch(() => undefined); // the connection ends with the node
      const deadline = Date.now() + 20_000;
      const warnings = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.level === 40);
      while (warnings().length === 0 && Date.now() < deadline) {
        // Commands for keys of every master: the ones for the stopped master make the cluster reach for it again.
        await Promise.all(Array.from({ length: 12 }, (_, i) => redis.get(`k${i}`).catch(() => undefined)));
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatchObject({
        node,
        code: "ECONNREFUSED",
        msg: expect.stringMatching(/^redis connection problem: connect ECONNREFUSED .+; reconnecting$/),
      });
    } finally {
      redis.disconnect();
    }
  }, 30_000);
});

describe("maxmemory-policy on one Redis", () => {
  it("start-up refuses allkeys-lru with a message that says why and what to set; no adapter or worker starts", async () => {
    const server = await startRedis(["--maxmemory-policy", "allkeys-lru"]);
    const { log, lines } = captureLogger("info");
    try {
      const error = await startBot({
        config: testConfig(),
        log,
        redisUrl: server.url,
        toolbox: new ToolBox(),
        role: "adapter",
        adapters: [],
      }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error).toBeInstanceOf(RedisEvictionError);
      expect(error!.message).toContain(`maxmemory-policy allkeys-lru on ${server.url}`);
      expect(error!.message).toContain("BullMQ loses jobs and locks");
      expect(error!.message).toContain("noeviction");
      const records = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
      expect(records.find((r) => r.msg.startsWith("start-up failed:"))).toMatchObject({ level: 50 });
      expect(records.some((r) => r.msg === "adapter started")).toBe(false);
    } finally {
      await server.stop();
    }
  });

  it("a Redis that refuses INFO and CONFIG (NOPERM, as some managed services do) is accepted with one warning", async () => {
    const server = await startRedis();
    const { log, lines } = captureLogger("info");
    const admin = connectRedis(server.url);
    await admin.call("ACL", "SETUSER", "default", "-info", "-config");
    admin.disconnect();
    const redis = connectRedis(server.url);
    try {
      await expect(assertNoEviction(redis, log)).resolves.toBeUndefined();
      const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((r) => r.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.msg).toMatch(/could not read maxmemory-policy .* make sure it is noeviction/);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("noeviction (redis-server's default) is accepted silently", async () => {
    const server = await startRedis();
    const { log, lines } = captureLogger("info");
    const redis = connectRedis(server.url);
    try {
      await expect(assertNoEviction(redis, log)).resolves.toBeUndefined();
      expect(lines).toEqual([]);
      expect(clusterAddress([{ host: "h", port: 1 }], { tls: true })).toBe("rediss-cluster://h:1");
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
