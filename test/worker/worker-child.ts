/**
 * A worker in a process of its own, for tests that kill it (SIGKILL) mid-job: the real worker,
 * agent loop and SDK client on `REDIS_URL`, the fake model at `MODEL_URL`, the console outbound
 * writing answers to stdout, and the harness's todo tools. Prints `ready` once it takes jobs.
 */
import Anthropic from "@anthropic-ai/sdk";
import { ConsoleOutbound } from "../../adapters/console/outbound.js";
import { runAgent } from "../../src/agent/loop.js";
import { historyTtlSeconds } from "../../src/config.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { startWorker } from "../../src/worker/worker.js";
import { testConfig } from "../helpers/config.js";
import { todoTools } from "./harness.js";
import { FEATURES } from "../../src/features.js";

const config = testConfig({ WORKER_CONCURRENCY: "4" });
const redis = connectRedis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
const worker = startWorker(
  {
    config,
    log: silentLogger,
    redis,
    history: new HistoryStore(redis, {
      maxMessages: config.HISTORY_MAX_MESSAGES,
      ttlSeconds: historyTtlSeconds(config),
    }),
    toolbox: todoTools(),
    client: new Anthropic({ apiKey: "test-key", baseURL: process.env.MODEL_URL!, maxRetries: 0, timeout: 600_000 }),
    runAgent,
    outbounds: { console: new ConsoleOutbound({ output: process.stdout, locale: config.BOT_LOCALE }) },
  },
  // No approvals: a dangerous call is told that confirmation is unavailable.
  FEATURES.filter((f) => f.name !== "approvals"),
);
await worker.waitUntilReady();
process.stdout.write("ready\n");
