/**
 * One `npm run chat` session for the console tests: the real {@link ConsoleAdapter} on its own
 * in-memory streams, started through the real bot (queue, worker, history) on a test Redis.
 */
import Anthropic from "@anthropic-ai/sdk";
import { PassThrough } from "node:stream";
import { afterEach } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot, type RunningBot, type StartBotOptions } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from "../fakes/anthropic.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
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
  /** Folder of the voice replies' files (default `.data/voice`). */
  voiceDir?: string;
}): Promise<ConsoleSession> {
  const { config } = options;
  const input = new PassThrough();
  const output = new CapturingStream();
  const adapter = new ConsoleAdapter({
    input,
    output,
    locale: config.BOT_LOCALE,
    log: silentLogger,
    userId: "me",
    userName: "Me",
    ...(options.voiceDir ? { voiceDir: options.voiceDir } : {}),
  });
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

/** A console session started by {@link useConsoleBot}, with the Redis and fake Messages API behind it. */
export interface ConsoleStack extends ConsoleSession {
  server: TestRedis;
  fake: FakeAnthropic;
}

/**
 * For a test file: returns a function that starts a test Redis, the strict fake Messages API
 * (with `options.fake`) and a console session on them ({@link startConsoleBot}); everything it
 * started is stopped after each test (bot, then fake, then Redis).
 */
export function useConsoleBot(): (options: {
  config: Config;
  fake?: FakeAnthropicOptions;
  decider?: StartBotOptions["decider"];
  toolbox?: ToolBox;
  voiceDir?: string;
}) => Promise<ConsoleStack> {
  const started: { server?: TestRedis; fake?: FakeAnthropic; bot?: RunningBot } = {};
  afterEach(async () => {
    await started.bot?.stop();
    await started.fake?.close();
    await started.server?.stop();
    started.bot = started.fake = started.server = undefined;
  });
  return async ({ fake: fakeOptions, ...options }) => {
    const server = (started.server = await startRedis());
    const fake = (started.fake = await startFakeAnthropic(fakeOptions));
    const session = await startConsoleBot({ ...options, redisUrl: server.url, fakeUrl: fake.url });
    started.bot = session.bot;
    return { ...session, server, fake };
  };
}
