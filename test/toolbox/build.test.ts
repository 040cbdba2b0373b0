/**
 * The compiled build as the Docker image runs it: `dist/`, `node_modules`, `package.json` and
 * `scripts/run.mjs`, no TypeScript sources (the runtime stage of the Dockerfile). The tools load
 * from dist/tools; `npm run tools` and `npm run trace` run the compiled files; the image's CMD and
 * HEALTHCHECK, taken from the Dockerfile itself, pass with `HTTP_PORT` and `HEALTH_PORT` blank (as
 * `docker run --env-file .env` sets them from blank `HTTP_PORT=` lines).
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { SHIPPED_TOOLS } from "../tools/load.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
await mkdir(path.join(root, ".data"), { recursive: true });
const out = await mkdtemp(path.join(root, ".data", "build-"));
/** The runtime image's /app. */
const image = await mkdtemp(path.join(root, ".data", "image-"));
let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
  // --noCheck: the same JavaScript as `npm run build` (isolatedModules), without checking the types
  // again (npm test's typecheck does that): about 40% less time.
  await run(
    path.join(root, "node_modules/.bin/tsc"),
    ["-p", path.join(root, "tsconfig.build.json"), "--outDir", out, "--noCheck"],
    { cwd: root },
  );
  await symlink(out, path.join(image, "dist"), "dir");
  await symlink(path.join(root, "node_modules"), path.join(image, "node_modules"), "dir");
  await copyFile(path.join(root, "package.json"), path.join(image, "package.json"));
  await mkdir(path.join(image, "scripts"));
  await copyFile(path.join(root, "scripts", "run.mjs"), path.join(image, "scripts", "run.mjs"));
}, 180_000);
afterAll(async () => {
  await redis?.stop();
  await rm(out, { recursive: true, force: true });
  await rm(image, { recursive: true, force: true });
});

/** The image's environment: PATH plus the Dockerfile's runtime `ENV`, then `env`. */
function imageEnv(env: Record<string, string>): Record<string, string> {
  const dockerfile = readFileSync(path.join(root, "Dockerfile"), "utf8").replace(/\\\n\s*/g, "");
  const runtime = dockerfile.slice(dockerfile.indexOf("AS runtime"));
  const vars: Record<string, string> = {};
  for (const line of runtime.split("\n").filter((l) => l.startsWith("ENV "))) {
    for (const [, name, value] of line.slice(4).matchAll(/(\w+)=(\S+)/g)) vars[name!] = value!;
  }
  return { PATH: process.env.PATH ?? "", ...vars, ...env };
}

/** The exec-form array of the Dockerfile's `<instruction> … CMD [...]` line (HEALTHCHECK or CMD). */
function dockerfileCommand(instruction: "HEALTHCHECK" | "CMD"): string[] {
  const dockerfile = readFileSync(path.join(root, "Dockerfile"), "utf8").replace(/\\\n\s*/g, "");
  const line = dockerfile.split("\n").find((l) => l.startsWith(`${instruction} `))!;
  return JSON.parse(line.slice(line.indexOf("CMD [") + 4)) as string[];
}

async function npmRun(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("npm", ["run", "-s", ...args], { cwd: image, env: imageEnv(env) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("the runtime image's layout", () => {
  it("npm run tools loads every tool from dist/tools", async () => {
    const { code, stdout } = await npmRun(["tools", "--", "--json"], { CWA_API_KEY: "CWA-BUILD-TEST-KEY" });
    expect(code).toBe(0);
    const listing = JSON.parse(stdout) as { tools: { name: string; file: string }[]; skipped: unknown[] };
    expect(listing.tools.map((t) => t.name)).toEqual(expect.arrayContaining(SHIPPED_TOOLS));
    // compiled, not the .ts sources: the files' tools from dist/tools, the API's web search from dist/src/toolbox, its memory tool from dist/src/memory
    const builtIn = ["web_search", "memory"];
    const [servers, files] = [
      listing.tools.filter((t) => builtIn.includes(t.name)),
      listing.tools.filter((t) => !builtIn.includes(t.name)),
    ];
    expect(files.every((t) => /tools\/.*\.js$/.test(t.file))).toBe(true);
    expect(servers.map((t) => t.file)).toEqual([
      expect.stringMatching(/src\/toolbox\/server-tools\.js$/),
      expect.stringMatching(/src\/memory\/tool\.js$/),
    ]);
    expect(listing.skipped).toEqual([]);
  }, 60_000);

  it("npm run trace runs the compiled CLI", async () => {
    const result = await npmRun(["trace", "--", "telegram", "424242"], { REDIS_URL: redis.url });
    expect(result).toMatchObject({ code: 1, stderr: "" });
    expect(result.stdout).toContain("No trace stored for telegram:424242");
  }, 60_000);

  it("the image's CMD serves /health and its HEALTHCHECK passes with HTTP_PORT and HEALTH_PORT blank", async () => {
    const env = imageEnv({
      HTTP_PORT: "",
      HEALTH_PORT: "",
      ROLE: "worker",
      REDIS_URL: redis.url,
      ANTHROPIC_API_KEY: "test-key-image-0123",
      LOG_LEVEL: "info",
    });
    const [command, ...args] = dockerfileCommand("CMD");
    const bot = spawn(command!, args, { cwd: image, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    bot.stdout.on("data", (d: Buffer) => (output += d.toString()));
    bot.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => bot.on("exit", (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      while (!output.includes("the bot is running") && bot.exitCode === null && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain("health endpoint on 127.0.0.1:8080/health");
      const [check, ...checkArgs] = dockerfileCommand("HEALTHCHECK");
      const { stdout } = await run(check!, checkArgs, { cwd: image, env });
      expect(stdout).toBe("");
      bot.kill("SIGTERM");
      expect(await exited).toBe(0);
      // With the bot gone, the same check fails (it does check something).
      const failed = await run(check!, checkArgs, { cwd: image, env }).then(
        () => 0,
        (e: { code: number }) => e.code,
      );
      expect(failed).toBe(1);
    } finally {
      if (bot.exitCode === null) bot.kill("SIGKILL");
    }
  }, 120_000);
});
