/**
 * Wiring of the approval flow into a process (by the approvals feature, `feature.ts`): the worker
 * side (the flow the worker calls, the expiry scheduler) and the adapter side (the decider buttons
 * and reactions call). Both sides
 * share the Redis records and the `decisions` queue, so any process can resolve any approval.
 */
import { Queue } from "bullmq";
import type { RedisClient } from "../redis.js";
import { resumeAgent } from "../agent/loop.js";
import { alwaysAllowMs, type Config } from "../config.js";
import type { HistoryStore } from "../history/store.js";
import type { Logger } from "../log.js";
import { bullPrefix, DECISIONS_QUEUE, RESETS_CHANNEL } from "../queue/keys.js";
import { z } from "zod";
import { conversationKey, PLATFORMS, type ConversationRef } from "../queue/incoming.js";
import { decodeRecord } from "../records.js";
import { nullRunTracer, type RunTracer } from "../trace/tracer.js";
import { runDeps, type RunParts } from "../worker/context.js";
import type { ApprovalDecider } from "./decider.js";
import { ApprovalFlow } from "./flow.js";
import { bullmqTelemetry } from "../telemetry/otel.js";
import { grantStoreFor } from "./grants.js";
import { decisionQueueHooks } from "./jobs.js";
import { ApprovalStore } from "./store.js";

/** A part of the approval wiring: what it offers and how to close its queue. */
interface Closable {
  /** Closes the part's BullMQ queue (not the Redis connection). Never throws. */
  close(): Promise<void>;
}

function decisionsQueue(redis: RedisClient, prefix: string | undefined): Queue {
  const queue = new Queue(DECISIONS_QUEUE, {
    connection: redis,
    prefix: bullPrefix(redis, DECISIONS_QUEUE, prefix),
    ...bullmqTelemetry(),
  });
  queue.on("error", () => {}); // connection problems are logged once by connectRedis
  return queue;
}

/**
 * The decider for adapters: checks a press or reaction in Redis (exists, not expired, the
 * requester, first decision wins) and queues the accepted decision on the `decisions` queue; and
 * `pendingBeforeReset`, how many pending approvals of a conversation a `/reset` now would close
 * (`ApprovalStore.pendingBeforeReset`; throws when Redis is unreachable).
 */
export function approvalDecider(parts: {
  config: Config;
  redis: RedisClient;
  prefix?: string;
  log: Logger;
}): ApprovalDecider & Closable & { pendingBeforeReset(conversation: ConversationRef): Promise<number> } {
  const queue = decisionsQueue(parts.redis, parts.prefix);
  const hooks = decisionQueueHooks(queue);
  const store = new ApprovalStore(parts.redis, {
    timeoutMs: parts.config.CONFIRM_TIMEOUT_SECONDS * 1000,
    onDecision: hooks.onDecision,
    onReset: hooks.expireNow,
    grantMs: alwaysAllowMs(parts.config),
    log: parts.log,
  });
  return {
    decide: (request) => store.decide(request),
    pendingBeforeReset: (conversation) => store.pendingBeforeReset(conversation),
    close: () => queue.close().catch(() => {}),
  };
}

/** What {@link approvalFlow} needs from the worker. */
export interface ApprovalFlowParts extends RunParts {
  log: Logger;
  /** The conversations' Redis (the history's), where pending hints are written (`ApprovalStoreOptions.hints`). Default none. */
  hints?: RedisClient;
  /** BullMQ key prefix of the `decisions` queue (default BullMQ's). */
  prefix?: string;
  history: HistoryStore;
  tracerFor?: (runId: string, chat: string) => RunTracer;
}

/**
 * The worker's approval flow over the Redis store and the `decisions` queue (expiry jobs are added
 * there; decisions are added by the adapters' {@link approvalDecider}), with "always allow" grants.
 * The worker calls the flow itself (`begin`, `supersedePending`, and the decision jobs' take and
 * compute), and closes a conversation's open approvals when a `/reset` is announced ({@link RESETS_CHANNEL});
 * `close` closes the queue and that listener's own connection (not the Redis connection).
 *
 * @param parts.redis - the worker's connection (`maxRetriesPerRequest: null`).
 */
export function approvalFlow(parts: ApprovalFlowParts): { flow: ApprovalFlow } & Closable {
  const { config, log, redis } = parts;
  const queue = decisionsQueue(redis, parts.prefix);
  const jobs = decisionQueueHooks(queue);
  const store = new ApprovalStore(redis, {
    timeoutMs: config.CONFIRM_TIMEOUT_SECONDS * 1000,
    onDecision: jobs.onDecision,
    onReset: jobs.expireNow,
    grantMs: alwaysAllowMs(config),
    log,
    ...(parts.hints ? { hints: parts.hints } : {}),
  });
  const flow = new ApprovalFlow({
    store,
    grants: grantStoreFor(redis, config, log),
    agent: { resumeAgent },
    // Runs without a model call (the prompt's description, a superseded run's closing).
    agentDeps: (message) => {
      const tracer =
        parts.tracerFor?.(`${conversationKey(message)}:${message.messageId}:approval`, conversationKey(message)) ??
        nullRunTracer;
      return { ...runDeps(parts, message, { tracer, log: log.child({ chat: conversationKey(message) }) }), tracer };
    },
    appendHistory: (chat, messages, tag, resets) => parts.history.append(chat, messages, tag, undefined, resets),
    scheduleExpiry: jobs.scheduleExpiry,
    log,
  });
  const resets = closeOnReset(redis, store, log);
  return { flow, close: async () => void (await Promise.all([queue.close().catch(() => {}), resets.close()])) };
}

/** A `/reset` announcement on {@link RESETS_CHANNEL}: the conversation. */
const ResetNoticeSchema = z.object({
  platform: z.enum(PLATFORMS),
  chatId: z.string().min(1).max(128),
  topicId: z.string().min(1).max(32).optional(),
});

/**
 * Listens on {@link RESETS_CHANNEL} (its own connection, a duplicate of `redis`) and closes the
 * open approvals of each conversation announced there (`ApprovalStore.closeForReset`: its
 * `onReset` runs their expiry jobs now, and the worker that takes one closes the prompt as
 * reset). Every worker listens; each approval is closed once. A failure is logged, never thrown.
 */
function closeOnReset(redis: RedisClient, store: ApprovalStore, log: Logger): Closable {
  const subscriber = redis.duplicate();
  subscriber.on("error", () => {}); // connection problems are logged once by connectRedis
  subscriber.on("message", (channel: string, payload: string) => {
    if (channel !== RESETS_CHANNEL) return;
    const conversation = decodeRecord(ResetNoticeSchema, payload, "reset announcement", log);
    if (!conversation) return;
    store
      .closeForReset(conversation)
      .then((closed) => {
        if (closed.length > 0)
          log.info(
            { chat: conversationKey(conversation), approvals: closed.length },
            "closed the approvals asked before a /reset",
          );
      })
      .catch((err: unknown) =>
        log.warn(
          { err, chat: conversationKey(conversation) },
          "could not close the approvals of a reset conversation; they close at their next press or expiry",
        ),
      );
  });
  subscriber
    .subscribe(RESETS_CHANNEL)
    .catch((err: unknown) =>
      log.warn(
        { err },
        "could not listen for /reset announcements; open approvals of a reset conversation close at their next press or expiry",
      ),
    );
  return {
    close: async () => {
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
