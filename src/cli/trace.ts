/**
 * `npm run trace -- <platform> <chatId> [runs]`: prints a chat's latest run (or its last `runs`
 * runs, oldest first) as a readable timeline, so an operator can see why the bot answered what
 * it did. Reads `.env`. Uses `REDIS_URL` (a relative socket path is resolved against the current
 * folder); when it is unset, the private redis-server of this folder (`.data/redis`, see
 * `src/local-redis.ts`), started for the read when no `npm start` or `npm run chat` runs it. Exit code 0 when a run was printed, 1
 * when none is stored, 2 on bad arguments or configuration, or when Redis cannot be reached.
 */
import "dotenv/config";
import path from "node:path";
import { ConfigError, loadConfig, secretValues } from "../config.js";
import { startLocalRedis, type LocalRedis } from "../local-redis.js";
import { redact, registerSecrets } from "../log.js";
import { PLATFORMS, type Platform } from "../queue/incoming.js";
import { connectRedis } from "../redis.js";
import { formatRun } from "../trace/format.js";
import { TraceStore, TRACE_KEEP_RUNS } from "../trace/store.js";

const USAGE = `usage: npm run trace -- <platform> <chatId> [runs]
  platform: ${PLATFORMS.join(" | ")}
  chatId:   the platform's chat id (Telegram chat.id, Discord channel id; local for npm run chat)
  runs:     how many recent runs to print (1-${TRACE_KEEP_RUNS}), default 1`;

async function main(argv: string[]): Promise<number> {
  const [platform, chatId, count] = argv;
  if (!platform || !chatId || !PLATFORMS.includes(platform as Platform)) {
    console.error(USAGE);
    return 2;
  }
  const n = count === undefined ? 1 : Number(count);
  if (!Number.isInteger(n) || n < 1 || n > TRACE_KEEP_RUNS) {
    console.error(USAGE);
    return 2;
  }
  let redisUrl: string | undefined;
  try {
    const config = loadConfig(process.env, { purpose: "inspect" });
    registerSecrets(secretValues(config));
    redisUrl = config.REDIS_URL;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  let local: LocalRedis | undefined;
  if (!redisUrl) {
    // The private redis-server of this folder (`npm start`, `npm run chat`): reuse it, or start it
    // for this read and stop it again afterwards unless another process took it up meanwhile.
    try {
      local = await startLocalRedis({ dir: path.resolve(".data", "redis") });
    } catch (error) {
      console.error(`REDIS_URL is not set and the private redis-server could not be started: ${(error as Error).message}`);
      return 2;
    }
    redisUrl = local.url;
  }
  // Fail fast, once: no reconnect loop, no queued commands; ioredis waits disconnectTimeout (2 s by
  // default) on a socket that never connected before the process can exit.
  const redis = connectRedis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 5000, disconnectTimeout: 200 });
  let socketError: Error | undefined;
  redis.on("error", (error: Error) => (socketError ??= error));
  try {
    try {
      await redis.connect();
    } catch (error) {
      // `connect` rejects with "Connection is closed."; the socket's own error says why (ECONNREFUSED, ENOENT, ...).
      const cause = socketError ?? error;
      const reason = redact(cause instanceof Error ? cause.message : String(cause));
      console.error(`Redis at ${displayAddress(redisUrl)} could not be reached (${reason}): start the bot (npm start) or set REDIS_URL to the Redis it uses.`);
      return 2;
    }
    const runs = await new TraceStore(redis).runs({ platform: platform as Platform, chatId }, n);
    if (runs.length === 0) {
      console.log(`No trace stored for ${platform}:${chatId} (traces are kept ${TRACE_KEEP_RUNS} runs, 7 days).`);
      return 1;
    }
    console.log(runs.reverse().map(formatRun).join("\n\n"));
    return 0;
  } finally {
    redis.disconnect();
    await local?.stop();
  }
}

/** `redisUrl` for a message: a socket path relative to the current folder, a URL without its password. */
function displayAddress(redisUrl: string): string {
  if (redisUrl.startsWith("/")) {
    const relative = path.relative(process.cwd(), redisUrl);
    return relative.startsWith("..") ? redisUrl : relative;
  }
  if (!URL.canParse(redisUrl)) return "the configured address";
  const url = new URL(redisUrl);
  url.password = "";
  url.username = "";
  return url.href;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`trace failed: ${redact(error instanceof Error ? error.message : String(error))}`);
    process.exitCode = 2;
  },
);
