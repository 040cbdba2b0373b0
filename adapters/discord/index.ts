/**
 * The Discord platform module (discord.js v14): the adapter (`adapter.ts`: gateway, shards,
 * start and stop; `messages.ts`: messages and approval reactions; `interactions.ts`: slash commands
 * and buttons) and its REST-only outbound half (`outbound.ts`), for `PLATFORM_MODULES` of `src/app.ts`.
 */
import type { Adapter } from "../../src/adapter.js";
import type { Config } from "../../src/config.js";
import type { Logger } from "../../src/log.js";
import type { Outbound } from "../../src/outbound.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "./adapter.js";
import { createRest, DiscordOutbound } from "./outbound.js";

export { DISCORD_INTENTS, DiscordAdapter, shardOptions, type DiscordAdapterOptions } from "./adapter.js";
export { DEFER_AFTER_MS, slashCommands } from "./interactions.js";
export { tryAgain } from "./messages.js";
export { DiscordOutbound, NO_MENTIONS } from "./outbound.js";
export { splitMessage, DISCORD_MESSAGE_LIMIT } from "./split.js";

/**
 * Creates the REST-only outbound half (for worker-only processes too).
 * @throws {Error} when `DISCORD_TOKEN` is not set.
 */
export function createOutbound(config: Config, log: Logger): Outbound {
  return new DiscordOutbound(createRest(config), config, log);
}

/**
 * Creates the Discord adapter. Nothing connects until {@link Adapter.start}.
 * @throws {Error} when `DISCORD_TOKEN` is not set.
 */
export function createAdapter(config: Config, log: Logger, options: DiscordAdapterOptions = {}): Adapter {
  return new DiscordAdapter(config, log, options);
}
