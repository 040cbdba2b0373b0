/**
 * A compaction worker in a process of its own, for the test that kills it (SIGKILL) mid-compaction:
 * the real `compactions` queue worker (`startCompactionWorker`) and SDK client on `REDIS_URL`, the
 * fake model at `MODEL_URL`. Prints `ready` once it takes jobs.
 */
import Anthropic from "@anthropic-ai/sdk";
import { startCompactionWorker } from "../../src/compaction/queue.js";
import { CompactionStore } from "../../src/compaction/store.js";
import { silentLogger } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { LOCK_DURATION_MS, STALLED_INTERVAL_MS } from "../../src/worker/worker.js";
import { testConfig } from "../helpers/config.js";

const config = testConfig({ ANTHROPIC_MODEL: "claude-test-1" });
const redis = connectRedis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
const compactions = startCompactionWorker(
  {
    config,
    log: silentLogger,
    client: new Anthropic({ apiKey: "test-key", baseURL: process.env.MODEL_URL!, maxRetries: 0 }),
    store: new CompactionStore(redis, 3600),
  },
  {
    redis,
    concurrency: 1,
    lockDurationMs: LOCK_DURATION_MS,
    stalledIntervalMs: STALLED_INTERVAL_MS,
    log: silentLogger,
  },
);
await compactions.worker.waitUntilReady();
process.stdout.write("ready\n");
