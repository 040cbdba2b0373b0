import { spawn } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => server.stop());

/** Runs `npm start`'s entry point with `env`; resolves with its exit code and output. */
function runMain(
  env: Record<string, string>,
  onOutput: (text: string, child: ReturnType<typeof spawn>) => void = () => {},
) {
  const child = spawn(process.execPath, nodeArgs("src/main.ts"), {
    env: childEnv({ LOG_LEVEL: "info", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (d: Buffer) => {
    output += d.toString();
    onOutput(output, child);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on("exit", (code) => resolve({ code, output })),
  );
}

it("starts the worker role, warns about nothing to do only when adapters run, and exits 0 on SIGTERM", async () => {
  let sent = false;
  const result = await runMain(
    { ROLE: "worker", REDIS_URL: server.url, ANTHROPIC_API_KEY: "sk-test-abcdefgh" },
    (out, child) => {
      if (!sent && out.includes("the bot is running")) {
        sent = true;
        child.kill("SIGTERM");
      }
    },
  );
  expect(result.code).toBe(0);
  expect(result.output).toContain("worker started");
  expect(result.output).toContain('"msg":"stopped"');
  expect(result.output).not.toContain("no platform token");
  expect(result.output).not.toContain("sk-test-abcdefgh");
}, 30_000);

it("prints every configuration problem and exits 1", async () => {
  const result = await runMain({ ROLE: "sideways", WORKER_CONCURRENCY: "0", REDIS_URL: server.url });
  expect(result.code).toBe(1);
  expect(result.output).toContain("ROLE: must be all, adapter or worker");
  expect(result.output).toContain("WORKER_CONCURRENCY");
}, 30_000);

it("stops at once with a clear message when REDIS_URL cannot be reached, without printing its password", async () => {
  const result = await runMain({
    ROLE: "worker",
    REDIS_URL: "redis://:hunter2-secret@127.0.0.1:1/0",
    ANTHROPIC_API_KEY: "sk-test-abcdefgh",
  });
  expect(result.code).toBe(1);
  expect(result.output).toContain(
    "Cannot reach Redis at redis://127.0.0.1:1/0: connect ECONNREFUSED 127.0.0.1:1. Check REDIS_URL",
  );
  expect(result.output).not.toContain("hunter2-secret");
}, 30_000);
