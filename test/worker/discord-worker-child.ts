/**
 * A worker in a process of its own that answers on Discord, for tests that kill it (SIGKILL)
 * mid-delivery: the real worker, agent loop and SDK client on `REDIS_URL`, the fake model at
 * `MODEL_URL`, and the real Discord outbound (REST) against the fake Discord at
 * `DISCORD_API_URL` with `DISCORD_TOKEN`; `STREAMING` and `STREAM_EDIT_INTERVAL_MS` when set.
 * Prints `ready` once it takes jobs.
 */
import Anthropic from "@anthropic-ai/sdk";
import { createOutbound } from "../../adapters/discord/index.js";
import { runAgent } from "../../src/agent/loop.js";
import { historyTtlSeconds } from "../../src/config.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { unavailableApprovals } from "../../src/worker/approvals.js";
import { startWorker } from "../../src/worker/worker.js";
import { testConfig } from "../helpers/config.js";
import { todoTools } from "./harness.js";

const config = testConfig({
  WORKER_CONCURRENCY: "4",
  DISCORD_TOKEN: process.env.DISCORD_TOKEN,
  DISCORD_API_URL: process.env.DISCORD_API_URL,
  // streamed answers when the test asks for them (testConfig's default is off)
  ...(process.env.STREAMING ? { STREAMING: process.env.STREAMING, STREAM_EDIT_INTERVAL_MS: process.env.STREAM_EDIT_INTERVAL_MS } : {}),
});
const redis = connectRedis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
const worker = startWorker({
  config,
  log: silentLogger,
  redis,
  history: new HistoryStore(redis, { maxMessages: config.HISTORY_MAX_MESSAGES, ttlSeconds: historyTtlSeconds(config) }),
  toolbox: todoTools(),
  client: new Anthropic({ apiKey: "test-key", baseURL: process.env.MODEL_URL!, maxRetries: 0, timeout: 600_000 }),
  runAgent,
  outbounds: { discord: createOutbound(config, silentLogger) },
  approvals: unavailableApprovals(config.BOT_LOCALE, silentLogger),
});
await worker.waitUntilReady();
process.stdout.write("ready\n");
