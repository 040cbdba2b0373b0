/**
 * A private `redis-server` child process for when `REDIS_URL` is unset: data under `.data/redis`
 * with the append-only file on, listening on a unix socket there (or a free local port when the
 * socket path would be too long), stopped when the bot exits.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "./log.js";

/** Thrown when the local Redis cannot be started; the message says what to do. */
export class LocalRedisError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LocalRedisError";
  }
}

/** A running local Redis. */
export interface LocalRedis {
  /** Usable as `REDIS_URL`: the socket path, or `redis://127.0.0.1:<port>`. */
  url: string;
  /** False when an already running server on the same data folder was reused (then `stop` leaves it running). */
  owned: boolean;
  /**
   * Stops the server (SIGTERM: Redis flushes the append-only file first), or leaves it running
   * when other clients are still connected (another process reusing it). Never throws.
   */
  stop(): Promise<void>;
}

/** Longest unix socket path that works everywhere (`sun_path` is 104 bytes on macOS, 108 on Linux). */
const MAX_SOCKET_PATH = 100;

const INSTALL_HINT =
  "redis-server was not found. Install it (Debian/Ubuntu: `sudo apt-get install redis-server`; macOS: `brew install redis`), or set REDIS_URL to a Redis you run elsewhere.";

async function ping(options: RedisOptions): Promise<boolean> {
  const probe = new Redis({ ...options, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => {});
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Clients connected to the server besides the probe itself; 0 when it cannot be asked. */
async function otherClients(options: RedisOptions): Promise<number> {
  const probe = new Redis({ ...options, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => {});
  try {
    await probe.connect();
    const list = String(await probe.client("LIST"));
    return Math.max(0, list.split("\n").filter((line) => line.trim() !== "").length - 1);
  } catch {
    return 0;
  } finally {
    probe.disconnect();
  }
}

/**
 * Starts `redis-server` with its data in `dir` (default `.data/redis` under the current folder).
 * Reuses a server already listening on that folder's socket (another `npm start` or `npm run chat`);
 * the process that started it stops it, unless another process still uses it then.
 *
 * @param options.timeoutMs - how long to wait for the server to answer, in ms (default 10 000).
 * @throws {LocalRedisError} when redis-server is not installed (the message says how to install it
 *   or set `REDIS_URL`), exits early, or does not answer in time.
 */
export async function startLocalRedis(options: { dir?: string; log?: Logger; timeoutMs?: number } = {}): Promise<LocalRedis> {
  const dir = path.resolve(options.dir ?? path.join(".data", "redis"));
  await mkdir(dir, { recursive: true });
  const socket = path.join(dir, "redis.sock");
  const useSocket = socket.length <= MAX_SOCKET_PATH;
  if (useSocket && existsSync(socket) && (await ping({ path: socket }))) {
    options.log?.info({ socket }, "reusing the local redis-server already running on .data/redis");
    return { url: socket, owned: false, stop: async () => {} };
  }
  const port = useSocket ? 0 : await freePort();
  const args = ["--dir", dir, "--appendonly", "yes", "--save", "", "--port", String(port), "--bind", "127.0.0.1", "--daemonize", "no"];
  if (useSocket) args.push("--unixsocket", socket, "--unixsocketperm", "700");
  const url = useSocket ? socket : `redis://127.0.0.1:${port}`;

  let child: ChildProcess;
  let stderr = "";
  let spawnError: NodeJS.ErrnoException | undefined;
  try {
    // Its own process group: a Ctrl-C meant for this bot must not stop a server that another
    // process (a second `npm start`, `npm run chat`) may be using; `stop` decides.
    child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  } catch (error) {
    throw new LocalRedisError(INSTALL_HINT, { cause: error });
  }
  child.on("error", (err: NodeJS.ErrnoException) => (spawnError = err));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  // However this process ends (an exit during start-up included), the server does not outlive it.
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);
  child.once("exit", () => process.off("exit", killOnExit));

  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    if (spawnError) {
      throw new LocalRedisError(spawnError.code === "ENOENT" ? INSTALL_HINT : `redis-server could not be started: ${spawnError.message}`, { cause: spawnError });
    }
    if (child.exitCode !== null) throw new LocalRedisError(`redis-server exited at start (code ${child.exitCode}): ${stderr.trim() || "no message"}`);
    if (await ping(useSocket ? { path: socket } : { host: "127.0.0.1", port })) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new LocalRedisError(`redis-server did not answer within ${options.timeoutMs ?? 10_000} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  options.log?.info({ dir: path.relative(process.cwd(), dir) || dir, redisPid: child.pid }, "started a local redis-server (REDIS_URL is unset)");

  return {
    url,
    owned: true,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const others = await otherClients(useSocket ? { path: socket } : { host: "127.0.0.1", port });
      if (others > 0) {
        // Another process reuses this server: leave it running for it (the next start reuses it too).
        options.log?.info({ clients: others }, "the local redis-server is still used by another process; left running");
        process.off("exit", killOnExit);
        child.stderr?.destroy();
        child.unref();
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill("SIGTERM");
      });
    },
  };
}
