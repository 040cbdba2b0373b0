/**
 * `npm run trace -- <platform> <chatId>[/<topicId>] [runs]` (or `npm run trace -- <conversation> [runs]`
 * with a conversation key as log lines print it, e.g. `telegram:-1001234/11`): prints a
 * conversation's latest run (or its last `runs` runs, oldest first) as a readable timeline, so an
 * operator can see why the bot answered what it did. A Telegram topic is its own conversation:
 * name it with `/<topicId>` (its `message_thread_id`); without it, the chat's runs outside topics. Reads `.env`. Uses
 * `REDIS_URL` (a relative socket path is resolved against the current
 * folder); when it is unset, the private redis-server of this folder (`.data/redis`, see
 * `src/local-redis.ts`), started for the read when no `npm start` or `npm run chat` runs it. Exit code 0 when a run was printed, 1
 * when none is stored, 2 on bad arguments or configuration, or when Redis cannot be reached.
 */
import { conversationKey, PLATFORMS, type ConversationRef, type Platform } from "../queue/incoming.js";
import { formatRun } from "../trace/format.js";
import { TraceStore, TRACE_KEEP_RUNS } from "../trace/store.js";
import { redisAddress } from "../redis.js";
import { isEntryPoint, loadCliConfig, runAsProgram, type CliIo } from "./io.js";
import { withCliRedis } from "./redis.js";

const USAGE = `usage: npm run trace -- <platform> <chatId>[/<topicId>] [runs]
       npm run trace -- <platform>:<chatId>[/<topicId>] [runs]
  platform: ${PLATFORMS.join(" | ")}
  chatId:   the platform's chat id (Telegram chat.id, Discord channel or thread id, LINE user, group or room id)
            (the terminal chat of npm run chat: platform console, chatId local)
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

/**
 * `npm run trace -- …argv` with the environment `env` (`.env` already read into it by the entry
 * point), writing to `io`.
 * @returns the exit code (0, 1 or 2, see above).
 * @throws what reading Redis throws once connected (e.g. the connection lost mid-read).
 */
export async function traceMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const args = parseTraceArgs(argv);
  if (!args) {
    io.err(USAGE);
    return 2;
  }
  const { conversation, count } = args;
  const n = count === undefined ? 1 : Number(count);
  if (!Number.isInteger(n) || n < 1 || n > TRACE_KEEP_RUNS) {
    io.err(USAGE);
    return 2;
  }
  const config = loadCliConfig(env, io);
  if (!config) return 2;
  const redisUrl = redisAddress(config);
  return withCliRedis(
    redisUrl,
    async (redis) => {
      const runs = await new TraceStore(redis).runs(conversation, n);
      if (runs.length === 0) {
        io.out(
          `No trace stored for ${conversationKey(conversation)} (traces are kept ${TRACE_KEEP_RUNS} runs, 7 days).`,
        );
        return 1;
      }
      io.out(runs.reverse().map(formatRun).join("\n\n"));
      return 0;
    },
    io,
  );
}

if (isEntryPoint(import.meta.url)) await runAsProgram("trace", traceMain);
