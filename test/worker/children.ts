/**
 * Workers for the kill tests: a worker in its own process (killed with SIGKILL mid-job), and the
 * second worker in this process that takes its jobs over, delivering to the fake Discord.
 */
import Anthropic from "@anthropic-ai/sdk";
import { spawn, type ChildProcess } from "node:child_process";
import { createOutbound } from "../../adapters/discord/index.js";
import { runAgent } from "../../src/agent/loop.js";
import { historyTtlSeconds } from "../../src/config.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger, type Logger } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { memoryTools } from "../../src/memory/tool.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { startWorker, type ChatWorker } from "../../src/worker/worker.js";
import { z } from "zod";
import type { FakeDiscord } from "../fakes/discord.js";
import { testConfig } from "../helpers/config.js";
import { todoTools, waitFor } from "./harness.js";
import { FEATURES } from "../../src/features.js";

/**
 * Spawns `script` (a worker child under test/worker/) with `env` added to this process's
 * environment; resolves once it prints "ready" (waits up to 60 s).
 * @throws with the child's output when it exits before printing "ready".
 */
export async function spawnChildWorker(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const { nodeArgs } = await import("../helpers/compiled.js"); // not at the top: the child imports this file too
  const proc = spawn(process.execPath, nodeArgs(script), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  await waitFor(() => out.includes("ready") || proc.exitCode !== null, 60_000, "the child worker to start");
  if (!out.includes("ready")) throw new Error(`the child worker did not start:\n${out}`);
  return proc;
}

/**
 * Starts a worker (concurrency 4, the todo toolbox — with the memory tool when `options.memory` —, no approvals) on `redisUrl`, calling the fake
 * Messages API at `modelUrl` and delivering to the fake Discord at `discord.apiUrl` with `discord.token`.
 * Used in the test process and by `discord-worker-child.ts`.
 * @param options.crashTool adds {@link crashTool} (the child does with `CRASH_TOOL=1`).
 * @param options.env extra config variables (e.g. STREAMING); an undefined value counts as unset.
 * @returns the worker and `close(timeoutMs?)`, which closes it and then its Redis connection.
 */
export function startDiscordWorker(options: {
  redisUrl: string;
  modelUrl: string;
  discord: Pick<FakeDiscord, "token" | "apiUrl">;
  env?: Record<string, string | undefined>;
  /** Adds {@link crashTool} to the toolbox. */
  crashTool?: boolean;
  /** The worker's logger; default silent. */
  log?: Logger;
  /** Adds the memory tool (`memoryTools`) to the toolbox. */
  memory?: boolean;
}): {
  worker: ChatWorker;
  close: (timeoutMs?: number) => Promise<void>;
} {
  const config = testConfig({
    WORKER_CONCURRENCY: "4",
    DISCORD_TOKEN: options.discord.token,
    DISCORD_API_URL: options.discord.apiUrl,
    ...options.env,
  });
  const redis = connectRedis(options.redisUrl, { maxRetriesPerRequest: null });
  const toolbox = todoTools();
  if (options.crashTool) toolbox.add(crashTool());
  if (options.memory) for (const tool of memoryTools(config)) toolbox.add(tool);
  const worker = startWorker(
    {
      config,
      log: options.log ?? silentLogger,
      redis,
      history: new HistoryStore(redis, {
        maxMessages: config.HISTORY_MAX_MESSAGES,
        ttlSeconds: historyTtlSeconds(config),
      }),
      toolbox,
      client: new Anthropic({ apiKey: "test-key", baseURL: options.modelUrl, maxRetries: 0 }),
      runAgent,
      outbounds: { discord: createOutbound(config, silentLogger) },
    },
    // No approvals: a dangerous call is told that confirmation is unavailable.
    FEATURES.filter((f) => f.name !== "approvals"),
  );
  return {
    worker,
    close: async (timeoutMs) => {
      await worker.close(timeoutMs).catch(() => {});
      redis.disconnect();
    },
  };
}

/**
 * `crash_worker`: kills its own worker process with SIGKILL, as a native crash or the kernel's
 * out-of-memory killer would (nothing runs after it: no finally, no exit handler). Read-only, so a
 * retried attempt calls the model again and crashes again.
 */
export function crashTool() {
  return defineTool({
    name: "crash_worker",
    description: "Test tool: kills the worker process.",
    tags: ["todo"],
    readOnly: true,
    input: z.object({}),
    run: () => {
      process.kill(process.pid, "SIGKILL");
      return "not reached";
    },
  });
}
