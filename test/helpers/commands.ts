/**
 * A real {@link CommandRunner} for adapter harnesses that run without Redis: the access gate gets
 * an ioredis client that never connects (`lazyConnect`), so commands that need no Redis under the
 * harness's policy (`open`, set by `testConfig`) work, and any that do fail with the runner's
 * "try again" answer. {@link testAdapterParts} gives such a harness's adapter context the core's
 * button routing (`src/buttons.ts`) over the approvals feature, with the harness's own decider.
 */
import { Redis } from "ioredis";
import { AccessGate } from "../../src/access/gate.js";
import type { AdapterContext } from "../../src/adapter.js";
import type { ApprovalDecider } from "../../src/approvals/decider.js";
import { approvalsFeature } from "../../src/approvals/feature.js";
import { grantStoreFor } from "../../src/approvals/grants.js";
import { pressButton } from "../../src/buttons.js";
import type { CommandServices } from "../../src/commands/command.js";
import { CommandRunner } from "../../src/commands/runner.js";
import type { Config } from "../../src/config.js";
import { FEATURES, runningFeatures, withState } from "../../src/features.js";
import { silentLogger, type Logger } from "../../src/log.js";
import type { ChatQueue } from "../../src/queue/producer.js";

/** An ioredis client that never connects: every command fails at once. */
function offlineRedis(): Redis {
  return new Redis({
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
}

/** A runner over `parts`; `gate` needs no Redis for `open` access checks. No conversation has a language set. */
export function testCommands(
  config: Config,
  parts: Pick<CommandServices, "toolboxFor" | "resetConversation"> & { log?: Logger },
): CommandRunner {
  const redis = offlineRedis();
  const log = parts.log ?? silentLogger;
  const noQueue = { enqueue: () => Promise.reject(new Error("no queue in this harness")) } as unknown as ChatQueue;
  const gate = new AccessGate({ config, log, redis, queue: noQueue, reply: async () => {} });
  return new CommandRunner({
    config,
    log,
    gate,
    toolboxFor: parts.toolboxFor,
    resetConversation: parts.resetConversation,
    notify: () => Promise.reject(new Error("no platform to notify in this harness")),
    languageOf: async () => undefined,
  });
}

/**
 * The press, decide and replies-to-all parts of a harness's adapter context: presses routed by the
 * core over the approvals feature (its grants on a Redis that never connects), decisions by
 * `decider` (read at each call, so a test may swap its `decide`); no group replies to all.
 */
export function testAdapterParts(
  config: Config,
  decider: ApprovalDecider,
  commands: CommandRunner,
  log: Logger = silentLogger,
): Pick<AdapterContext, "press" | "decide" | "repliesToAll"> {
  const features = runningFeatures([withState(approvalsFeature, grantStoreFor(offlineRedis(), config, log))]);
  const decide: AdapterContext["decide"] = (request) => decider.decide(request);
  return {
    decide,
    repliesToAll: async () => false,
    press: (press) => pressButton(features, { config, log, decide, languageOf: (c) => commands.languageOf(c) }, press),
  };
}

/**
 * The commands of every feature in `FEATURES` on `platform`, in menu order (the order of the list),
 * by name; without `admin`, those for everyone (the menus leave admin commands out). Tests of a
 * menu build its feature part from this, so adding a feature needs no test edit.
 */
export function featureCommandNames(platform: "telegram" | "discord" | "line", admin = true): string[] {
  return FEATURES.flatMap((f) => f.commands ?? [])
    .filter((c) => (!c.platforms || c.platforms.includes(platform)) && (admin || c.access !== "admin"))
    .map((c) => c.name);
}

/** The commands of the bot's own features (those of `src/features.ts` today), in menu order: each menu lists them in this order. */
export const KNOWN_FEATURE_COMMANDS = [
  "stop",
  "context",
  "compact",
  "settings",
  "persona",
  "model",
  "reminders",
  "tasks",
  "permissions",
  "memory",
  "forget",
] as const;
