import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * The `.env` the tests' processes read: one with no variables (`DOTENV_CONFIG_PATH`, which
 * `import "dotenv/config"` in the entry points honours), so a developer's own `.env` in the
 * checkout (a port the running bot holds, real tokens) never leaks into a test. A test of `.env`
 * reading points `DOTENV_CONFIG_PATH` at its own file.
 */
const EMPTY_DOTENV = fileURLToPath(new URL("./test/helpers/empty.env", import.meta.url));

/**
 * The end-to-end files that run once more on a three-master Redis Cluster (`TEST_REDIS=cluster`,
 * test/helpers/redis.ts). On a cluster what can break is a command touching several keys: a Lua
 * script or MULTI whose keys would sit in different slots (CROSSSLOT), and BullMQ's own scripts
 * under our queue prefixes. Every e2e file goes through the chat queue, the enqueue script and
 * the worker's finish script, so these are already covered by any file here; each file below is
 * here for the store or queue family it is the cheapest full exercise of:
 *
 * - approvals-telegram: the approval store (MULTI create, set-prompt, decide, finish, close
 *   scripts), the `decisions` queue, a worker restart between prompt and click; todo scripts.
 * - grants-telegram: "always allow" grants (grant and drop-if-same scripts), in forum topics.
 * - reminders-telegram: the reminder store (add and update scripts), the `reminders` queue with
 *   delayed jobs and job schedulers, two workers and a worker restart.
 * - conversations: history (trim-append, forget-run on /reset), the inbox and finish script per
 *   Telegram topic and Discord thread, several pending approvals per conversation.
 * - access-pairing: the access store (pairing script, MULTI approve), usage totals and budgets
 *   (usage-add scripts), /usage.
 * - access-limits: the queue cap (enqueue and undo scripts) and the rate limiter.
 * - media-limits: the album scripts (add, take) and image tokens counted against the budget.
 * - streaming-telegram: streaming progress (streamed message ids, sent chunks) resumed by a retry.
 * - compaction: the `compactions` queue (deduplicated jobs, two workers), the swap script over
 *   history and archive, the lease, `/reset` deleting history and archive together.
 * - tasks-telegram: the task store (add and update scripts, done markers, running locks), the
 *   `tasks` queue with delayed jobs and job schedulers, occurrences through the answer pipeline.
 * - settings-telegram: the settings store (set-field script), read with the history, per topic.
 * - memory-telegram: the memory store (its compare-and-set script), personal and group scopes.
 * - stop-telegram: where Stop finds the answer (the inbox's head, the history-tag script, a resumed
 *   approval's answering record and its compare-and-delete script) and its pub/sub channel (a stop
 *   request published through the cluster reaches the worker's subscriber).
 *
 * A new store or queue (memory, settings, compaction, scheduled tasks …) adds the file that
 * exercises it end to end to this list. A test of a listed file that exercises none of what the
 * file is listed for (wording, validation, a platform's behaviour, a command-line check) is
 * written `itOneRedis` (test/helpers/cluster.ts): it runs on one Redis and is skipped here.
 */
const CLUSTER_FILES = [
  "test/e2e/supergroup-telegram.test.ts",
  "test/e2e/approvals-telegram.test.ts",
  "test/e2e/approvals-reset.test.ts",
  "test/e2e/grants-telegram.test.ts",
  "test/e2e/reminders-telegram.test.ts",
  "test/e2e/conversations.test.ts",
  "test/e2e/access-pairing.test.ts",
  "test/e2e/access-limits.test.ts",
  "test/e2e/media-limits.test.ts",
  "test/e2e/streaming-telegram.test.ts",
  "test/e2e/compaction.test.ts",
  "test/e2e/tasks-telegram.test.ts",
  "test/e2e/settings-telegram.test.ts",
  "test/e2e/memory-telegram.test.ts",
  "test/e2e/stop-telegram.test.ts",
];

/**
 * What `npm run test:quick` (`vitest run --mode quick`, a first check in about a minute) leaves
 * out: the end-to-end files but the smoke test (the whole stack for one message per platform),
 * everything that starts the bot's own processes (`npm start`, `npm run chat`, worker children
 * killed mid-job, the image's build), real MCP servers listed by `npm run tools`, and the Redis
 * Cluster. It runs the rest on one Redis: the unit and component tests of every module, the fakes,
 * the adapters against them, the CLIs in-process. `npm test` runs everything.
 */
const QUICK_LEAVES_OUT = [
  "test/e2e/!(smoke).test.ts",
  "test/console/**",
  "test/worker/{local-redis,crash-loop,stream-kill,stalled,discord-replay,memory-kill,main,stop-during-start,compaction-kill}.test.ts",
  "test/telegram/{lease,startup}.test.ts",
  "test/core/redis-cluster.test.ts",
  "test/toolbox/{build,clean-build}.test.ts",
  "test/trace/cli.test.ts",
  "test/mcp/tools-cli.test.ts",
];

export default defineConfig(({ mode }) => ({
  test: {
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Four files at a time on two cores: a file spends most of its time waiting (on the fakes,
    // timers, child processes starting), so other files' work fits in the gaps (three at a time
    // took 1233 s of summed file durations in 426 s, two 1159 s in 591 s, on the same loaded
    // machine). Each file starts its own redis-server (cluster files share their worker's cluster).
    maxWorkers: 4,
    // A worker process runs file after file without a fresh module graph: the bot's dependencies
    // (discord.js, grammy, the SDKs, sharp, mathjs …) load once per worker instead of once per file,
    // which was about a fifth of the suite's time. Test files therefore share module state: a test
    // that reads process-wide counters starts them from zero itself (test/core/metrics.test.ts).
    isolate: false,
    env: { LOG_LEVEL: "silent", DOTENV_CONFIG_PATH: EMPTY_DOTENV },
    // Compiles the checkout once per run for the child processes tests start (nodeArgs in test/helpers/compiled.ts).
    globalSetup: ["./test/helpers/compile-children.ts"],
    // The usual output, then the slowest files and the summed durations (test/helpers/durations-reporter.ts).
    reporters: ["default", "./test/helpers/durations-reporter.ts"],
    // Fails a test whose requests to the fake Telegram or Discord break the platforms' published specs.
    setupFiles: ["test/helpers/spec-check.ts"],
    projects:
      mode === "quick"
        ? [{ extends: true, test: { name: "redis", include: ["test/**/*.test.ts"], exclude: QUICK_LEAVES_OUT } }]
        : [
            { extends: true, test: { name: "redis", include: ["test/**/*.test.ts"] } },
            {
              extends: true,
              test: {
                name: "cluster",
                include: CLUSTER_FILES,
                env: { TEST_REDIS: "cluster" },
                // One Redis Cluster per test worker, shared by the files it runs one after another (test/helpers/test-clusters.ts).
                globalSetup: ["./test/helpers/compile-children.ts", "./test/helpers/test-clusters.ts"],
              },
            },
          ],
  },
}));
