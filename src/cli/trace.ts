/**
 * `npm run trace -- <platform> <chatId> [runs]`: prints a chat's latest run (or its last `runs`
 * runs, oldest first) as a readable timeline, so an operator can see why the bot answered what
 * it did. Reads `.env`; needs `REDIS_URL`. Exit code 0 when a run was printed, 1 when none is
 * stored, 2 on bad arguments or configuration.
 */
import "dotenv/config";
import { ConfigError, loadConfig, secretValues } from "../config.js";
import { redact, registerSecrets } from "../log.js";
import { PLATFORMS, type Platform } from "../queue/incoming.js";
import { connectRedis } from "../redis.js";
import { formatRun } from "../trace/format.js";
import { TraceStore, TRACE_KEEP_RUNS } from "../trace/store.js";

const USAGE = `usage: npm run trace -- <platform> <chatId> [runs]
  platform: ${PLATFORMS.join(" | ")}
  chatId:   the platform's chat id (Telegram chat.id, Discord channel id, console session)
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
  if (!redisUrl) {
    console.error("REDIS_URL is not set: point it at the Redis the bot uses (in .env or the environment).");
    return 2;
  }
  const redis = connectRedis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 5000 });
  try {
    const runs = await new TraceStore(redis).runs({ platform: platform as Platform, chatId }, n);
    if (runs.length === 0) {
      console.log(`No trace stored for ${platform}:${chatId} (traces are kept ${TRACE_KEEP_RUNS} runs, 7 days).`);
      return 1;
    }
    console.log(runs.reverse().map(formatRun).join("\n\n"));
    return 0;
  } finally {
    redis.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`trace failed: ${redact(error instanceof Error ? error.message : String(error))}`);
    process.exitCode = 2;
  },
);
