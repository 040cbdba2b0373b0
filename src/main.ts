/**
 * The entry point (`npm start`): reads `.env`, validates the configuration, loads the tools,
 * starts a private redis-server when `REDIS_URL` is unset, then runs the parts of `ROLE`
 * (`all`: adapters and worker; `adapter`; `worker`). SIGTERM and SIGINT stop it gracefully:
 * adapters stop taking messages, the worker finishes or hands back its jobs, connections close,
 * the local redis-server stops, and the process exits 0. An answer still running after the
 * worker's 30 s wait, or at a second signal, is marked interrupted: done again at the next start,
 * and not counted as a crash (`ChatWorker.interrupt`).
 */
import "dotenv/config";
import { createAnthropicClient } from "./agent/client.js";
import { runAgent } from "./agent/loop.js";
import {
  configOrExit,
  toolsOrExit,
  enabledPlatforms,
  redisOrExit,
  startBot,
  stopOnSignals,
  interruptAnswers,
  type RunningBot,
} from "./app.js";
import { secretValues } from "./config.js";
import { warnMisspelledVariables } from "./config-spelling.js";
import { createLogger, registerSecrets, surviveLostOutput } from "./log.js";

async function main(): Promise<void> {
  surviveLostOutput();
  const config = configOrExit();
  registerSecrets(secretValues(config));
  const log = createLogger({ level: config.LOG_LEVEL, content: config.LOG_CONTENT === "on" });
  warnMisspelledVariables(log);
  const toolbox = await toolsOrExit(config, log);
  if (config.ROLE !== "worker" && enabledPlatforms(config).length === 0) {
    log.warn(
      "no platform token is set (TELEGRAM_BOT_TOKEN, DISCORD_TOKEN, or LINE_CHANNEL_SECRET with LINE_CHANNEL_ACCESS_TOKEN): " +
        "no message will arrive. To talk to the bot in this terminal, run `npm run chat`.",
    );
  }
  // Handlers go in before anything is started: a signal during start-up aborts it, then stops.
  const started: { redis?: Awaited<ReturnType<typeof redisOrExit>>; bot?: Promise<RunningBot> } = {};
  // A signal during start-up also ends the platform calls in flight (startBot's `signal`).
  const startup = new AbortController();
  stopOnSignals(
    async () => {
      startup.abort();
      const bot = await started.bot?.catch(() => undefined);
      await bot?.stop();
      await started.redis?.local?.stop();
    },
    log,
    undefined,
    // A second signal exits at once, the answers still running marked interrupted (not crashed) first.
    () => interruptAnswers(started.bot),
  );
  const redis = (started.redis = await redisOrExit(config, log));
  const starting = (started.bot = startBot({
    config,
    log,
    redisUrl: redis.url,
    toolbox,
    agent: config.ROLE === "adapter" ? undefined : { runAgent, client: createAnthropicClient(config) },
    // An adapter that cannot go on (a revoked token) has stopped the bot and logged why.
    onFatal: () => void (redis.local?.stop() ?? Promise.resolve()).finally(() => process.exit(1)),
    signal: startup.signal,
  }));
  try {
    await starting;
  } catch {
    // Stopped by a signal: its handler finishes the stop and exits.
    if (startup.signal.aborted) return;
    // startBot logged the cause ("start-up failed: …") before stopping what had started.
    await redis.local?.stop();
    process.exit(1);
  }
  log.info({ role: config.ROLE, tools: toolbox.names() }, "the bot is running; Ctrl-C to stop");
}

await main();
