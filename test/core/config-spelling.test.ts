/**
 * Misspelled configuration (`src/config-spelling.ts`): unknown names close to a variable of the
 * schema, from `.env` (every name) and the environment (names with our prefixes), and the warning
 * `npm start` logs for each, through the real entry point with a real `.env` file.
 */
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { parse } from "dotenv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/config.js";
import { closestKnownName, misspelledVariables, ourPrefixes } from "../../src/config-spelling.js";
import { childEnv, nodeArgs, ROOT } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

describe("closestKnownName", () => {
  it("names the variable a typo meant: a letter left out, swapped or added, a missing underscore, lower case, one word too many or too few", () => {
    const cases: Record<string, string> = {
      STREAMNG: "STREAMING",
      ANTHROPIC_MODLE: "ANTHROPIC_MODEL",
      CWA_APIKEY: "CWA_API_KEY",
      USER_DAILY_TOKEN: "USER_DAILY_TOKENS",
      streaming: "STREAMING",
      LOG_LEVL: "LOG_LEVEL",
      TIME_ZONE: "TIMEZONE",
      TELEGRAM_TOKEN: "TELEGRAM_BOT_TOKEN",
      DISCORD_BOT_TOKEN: "DISCORD_TOKEN",
    };
    for (const [typo, meant] of Object.entries(cases)) expect(closestKnownName(typo), typo).toBe(meant);
  });

  it("leaves known names and unrelated ones alone (the SDK's own ANTHROPIC_AUTH_TOKEN and ANTHROPIC_LOG, proxies, NODE_ENV, TZ)", () => {
    for (const name of [
      ...Object.keys(ConfigSchema.shape),
      "ANTHROPIC_AUTH_TOKEN",
      "ANTHROPIC_LOG",
      "HTTP_PROXY",
      "HTTPS_PROXY",
      "NODE_ENV",
      "TZ",
      "REDIS_HOST",
      "PATH",
    ]) {
      expect(closestKnownName(name), name).toBeUndefined();
    }
  });

  it("takes the known names and prefixes from the schema itself", () => {
    expect(ourPrefixes()).toEqual(expect.arrayContaining(["ANTHROPIC_", "TELEGRAM_", "DISCORD_", "REDIS_", "CWA_"]));
    expect(closestKnownName("FUTURE_VARIABLEE", ["FUTURE_VARIABLE"])).toBe("FUTURE_VARIABLE");
  });
});

describe("misspelledVariables", () => {
  it("checks every name of .env, but only our prefixes in the environment, each name once", () => {
    const found = misspelledVariables({
      dotenv: ["STREAMNG", "ANTHROPIC_API_KEY", "MAX_TURN"],
      env: {
        STREAMNG: "off",
        MAX_TURN: "3",
        TELEGRAM_TOKEN: "x",
        LOG_LEVL: "debug",
        PATH: "/bin",
        ANTHROPIC_API_KEY: "k",
      },
    });
    expect(found).toEqual([
      { name: "STREAMNG", source: ".env", suggestion: "STREAMING" },
      { name: "MAX_TURN", source: ".env", suggestion: "MAX_TURNS" },
      { name: "TELEGRAM_TOKEN", source: "environment", suggestion: "TELEGRAM_BOT_TOKEN" },
      // LOG_ is a prefix of ours since LOG_CONTENT joined LOG_LEVEL; PATH is not.
      { name: "LOG_LEVL", source: "environment", suggestion: "LOG_LEVEL" },
    ]);
  });
});

describe("the test run's .env", () => {
  it("has no variables, in this process and in the bot processes a test starts: the .env in their folder is not read unless a test asks", async () => {
    const empty = process.env.DOTENV_CONFIG_PATH;
    expect(empty).toBeDefined();
    expect(parse(readFileSync(empty!))).toEqual({});
    const dir = await mkdtemp(path.join(tmpdir(), "bot-no-dotenv-"));
    try {
      await writeFile(path.join(dir, ".env"), "HTTP_PORT=9095\n");
      await writeFile(path.join(dir, "own.env"), "HTTP_PORT=9097\n");
      const dotenvConfig = pathToFileURL(path.join(ROOT, "node_modules", "dotenv", "config.js")).href;
      const script = `await import(${JSON.stringify(dotenvConfig)}); console.log(process.env.HTTP_PORT ?? "unset")`;
      const port = async (env: NodeJS.ProcessEnv) =>
        (
          await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: dir, env })
        ).stdout.trim();
      expect(await port(childEnv())).toBe("unset");
      expect(await port(childEnv({ DOTENV_CONFIG_PATH: path.join(dir, "own.env") }))).toBe("9097");
      // The control: without the test run's path, dotenv reads the folder's .env.
      expect(await port({ PATH: process.env.PATH ?? "" })).toBe("9095");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("npm start", () => {
  let server: TestRedis;
  let dir: string;
  beforeAll(async () => {
    server = await startRedis(["--appendonly", "yes"]);
    dir = await mkdtemp(path.join(tmpdir(), "bot-dotenv-"));
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("warns once per misspelled variable of .env and of the environment, naming the intended one and never the value", async () => {
    const dotenv = path.join(dir, ".env");
    await writeFile(
      dotenv,
      "STREAMNG=off\nANTHROPIC_MODLE=claude-typo-model\nCWA_APIKEY=CWA-SECRET-VALUE-0123456789\nUSER_DAILY_TOKEN=5\nMAX_TURNS=4\n",
    );
    const child = spawn(process.execPath, nodeArgs("src/main.ts"), {
      env: {
        PATH: process.env.PATH ?? "",
        LOG_LEVEL: "info",
        ROLE: "worker",
        REDIS_URL: server.url,
        ANTHROPIC_API_KEY: "sk-test-abcdefgh",
        DOTENV_CONFIG_PATH: dotenv,
        DISCORD_BOT_TOKEN: "env-secret-token-value",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const collect = (d: Buffer) => {
      output += d.toString();
      if (output.includes("the bot is running")) child.kill("SIGTERM");
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code, output).toBe(0);
    const warnings = output
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string; variable?: string })
      .filter((r) => r.level === 40 && r.variable);
    expect(warnings.map((w) => w.msg)).toEqual([
      "STREAMNG in .env is not a variable this bot reads, so it is ignored: did you mean STREAMING?",
      "ANTHROPIC_MODLE in .env is not a variable this bot reads, so it is ignored: did you mean ANTHROPIC_MODEL?",
      "CWA_APIKEY in .env is not a variable this bot reads, so it is ignored: did you mean CWA_API_KEY?",
      "USER_DAILY_TOKEN in .env is not a variable this bot reads, so it is ignored: did you mean USER_DAILY_TOKENS?",
      "DISCORD_BOT_TOKEN in the environment is not a variable this bot reads, so it is ignored: did you mean DISCORD_TOKEN?",
    ]);
    for (const value of ["claude-typo-model", "CWA-SECRET-VALUE-0123456789", "env-secret-token-value"])
      expect(output).not.toContain(value);
  }, 60_000);
});
