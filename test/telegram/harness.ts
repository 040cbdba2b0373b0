/**
 * Test harness for the Telegram adapter: the fake Bot API, the real adapter (grammy) pointed at
 * it, and a small in-test AdapterContext (an array of queued messages, a real ToolBox, a
 * Map-backed ApprovalDecider).
 */
import { z } from "zod";
import { EnqueueError, type AdapterContext, type AdapterFatalError } from "../../src/adapter.js";
import type { ApprovalDecider, DecisionRequest, DecisionResult } from "../../src/approvals/decider.js";
import { silentLogger, type Logger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import type { ConversationRef, IncomingMessage } from "../../src/queue/incoming.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { createAdapter, type TelegramAdapter, type TelegramAdapterOptions } from "../../adapters/telegram/index.js";
import { testAdapterParts, testCommands } from "../helpers/commands.js";
import { testConfig } from "../helpers/config.js";
import { FakeTelegram } from "../fakes/telegram.js";

/** Three small tools: two tags, one dangerous. */
export const testToolbox = new ToolBox([
  defineTool({
    name: "get_time",
    description: "Tells the current time in a time zone.\nUse when the user asks what time it is.",
    tags: ["info"],
    input: z.object({ tz: z.string().optional() }),
    run: () => "12:00",
  }),
  defineTool({
    name: "add_todo",
    description: "Adds an item to the user's todo list.",
    tags: ["todo"],
    input: z.object({ text: z.string() }),
    run: () => "ok",
  }),
  defineTool({
    name: "delete_todo",
    description: "Deletes a todo by id. Asks the user first.",
    tags: ["todo"],
    dangerous: true,
    input: z.object({ id: z.number() }),
    run: () => "deleted",
  }),
]);

/** A Map-backed decider, ordered as the store's: one approval per id, first valid decision wins; a decided one is said so to anyone. */
export class MapDecider implements ApprovalDecider {
  readonly approvals = new Map<string, { requesterId: string; requesterName: string; decided?: boolean }>();
  readonly accepted: DecisionRequest[] = [];
  /** When true, decide throws like a Redis outage. */
  failing = false;
  async decide(request: DecisionRequest): Promise<DecisionResult> {
    if (this.failing) throw new Error("connect ECONNREFUSED /tmp/redis.sock");
    const a = this.approvals.get(request.approvalId);
    if (!a) return { status: "not_found" };
    if (a.decided) return { status: "already_decided" };
    if (a.requesterId !== request.deciderId) return { status: "not_requester", requesterName: a.requesterName };
    a.decided = true;
    this.accepted.push(request);
    return { status: "accepted", approve: request.approve };
  }
}

/** A running adapter against a fake Bot API. */
export interface Harness {
  tg: FakeTelegram;
  adapter: TelegramAdapter;
  queued: IncomingMessage[];
  resets: ConversationRef[];
  decider: MapDecider;
  /** When true, enqueue throws EnqueueError (Redis down). */
  failEnqueue: { on: boolean };
  /** Errors the adapter reported through `context.fatal`. */
  fatal: AdapterFatalError[];
  /** The context the adapter answers through (a test may wrap one of its parts, e.g. to hold `enqueue`). */
  context: AdapterContext;
  stop(): Promise<void>;
}

/** More of {@link startHarness}'s set-up. */
export interface HarnessExtras {
  /** The context's Redis connection: with it, long polling takes the polling lease (`lease.ts`). */
  redis?: RedisClient;
  /** Called with the adapter before `start` (e.g. to add a grammy API transformer). */
  beforeStart?: (adapter: TelegramAdapter) => void;
}

/** Starts the fake and the adapter (long polling unless `env` sets a webhook). */
export async function startHarness(
  env: Record<string, string> = {},
  tg?: FakeTelegram,
  log: Logger = silentLogger,
  options: TelegramAdapterOptions = {},
  extra: HarnessExtras = {},
): Promise<Harness> {
  const fake = tg ?? (await FakeTelegram.start());
  const config = testConfig({ TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_ROOT: fake.apiRoot, ...env });
  const adapter = createAdapter(config, log, options) as TelegramAdapter;
  const fatal: AdapterFatalError[] = [];
  const queued: IncomingMessage[] = [];
  const resets: ConversationRef[] = [];
  const decider = new MapDecider();
  const failEnqueue = { on: false };
  const resetConversation = async (chat: ConversationRef) => {
    resets.push(chat);
    return [];
  };
  const commands = testCommands(config, { toolboxFor: () => testToolbox, resetConversation });
  const context: AdapterContext = {
    config,
    log: silentLogger,
    async enqueue(message) {
      if (failEnqueue.on) throw new EnqueueError("redis down");
      queued.push(message);
    },
    commands,
    resetConversation,
    toolboxFor: () => testToolbox,
    ...testAdapterParts(config, decider, commands),
    fatal: (error) => fatal.push(error),
    ...(extra.redis ? { redis: extra.redis } : {}),
  };
  extra.beforeStart?.(adapter);
  await adapter.start(context);
  return {
    tg: fake,
    adapter,
    queued,
    resets,
    decider,
    failEnqueue,
    fatal,
    context,
    async stop() {
      await adapter.stop();
      if (!tg) await fake.stop();
    },
  };
}
