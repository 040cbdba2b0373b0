/**
 * Ctrl-C while a platform is still starting (its API does not answer, as without network):
 * `npm start` says at once that it is stopping, aborts the start-up call instead of waiting for
 * its time-out, and exits 0.
 */
import { spawn } from "node:child_process";
import { createServer, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import { fakeTelegramToken } from "../helpers/fake-tokens.js";

let server: TestRedis;
const sockets: Socket[] = [];
// Accepts connections and never answers: a Bot API that is not reachable in practice.
const blackHole = createServer((socket) => sockets.push(socket));
beforeAll(async () => {
  server = await startRedis();
  await new Promise<void>((resolve) => blackHole.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => blackHole.close(r));
  await server.stop();
});

it("Ctrl-C during a platform's start-up stops at once", async () => {
  const port = (blackHole.address() as { port: number }).port;
  const child = spawn(process.execPath, nodeArgs("src/main.ts"), {
    env: childEnv({
      LOG_LEVEL: "info",
      ROLE: "adapter",
      REDIS_URL: server.url,
      TELEGRAM_BOT_TOKEN: fakeTelegramToken("123456789", "TEST-token-for-a-black-hole"),
      TELEGRAM_API_ROOT: `http://127.0.0.1:${port}`,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 60_000;
    while (sockets.length === 0 && child.exitCode === null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(sockets.length).toBeGreaterThan(0); // the start-up call is in flight
    const sentAt = Date.now();
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(10_000);
    expect(output).toContain("SIGINT: stopping (waits for answers in progress; press Ctrl-C again to force)");
    expect(output).not.toContain("the bot is running");
    expect(output).not.toContain("TEST-token-for-a-black-hole");
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}, 90_000);
