/**
 * `npm start` (src/main.ts, a real process) with a Telegram token the fake Bot API rejects: at
 * start-up (401 on getMe) and while polling (the token revoked). Both end with one clear line that
 * names TELEGRAM_BOT_TOKEN, no library stack, and exit code 1.
 */
import { spawn } from "node:child_process";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
let tg: FakeTelegram;
beforeAll(async () => {
  redis = await startRedis();
  tg = await FakeTelegram.start();
});
afterAll(async () => {
  await tg.stop();
  await redis.stop();
});

/** Runs the entry point as an adapter; `onOutput` sees the output so far. Resolves with the exit code and output. */
function runMain(
  env: Record<string, string>,
  onOutput: (text: string, child: ReturnType<typeof spawn>) => void = () => {},
) {
  const child = spawn(process.execPath, nodeArgs("src/main.ts"), {
    env: childEnv({
      LOG_LEVEL: "info",
      ROLE: "adapter",
      REDIS_URL: redis.url,
      TELEGRAM_API_ROOT: tg.apiRoot,
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (d: Buffer) => {
    output += d.toString();
    onOutput(output, child);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const timer = setTimeout(() => child.kill("SIGKILL"), 40_000);
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

it("a token rejected at start-up (401 on getMe): names TELEGRAM_BOT_TOKEN, no stack, the cause before 'stopped', exit 1", async () => {
  const wrong = `${tg.token.slice(0, -4)}zzzz`;
  const { code, output } = await runMain({ TELEGRAM_BOT_TOKEN: wrong });
  expect(code).toBe(1);
  expect(output).toContain(
    "start-up failed: TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API (401 Unauthorized)",
  );
  expect(output).not.toMatch(/GrammyError|"stack":"[^"]|\n\s+at /);
  expect(output).not.toContain(wrong);
  const failed = output.indexOf("start-up failed");
  const stopped = output.indexOf('"msg":"stopped"');
  expect(stopped).toBeGreaterThan(failed);
}, 60_000);

it("a token revoked while polling (401 on getUpdates): stops with a clear line and exit 1", async () => {
  let revoked = false;
  const { code, output } = await runMain({ TELEGRAM_BOT_TOKEN: tg.token }, (text) => {
    if (!revoked && text.includes("the bot is running")) {
      revoked = true;
      // The held long poll ends with 401 at once, as the next call would.
      tg.revokeToken();
    }
  });
  expect(revoked).toBe(true);
  expect(code).toBe(1);
  expect(output).toContain("TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API (401 Unauthorized)");
  expect(output).not.toMatch(/GrammyError|"stack":"[^"]|\n\s+at /);
  expect(output).not.toContain(tg.token);
}, 60_000);

it("Ctrl-C while getMe hangs at start-up ends start-up at once: stops in seconds, exit 0, no 'start-up failed'", async () => {
  // A Bot API that accepts the connection and never answers (start-up would wait 30 s for it).
  const held: ServerResponse[] = [];
  let asked: (() => void) | undefined;
  const silent = createServer((_req, res) => {
    held.push(res);
    asked?.();
  });
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  try {
    let signalledAt = 0;
    const getMe = new Promise<void>((r) => (asked = r));
    const run = runMain(
      { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` },
      (_text, child) => {
        if (signalledAt === 0)
          void getMe.then(() => {
            if (signalledAt !== 0) return;
            signalledAt = Date.now();
            child.kill("SIGINT");
          });
      },
    );
    const { code, output } = await run;
    expect(signalledAt).toBeGreaterThan(0);
    expect(Date.now() - signalledAt).toBeLessThan(10_000);
    expect(code).toBe(0);
    expect(output).toContain("SIGINT: stopping");
    expect(output).toContain("start-up stopped");
    expect(output).not.toContain("start-up failed");
  } finally {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  }
}, 60_000);
