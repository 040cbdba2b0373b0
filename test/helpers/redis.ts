/**
 * A real, private redis-server for a test file: started on a unix socket in a temporary folder,
 * so test files never share data and never race for a port.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";

/** A running test Redis. */
export interface TestRedis {
  /** Unix socket path, usable as `REDIS_URL` and by `connectRedis`. */
  url: string;
  /** Stops the server (data is lost). */
  stop(): Promise<void>;
  /** Stops and starts the server on the same socket (an outage of about `downMs` ms). */
  restart(downMs?: number): Promise<void>;
}

async function launch(socket: string, dir: string): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const deadline = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${stderr}`);
    const probe = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {}); // expected while the server starts
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return child;
    } catch {
      probe.disconnect();
      if (Date.now() > deadline) throw new Error(`redis-server did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

/**
 * Starts redis-server (must be on PATH; `.ci/run` installs it).
 * @throws when redis-server is missing or does not answer within 5 s.
 */
export async function startRedis(): Promise<TestRedis> {
  const dir = await mkdtemp(path.join(tmpdir(), "bot-redis-"));
  const socket = path.join(dir, "redis.sock");
  let child = await launch(socket, dir);
  return {
    url: socket,
    async stop() {
      await kill(child);
      await rm(dir, { recursive: true, force: true });
    },
    async restart(downMs = 0) {
      await kill(child);
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      child = await launch(socket, dir);
    },
  };
}
