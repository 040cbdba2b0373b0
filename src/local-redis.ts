/**
 * A private `redis-server` for when `REDIS_URL` is unset: data under `.data/redis` with the
 * append-only file on, listening on a unix socket there (or a free local port when the socket path
 * would be too long). Every process of this checkout that uses it (`npm start`, `npm run chat`,
 * `npm run trace`) holds a lease; the server stops when the last lease is given back.
 *
 * Ownership, all inside the data folder:
 * - `server.json`: `{ pid, url }` of the running server;
 * - `leases/<pid>`: one empty file per process using it;
 * - `lease.lock`: a lock (proper-lockfile) held while a process starts or reuses the server and
 *   takes its lease, and while it gives its lease back and, when it was the last, stops the server.
 *   So a process never reuses a server that is being stopped, and two never start one each.
 *
 * A lease whose process is gone (crashed, killed) is found by its pid no longer running and is
 * dropped by the next process that looks. A process that ends without `stop` (an uncaught
 * exception, `process.exit`) gives its lease back in an `exit` handler, without the lock.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import lockfile from "proper-lockfile";
import type { Logger } from "./log.js";
import { englishNoun } from "./i18n.js";

/** Thrown when the local Redis cannot be started; the message says what to do. */
export class LocalRedisError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LocalRedisError";
  }
}

/** This process's lease on the local Redis. */
export interface LocalRedis {
  /** Usable as `REDIS_URL`: the socket path, or `redis://127.0.0.1:<port>`. */
  url: string;
  /** True when this process started the server, false when it reused one already running. */
  owned: boolean;
  /**
   * Gives this process's lease back; when no other live process holds one, stops the server
   * (SIGTERM: Redis writes the append-only file first) and waits for it to exit (up to 5 s, then
   * SIGKILL). Otherwise leaves it running for the others. Never throws; safe to call twice.
   */
  stop(): Promise<void>;
}

/** `server.json`: the running server. */
interface ServerInfo {
  pid: number;
  url: string;
}

/** Longest unix socket path that works everywhere (`sun_path` is 104 bytes on macOS, 108 on Linux). */
const MAX_SOCKET_PATH = 100;
/** proper-lockfile: a lock not refreshed for this long (ms) belongs to a dead process. */
const LOCK_STALE_MS = 10_000;

const INSTALL_HINT =
  "redis-server was not found. Install it (Debian/Ubuntu: `sudo apt-get install " +
  "redis-server`; macOS: `brew install redis`), or set REDIS_URL to a Redis you run " +
  "elsewhere.";

function redisOptions(url: string): RedisOptions {
  if (url.startsWith("/")) return { path: url };
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port) };
}

/** Runs `fn` with a short-lived connection to `url`; resolves undefined when the server does not answer. */
async function withProbe<T>(url: string, fn: (redis: Redis) => Promise<T>): Promise<T | undefined> {
  const probe = new Redis({
    ...redisOptions(url),
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return await fn(probe);
  } catch {
    return undefined;
  } finally {
    probe.disconnect();
  }
}

/** The pid of the server answering at `url` (`INFO server` → `process_id`), or undefined when none answers. */
async function serverPid(url: string): Promise<number | undefined> {
  const info = await withProbe(url, (redis) => redis.info("server"));
  const match = /process_id:(\d+)/.exec(info ?? "");
  return match ? Number(match[1]) : undefined;
}

/** True while a process with this pid exists (EPERM: it exists but belongs to another user). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** True when `pid` runs and, where `/proc` tells, is a redis-server (a stale pid may have been reused). */
function isRedisServer(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("redis-server");
  } catch {
    return true; // no /proc (macOS): trust the pid
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

/** The files of one data folder's ownership scheme. */
class Leases {
  readonly leasesDir: string;
  readonly serverFile: string;
  readonly lockFile: string;

  constructor(readonly dir: string) {
    this.leasesDir = path.join(dir, "leases");
    this.serverFile = path.join(dir, "server.json");
    this.lockFile = path.join(dir, "lease.lock");
  }

  /** Takes the folder's lock, waiting for another process to finish starting or stopping (up to ~30 s). */
  async lock(): Promise<() => Promise<void>> {
    try {
      return await lockfile.lock(this.dir, {
        lockfilePath: this.lockFile,
        stale: LOCK_STALE_MS,
        retries: { retries: 300, factor: 1, minTimeout: 100, maxTimeout: 100 },
        realpath: false,
      });
    } catch (error) {
      throw new LocalRedisError(
        `another process holds ${path.relative(process.cwd(), this.lockFile) || this.lockFile} for too long: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  readServer(): ServerInfo | undefined {
    try {
      const info = JSON.parse(readFileSync(this.serverFile, "utf8")) as Partial<ServerInfo>;
      return typeof info.pid === "number" && typeof info.url === "string"
        ? { pid: info.pid, url: info.url }
        : undefined;
    } catch {
      return undefined;
    }
  }

  writeServer(info: ServerInfo): void {
    writeFileSync(this.serverFile, JSON.stringify(info));
  }

  dropServer(): void {
    rmSync(this.serverFile, { force: true });
  }

  take(pid: number): void {
    mkdirSync(this.leasesDir, { recursive: true });
    writeFileSync(path.join(this.leasesDir, String(pid)), "");
  }

  giveBack(pid: number): void {
    rmSync(path.join(this.leasesDir, String(pid)), { force: true });
  }

  /** Pids holding a lease whose process still runs; the leases of gone processes are deleted. */
  live(): number[] {
    let names: string[];
    try {
      names = readdirSync(this.leasesDir);
    } catch {
      return [];
    }
    const alive: number[] = [];
    for (const name of names) {
      const pid = Number(name);
      if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) alive.push(pid);
      else rmSync(path.join(this.leasesDir, name), { force: true });
    }
    return alive;
  }

  /** Deletes every lease (a newly started server has no users yet). */
  clear(): void {
    rmSync(this.leasesDir, { recursive: true, force: true });
  }
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** Spawns redis-server on `dir` and waits until it answers. */
async function spawnServer(dir: string, timeoutMs: number): Promise<{ child: ChildProcess; url: string }> {
  const socket = path.join(dir, "redis.sock");
  const useSocket = socket.length <= MAX_SOCKET_PATH;
  const port = useSocket ? 0 : await freePort();
  const args = [
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--save",
    "",
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--daemonize",
    "no",
  ];
  if (useSocket) args.push("--unixsocket", socket, "--unixsocketperm", "700");
  const url = useSocket ? socket : `redis://127.0.0.1:${port}`;

  let child: ChildProcess;
  let stderr = "";
  let spawnError: NodeJS.ErrnoException | undefined;
  try {
    // Its own process group: a Ctrl-C meant for this process must not stop a server that other
    // processes may be using; the last lease decides.
    child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  } catch (error) {
    throw new LocalRedisError(INSTALL_HINT, { cause: error });
  }
  child.on("error", (err: NodeJS.ErrnoException) => (spawnError = err));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (spawnError) {
      throw new LocalRedisError(
        spawnError.code === "ENOENT" ? INSTALL_HINT : `redis-server could not be started: ${spawnError.message}`,
        { cause: spawnError },
      );
    }
    if (child.exitCode !== null)
      throw new LocalRedisError(
        `redis-server exited at start (code ${child.exitCode}): ${stderr.trim() || "no message"}`,
      );
    if ((await withProbe(url, (r) => r.ping())) === "PONG") break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new LocalRedisError(`redis-server did not answer within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // It outlives this process when others still use it: nothing here may keep this process alive.
  child.stderr?.destroy();
  child.unref();
  return { child, url };
}

/** Options of {@link startLocalRedis}. */
export interface StartLocalRedisOptions {
  /** The data folder (default `.data/redis` under the current folder). */
  dir?: string;
  log?: Logger;
  /** How long to wait for a new server to answer, in ms (default 10 000). */
  timeoutMs?: number;
  /** The lease holder (default this process; tests use other values). */
  pid?: number;
  /**
   * When the server is down but other live processes hold leases on the folder (one of them owns
   * the data and restarts its server), how long to wait for it to answer again before throwing,
   * in ms (default 15 000). A second server is never started on a folder others use.
   */
  ownerWaitMs?: number;
  /**
   * Watch the server while this lease is held and restart it (same folder, append-only file and
   * socket) when it exits unexpectedly; long-running processes (`npm start`, `npm run chat`) pass
   * this, one-shot CLIs do not. See {@link SuperviseOptions}.
   */
  supervise?: SuperviseOptions;
}

/** How {@link startLocalRedis} watches and restarts the local server. */
export interface SuperviseOptions {
  /** How often to check that the server process still runs, in ms (default 1000). */
  checkEveryMs?: number;
  /** At most this many restarts within `windowMs` (default 5); one more means giving up. */
  maxRestarts?: number;
  /** The window for `maxRestarts`, in ms (default 60 000). */
  windowMs?: number;
  /** Delay before the first restart, in ms (default 200); doubled for each recent restart, capped at 5000. */
  backoffMs?: number;
  /** Called once when restarts are given up (after logging the error). */
  onGiveUp?: (error: LocalRedisError) => void;
}

/** True when `pid` no longer runs as a server: gone, or a zombie not yet reaped. */
function serverGone(pid: number): boolean {
  if (!pidAlive(pid)) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return /\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

/**
 * Polls the server recorded in `server.json`; when its process is gone, restarts it under the
 * folder's lock (unless another process already did), with backoff, logging one warning per
 * restart, and gives up with an error after `maxRestarts` within `windowMs`.
 * @returns a function that stops the watching.
 */
function superviseServer(
  leases: Leases,
  shown: string,
  options: SuperviseOptions,
  log: Logger | undefined,
  timeoutMs: number,
  stopping: () => boolean,
): () => void {
  const checkEveryMs = options.checkEveryMs ?? 1000;
  const maxRestarts = options.maxRestarts ?? 5;
  const windowMs = options.windowMs ?? 60_000;
  const backoffMs = options.backoffMs ?? 200;
  let restarts: number[] = [];
  let busy = false;
  let ended = false;
  const end = () => {
    ended = true;
    clearInterval(timer);
  };
  const check = async () => {
    if (busy || ended || stopping()) return;
    const known = leases.readServer();
    if (known && !serverGone(known.pid)) return;
    busy = true;
    try {
      const now = Date.now();
      restarts = restarts.filter((t) => now - t < windowMs);
      if (restarts.length >= maxRestarts) {
        end();
        const error = new LocalRedisError(
          `the local redis-server of ${shown} exited ${restarts.length + 1} times within ${windowMs / 1000} s; ` +
            "no more restarts. Check its log (run redis-server by hand with the same folder) or set REDIS_URL.",
        );
        log?.error({ dir: shown }, error.message);
        options.onGiveUp?.(error);
        return;
      }
      await new Promise((r) => setTimeout(r, Math.min(5000, backoffMs * 2 ** restarts.length)));
      if (ended || stopping()) return;
      const unlock = await leases.lock();
      try {
        const current = leases.readServer();
        const running = current ? await serverPid(current.url) : undefined;
        if (current && running !== undefined) {
          leases.writeServer({ pid: running, url: current.url }); // another process restarted it
          return;
        }
        restarts.push(Date.now());
        const started = await spawnServer(leases.dir, timeoutMs);
        leases.writeServer({ pid: started.child.pid!, url: started.url });
        log?.warn(
          { dir: shown, previousPid: known?.pid, redisPid: started.child.pid, restarts: restarts.length },
          "the local redis-server exited unexpectedly; restarted it on the same folder and append-only file",
        );
      } finally {
        await unlock().catch(() => {});
      }
    } catch (error) {
      log?.error({ err: error, dir: shown }, "could not restart the local redis-server; trying again");
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void check(), checkEveryMs);
  timer.unref();
  return end;
}

/**
 * Starts `redis-server` with its data in `dir` (default `.data/redis` under the current folder),
 * or reuses the one already running on that folder, and takes a lease on it for this process.
 *
 * @param options - see {@link StartLocalRedisOptions}.
 * @throws {LocalRedisError} when redis-server is not installed (the message says how to install it
 *   or set `REDIS_URL`), exits early, does not answer in time, or the folder stays locked; or when
 *   the server is down while other live processes use the folder and it does not come back within
 *   `ownerWaitMs` (a second server is never started on their data).
 */
export async function startLocalRedis(options: StartLocalRedisOptions = {}): Promise<LocalRedis> {
  const dir = path.resolve(options.dir ?? path.join(".data", "redis"));
  const shown = path.relative(process.cwd(), dir) || dir;
  const pid = options.pid ?? process.pid;
  await mkdir(dir, { recursive: true });
  const leases = new Leases(dir);
  const ownerWaitMs = options.ownerWaitMs ?? 15_000;
  const waitDeadline = Date.now() + ownerWaitMs;
  let unlock = await leases.lock();
  let url: string;
  let owned = false;
  try {
    for (;;) {
      const known = leases.readServer();
      const legacySocket = path.join(dir, "redis.sock");
      const candidate = known?.url ?? (existsSync(legacySocket) ? legacySocket : undefined);
      const runningPid = candidate ? await serverPid(candidate) : undefined;
      if (candidate && runningPid !== undefined) {
        url = candidate;
        leases.writeServer({ pid: runningPid, url });
        options.log?.info(
          { dir: shown, users: leases.live().length },
          "reusing the local redis-server already running on this folder",
        );
        break;
      }
      // The server is down but other live processes hold leases on this folder: one of them owns
      // the data (and restarts its server). Never start a second server on their append-only
      // file; wait for theirs to answer again, then give up with a clear error.
      const others = leases.live().filter((p) => p !== pid);
      if (others.length === 0) {
        url = await startNew();
        break;
      }
      if (Date.now() > waitDeadline)
        throw new LocalRedisError(
          `the local redis-server of ${shown} is not answering, and ${englishNoun(others.length, "process", "processes")} ` +
            `${others.join(", ")} still use${others.length === 1 ? "s" : ""} that folder; not starting a second ` +
            `server on their data. Waited ${ownerWaitMs} ms for it to come back: restart or stop ` +
            `${others.length === 1 ? "that process" : "those processes"}, then try again.`,
        );
      options.log?.info(
        { dir: shown, pids: others },
        "the local redis-server is down while other processes use it: waiting for it to come back",
      );
      await unlock().catch(() => {});
      await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, waitDeadline - Date.now()) + 1)));
      unlock = await leases.lock();
    }
    leases.take(pid);
  } finally {
    await unlock().catch(() => {});
  }

  async function startNew(): Promise<string> {
    leases.clear(); // nothing runs and no one else uses it: leases left by crashed processes mean nothing now
    const started = await spawnServer(dir, options.timeoutMs ?? 10_000);
    owned = true;
    leases.writeServer({ pid: started.child.pid!, url: started.url });
    options.log?.info({ dir: shown, redisPid: started.child.pid }, "started a local redis-server (REDIS_URL is unset)");
    return started.url;
  }

  let stopped: Promise<void> | undefined;
  const supervisor = options.supervise
    ? superviseServer(leases, shown, options.supervise, options.log, options.timeoutMs ?? 10_000, () => !!stopped)
    : undefined;

  // However this process ends (an exit during start-up, a forced second Ctrl-C, a crash), its
  // lease goes back; the last one out also stops the server. Synchronous: `exit` handlers cannot wait.
  const onExit = () => {
    leases.giveBack(pid);
    if (leases.live().length > 0) return;
    const server = leases.readServer();
    if (server && isRedisServer(server.pid)) process.kill(server.pid, "SIGTERM");
  };
  process.once("exit", onExit);

  const stop = () =>
    (stopped ??= (async () => {
      supervisor?.();
      process.off("exit", onExit);
      let unlockAgain: (() => Promise<void>) | undefined;
      try {
        unlockAgain = await leases.lock();
      } catch {
        onExit(); // the folder stayed locked: give the lease back without it
        return;
      }
      try {
        leases.giveBack(pid);
        const others = leases.live();
        if (others.length > 0) {
          options.log?.info(
            { pids: others },
            `the local redis-server is still used by ${others.length} other ${englishNoun(others.length, "process", "processes")} of this folder; left running`,
          );
          return;
        }
        const server = leases.readServer();
        const running = server ? await serverPid(server.url) : undefined;
        if (server && running === server.pid) {
          process.kill(server.pid, "SIGTERM");
          if (!(await waitForExit(server.pid, 5000))) {
            process.kill(server.pid, "SIGKILL");
            await waitForExit(server.pid, 2000);
          }
          options.log?.info({ dir: shown }, "stopped the local redis-server (no other process uses it)");
        }
        leases.dropServer();
      } catch (error) {
        options.log?.warn({ err: error }, "could not stop the local redis-server");
      } finally {
        await unlockAgain().catch(() => {});
      }
    })());
  return { url, owned, stop };
}
