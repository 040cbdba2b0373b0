/**
 * What a worker needs ({@link WorkerDeps}) and the agent loop's entry point it is given
 * ({@link RunAgent}): read by the worker (`worker.ts`) and by the answer pipeline (`pipeline.ts`),
 * which do not import each other for it.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { AgentDeps, AgentOutcome, AgentRequest } from "../agent/contract.js";
import type { ApprovalFlow } from "../approvals/flow.js";
import type { CompactorDeps } from "../compaction/compactor.js";
import type { CompactionQueue } from "../compaction/queue.js";
import type { Config } from "../config.js";
import type { HistoryStore } from "../history/store.js";
import type { Logger } from "../log.js";
import type { Outbound } from "../outbound.js";
import type { Platform } from "../queue/incoming.js";
import type { RedisClient } from "../redis.js";
import type { AnswerStops } from "../stop/stops.js";
import type { SettingsStore } from "../settings/store.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import type { RunTracer, TraceOrigin } from "../trace/tracer.js";
import type { UsageStore } from "../usage/store.js";

/** The agent loop's entry point (`runAgent` of `src/agent/loop.ts`), injected so `src/main.ts` wires the real loop in one place. */
export type RunAgent = (request: AgentRequest, deps: AgentDeps) => Promise<AgentOutcome>;

/** What a worker needs. */
export interface WorkerDeps {
  config: Config;
  log: Logger;
  /**
   * Connection for BullMQ and for the inbox, history and progress keys. Must have
   * `maxRetriesPerRequest: null` (BullMQ's guidance for workers: commands wait through an outage).
   */
  redis: RedisClient;
  /**
   * Connection for the inbox, progress keys and tools when they live on another Redis than BullMQ
   * (the benchmark does this to count each side's commands); default `redis`. `history` must use
   * the same Redis. Same guidance: `maxRetriesPerRequest: null`.
   */
  store?: RedisClient;
  /** BullMQ key prefix (default BullMQ's `bull`). */
  prefix?: string;
  history: HistoryStore;
  /** Every loaded tool; each chat gets `toolboxFor(toolbox, chat)`. */
  toolbox: ToolBox;
  /** The Anthropic client given to the loop. */
  client: Anthropic;
  /** `runAgent` from `src/agent/loop.ts`. */
  runAgent: RunAgent;
  /** The outbound side of every platform this worker answers on. */
  outbounds: Partial<Record<Platform, Outbound>>;
  /**
   * A tracer per run (`runId` is `platform:chatId:messageId`); default: none. A chat job's run is
   * handed over (`RunTracer.take`) and written by the worker's finish script, on the `store` Redis
   * (the trace store must use that Redis); other runs are written when they end (`finish`).
   */
  tracerFor?: (runId: string, chat: string, origin?: TraceOrigin) => RunTracer;
  /**
   * Where each model response's `usage` is recorded (per user and chat, day and month); default
   * none. Recording is awaited before the answer is sent, so `/usage` right after an answer
   * includes it; a failed recording is logged and never holds the answer back.
   */
  usage?: UsageStore;
  /** Typing refresh interval in ms; default `TYPING_INTERVAL_MS` of `worker.ts`. */
  typingIntervalMs?: number;
}

/**
 * What features lend the answer pipeline in a worker process (`Feature.worker` of `src/feature.ts`):
 * the points where an answer calls a feature. Each part is lent by one feature at most (start-up
 * refuses two); a part no started feature lends is done without, as each says.
 */
export interface AnswerServices {
  /**
   * The confirmation flow (the approvals feature): a paused run's prompt, the decision jobs, a
   * superseded approval. Without it a dangerous call is not run and the user is told that
   * confirmation is unavailable (nothing of the paused run is kept); decision jobs are ignored.
   */
  approvals: ApprovalFlow;
  /**
   * The conversations' settings (persona, model, language, streaming; the settings feature), read
   * with the history of each answer. Without it every conversation has the defaults.
   */
  settings: SettingsStore;
  /**
   * Compaction (the compaction feature): the queue asked after an answer, and what the
   * context-window rescue runs directly. Without it nothing is compacted (the history is only
   * trimmed) and the rescue leaves the older half of the history out of the request.
   */
  compaction: { queue: CompactionQueue; deps: CompactorDeps };
  /**
   * Stop (the stop feature): the answers this worker writes are registered there and stopped when
   * the person presses Stop or sends `/stop`. Without it answers cannot be stopped.
   */
  stops: AnswerStops;
}
