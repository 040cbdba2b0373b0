/**
 * `npm run trace -- <platform> <chatId>[/<topicId>] [runs]` (or `npm run trace -- <conversation> [runs]`
 * with a conversation key as log lines print it, e.g. `telegram:-1001234/11`): prints a
 * conversation's latest run (or its last `runs` runs, oldest first) as a readable timeline, so an
 * operator can see why the bot answered what it did. A Telegram topic is its own conversation:
 * name it with `/<topicId>` (its `message_thread_id`); without it, the chat's runs outside topics. Reads `.env`. Uses `REDIS_URL` (a relative socket path is resolved against the current
 * folder); when it is unset, the private redis-server of this folder (`.data/redis`, see
 * `src/local-redis.ts`), started for the read when no `npm start` or `npm run chat` runs it. Exit code 0 when a run was printed, 1
 * when none is stored, 2 on bad arguments or configuration, or when Redis cannot be reached.
 */
import "dotenv/config";
import path from "node:path";
import { ConfigError, loadConfig, secretValues } from "../config.js";
import { startLocalRedis, type LocalRedis } from "../local-redis.js";
import { redact, registerSecrets } from "../log.js";
import { conversationKey, PLATFORMS, type ConversationRef, type Platform } from "../queue/incoming.js";
import { connectRedis } from "../redis.js";
import { formatRun } from "../trace/format.js";
import { TraceStore, TRACE_KEEP_RUNS } from "../trace/store.js";

const USAGE = `usage: npm run trace -- <platform> <chatId>[/<topicId>] [runs]
       npm run trace -- <platform>:<chatId>[/<topicId>] [runs]
  platform: ${PLATFORMS.join(" | ")}
  chatId:   the platform's chat id (Telegram chat.id, Discord channel or thread id; local for npm run chat)
  topicId:  a Telegram topic's message_thread_id (forum topics, private-chat topics); each topic is its own conversation
  runs:     how many recent runs to print (1-${TRACE_KEEP_RUNS}), default 1
  e.g.      npm run trace -- telegram -1001234567890/11 3`;

/**
 * The conversation and the run count named by the arguments, or undefined when they do not name
 * one (see {@link USAGE}): `<platform> <chatId>[/<topicId>] [runs]`, or the conversation key
 * `<platform>:<chatId>[/<topicId>]` followed by `[runs]`. A topic is accepted on Telegram only,
 * as the decimal `message_thread_id`.
 */
function parseTraceArgs(argv: string[]): { conversation: ConversationRef; count: string | undefined } | undefined {
  const keyed = /^([a-z]+):(.+)$/.exec(argv[0] ?? "");
  const [platform, chat, rest] = keyed ? [keyed[1], keyed[2], argv.slice(1)] : [argv[0], argv[1], argv.slice(2)];
  if (!platform || !chat || !PLATFORMS.includes(platform as Platform) || rest.length > 1) return undefined;
  const slash = chat.lastIndexOf("/");
  const chatId = slash === -1 ? chat : chat.slice(0, slash);
  const topicId = slash === -1 ? undefined : chat.slice(slash + 1);
  if (chatId === "") return undefined;
  if (topicId !== undefined && (platform !== "telegram" || !/^[1-9][0-9]{0,15}$/.test(topicId))) return undefined;
  return { conversation: { platform: platform as Platform, chatId, ...(topicId ? { topicId } : {}) }, count: rest[0] };
}

async function main(argv: string[]): Promise<number> {
  const args = parseTraceArgs(argv);
  if (!args) {
    console.error(USAGE);
    return 2;
  }
  const { conversation, count } = args;
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
    const runs = await new TraceStore(redis).runs(conversation, n);
    if (runs.length === 0) {
      console.log(`No trace stored for ${conversationKey(conversation)} (traces are kept ${TRACE_KEEP_RUNS} runs, 7 days).`);
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
