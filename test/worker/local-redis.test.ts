/**
 * The private redis-server (`src/local-redis.ts`) with real processes: each process of the
 * checkout holds a lease, and the server stops when the last one leaves — in any stop order, after
 * a crash, after a forced exit — and never earlier.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalRedisError, pidAlive, startLocalRedis } from "../../src/local-redis.js";
import type { Logger } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const userScript = path.join(root, "test", "fixtures", "local-redis-user.ts");

let dir: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bot-local-redis-"));
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), "lr-"));
}

/** The pid of the server recorded in `server.json`. */
function serverPid(folder: string): number {
  return (JSON.parse(readFileSync(path.join(folder, "server.json"), "utf8")) as { pid: number }).pid;
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A process using the private Redis of `folder`; resolves once it holds its lease. */
async function user(
  folder: string,
  mode?: "exit",
): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, nodeArgs(userScript, folder, ...(mode ? [mode] : [])), {
    stdio: ["ignore", "pipe", "pipe"],
    cwd: root,
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await waitUntil(() => output.includes("ready ") || child.exitCode !== null, 60_000, "the process to take its lease");
  expect(output).toContain("ready ");
  return { child, output: () => output, exited };
}

async function stopUser(u: Awaited<ReturnType<typeof user>>): Promise<void> {
  u.child.kill("SIGTERM");
  expect(await u.exited).toBe(0);
  expect(u.output()).toContain("released");
}

/** True when something answers PING on the folder's socket. */
async function answers(folder: string): Promise<boolean> {
  const redis = connectRedis(path.join(folder, "redis.sock"), {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

describe("in one process", () => {
  it("starts redis-server with its data and append-only file in the folder, reuses it, and stops it with the last lease", async () => {
    const first = await startLocalRedis({ dir });
    expect(first.owned).toBe(true);
    const redis = connectRedis(first.url);
    await redis.set("k", "v");
    expect(await redis.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
    expect(await redis.config("GET", "dir")).toEqual(["dir", dir]);
    const second = await startLocalRedis({ dir, pid: process.ppid }); // another live process's lease
    expect(second.owned).toBe(false);
    expect(second.url).toBe(first.url);
    const pid = serverPid(dir);
    await first.stop(); // the other lease is still held: left running
    expect(await redis.get("k")).toBe("v");
    expect(pidAlive(pid)).toBe(true);
    redis.disconnect();
    await second.stop(); // the last one out stops it
    expect(pidAlive(pid)).toBe(false);
    expect(existsSync(path.join(dir, "server.json"))).toBe(false);
    expect(existsSync(path.join(dir, "appendonlydir"))).toBe(true);
    const restarted = await startLocalRedis({ dir });
    const after = connectRedis(restarted.url);
    expect(await after.get("k")).toBe("v"); // the append-only file kept it
    after.disconnect();
    await restarted.stop();
  }, 30_000);

  it("is not kept running by the connections of a process that gave its lease back", async () => {
    const folder = await freshDir();
    const local = await startLocalRedis({ dir: folder });
    const pid = serverPid(folder);
    const open = connectRedis(local.url, { retryStrategy: () => null }); // a connection, not a lease
    open.on("error", () => {});
    await open.ping();
    await local.stop();
    expect(pidAlive(pid)).toBe(false);
    open.disconnect();
    await rm(folder, { recursive: true, force: true });
  }, 30_000);

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
});

describe("when the server dies", () => {
  it("a supervising process restarts it on the same folder, socket and append-only file, and its connection recovers", async () => {
    const folder = await freshDir();
    const warnings: string[] = [];
    const log = {
      info: () => {},
      warn: (_: unknown, msg: string) => warnings.push(msg),
      error: () => {},
    } as unknown as Logger;
    const local = await startLocalRedis({ dir: folder, log, supervise: { checkEveryMs: 50, backoffMs: 10 } });
    const redis = connectRedis(local.url, { retryStrategy: () => 50 });
    redis.on("error", () => {});
    await redis.config("SET", "appendfsync", "always");
    await redis.set("kept", "from the AOF");
    const first = serverPid(folder);
    process.kill(first, "SIGKILL");
    await waitUntil(() => !pidAlive(first), 2000, "the server to die");
    const began = Date.now();
    expect(await redis.get("kept")).toBe("from the AOF");
    expect(Date.now() - began).toBeLessThan(5000);
    await waitUntil(() => serverPid(folder) !== first, 2000, "server.json to name the new server");
    const second = serverPid(folder);
    expect(await redis.config("GET", "dir")).toEqual(["dir", folder]);
    expect(warnings.filter((w) => w.includes("restarted"))).toHaveLength(1);
    redis.disconnect();
    await local.stop();
    expect(pidAlive(second)).toBe(false);
    await rm(folder, { recursive: true, force: true });
  }, 30_000);

  it("gives up with an error after too many restarts within the window", async () => {
    const folder = await freshDir();
    const errors: string[] = [];
    let gaveUp: Error | undefined;
    const log = {
      info: () => {},
      warn: () => {},
      error: (_: unknown, msg: string) => errors.push(msg),
    } as unknown as Logger;
    const local = await startLocalRedis({
      dir: folder,
      log,
      supervise: { checkEveryMs: 30, backoffMs: 1, maxRestarts: 2, onGiveUp: (e) => (gaveUp = e) },
    });
    for (let i = 0; i < 3; i++) {
      const pid = serverPid(folder);
      process.kill(pid, "SIGKILL");
      await waitUntil(() => !pidAlive(pid), 2000, "the server to die");
      if (i < 2) await waitUntil(() => serverPid(folder) !== pid, 5000, "a restart");
    }
    await waitUntil(() => gaveUp !== undefined, 5000, "giving up");
    expect(gaveUp).toBeInstanceOf(LocalRedisError);
    expect(errors.some((e) => /exited 3 times within 60 s; no more restarts/.test(e))).toBe(true);
    await local.stop();
    await rm(folder, { recursive: true, force: true });
  }, 30_000);

  it("a CLI never starts a second server on a folder a live process uses: it waits, then says so", async () => {
    const folder = await freshDir();
    const owner = await startLocalRedis({ dir: folder, pid: process.ppid }); // a live process, not supervising
    const pid = serverPid(folder);
    process.kill(pid, "SIGKILL");
    await waitUntil(() => !pidAlive(pid), 2000, "the server to die");
    const error = await startLocalRedis({ dir: folder, ownerWaitMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalRedisError);
    expect((error as Error).message).toMatch(
      new RegExp(`process ${process.ppid} still uses that folder; not starting a second server`),
    );
    expect(serverPid(folder)).toBe(pid); // nothing was started
    await owner.stop();
    await rm(folder, { recursive: true, force: true });
  }, 30_000);
});

describe("with real processes, in every stop order", () => {
  it("first started stops first: the server runs until the second stops", async () => {
    const folder = await freshDir();
    const a = await user(folder);
    const b = await user(folder);
    const pid = serverPid(folder);
    await stopUser(a);
    expect(pidAlive(pid)).toBe(true);
    expect(await answers(folder)).toBe(true);
    await stopUser(b);
    expect(pidAlive(pid)).toBe(false);
    expect(await answers(folder)).toBe(false);
    await rm(folder, { recursive: true, force: true });
  }, 120_000);

  it("last started stops first: the server runs until the first stops", async () => {
    const folder = await freshDir();
    const a = await user(folder);
    const b = await user(folder);
    const pid = serverPid(folder);
    await stopUser(b);
    expect(pidAlive(pid)).toBe(true);
    expect(await answers(folder)).toBe(true);
    await stopUser(a);
    expect(pidAlive(pid)).toBe(false);
    await rm(folder, { recursive: true, force: true });
  }, 120_000);

  it("a crashed process's lease is found dead: the last live process still stops the server", async () => {
    const folder = await freshDir();
    const a = await user(folder);
    const b = await user(folder);
    const pid = serverPid(folder);
    a.child.kill("SIGKILL"); // the starter crashes: no exit handler runs
    await a.exited;
    expect(pidAlive(pid)).toBe(true);
    await stopUser(b);
    expect(pidAlive(pid)).toBe(false);
    await rm(folder, { recursive: true, force: true });
  }, 120_000);

  it("a server left by a lone crashed process is reused by the next one and stopped with it", async () => {
    const folder = await freshDir();
    const a = await user(folder);
    const pid = serverPid(folder);
    a.child.kill("SIGKILL");
    await a.exited;
    const c = await user(folder);
    expect(serverPid(folder)).toBe(pid); // reused, not a second server on the same data
    await stopUser(c);
    expect(pidAlive(pid)).toBe(false);
    await rm(folder, { recursive: true, force: true });
  }, 120_000);

  it("a forced exit (process.exit without stop) gives the lease back, and the last one out stops the server", async () => {
    const folder = await freshDir();
    const a = await user(folder, "exit");
    const b = await user(folder, "exit");
    const pid = serverPid(folder);
    b.child.kill("SIGTERM");
    await b.exited;
    expect(pidAlive(pid)).toBe(true);
    a.child.kill("SIGTERM");
    await a.exited;
    await waitUntil(() => !pidAlive(pid), 10_000, "the server to stop");
    await rm(folder, { recursive: true, force: true });
  }, 120_000);
});

describe("npm start and npm run chat sharing the private Redis", () => {
  /** Runs an entry point in `cwd` (no REDIS_URL: the private Redis of `cwd/.data/redis`). */
  function entry(cwd: string, file: string, stdin: "ignore" | "pipe") {
    const child = spawn(process.execPath, nodeArgs(file), {
      cwd,
      env: childEnv({
        ANTHROPIC_API_KEY: "test-key-not-real",
        LOG_LEVEL: "info",
        BOT_LOCALE: "en",
      }),
      stdio: [stdin, "pipe", "pipe"],
    });
    children.push(child);
    let output = "";
    child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    return { child, output: () => output, exited };
  }

  it("npm start, then npm run chat, then Ctrl-C on npm start: the server stays for the chat and stops when the chat exits", async () => {
    const cwd = await freshDir();
    const folder = path.join(cwd, ".data", "redis");
    const bot = entry(cwd, "src/main.ts", "ignore");
    await waitUntil(
      () => bot.output().includes("the bot is running") || bot.child.exitCode !== null,
      90_000,
      "npm start",
    );
    expect(bot.output()).toContain("the bot is running");
    const chat = entry(cwd, "src/cli/chat.ts", "pipe");
    await waitUntil(
      () => chat.output().includes("Chat started") || chat.child.exitCode !== null,
      90_000,
      "npm run chat",
    );
    expect(chat.output()).toContain("Chat started");
    const pid = serverPid(folder);

    bot.child.kill("SIGINT");
    await waitUntil(() => bot.output().includes("stopping"), 5_000, "the stopping notice");
    expect(bot.output()).toContain("press Ctrl-C again to force");
    expect(await bot.exited).toBe(0);
    expect(pidAlive(pid)).toBe(true); // the chat still uses it
    expect(await answers(folder)).toBe(true);

    chat.child.stdin!.end("/quit\n");
    expect(await chat.exited).toBe(0);
    await waitUntil(() => !pidAlive(pid), 10_000, "the server to stop with the last process");
    expect(await answers(folder)).toBe(false);
    await rm(cwd, { recursive: true, force: true });
  }, 240_000);

  it("Ctrl-C in npm run chat says at once, in the terminal, that it is stopping", async () => {
    const cwd = await freshDir();
    const chat = entry(cwd, "src/cli/chat.ts", "pipe");
    await waitUntil(
      () => chat.output().includes("Chat started") || chat.child.exitCode !== null,
      90_000,
      "npm run chat",
    );
    const pid = serverPid(path.join(cwd, ".data", "redis"));
    chat.child.kill("SIGINT");
    // In the chat's language (English here), as the chat's other lines.
    await waitUntil(() => chat.output().includes("Stopping the chat"), 5_000, "the stopping notice");
    expect(chat.output()).toContain("press Ctrl-C again to force");
    expect(await chat.exited).toBe(0);
    await waitUntil(() => !pidAlive(pid), 10_000, "the server to stop");
    await rm(cwd, { recursive: true, force: true });
  }, 240_000);
});
