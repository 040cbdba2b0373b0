/**
 * `npm run trace` with the README's default setup: no REDIS_URL, the private redis-server
 * `npm start` runs on `.data/redis/redis.sock` (started here with the real `startLocalRedis`),
 * or, when no bot runs, the one `npm run trace` starts for the read.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalRedis, type LocalRedis } from "../../src/local-redis.js";
import { connectRedis } from "../../src/redis.js";
import { formatRun } from "../../src/trace/format.js";
import { TraceStore } from "../../src/trace/store.js";
import { traceMain } from "../../src/cli/trace.js";
import { runCli } from "../helpers/cli.js";
import { nodeArgs } from "../helpers/compiled.js";

const exec = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const cli = path.join(root, "src", "cli", "trace.ts");

/** Runs `npm run trace -- ...args` in `cwd` without REDIS_URL (unless `env` sets it). */
async function trace(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "silent" };
  delete base.REDIS_URL;
  try {
    const { stdout, stderr } = await exec(process.execPath, nodeArgs(cli, ...args), { cwd, env: { ...base, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let project: string;
let empty: string;
let local: LocalRedis;
let redis: RedisClient;
let expected: string;

beforeAll(async () => {
  // A short folder under /tmp: the socket path must stay under 100 characters.
  project = await mkdtemp(path.join(tmpdir(), "trace-cli-"));
  empty = await mkdtemp(path.join(tmpdir(), "trace-none-"));
  local = await startLocalRedis({ dir: path.join(project, ".data", "redis") });
  expect(local.url).toBe(path.join(project, ".data", "redis", "redis.sock"));
  redis = connectRedis(local.url);
  const tracer = new TraceStore(redis).startRun({ chat: "telegram:77", runId: "job-77" });
  tracer.event("user_input", { text: "今天會下雨嗎？" });
  tracer.event("final_answer", { text: "不會。" });
  expect(await tracer.finish()).toBe(true);
  expected = formatRun((await new TraceStore(redis).latestRun("telegram:77"))!);
  const topic = new TraceStore(redis).startRun({
    chat: { platform: "telegram", chatId: "-10088", topicId: "11" },
    runId: "job-88",
  });
  topic.event("user_input", { text: "我叫小明" });
  expect(await topic.finish()).toBe(true);
}, 30_000);
afterAll(async () => {
  redis?.disconnect();
  await local?.stop();
  await rm(project, { recursive: true, force: true });
  await rm(empty, { recursive: true, force: true });
});

describe("npm run trace", () => {
  it("uses the bot's private Redis socket when REDIS_URL is unset", async () => {
    const out = await trace(project, ["telegram", "77"]);
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout.trim()).toBe(expected);
    expect(out.stdout).toContain("今天會下雨嗎？");
  });

  it("accepts a relative socket path in REDIS_URL", async () => {
    const out = await trace(project, ["telegram", "77"], { REDIS_URL: "./.data/redis/redis.sock" });
    expect(out).toMatchObject({ code: 0 });
    expect(out.stdout.trim()).toBe(expected);
  });

  it("starts the private Redis for the read when no bot runs, and stops it again", async () => {
    const out = await trace(empty, ["console", "local"]);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain("No trace stored for console:local");
    expect(out.stderr).toBe("");
    const folder = path.join(empty, ".data", "redis");
    expect(existsSync(path.join(folder, "appendonlydir"))).toBe(true); // it did run there
    expect(existsSync(path.join(folder, "server.json"))).toBe(false); // and was stopped with the last lease
    expect(readdirSync(path.join(folder, "leases"))).toEqual([]);
  }, 30_000);

  it("names a Telegram topic as <chatId>/<topicId> or as the conversation key; the chat alone is another conversation", async () => {
    const found = [["telegram", "-10088/11"], ["telegram:-10088/11"], ["telegram:-10088/11", "2"]];
    const bad = [
      ["discord", "5/11"],
      ["telegram", "-10088/x"],
      ["telegram", "/11"],
      ["telegram", "-10088", "11", "2"],
    ];
    // In this process (`traceMain`), with the private Redis's socket named: the arguments are the point here.
    const env = { LOG_LEVEL: "silent", REDIS_URL: local.url };
    const [chat, other, ...rest] = await Promise.all(
      [["telegram", "-10088"], ["telegram", "-10088/22"], ...found, ...bad].map((args) => runCli(traceMain, args, env)),
    );
    for (const out of rest.slice(0, found.length)) {
      expect(out).toMatchObject({ code: 0 });
      expect(out.stdout).toContain("我叫小明");
    }
    expect(chat!.code).toBe(1);
    expect(chat!.stdout).toContain("No trace stored for telegram:-10088 ");
    expect(other!.code).toBe(1);
    expect(other!.stdout).toContain("No trace stored for telegram:-10088/22 ");
    for (const out of rest.slice(found.length)) {
      expect(out.code).toBe(2);
      expect(out.stderr).toContain("<chatId>[/<topicId>]");
    }
  }, 60_000);

  it("replaces a socket left over from a stopped bot", async () => {
    const stale = await mkdtemp(path.join(tmpdir(), "trace-stale-"));
    try {
      await mkdir(path.join(stale, ".data", "redis"), { recursive: true });
      await writeFile(path.join(stale, ".data", "redis", "redis.sock"), "");
      const out = await trace(stale, ["telegram", "77"]);
      expect(out.code).toBe(1);
      expect(out.stdout).toContain("No trace stored for telegram:77");
    } finally {
      await rm(stale, { recursive: true, force: true });
    }
  }, 30_000);

  it("leaves the private Redis running while the bot still uses it", async () => {
    const out = await trace(project, ["telegram", "77"]);
    expect(out.code).toBe(0);
    expect(await redis.ping()).toBe("PONG");
  });

  it("says plainly that Redis could not be reached, without the password", async () => {
    const port = await closedPort();
    const out = await trace(empty, ["discord", "123"], { REDIS_URL: `redis://:hunter2-secret-pw@127.0.0.1:${port}/0` });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`Redis at redis://127.0.0.1:${port}/0 could not be reached`);
    expect(out.stderr).not.toContain("hunter2-secret-pw");
    expect(out.stderr).not.toContain("max retries");
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
  });
});
