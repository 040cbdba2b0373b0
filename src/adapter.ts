/**
 * The contract between the core and a platform adapter (`adapters/<platform>/`).
 *
 * An adapter's inbound half receives platform events, decides whether the bot is addressed, and
 * turns the rest into {@link IncomingMessage} jobs through {@link AdapterContext.enqueue}.
 * Instant commands (`/tools`, `/help`, `/reset`) are answered by the adapter itself.
 * The outbound half ({@link Outbound}) is REST only and is also created in worker-only processes.
 */
import type { ApprovalDecider } from "./approvals/decision.js";
import type { Config } from "./config.js";
import type { Logger } from "./log.js";
import type { Outbound } from "./outbound.js";
import type { ConversationRef, IncomingMessage, Platform } from "./queue/incoming.js";
import type { ToolBox } from "./toolbox/toolbox.js";

/** Thrown by {@link AdapterContext.enqueue} when the message could not be queued (Redis down). */
export class EnqueueError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EnqueueError";
  }
}

/** What the core gives an adapter when it starts. */
export interface AdapterContext {
  config: Config;
  log: Logger;
  /**
   * Queues a message for a worker. Resolves once it is safely in Redis; a redelivered message
   * (same platform, chat and message id) is accepted and processed once.
   * @throws {EnqueueError} when it could not be queued: reply with a short "try again" message.
   */
  enqueue(message: IncomingMessage): Promise<void>;
  /** Forgets the chat's history (`/reset`). @throws when Redis is unreachable. */
  resetChat(chat: ConversationRef): Promise<void>;
  /** The toolbox offered in a chat of this kind, for `/tools`. */
  toolboxFor(chat: { platform: Platform; chatKind: "dm" | "group" }): ToolBox;
  /** Checks and records a button press or reaction on an approval prompt. */
  approvals: ApprovalDecider;
}

/** A platform adapter: inbound (start/stop) and its outbound half. */
export interface Adapter {
  readonly platform: Platform;
  readonly outbound: Outbound;
  /** Connects (polling, gateway, stdin) and starts producing jobs. Resolves once connected. */
  start(context: AdapterContext): Promise<void>;
  /** Stops taking new messages and disconnects. Never throws. */
  stop(): Promise<void>;
  /** True while connected to the platform (polling or gateway up); used by the health endpoint. */
  isConnected?(): boolean;
}
