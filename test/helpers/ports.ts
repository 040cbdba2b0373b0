/** Free loopback TCP ports for servers a test starts on a port it must know beforehand. */
import { createServer, type Server } from "node:net";

/**
 * Where the ports are chosen: below Linux's default ephemeral range (`ip_local_port_range`,
 * 32768–60999), from which the OS takes the local port of every outgoing connection. A port the OS
 * picked with `listen(0)` comes from that range, so while a test starts its server on it, any of
 * the suite's many outgoing connections (Redis, HTTP to the fakes) could take it first: the bot then
 * failed to start with "port … is already in use".
 */
const LOWEST = 20_000;
const HIGHEST = 32_767;

/** Listens on `port` of 127.0.0.1; @returns the server, or undefined when the port is taken. */
function hold(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/**
 * `n` TCP ports on 127.0.0.1 that were free a moment ago, all held at once so they differ, chosen
 * at random between 20000 and 32767 (outside the range the OS gives outgoing connections, see
 * {@link LOWEST}). Another process may still take one before the caller listens on it (rare).
 * @throws when no free port was found in 200 tries.
 */
export async function freePorts(n: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < n; tries += 1) {
      if (tries >= 200) throw new Error(`no free port between ${LOWEST} and ${HIGHEST} in 200 tries`);
      const server = await hold(LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1)));
      if (server) held.push(server);
    }
    return held.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
}

/** One TCP port on 127.0.0.1 that was free a moment ago (see {@link freePorts}). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
