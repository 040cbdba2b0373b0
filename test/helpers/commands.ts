/**
 * A real {@link CommandRunner} for adapter harnesses that run without Redis: the access gate gets
 * an ioredis client that never connects (`lazyConnect`), so commands that need no Redis under the
 * harness's policy (`open`, set by `testConfig`) work, and any that do fail with the runner's
 * "try again" answer.
 */
import { Redis } from "ioredis";
import { AccessGate } from "../../src/access/gate.js";
import type { CommandServices } from "../../src/commands/command.js";
import { CommandRunner } from "../../src/commands/runner.js";
import type { Config } from "../../src/config.js";
import { silentLogger, type Logger } from "../../src/log.js";
import type { ChatQueue } from "../../src/queue/producer.js";

/** A runner over `parts`; `gate` needs no Redis for `open` access checks. */
export function testCommands(
  config: Config,
  parts: Pick<CommandServices, "toolboxFor" | "resetChat"> & { log?: Logger },
): CommandRunner {
  const redis = new Redis({
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  const log = parts.log ?? silentLogger;
  const noQueue = { enqueue: () => Promise.reject(new Error("no queue in this harness")) } as unknown as ChatQueue;
  const gate = new AccessGate({ config, log, redis, queue: noQueue, reply: async () => {} });
  return new CommandRunner({
    config,
    log,
    gate,
    toolboxFor: parts.toolboxFor,
    resetChat: parts.resetChat,
    notify: () => Promise.reject(new Error("no platform to notify in this harness")),
  });
}
