import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LocalRedisError, startLocalRedis } from "../../src/local-redis.js";
import { connectRedis } from "../../src/redis.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bot-local-redis-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("starts redis-server with its data and append-only file in the folder, reuses it, and stops it", async () => {
  const local = await startLocalRedis({ dir });
  expect(local.owned).toBe(true);
  const redis = connectRedis(local.url);
  await redis.set("k", "v");
  expect(await redis.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
  expect(await redis.config("GET", "dir")).toEqual(["dir", dir]);
  const again = await startLocalRedis({ dir });
  expect(again.owned).toBe(false);
  expect(again.url).toBe(local.url);
  await again.stop(); // not ours: leaves it running
  expect(await redis.get("k")).toBe("v");
  await redis.quit();
  await local.stop();
  expect(existsSync(path.join(dir, "appendonlydir"))).toBe(true);
  const restarted = await startLocalRedis({ dir });
  const after = connectRedis(restarted.url);
  expect(await after.get("k")).toBe("v"); // the append-only file kept it
  after.disconnect();
  await restarted.stop();
});

it("is left running by its owner while another process still uses it", async () => {
  const other = await mkdtemp(path.join(tmpdir(), "bot-local-redis-shared-"));
  const owner = await startLocalRedis({ dir: other });
  const user = connectRedis(owner.url, { retryStrategy: () => null }); // e.g. `npm start` reusing what `npm run chat` started
  await user.set("shared", "yes");
  await owner.stop();
  expect(await user.get("shared")).toBe("yes");
  await user.call("SHUTDOWN", "NOSAVE").catch(() => {}); // the connection closes as the server goes
  user.disconnect();
  await rm(other, { recursive: true, force: true });
});

it("says how to install redis-server when it is missing", async () => {
  const saved = process.env.PATH;
  process.env.PATH = dir; // a folder without redis-server
  try {
    const error = await startLocalRedis({ dir: path.join(dir, "other") }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalRedisError);
    expect((error as Error).message).toMatch(/apt-get install redis-server/);
    expect((error as Error).message).toMatch(/brew install redis/);
    expect((error as Error).message).toMatch(/REDIS_URL/);
  } finally {
    process.env.PATH = saved;
  }
});
