/**
 * The LINE platform module (`@line/bot-sdk`): the adapter (`adapter.ts`: the signed webhook and
 * what each event does) and its REST-only outbound half (`outbound.ts`), for `PLATFORM_MODULES`
 * of `src/app.ts`. See `docs/line.md` for setting up a channel.
 */
import type { Adapter } from "../../src/adapter.js";
import type { Config } from "../../src/config.js";
import type { Logger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { LineAdapter } from "./adapter.js";
import { createClients } from "./api.js";
import { LineOutbound, type LineOutboundOptions } from "./outbound.js";

export { LineAdapter } from "./adapter.js";
export { LineOutbound } from "./outbound.js";

/**
 * The outbound half alone (REST only, no webhook), for worker-only processes.
 * @param parts.redis - where sent message ids are recorded and push requests counted ({@link LineOutbound.attach}).
 * @throws {Error} when `LINE_CHANNEL_ACCESS_TOKEN` is not set.
 */
export function createOutbound(
  config: Config,
  log: Logger,
  parts: { redis?: RedisClient } = {},
  options: LineOutboundOptions = {},
): LineOutbound {
  const outbound = new LineOutbound(createClients(config), config, log.child({ platform: "line" }), options);
  if (parts.redis) outbound.attach(parts.redis);
  return outbound;
}

/**
 * The LINE adapter. `start` resolves once the webhook server listens on `LINE_WEBHOOK_PORT`.
 * @throws {Error} when `LINE_CHANNEL_ACCESS_TOKEN` is not set.
 */
export function createAdapter(config: Config, log: Logger): Adapter {
  const child = log.child({ platform: "line" });
  return new LineAdapter(config, child, createClients(config));
}
