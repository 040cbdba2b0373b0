/**
 * One `npm run chat` session for the console tests: the real {@link ConsoleAdapter} on its own
 * in-memory streams, started through the real bot (queue, worker, history) on a test Redis.
 */
import Anthropic from "@anthropic-ai/sdk";
import { PassThrough } from "node:stream";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot, type RunningBot, type StartBotOptions } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { CapturingStream, todoTools } from "../worker/harness.js";

/** A running console session: the bot, its adapter, what it printed, and a way to type a line. */
export interface ConsoleSession {
  bot: RunningBot;
  adapter: ConsoleAdapter;
  input: PassThrough;
  output: CapturingStream;
  /** Types `line` followed by Enter. */
  type: (line: string) => void;
}

/**
 * Starts the bot with one console adapter (user "me"/"Me") and the todo toolbox.
 * @param options.redisUrl the test Redis URL.
 * @param options.config the bot configuration (locale, ROLE, STREAMING…).
 * @param options.client the Anthropic client; or `fakeUrl` for a client on the fake Messages API (key "test-key", no retries).
 * @param options.decider passed through to {@link startBot}.
 * @param options.toolbox the toolbox (default the todo tools).
 * @returns the session; the caller stops `bot`.
 */
export async function startConsoleBot(options: {
  redisUrl: string;
  config: Config;
  client?: Anthropic;
  fakeUrl?: string;
  decider?: StartBotOptions["decider"];
  toolbox?: ToolBox;
}): Promise<ConsoleSession> {
  const { config } = options;
  const input = new PassThrough();
  const output = new CapturingStream();
  const adapter = new ConsoleAdapter({ input, output, locale: config.BOT_LOCALE, log: silentLogger, userId: "me", userName: "Me" });
  const client = options.client ?? new Anthropic({ apiKey: "test-key", baseURL: options.fakeUrl, maxRetries: 0 });
  const bot = await startBot({
    config,
    log: silentLogger,
    redisUrl: options.redisUrl,
    toolbox: options.toolbox ?? todoTools(),
    adapters: [adapter],
    agent: { runAgent, client },
    ...(options.decider ? { decider: options.decider } : {}),
  });
  return { bot, adapter, input, output, type: (line) => input.write(`${line}\n`) };
}
