/**
 * The Telegram platform module (grammy): the adapter (`adapter.ts`: polling or webhook, lease,
 * start and stop; `updates.ts`: messages, commands and button presses) and its REST-only outbound
 * half (`outbound.ts`), for `PLATFORM_MODULES` of `src/app.ts`.
 */
import type { Adapter } from "../../src/adapter.js";
import type { Config } from "../../src/config.js";
import type { Logger } from "../../src/log.js";
import { TelegramAdapter, type TelegramAdapterOptions } from "./adapter.js";
import { createApi } from "./api.js";
import { TelegramOutbound } from "./outbound.js";

export { ALLOWED_UPDATES, TelegramAdapter, type TelegramAdapterOptions } from "./adapter.js";
/** The outbound class, for callers that need its Telegram-only extras (`sendMarkdown`, `removeKeyboard`). */
export { TelegramOutbound } from "./outbound.js";

/**
 * The outbound half alone (REST only, no polling), for worker-only processes.
 * @throws {Error} when `TELEGRAM_BOT_TOKEN` is not set.
 */
export function createOutbound(config: Config, log: Logger): TelegramOutbound {
  return new TelegramOutbound(createApi(config), config, log.child({ platform: "telegram" }));
}

/**
 * The Telegram adapter. `start` resolves once polling runs (or the webhook is set and its HTTP
 * server listens on `TELEGRAM_WEBHOOK_PORT`).
 * @throws {Error} when `TELEGRAM_BOT_TOKEN` is not set.
 */
export function createAdapter(config: Config, log: Logger, options: TelegramAdapterOptions = {}): Adapter {
  return new TelegramAdapter(config, log.child({ platform: "telegram" }), options);
}
