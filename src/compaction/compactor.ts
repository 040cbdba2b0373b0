/**
 * One compaction of one conversation: plan what to summarise (`plan.ts`), ask the model for the
 * summary in a request of its own with no tools offered (`compactionPrompt` of `src/prompts.ts`),
 * and swap it in (`store.ts`). Run by the `compactions` queue's worker (`queue.ts`), and directly
 * by an answer whose request did not fit the context window (the overflow rescue).
 *
 * Never loses a message: the swap replaces only the planned start of the history and archives it;
 * a history that changed under the compaction is planned again (up to {@link SWAP_TRIES} times);
 * a model call that fails, a refusal or an empty summary throw, and the history stays as it was.
 * Only one compaction of a conversation runs at a time, on any worker (the conversation's lease).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import { toModelError } from "../agent/errors.js";
import { quietModelCall } from "../agent/loop.js";
import type { Config } from "../config.js";
import { lastRunTag } from "../history/store.js";
import type { Summary } from "../history/summary.js";
import { redact, type Logger } from "../log.js";
import { compactionPrompt } from "../prompts.js";
import { PLATFORMS, conversationKey, type ConversationRef } from "../queue/incoming.js";
import { preview, type RunTracer } from "../trace/tracer.js";
import { outputWeightFor } from "../usage/budget.js";
import type { ModelUsage, UsageOwner, UsageStore } from "../usage/store.js";
import { compactionRequestText, planCompaction, transcriptNonce } from "./plan.js";
import type { CompactionStore } from "./store.js";

/** Output budget of a summary, in tokens. */
export const SUMMARY_MAX_TOKENS = 2048;

/**
 * How long the conversation's compaction lease lasts unless renewed, in ms: renewed every
 * {@link LEASE_RENEW_MS} while the compaction runs, so a compaction whose worker died frees its
 * conversation within this time (not after its whole model call's bound).
 */
export const LEASE_MS = 10_000;

/** How often a running compaction renews its lease, in ms. */
export const LEASE_RENEW_MS = 3_000;

/** Timeout of the summary's model call, in ms. */
export const SUMMARY_TIMEOUT_MS = 120_000;

/** Plans made when the history keeps changing under the compaction. */
export const SWAP_TRIES = 3;

/** Why a compaction runs. */
export const COMPACTION_REASONS = ["tokens", "messages", "size", "overflow", "command"] as const;

/** A compaction job's data (the `compactions` queue): the conversation, whose usage it counts, why, and how many user turns to keep. */
export const CompactionJobSchema = z.object({
  conversation: z.object({ platform: z.enum(PLATFORMS), chatId: z.string().min(1), topicId: z.string().optional() }),
  /** The person whose message triggered it (or who sent `/compact`): its tokens count as theirs. */
  owner: z.object({ platform: z.string(), userId: z.string(), chatId: z.string() }),
  reason: z.enum(COMPACTION_REASONS),
  /** User turns kept verbatim; default `COMPACT_KEEP_TURNS`. */
  keepTurns: z.number().int().positive().optional(),
});

/** See {@link CompactionJobSchema}. */
export type CompactionJob = z.output<typeof CompactionJobSchema>;

/** How a compaction ended. */
export type CompactionResult =
  | { outcome: "compacted"; summary: string; summarized: number; kept: number; compactions: number }
  | { outcome: "nothing"; kept: number }
  | { outcome: "busy" };

/** A compaction that gave no summary (refused, or empty): the history stays, the job retries later. */
export class CompactionError extends Error {
  readonly retryable = true;
  constructor(message: string) {
    super(message);
    this.name = "CompactionError";
  }
}

/**
 * The compaction lease is held by an earlier run of the same job: its worker died (the queue
 * handed the job on), and the lease lasts at most {@link LEASE_MS} more. Retryable: the job is
 * retried with its backoff (`COMPACTION_JOB_OPTIONS`), by when the lease is gone.
 */
export class CompactionLeaseError extends Error {
  readonly retryable = true;
  constructor(message: string) {
    super(message);
    this.name = "CompactionLeaseError";
  }
}

/** What a compaction needs. */
export interface CompactorDeps {
  config: Config;
  log: Logger;
  client: Anthropic;
  store: CompactionStore;
  /** Where the summary's tokens are recorded (under the job's owner); default none. */
  usage?: UsageStore;
  /** A tracer per run (`runId`, conversation key); the compaction is traced as a run of its own. */
  tracerFor?: (runId: string, chat: string) => RunTracer;
  /**
   * Checked before the summary's model call (budgets); throwing skips the compaction (the history
   * stays as it is). Default none.
   */
  beforeModelCall?: (owner: UsageOwner) => Promise<void>;
}

/**
 * Compacts `job.conversation` once (see the module comment).
 *
 * The conversation's lease ({@link LEASE_MS}) is renewed every {@link LEASE_RENEW_MS} while the
 * compaction runs and released at its end.
 *
 * @param options.waitMs - how long to wait for the lease when another compaction of the conversation
 *   runs (default 0: answer `busy` at once).
 * @param options.jobId - the compaction job's id (the lease names it): a job that finds the lease
 *   held by its own earlier run (whose worker died) throws {@link CompactionLeaseError} instead of
 *   answering `busy`, so it is retried rather than done.
 * @returns what happened; `busy` when another compaction held the lease throughout.
 * @throws `ModelUnavailableError` (the model call failed), {@link CompactionError} (refusal, empty
 *   summary, or the history changed under every try), {@link CompactionLeaseError}, or a Redis
 *   error; the history is unchanged.
 */
export async function compact(
  deps: CompactorDeps,
  job: CompactionJob,
  options: { waitMs?: number; signal?: AbortSignal; jobId?: string } = {},
): Promise<CompactionResult> {
  const { store, config } = deps;
  const conversation: ConversationRef = job.conversation;
  const key = conversationKey(conversation);
  const log = deps.log.child({ chat: key, compaction: job.reason });
  const waitUntil = Date.now() + (options.waitMs ?? 0);
  let token = await store.lease(conversation, LEASE_MS, options.jobId);
  while (!token && Date.now() < waitUntil) {
    await new Promise((r) => setTimeout(r, 200));
    token = await store.lease(conversation, LEASE_MS, options.jobId);
  }
  if (!token) {
    if (options.jobId !== undefined && (await store.leaseHolder(conversation)) === options.jobId) {
      log.warn("the compaction lease is held by this job's earlier run, whose worker stopped; retrying later");
      throw new CompactionLeaseError("the compaction lease is held by this job's earlier run, whose worker stopped");
    }
    return { outcome: "busy" };
  }
  const held = token;
  const renewal = setInterval(() => {
    store.renew(conversation, held, LEASE_MS).then(
      (renewed) => {
        if (!renewed)
          log.warn("the compaction lease expired while it ran; its swap stays safe (it checks the history)");
      },
      (err: unknown) => log.warn({ err }, "could not renew the compaction lease"),
    );
  }, LEASE_RENEW_MS);
  renewal.unref();
  const tracer = deps.tracerFor?.(`compaction:${key}:${Date.now()}`, key);
  const started = performance.now();
  try {
    const keepTurns = job.keepTurns ?? config.COMPACT_KEEP_TURNS;
    for (let tries = 1; ; tries += 1) {
      const raw = (await store.raw(conversation)) ?? "";
      const plan = planCompaction(raw, keepTurns, undefined, log);
      if (!plan) {
        const kept = raw.split("\n").filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("S")).length;
        return { outcome: "nothing", kept };
      }
      await deps.beforeModelCall?.(job.owner);
      tracer?.event("compaction", {
        stage: "model_call",
        reason: job.reason,
        summarizing: plan.messages.length,
        kept: plan.kept,
        merging: plan.previous !== undefined,
        model: config.ANTHROPIC_MODEL,
      });
      const { text, usage } = await summarise(deps, plan, options.signal);
      const summary: Summary = {
        text,
        summarized: (plan.previous?.summarized ?? 0) + plan.messages.length,
        compactions: (plan.previous?.compactions ?? 0) + 1,
        at: Date.now(),
        ...sizeAfter(raw, plan.previous, usage),
      };
      if (await store.swap(conversation, plan.prefix, summary)) {
        const durationMs = Math.round(performance.now() - started);
        const after = raw.length - plan.prefix.length + JSON.stringify(summary).length + 2;
        tracer?.event("compaction", {
          stage: "swapped",
          reason: job.reason,
          before: { messages: plan.messages.length + plan.kept, chars: raw.length },
          after: { messages: plan.kept, chars: after },
          summarized: plan.messages.length,
          summaryChars: text.length,
          summary: preview(redact(text)),
          usage,
          durationMs,
          tries,
        });
        log.info(
          {
            summarized: plan.messages.length,
            kept: plan.kept,
            charsBefore: raw.length,
            charsAfter: after,
            durationMs,
            usage,
          },
          "conversation compacted",
        );
        return {
          outcome: "compacted",
          summary: text,
          summarized: summary.summarized,
          kept: plan.kept,
          compactions: summary.compactions,
        };
      }
      log.info({ tries }, "the history changed while its summary was written; planning the compaction again");
      if (tries >= SWAP_TRIES)
        throw new CompactionError(`the history changed under ${SWAP_TRIES} compactions in a row`);
    }
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    tracer?.event("error", {
      where: "compaction",
      reason: job.reason,
      error: err.name,
      message: preview(redact(err.message)),
    });
    throw error;
  } finally {
    clearInterval(renewal);
    await store.release(conversation, token);
    await tracer?.finish();
  }

  /**
   * The summary's model call (read as a stream, bounded by `STREAM_IDLE_SECONDS`): no tools, the
   * compaction prompt as system, the transcript as the one user turn; usage recorded.
   */
  async function summarise(
    d: CompactorDeps,
    plan: NonNullable<ReturnType<typeof planCompaction>>,
    signal?: AbortSignal,
  ): Promise<{ text: string; usage: ModelUsage }> {
    let response: Anthropic.Messages.Message;
    // The turn labels' code, new for this request: no message can write a label of it.
    const nonce = transcriptNonce();
    try {
      // Read as a stream: a model that stays silent is given up after STREAM_IDLE_SECONDS, not 120 s.
      response = await quietModelCall(
        d.client,
        {
          model: d.config.ANTHROPIC_MODEL,
          max_tokens: SUMMARY_MAX_TOKENS,
          system: [{ type: "text", text: compactionPrompt(nonce) }],
          messages: [{ role: "user", content: compactionRequestText(plan, nonce) }],
        },
        { timeoutMs: SUMMARY_TIMEOUT_MS, idleMs: d.config.STREAM_IDLE_SECONDS * 1000, ...(signal ? { signal } : {}) },
      );
    } catch (error) {
      throw toModelError(error);
    }
    const usage: ModelUsage = {
      input_tokens: response.usage.input_tokens,
      output_tokens: response.usage.output_tokens,
      cache_creation_input_tokens: response.usage.cache_creation_input_tokens ?? 0,
      cache_read_input_tokens: response.usage.cache_read_input_tokens ?? 0,
    };
    await d.usage
      ?.record(
        job.owner,
        usage,
        Date.now(),
        0,
        outputWeightFor(d.config, d.config.ANTHROPIC_MODEL),
        d.config.ANTHROPIC_MODEL,
      )
      .catch((err: unknown) => d.log.warn({ err }, "could not record the compaction's token usage"));
    if (response.stop_reason === "refusal") throw new CompactionError("the model refused to write the summary");
    const text = response.content
      .filter((b): b is Anthropic.Messages.TextBlock => b.type === "text")
      .map((b) => b.text)
      .join("\n")
      .trim();
    if (text === "") throw new CompactionError("the model wrote an empty summary");
    return { text, usage };
  }
}

/**
 * What `/context` shows right after a compaction: the last measured request size (the latest run
 * tag's tokens, or the previous summary's estimate when no run measured one since), less the tokens
 * the summary request read (the turns it replaced, as a transcript), plus the summary's own
 * tokens (its output); never less than the summary itself. `after` names the latest run tag, so a
 * run answered later is known to measure the size itself.
 * @returns the summary fields `tokens` and `after`; empty when no size was ever measured.
 */
export function sizeAfter(
  raw: string,
  previous: Summary | undefined,
  usage: ModelUsage,
): Pick<Summary, "tokens" | "after"> {
  const tag = lastRunTag(raw);
  const measured =
    previous?.tokens !== undefined && (tag === undefined || tag.id === previous.after) ? previous.tokens : tag?.tokens;
  if (measured === undefined) return tag ? { after: tag.id } : {};
  const read = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
  return {
    tokens: Math.max(usage.output_tokens, measured - read + usage.output_tokens),
    ...(tag ? { after: tag.id } : {}),
  };
}
