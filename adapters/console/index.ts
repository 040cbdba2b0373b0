/**
 * The console platform: `createAdapter` / `createOutbound`, the shape every `adapters/<platform>/index.ts` exports.
 */
import type { Config } from "../../src/config.js";
import type { Logger } from "../../src/log.js";
import { ConsoleAdapter } from "./adapter.js";
import { ConsoleOutbound } from "./outbound.js";

export { ConsoleAdapter, type ConsoleAdapterOptions } from "./adapter.js";
export { ConsoleOutbound, splitText, CONSOLE_CHUNK_CHARS } from "./outbound.js";
export type { TerminalScreen } from "../../src/streaming.js";
export { ConsoleTerminal, PROMPT, type ConsoleTerminalOptions } from "./terminal.js";

/** The console adapter on stdin/stdout, speaking `config.BOT_LOCALE`. */
export function createAdapter(config: Config, log: Logger): ConsoleAdapter {
  return new ConsoleAdapter({ input: process.stdin, output: process.stdout, locale: config.BOT_LOCALE, log });
}

/** A console outbound writing to stdout (a worker normally uses the adapter's own outbound, which knows the open prompt). */
export function createOutbound(config: Config, _log: Logger): ConsoleOutbound {
  return new ConsoleOutbound({ output: process.stdout, locale: config.BOT_LOCALE });
}
export { showPendingApproval, type PendingApprovals } from "./pending.js";
export { takeChatLease, chatLeaseKey, CHAT_LEASE_TTL_MS, type ChatLease, type ChatLeaseHolder } from "./lease.js";
