/**
 * The contract between the core and a platform adapter (`adapters/<platform>/`).
 *
 * An adapter's inbound half receives platform events, decides whether the bot is addressed, and
 * turns the rest into {@link IncomingMessage} jobs through {@link AdapterContext.enqueue}.
 * Instant commands (`/tools`, `/help`, `/reset`) are answered by the adapter itself.
 * The outbound half ({@link Outbound}) is REST only and is also created in worker-only processes.
 */
import type { RedisClient } from "./redis.js";
import type { DecisionRequest, DecisionResult } from "./approvals/decider.js";
import type { ButtonAnswer, ButtonPress } from "./feature.js";
import type { CommandRunner } from "./commands/runner.js";
import type { Config } from "./config.js";
import type { Localized } from "./i18n.js";
import type { Logger } from "./log.js";
import type { Outbound } from "./outbound.js";
import type { ConversationRef, IncomingMessage, Platform } from "./queue/incoming.js";
import type { ToolBox } from "./toolbox/toolbox.js";

/** Thrown by {@link AdapterContext.enqueue} when the message could not be queued; defined in `src/queue/errors.ts`. */
export { EnqueueError } from "./queue/errors.js";

/**
 * The short "try again" answer every adapter gives when a message could not be queued
 * ({@link AdapterContext.enqueue} threw: Redis unreachable) or, on Discord, a press or decision
 * could not be recorded: one text on every platform.
 */
export const TRY_AGAIN_LATER: Localized = {
  "zh-TW": "抱歉，我現在暫時無法處理，請稍後再試一次。",
  en: "Sorry, I can't handle that right now. Please try again in a moment.",
};

/**
 * A platform refused the bot for a reason only the operator can fix: a rejected token (Telegram
 * 401, Discord `TokenInvalid`), refused gateway intents. The message names the variable and what to
 * do, and holds no secret; it is logged as it is, without a library stack.
 */
export class AdapterFatalError extends Error {
  constructor(
    /** The platform that refused. */
    readonly platform: Platform,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "AdapterFatalError";
  }
}

/** What the core gives an adapter when it starts. */
export interface AdapterContext {
  config: Config;
  log: Logger;
  /**
   * Hands a message to the access gate (`src/access/gate.ts`): access policy, rate limit, budgets
   * and queue cap; a refusal is answered by the gate itself (or dropped silently where the policy
   * says so), otherwise the message is queued for a worker. Resolves once decided (and, when
   * accepted, safely in Redis); a redelivered message (same platform, chat and message id) is
   * accepted and processed once.
   * @throws {EnqueueError} when it could not be checked or queued (Redis down): reply with
   *   {@link TRY_AGAIN_LATER}.
   */
  enqueue(message: IncomingMessage): Promise<void>;
  /**
   * The adapter side's Redis connection (fail-fast), for coordination between adapter processes
   * (the Telegram polling lease). Optional: without it such coordination is off.
   */
  redis?: RedisClient;
  /** Runs a command (`/help`, `/tools`, `/reset`, `/usage`, `/approve`, `/enable`, `/disable` …); see `src/commands/`. */
  commands: CommandRunner;
  /**
   * Forgets one conversation (`/reset`: its history and every feature's reset keys,
   * `src/conversations/reset.ts`): the chat, or only the Telegram topic when the ref has a
   * `topicId`.
   * @returns the features' lines about what the reset closed (`CommandServices.resetConversation`).
   * @throws when Redis is unreachable.
   */
  resetConversation(conversation: ConversationRef): Promise<Localized[]>;
  /**
   * Optional: moves a conversation's data to the chat's new id (a Telegram group upgraded to a
   * supergroup: the service messages `migrate_to_chat_id` / `migrate_from_chat_id`); see
   * `src/conversations/migrate.ts`. Idempotent. @throws when Redis is unreachable.
   */
  migrateConversation?(from: ConversationRef, to: ConversationRef): Promise<void>;
  /** The toolbox offered in a chat of this kind, for `/tools`. */
  toolboxFor(chat: { platform: Platform; chatKind: "dm" | "group" }): ToolBox;
  /**
   * Whether a group message that does not address the bot is for it all the same (the group's
   * replies set to `all`, `/settings`); false in a private chat and when it cannot be read (logged).
   */
  repliesToAll(message: ConversationRef & { chatKind: "dm" | "group" }): Promise<boolean>;
  /**
   * Handles a press on one of the bot's buttons (routed by its data's prefix to the feature that
   * owns it, `src/buttons.ts`) and says what to show. Never throws.
   */
  press(press: ButtonPress): Promise<ButtonAnswer>;
  /**
   * Checks and records a decision on an approval prompt made otherwise than by a button (a ✅/❌
   * reaction on Discord, a typed y/n/a in the console).
   * @throws when Redis is unreachable.
   */
  decide(request: DecisionRequest): Promise<DecisionResult>;
  /**
   * Telegram albums (`src/media/album.ts`): records an album item (a message with `mediaGroupId`)
   * and says whether to queue it: true only for the album's first item that addresses the bot, so
   * an album is one message for the gate and the worker. Optional: without it every addressing
   * item is queued on its own. @throws when Redis is unreachable.
   */
  albums?: { add(message: IncomingMessage, addressed: boolean): Promise<boolean> };
  /**
   * Reports that the adapter stopped for good after it had started (e.g. Telegram answered 401 to
   * `getUpdates`: the token was revoked). The core logs the error, the bot stops and the process
   * exits non-zero.
   * Optional: without it the adapter only logs the error.
   */
  fatal?(error: AdapterFatalError): void;
}

/** A platform adapter: inbound (start/stop) and its outbound half. */
export interface Adapter {
  readonly platform: Platform;
  readonly outbound: Outbound;
  /**
   * Connects (polling, gateway, stdin) and starts producing jobs. Resolves once connected.
   * A {@link stop} call while this is pending aborts the platform calls in flight, and this rejects.
   * @throws {AdapterFatalError} when the platform refuses the bot's credentials or settings.
   */
  start(context: AdapterContext): Promise<void>;
  /** Stops taking new messages and disconnects; aborts a pending {@link start}. Never throws. */
  stop(): Promise<void>;
  /** True while connected to the platform (polling or gateway up); used by the health endpoint. */
  isConnected?(): boolean;
  /**
   * The process's start-up failed after this adapter had started (another adapter or the health
   * server failed): undo what {@link start} changed on the platform beyond this process (Telegram:
   * `deleteWebhook`, so polling adapters of the same bot are not answered 409). Called before
   * {@link stop}. Never throws.
   */
  abandon?(): Promise<void>;
}
