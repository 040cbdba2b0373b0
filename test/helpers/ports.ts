/** Free loopback TCP ports for servers a test starts on a port it must know beforehand. */
import { createServer } from "node:net";

/**
 * `n` TCP ports on 127.0.0.1 that were free a moment ago (the OS's choice), all held at once so
 * they differ. Another process may take one before the caller listens on it (rare on loopback).
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** One TCP port on 127.0.0.1 that was free a moment ago (see {@link freePorts}). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
