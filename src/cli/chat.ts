/**
 * `npm run chat`: a conversation with the bot in this terminal, through the same queue, worker and
 * history as Discord and Telegram (platform `console`, chat `local`). Needs only
 * `ANTHROPIC_API_KEY`; starts a private redis-server when `REDIS_URL` is unset. Logs go to
 * `.data/chat.log` so they do not mix with the conversation. In a terminal the line is edited with
 * readline (cursor keys, ↑ for the lines typed before, kept in `.data/chat-history`, Ctrl-L, Ctrl-U/W:
 * `adapters/console/terminal.ts`); piped input is read line by line.
 *
 * `npm run chat -- --demo`: the same bot with the built-in scripted model of `src/demo/model.ts`
 * served on loopback instead of Claude: no key, no network (MCP servers are left out; the weather
 * tool reads a recorded forecast from the same loopback server, web search answers a scripted
 * result), answers streamed, every answer labelled as a demo. Its conversation and user are `demo`
 * and its queues its own, so it never touches the history or todos of the real chat; each start
 * is a fresh demo (`src/demo/fresh.ts`: what an earlier demo left is deleted first).
 *
 * One chat per conversation at a time on one Redis (`adapters/console/lease.ts`): a second
 * `npm run chat` on the same conversation exits 1 with a line naming the first one's pid (in the
 * chat's language, zh-TW or English); the demo and the real chat are two conversations and run
 * side by side.
 */
import "dotenv/config";
import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { hostname, userInfo } from "node:os";
import path from "node:path";
import {
  CHAT_LEASE_TTL_MS,
  chatLeaseKey,
  ConsoleAdapter,
  ConsoleTerminal,
  showPendingApproval,
  takeChatLease,
  type ChatLeaseHolder,
} from "../../adapters/console/index.js";
import { createAnthropicClient } from "../agent/client.js";
import { runAgent } from "../agent/loop.js";
import { ApprovalStore } from "../approvals/store.js";
import { configOrExit, toolsOrExit, redisOrExit, startBot, stopOnSignals, interruptAnswers } from "../app.js";
import { secretValues, type Config } from "../config.js";
import { warnMisspelledVariables } from "../config-spelling.js";
import { clearDemo } from "../demo/fresh.js";
import { startDemoModel } from "../demo/model.js";
import { demoHelp } from "../demo/script.js";
import { findDemoForecast } from "../demo/weather.js";
import { englishNoun, localize, type Locale, type Localized } from "../i18n.js";
import { conversationKeys } from "../queue/keys.js";
import { connectRedis } from "../redis.js";
import { createLogger, registerSecrets } from "../log.js";

/** BullMQ prefix of the console's own queues, so a chat never takes jobs of a bot sharing the same Redis. */
const CHAT_PREFIX = "console";

/** BullMQ prefix of the demo's queues: a demo never takes the jobs of a real chat on the same Redis, nor they its. */
const DEMO_PREFIX = "console-demo";

/** The demo's conversation and user (`--demo`), so it never touches the history or todos of your real chat. */
const DEMO_CHAT = "demo";

/** The demo's `CWA_API_KEY`: its server takes any key; one no log would confuse with a real key. */
const DEMO_CWA_KEY = "demo-offline-no-key";

/**
 * An MCP servers file with no servers (`.data/demo-mcp.json`), for the demo: the project's
 * `mcp.json` may name servers on the network, and the demo stays on this machine.
 */
async function noMcpServers(): Promise<string> {
  const file = path.resolve(".data", "demo-mcp.json");
  await writeFile(file, '{ "mcpServers": {} }\n');
  return file;
}

/**
 * What the chat says on Ctrl-C (or SIGTERM), in the chat's language: the first one stops it once
 * the answers in progress are written (the notice follows the answer being streamed), a second one
 * exits at once.
 */
const SIGNAL_TEXT = {
  stopping: {
    "zh-TW": "正在結束對話（會等正在寫的回答寫完；再按一次 Ctrl-C 立即結束）。",
    en: "Stopping the chat (waits for answers in progress; press Ctrl-C again to force).",
  },
  forcing: { "zh-TW": "立即結束。", en: "Exiting now." },
};

/**
 * The line saying that another `npm run chat` has this conversation, in the chat's language: it
 * `held` it at start-up, or it `taken` it from this chat (paused past the lease's lifetime).
 * `{who}` names the other chat's pid (and its host when not this one), `{chat}` the conversation.
 */
const LEASE_TEXT = {
  held: {
    "zh-TW":
      "另一個 npm run chat{who}正在使用這個對話（{chat}）：請先關閉它；如果它已當掉，請等大約 {seconds} 秒再試。",
    en: "Another npm run chat{who} holds this conversation ({chat}): close it first, or if it crashed, wait about {seconds} s and try again.",
  },
  taken: {
    "zh-TW": "另一個 npm run chat{who}接手了這個對話（{chat}），這裡的對話就此結束。",
    en: "Another npm run chat{who} took over this conversation ({chat}); this chat stops.",
  },
  pid: { "zh-TW": "（pid {pid}）", en: " (pid {pid})" },
  pidOn: { "zh-TW": "（{host} 上的 pid {pid}）", en: " (pid {pid} on {host})" },
} satisfies Record<string, Localized>;

/**
 * The line of {@link LEASE_TEXT} in `locale`: `how` is `held` (at start-up: in `BOT_LOCALE`, as
 * the welcome line, the conversation's `/settings` not being read yet) or `taken` (later: in the
 * conversation's language, as Ctrl-C's notice); `holder` is the other chat as the lease names it
 * (undefined when the lease could not be read: no pid then). Never throws.
 */
function heldText(locale: Locale, chatId: string, holder: ChatLeaseHolder | undefined, how: "held" | "taken"): string {
  const host = holder && holder.host !== hostname() ? holder.host : undefined;
  const who = !holder
    ? ""
    : localize(locale, host ? LEASE_TEXT.pidOn : LEASE_TEXT.pid, { pid: holder.pid, host: host ?? "" });
  return localize(locale, LEASE_TEXT[how], {
    who,
    chat: chatId,
    seconds: Math.round(CHAT_LEASE_TTL_MS / 1000),
  });
}

async function chat(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== "--demo");
  if (unknown.length > 0) {
    console.error(`unknown argument ${unknown[0]}: npm run chat [-- --demo]`);
    process.exit(2);
  }
  const demo = args.includes("--demo");
  // Only the console: platform tokens in .env are ignored here. The demo needs no key (it never
  // reaches Anthropic: its model answers on loopback) and skips what would go to the network.
  // Its tokens are made up: no budgets, and nothing recorded (recordUsage below), so the real bot's usage and budgets in the same Redis stay as they are.
  const env = {
    ...process.env,
    ROLE: "all",
    ...(demo
      ? {
          ANTHROPIC_API_KEY: "demo-no-key",
          ANTHROPIC_BASE_URL: "",
          CWA_API_KEY: "",
          STREAMING: "on",
          USER_DAILY_TOKENS: "0",
          GLOBAL_DAILY_TOKENS: "0",
        }
      : {}),
  };
  const loaded = configOrExit(env);
  await mkdir(".data", { recursive: true });
  const model = demo
    ? await startDemoModel({ locale: loaded.BOT_LOCALE, timezone: loaded.TIMEZONE, forecast: findDemoForecast() })
    : undefined;
  const config: Config = {
    ...loaded,
    TELEGRAM_BOT_TOKEN: undefined,
    DISCORD_TOKEN: undefined,
    HTTP_PORT: undefined,
    HEALTH_PORT: undefined,
    ...(model ? { ANTHROPIC_BASE_URL: model.url, MCP_CONFIG: await noMcpServers() } : {}),
    // The weather tool asks the demo server, which answers with the recorded forecast (no key is checked).
    ...(model?.cwaBase ? { CWA_API_KEY: DEMO_CWA_KEY, CWA_API_BASE: model.cwaBase } : {}),
  };
  registerSecrets(secretValues(config));
  const log = createLogger({
    level: process.env.LOG_LEVEL ? config.LOG_LEVEL : "info",
    content: config.LOG_CONTENT === "on",
    destination: createWriteStream(".data/chat.log", { flags: "a" }),
  });
  // The log is a file here: misspelled variables are printed in the terminal too.
  for (const warning of warnMisspelledVariables(log)) console.error(`⚠️ ${warning}`);
  const toolbox = await toolsOrExit(config, log);
  const redis = await redisOrExit(config, log);
  let name = "you";
  try {
    name = userInfo().username || name;
  } catch {
    // no user name on this system; keep "you"
  }
  if (demo) name = DEMO_CHAT;
  const chatId = demo ? DEMO_CHAT : "local";
  // One chat per conversation: a second one would run a second worker on its messages (see lease.ts).
  const leaseRedis = connectRedis(redis.url, { maxRetriesPerRequest: 1 }, log);
  const taken = await takeChatLease(
    leaseRedis,
    { platform: "console", chatId },
    {
      log,
      onLost: (holder) => {
        screen.notice(heldText(adapter.locale, chatId, holder, "taken"));
        process.exitCode = 1;
        void stop().then(() => process.exit(1));
      },
    },
  ).catch((error: unknown) => ({ error }));
  if (!("lease" in taken)) {
    console.error(
      "error" in taken
        ? `start-up failed: could not take the conversation's lease in Redis: ${(taken.error as Error).message}`
        : heldText(config.BOT_LOCALE, chatId, taken.heldBy, "held"),
    );
    leaseRedis.disconnect();
    await model?.close();
    await redis.local?.stop();
    process.exit(1);
  }
  const { lease } = taken;
  if (demo) {
    // A fresh demo each start: what an earlier one left (todos, memory, history, reminders …) goes first.
    try {
      const approvals = new ApprovalStore(leaseRedis, { timeoutMs: config.CONFIRM_TIMEOUT_SECONDS * 1000, log });
      await clearDemo(leaseRedis, approvals, {
        chatId,
        userId: name,
        prefix: DEMO_PREFIX,
        keep: [chatLeaseKey({ platform: "console", chatId })],
      });
    } catch (err) {
      log.warn({ err }, "could not clear what an earlier demo left");
    }
  }
  // In a terminal: a line editor with the lines typed kept in .data (see adapters/console/terminal.ts).
  const screen = new ConsoleTerminal({
    input: process.stdin,
    output: process.stdout,
    historyFile: path.join(".data", demo ? "demo-history" : "chat-history"),
  });
  const adapter = new ConsoleAdapter({
    input: process.stdin,
    output: screen.output,
    locale: config.BOT_LOCALE,
    log,
    chatId,
    userId: name,
    userName: name,
    terminal: screen,
    ...(screen.interactive ? { screen } : {}),
  });
  const starting = startBot({
    config,
    log,
    redisUrl: redis.url,
    toolbox,
    role: "all",
    adapters: [adapter],
    agent: { runAgent, client: createAnthropicClient(config) },
    prefix: demo ? DEMO_PREFIX : CHAT_PREFIX,
    ...(demo ? { recordUsage: false } : {}),
  });
  /** Ctrl-C's notice while it waits for the answer being streamed to end (see below). */
  let stoppingNotice: string | undefined;
  const printStoppingNotice = () => {
    if (stoppingNotice !== undefined) screen.notice(stoppingNotice, { now: true });
    stoppingNotice = undefined;
  };
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      const bot = await starting.catch(() => undefined);
      await bot?.stop();
      // An answer the shutdown cut short (still running after its time-out) never ended: the notice now.
      printStoppingNotice();
      await lease.release();
      leaseRedis.disconnect();
      await model?.close();
      await redis.local?.stop();
    })());
  // Ctrl-C's notice comes after the answer being streamed (never inside it); a forced exit's at once.
  stopOnSignals(
    stop,
    log,
    ({ forcing }) => {
      if (forcing) screen.notice(localize(adapter.locale, SIGNAL_TEXT.forcing), { now: true });
      else {
        stoppingNotice = localize(adapter.locale, SIGNAL_TEXT.stopping);
        void adapter.outbound.quiet().then(printStoppingNotice);
      }
    },
    // The forced exit marks the answer being written as interrupted (not crashed) first, for 1 s at most.
    () => interruptAnswers(starting),
  );
  try {
    await starting;
  } catch (error) {
    console.error(`start-up failed: ${(error as Error).message}`);
    await lease.release();
    leaseRedis.disconnect();
    await model?.close();
    await redis.local?.stop();
    process.exit(1);
  }
  if (demo) screen.write(`${demoHelp(config.BOT_LOCALE, new Set(toolbox.names()))}\n`);
  screen.write(
    `${localize(
      config.BOT_LOCALE,
      {
        "zh-TW": "開始對話（{tools} 個工具）。/help 說明，/quit 離開。紀錄檔：.data/chat.log",
        en: "Chat started ({tools} {noun}). /help for help, /quit to leave. Log file: .data/chat.log",
      },
      { tools: toolbox.size, noun: englishNoun(toolbox.size, "tool") },
    )}\n`,
  );
  // An approval asked for in an earlier chat is still open: show it again, so y/n can answer it.
  const approvalsRedis = connectRedis(redis.url, { maxRetriesPerRequest: 1 }, log);
  try {
    const approvals = new ApprovalStore(approvalsRedis, { timeoutMs: config.CONFIRM_TIMEOUT_SECONDS * 1000, log });
    await showPendingApproval({
      approvals,
      outbound: adapter.outbound,
      requester: { platform: "console", chatId, userId: name },
    });
  } catch (err) {
    log.warn({ err }, "could not look for a pending approval");
  } finally {
    approvalsRedis.disconnect();
  }
  await adapter.closed;
  // Input ended (or /quit): let the answers still on their way arrive, for up to 2 minutes.
  const probe = connectRedis(redis.url, { maxRetriesPerRequest: 1 }, log);
  const deadline = Date.now() + 120_000;
  while (
    Date.now() < deadline &&
    (await probe.exists(conversationKeys({ platform: "console", chatId }).scheduled).catch(() => 0)) === 1
  ) {
    await new Promise((r) => setTimeout(r, 100));
  }
  probe.disconnect();
  await stop();
  process.exit(0);
}

await chat();
