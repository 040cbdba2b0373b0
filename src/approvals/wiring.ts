/**
 * Wiring of the approval flow into a process: the worker side (hooks the worker calls, the
 * expiry scheduler) and the adapter side (the decider buttons and reactions call). Both sides
 * share the Redis records and the `decisions` queue, so any process can resolve any approval.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { Queue } from "bullmq";
import type { RedisClient } from "../redis.js";
import { resumeAgent } from "../agent/loop.js";
import { alwaysAllowMs, type Config } from "../config.js";
import type { HistoryStore } from "../history/store.js";
import type { Logger } from "../log.js";
import type { Outbound } from "../outbound.js";
import { bullPrefix, DECISIONS_QUEUE } from "../queue/keys.js";
import { conversationKey, type Platform } from "../queue/incoming.js";
import { toolboxFor } from "../toolbox/select.js";
import type { UsageStore } from "../usage/store.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import { nullRunTracer, type RunTracer } from "../trace/tracer.js";
import type { ApprovalHooks } from "../worker/approvals.js";
import { toolContextFor } from "../worker/context.js";
import type { ApprovalDecider } from "./decision.js";
import { ApprovalFlow } from "./flow.js";
import { grantLookup, grantStoreFor } from "./grants.js";
import { decisionQueueHooks } from "./jobs.js";
import { ApprovalStore } from "./store.js";

/** A part of the approval wiring: what it offers and how to close its queue. */
interface Closable {
  /** Closes the part's BullMQ queue (not the Redis connection). Never throws. */
  close(): Promise<void>;
}

function decisionsQueue(redis: RedisClient, prefix: string | undefined): Queue {
  const queue = new Queue(DECISIONS_QUEUE, { connection: redis, prefix: bullPrefix(redis, DECISIONS_QUEUE, prefix) });
  queue.on("error", () => {}); // connection problems are logged once by connectRedis
  return queue;
}

/**
 * The decider for adapters: checks a press or reaction in Redis (exists, not expired, the
 * requester, first decision wins) and queues the accepted decision on the `decisions` queue.
 */
export function approvalDecider(parts: { config: Config; redis: RedisClient; prefix?: string; log: Logger }): ApprovalDecider & Closable {
  const queue = decisionsQueue(parts.redis, parts.prefix);
  const store = new ApprovalStore(parts.redis, {
    timeoutMs: parts.config.CONFIRM_TIMEOUT_SECONDS * 1000,
    onDecision: decisionQueueHooks(queue).onDecision,
    grantMs: alwaysAllowMs(parts.config),
    log: parts.log,
  });
  return {
    decide: (request) => store.decide(request),
    close: () => queue.close().catch(() => {}),
  };
}

/** What {@link approvalHooks} needs from the worker. */
export interface ApprovalHookParts {
  config: Config;
  log: Logger;
  /** The worker's connection (`maxRetriesPerRequest: null`). */
  redis: RedisClient;
  prefix?: string;
  toolbox: ToolBox;
  client: Anthropic;
  history: HistoryStore;
  outbounds: Partial<Record<Platform, Outbound>>;
  tracerFor?: (runId: string, chat: string) => RunTracer;
  /** Where resumed runs' token usage is recorded; default none. */
  usage?: UsageStore;
}

/**
 * The worker's approval hooks over the Redis store and the `decisions` queue: `begin` saves the
 * paused run and posts the prompt, `supersedePending` closes the requester's pending approval
 * when they write again in the same conversation, `handleDecision` resumes the run (and tells the requester when the job's
 * last attempt fails).
 */
export function approvalHooks(parts: ApprovalHookParts): ApprovalHooks & Closable {
  const { config, log, redis } = parts;
  const queue = decisionsQueue(redis, parts.prefix);
  const jobs = decisionQueueHooks(queue);
  const store = new ApprovalStore(redis, { timeoutMs: config.CONFIRM_TIMEOUT_SECONDS * 1000, onDecision: jobs.onDecision, grantMs: alwaysAllowMs(config), log });
  const grants = grantStoreFor(redis, config, log);
  const flow = new ApprovalFlow({
    store,
    grants,
    agent: { resumeAgent },
    agentDeps: (message) => ({
      client: parts.client,
      config,
      toolbox: toolboxFor(parts.toolbox, message),
      tracer: parts.tracerFor?.(`${conversationKey(message)}:${message.messageId}:approval`, conversationKey(message)) ?? nullRunTracer,
      context: toolContextFor(message, { config, redis, log: log.child({ chat: conversationKey(message) }) }),
      onUsage: parts.usage
        ? (usage) => void parts.usage!.record(message, usage).catch((err: unknown) => log.warn({ err }, "could not record token usage"))
        : undefined,
      grantFor: grantLookup(grants, message),
    }),
    appendHistory: (chat, messages) => parts.history.append(chat, messages),
    outbound: (platform) => {
      const outbound = parts.outbounds[platform];
      if (!outbound) throw new Error(`no outbound for platform ${platform} in this worker`);
      return outbound;
    },
    scheduleExpiry: jobs.scheduleExpiry,
    log,
  });
  return {
    async begin(message, outcome, outbound) {
      await flow.begin(message, outcome, outbound);
    },
    async supersedePending(message) {
      await flow.supersedePending(message);
    },
    async handleDecision(data, job) {
      try {
        await flow.handleDecision(data);
      } catch (error) {
        if (job?.lastAttempt) await flow.giveUp(data);
        throw error;
      }
    },
    close: () => queue.close().catch(() => {}),
  };
}
