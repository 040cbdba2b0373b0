/**
 * `npm run chat`: a conversation with the bot in this terminal, through the same queue, worker and
 * history as Discord and Telegram (platform `console`, chat `local`). Needs only
 * `ANTHROPIC_API_KEY`; starts a private redis-server when `REDIS_URL` is unset. Logs go to
 * `.data/chat.log` so they do not mix with the conversation.
 */
import "dotenv/config";
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { userInfo } from "node:os";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import { createAnthropicClient } from "../agent/client.js";
import { runAgent } from "../agent/loop.js";
import { configOrExit, toolsOrExit, redisOrExit, startBot, stopOnSignals } from "../app.js";
import { secretValues } from "../config.js";
import { localize } from "../i18n.js";
import { conversationKeys } from "../queue/keys.js";
import { connectRedis } from "../redis.js";
import { createLogger, registerSecrets } from "../log.js";

/** BullMQ prefix of the console's own queues, so a chat never takes jobs of a bot sharing the same Redis. */
const CHAT_PREFIX = "console";

async function chat(): Promise<void> {
  // Only the console: platform tokens in .env are ignored here.
  const config = { ...configOrExit({ ...process.env, ROLE: "all" }), TELEGRAM_BOT_TOKEN: undefined, DISCORD_TOKEN: undefined, HEALTH_PORT: undefined };
  registerSecrets(secretValues(config));
  await mkdir(".data", { recursive: true });
  const log = createLogger({ level: process.env.LOG_LEVEL ? config.LOG_LEVEL : "info", destination: createWriteStream(".data/chat.log", { flags: "a" }) });
  const toolbox = await toolsOrExit(config, log);
  const redis = await redisOrExit(config, log);
  let name = "you";
  try {
    name = userInfo().username || name;
  } catch {
    // no user name on this system; keep "you"
  }
  const adapter = new ConsoleAdapter({ input: process.stdin, output: process.stdout, locale: config.BOT_LOCALE, log, userId: name, userName: name });
  const starting = startBot({
    config,
    log,
    redisUrl: redis.url,
    toolbox,
    role: "all",
    adapters: [adapter],
    agent: { runAgent, client: createAnthropicClient(config) },
    prefix: CHAT_PREFIX,
  });
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      const bot = await starting.catch(() => undefined);
      await bot?.stop();
      await redis.local?.stop();
    })());
  stopOnSignals(stop, log, (text) => process.stdout.write(`\n${text}\n`));
  try {
    await starting;
  } catch (error) {
    console.error(`start-up failed: ${(error as Error).message}`);
    await redis.local?.stop();
    process.exit(1);
  }
  process.stdout.write(
    `${localize(config.BOT_LOCALE, {
      "zh-TW": "開始對話（{tools} 個工具）。/help 說明，/quit 離開。紀錄檔：.data/chat.log",
      en: "Chat started ({tools} tools). /help for help, /quit to leave. Log file: .data/chat.log",
    }, { tools: toolbox.size })}\n`,
  );
  await adapter.closed;
  // Input ended (or /quit): let the answers still on their way arrive, for up to 2 minutes.
  const probe = connectRedis(redis.url, { maxRetriesPerRequest: 1 }, log);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && (await probe.exists(conversationKeys({ platform: "console", chatId: "local" }).scheduled).catch(() => 0)) === 1) {
    await new Promise((r) => setTimeout(r, 100));
  }
  probe.disconnect();
  await stop();
  process.exit(0);
}

await chat();
