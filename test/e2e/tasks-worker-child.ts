/**
 * A worker part of the end-to-end stack in a process of its own, for the scheduled-task test that
 * kills it (SIGKILL) in the middle of an occurrence: `startBot` with role `worker`, the stack's own
 * configuration (`STACK_CONFIG`, JSON), tools, Redis (`REDIS_URL`) and BullMQ prefix (`e2e`).
 * Prints `ready` once it takes jobs.
 */
import { createAnthropicClient } from "../../src/agent/client.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import { loadTools } from "../../src/toolbox/registry.js";

const config = JSON.parse(process.env.STACK_CONFIG!) as Config;
const { toolbox } = await loadTools({ config, log: silentLogger });
const agent = { runAgent, client: createAnthropicClient(config, { maxRetries: 0, timeoutMs: 60_000 }) };
await startBot({
  config,
  log: silentLogger,
  redisUrl: process.env.REDIS_URL!,
  toolbox,
  role: "worker",
  agent,
  prefix: "e2e",
});
process.stdout.write("ready\n");
