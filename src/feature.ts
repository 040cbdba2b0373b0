/**
 * The contract of a feature (issue 37): one folder (`src/<feature>/feature.ts`) and one line in
 * the list (`src/features.ts`). Modelled on grammY's `bot.use(plugin)` (a plug-in brings its own
 * handlers) and on BullMQ's one processor per queue: a feature says what it adds, and
 * `src/app.ts`, the worker, `src/buttons.ts`, `src/conversations/migrate.ts` and `/reset` walk the
 * list instead of knowing each feature.
 *
 * A feature declares:
 * - {@link Feature.start}: what it starts in an adapter process (its own state `S`: a store, an
 *   actions object with a BullMQ queue of its own) and how to stop it; its commands and button
 *   presses get that state; and what of it it lends the core ({@link AdapterServices}: the
 *   decider of approval prompts, a conversation's language);
 * - {@link Feature.commands}: its commands (listed after the core's, in list order);
 * - {@link Feature.buttons}: the prefixes of its button data and the handler of a press;
 * - {@link Feature.queues}: its BullMQ queues, each with the processor a worker runs on it;
 * - {@link Feature.conversation}: the Redis data of a conversation that a conversation move (a
 *   Telegram group upgraded to a supergroup) carries over, and the keys a `/reset` clears (and,
 *   through {@link Started.beforeReset}, a line for `/reset`'s reply about what the reset closes);
 * - {@link Feature.tools}: the tools it adds to the toolbox (beyond the files of `tools/`);
 * - {@link Feature.worker}: what it starts in a worker process, and what of it it lends the answer
 *   pipeline ({@link AnswerServices}: the confirmation flow, the settings, compaction, Stop).
 *
 * This module holds the contract's types (and the shared "press again" notice); it imports no
 * feature and not the list, so a feature's folder may import it freely.
 */
import type { Job } from "bullmq";
import type { DecisionReply, DecisionRequest, DecisionResult } from "./approvals/decider.js";
import type { Command, CommandServices } from "./commands/command.js";
import type { Config } from "./config.js";
import type { ConversationStore } from "./conversations/migrate.js";
import type { HistoryStore } from "./history/store.js";
import type { Locale, Localized } from "./i18n.js";
import type { Logger } from "./log.js";
import type { ConversationRef } from "./queue/incoming.js";
import type { RedisClient } from "./redis.js";
import type { Tool } from "./toolbox/tool.js";
import type Anthropic from "@anthropic-ai/sdk";
import type { RunTracer, TraceOrigin } from "./trace/tracer.js";
import type { ToolBox } from "./toolbox/toolbox.js";
import type { UsageStore } from "./usage/store.js";
import type { AnswerServices } from "./worker/deps.js";
import type { AnswerParts } from "./worker/pipeline.js";

export type { AnswerServices } from "./worker/deps.js";

export type { ConversationStore } from "./conversations/migrate.js";

/** The notice of a press that could not be handled now (Redis unreachable…): press again. */
export const PRESS_AGAIN: Localized = {
  "zh-TW": "暫時無法處理，請稍後再按一次。",
  en: "Could not do that right now; please press again in a moment.",
};

/** A press on one of the bot's buttons, as the adapter saw it. */
export interface ButtonPress extends ConversationRef {
  /** The button's `callback_data` (Telegram), `custom_id` (Discord) or postback data (LINE). */
  data: string;
  /** Who pressed (same id scheme as `IncomingMessage.userId`). */
  userId: string;
  /** The adapter's locale for the notice (`BOT_LOCALE`, a Discord client's language); the conversation's `/settings` language wins. */
  locale: Locale;
  /**
   * Whether the pressed message is in a private chat or a group: a `/memory` delete button deletes
   * in that scope (in a group only for its administrators); without it such a press is refused.
   * Settings buttons need it too (absent: treated as a group).
   */
  chatKind?: "dm" | "group";
  /**
   * Whether the presser administers the group the pressed message is in (Telegram:
   * `getChatMember`). Only asked when an approval requested on behalf of that group (requester
   * `chat:<chatId>`) is pressed by someone else. Optional: without it only the requester decides.
   */
  isGroupAdmin?: () => Promise<boolean>;
  /** Whether the bot receives the group's messages that do not address it (see `CommandInvocation.readsAllGroupMessages`). */
  readsAllGroupMessages?: () => Promise<boolean>;
  /**
   * The press's own reply token (LINE postback events carry one): an accepted approval's answer
   * goes out with it while it is valid (`DecisionRequest.reply` of `src/approvals/decision.ts`).
   */
  reply?: DecisionReply;
}

/** A reply with buttons (the same shape as a command's reply with buttons, `CommandReply`). */
export interface ButtonListing {
  /** Markdown. */
  text: string;
  buttons?: { label: string; data: string }[];
}

/** What the adapter shows after a press. */
export interface ButtonAnswer {
  /** The name of the feature whose button it was ({@link Feature.name}); `unknown` for data that is none of the bot's. */
  kind: string;
  /** The short notice for the presser (Telegram `answerCallbackQuery`, at most 200 characters; Discord an ephemeral reply). */
  notice: string;
  /** Edit the pressed message to this plain text, without buttons (a reminder done or snoozed). */
  closeText?: string;
  /** Take the pressed button out of its message (a cancelled `/reminders` entry, a revoked grant). */
  dropButton?: boolean;
  /** Take every button off the pressed message at once (an accepted approval: the worker edits in the outcome). */
  removeButtons?: boolean;
  /** Show this in place of the pressed message, buttons included (a settings listing after a change). */
  replaceWith?: ButtonListing;
  /**
   * The pressed list as it is now (a `/reminders` or `/tasks` list after a cancel, pause or resume:
   * the cancelled item gone, a paused task with its Resume button, the other items' buttons kept).
   * Telegram edits the pressed message to it (`editMessageText`), or, when the list is split over
   * several messages, only its buttons (`editMessageReplyMarkup`); Discord updates the pressed
   * ephemeral list with the notice on top (interaction response type 7, `UPDATE_MESSAGE`); LINE,
   * which cannot edit a message, replies with the notice and the list with its quick-reply buttons.
   * Takes the place of {@link dropButton}.
   */
  listing?: ButtonListing;
  /**
   * True when the press could not be handled now (Redis unreachable): `notice` says to press again; an adapter may
   * word it as its other "try again" answers.
   */
  failed?: boolean;
}

/** What the core lends every press handler. */
export interface PressCore {
  config: Config;
  log: Logger;
  /** Checks and records a decision on an approval prompt (the confirmation flow, `src/approvals/`). */
  decide(request: DecisionRequest): Promise<DecisionResult>;
}

/** A feature's buttons: the data prefixes it owns and what a press on one does. */
export interface FeatureButtons<S> {
  /** Prefixes of the button data the feature owns (e.g. `rm:`); no two features share one. */
  readonly prefixes: readonly string[];
  /**
   * Handles a press on one of the feature's buttons, in `locale` (the conversation's language, else
   * the adapter's), with the feature's state. A throw is logged and answered with "press again".
   */
  press(press: ButtonPress, locale: Locale, own: S, core: PressCore): Promise<ButtonAnswer>;
}

/** A feature's command: a {@link Command} whose handler also gets the feature's state. */
export interface FeatureCommand<S> extends Omit<Command, "run"> {
  /** The reply (see `Command.run`), with the feature's state `own`. */
  run(invocation: Parameters<Command["run"]>[0], services: CommandServices, own: S): ReturnType<Command["run"]>;
}

/** What a feature starts with in an adapter process. */
export interface FeatureParts {
  config: Config;
  log: Logger;
  /** The adapter side's Redis connection (fail-fast). */
  redis: RedisClient;
  /** BullMQ key prefix (tests, several bots on one Redis). */
  prefix?: string | undefined;
  /** The conversations' histories (`/context` reads one). */
  history: HistoryStore;
}

/**
 * What features lend the core of an adapter process ({@link Started.lends}): each part by one
 * feature at most (start-up refuses two); a part no started feature lends is done without, as each says.
 */
export interface AdapterServices {
  /**
   * Checks and records a decision on an approval prompt (the approvals feature: its decider queues
   * an accepted one on the `decisions` queue). Without it every decision is answered as not found.
   * @throws when Redis is unreachable.
   */
  decide(request: DecisionRequest): Promise<DecisionResult>;
  /**
   * The language set in a conversation (the settings feature), or undefined when none is: the
   * adapter's stands. Without it every conversation speaks the adapter's.
   * @throws when Redis is unreachable.
   */
  languageOf(conversation: ConversationRef): Promise<Locale | undefined>;
  /**
   * Whether a group message that does not address the bot is for it all the same (the settings
   * feature: the group's replies set to `all`); false in a private chat and when it cannot be read
   * (logged). Without it: false. Never throws.
   */
  repliesToAll(message: ConversationRef & { chatKind: "dm" | "group" }): Promise<boolean>;
}

/**
 * Where a `/reset` is asked, as a feature's {@link Started.beforeReset} needs to know it: whether
 * the platform leaves a sent message as it was sent (`Outbound.promptsStayAsSent`: LINE cannot
 * edit a message, so a prompt the reset closes cannot say so itself).
 */
export interface ResetPlace {
  promptsStayAsSent: boolean;
}

/** A started feature's state, what it lends the core, and how to stop it. */
export interface Started<S> {
  state: S;
  /** The parts of the core's adapter side it provides (none of another feature's). */
  lends?: Partial<AdapterServices>;
  /**
   * Called by `/reset` in the adapter process just before it forgets `conversation` (its
   * transaction; `resetConversation` of `src/conversations/reset.ts`): what of the feature's the
   * reset will close there that the person would not see closed otherwise, as one line for the
   * command's reply (the approvals feature: the pending confirmations, where their prompts stay
   * as sent), or undefined when nothing. It must not change anything itself (the reset may still
   * fail after it). A throw is logged by the core and counts as undefined: the reset goes on.
   */
  beforeReset?(conversation: ConversationRef, place: ResetPlace): Promise<Localized | undefined>;
  /** Closes what the feature opened (its queues), not the Redis connection. Never throws. */
  close?(): Promise<void>;
}

/** What a feature starts with in a worker process ({@link Feature.worker}). */
export interface WorkerParts {
  config: Config;
  log: Logger;
  /** BullMQ's connection of the worker (`maxRetriesPerRequest: null`): the feature's own queues and listeners. */
  bullRedis: RedisClient;
  /** The history's Redis (`WorkerDeps.store`, else the same as `bullRedis`): the feature's records, the tools. */
  redis: RedisClient;
  /** BullMQ key prefix (tests, several bots on one Redis). */
  prefix?: string | undefined;
  history: HistoryStore;
  /** Every loaded tool. */
  toolbox: ToolBox;
  /** The Anthropic client of the worker. */
  client: Anthropic;
  /** Where model usage is recorded (and the budgets checked), when it is. */
  usage?: UsageStore | undefined;
  /** A tracer per run, when runs are traced. */
  tracerFor?: ((runId: string, chat: string, origin?: TraceOrigin) => RunTracer) | undefined;
}

/** A feature's worker side once started: what it lends the answer pipeline, and how to stop it. */
export interface WorkerStarted {
  /** The parts of the answer pipeline it provides (none of another feature's). */
  lends: Partial<AnswerServices>;
  /** Closes what it opened (its queues, its listener's connection), not the worker's connections. Never throws. */
  close?(): Promise<void>;
}

/** What a queue's processor is built with in a worker process. */
export interface QueueParts {
  /** The worker's answer parts (history, outbounds, toolbox, the agent loop, usage, tracing …). */
  answer: AnswerParts;
  /** BullMQ's connection of the worker (`maxRetriesPerRequest: null`). */
  bullRedis: RedisClient;
  /** BullMQ key prefix (tests, several bots on one Redis). */
  prefix?: string | undefined;
}

/** A queue's processor in one worker process. */
export interface QueueProcessor {
  /** Processes one job (BullMQ's processor; `token` is the job's lock token). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each queue's jobs carry their own data
  process(job: Job<any>, token?: string): Promise<unknown>;
  /** Called when a job failed (BullMQ `failed`): log it as it deserves. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each queue's jobs carry their own data
  failed?(job: Job<any> | undefined, error: Error): void;
  /** Closes what the processor opened (its own queues); never throws. */
  close?(): Promise<void>;
}

/** A feature's BullMQ queue: its name and the processor a worker runs on it (BullMQ's one processor per queue). */
export interface FeatureQueue {
  /** The queue's name (`src/queue/keys.ts` and the feature's own modules name them). */
  readonly name: string;
  /** Jobs of this queue run at once in one worker process; default `WORKER_CONCURRENCY`. */
  concurrency?(config: Config): number;
  /** Stalls (the worker process died) after which BullMQ fails a job; default BullMQ's 1. */
  readonly maxStalledCount?: number;
  /**
   * True for the worker's short lock (`LOCK_DURATION_MS`, `STALLED_INTERVAL_MS` of
   * `src/worker/worker.ts`): a dead worker's job is taken over within seconds. Default BullMQ's 30 s.
   */
  readonly fastTakeOver?: boolean;
  /** Builds the processor in a worker process; undefined when this worker does not run the queue. */
  processor(parts: QueueParts): QueueProcessor | undefined;
}

/** A feature's data of a conversation. */
export interface FeatureConversation {
  /** Its stores that a conversation move carries to the new chat id. */
  readonly stores?: readonly ConversationStore[];
  /**
   * The keys `/reset` deletes with the history (in the same `MULTI`: they must carry the
   * conversation's hash tag, `conversationTag`, so that they share its Redis Cluster slot).
   */
  reset?(conversation: ConversationRef): string[];
}

/** A feature: see the module comment. `S` is what {@link start} gives its commands and buttons. */
export interface Feature<S = unknown> {
  /** Its name, lower case (`reminders`); also the `kind` of its {@link ButtonAnswer}s. */
  readonly name: string;
  /** Starts the feature in an adapter process; without it, its state is undefined. */
  start?(parts: FeatureParts): Started<S> | Promise<Started<S>>;
  /** Its commands, in menu order. */
  readonly commands?: readonly FeatureCommand<S>[];
  /** Its buttons, if it has any. */
  readonly buttons?: FeatureButtons<S>;
  /** Its queues, each with its processor. */
  readonly queues?: readonly FeatureQueue[];
  /** Its data of a conversation, if it keeps any. */
  readonly conversation?: FeatureConversation;
  /** The tools it adds to the toolbox under this configuration (beyond the files of `tools/`). */
  tools?(config: Config): Tool[];
  /**
   * Starts the feature in a worker process (before its queues' processors are built, which read
   * what it lends through `QueueParts.answer`); without it the feature lends the answers nothing.
   */
  worker?(parts: WorkerParts): WorkerStarted;
}

/**
 * Types a feature with its own state `S` (its `start` returns it; its commands and buttons get
 * it). A `Feature<S>` is a member of the list (`Feature<unknown>`) as it is.
 */
export function defineFeature<S>(feature: Feature<S>): Feature<S> {
  return feature;
}

/**
 * The most buttons one list message (`/reminders`, `/tasks`) carries on `platform`: LINE shows at
 * most 13 quick-reply buttons on a message (Messaging API, quick reply `items`: max 13), Discord at
 * most 25 components (5 action rows of 5 buttons;
 * https://discord.com/developers/docs/components/reference#action-row); Telegram takes more, and
 * gets Discord's 25 so that the lists read the same. Items past the limit are listed without
 * buttons, and the list says so.
 */
export function listButtonLimit(platform: string): number {
  return platform === "line" ? 13 : 25;
}
