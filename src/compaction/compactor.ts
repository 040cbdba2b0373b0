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
import type { Config } from "../config.js";
import { lastRunTag } from "../history/store.js";
import type { Summary } from "../history/summary.js";
import { redact, type Logger } from "../log.js";
import { compactionPrompt } from "../prompts.js";
import { PLATFORMS, conversationKey, type ConversationRef } from "../queue/incoming.js";
import { preview, type RunTracer } from "../trace/tracer.js";
import type { ModelUsage, UsageOwner, UsageStore } from "../usage/store.js";
import { compactionRequestText, planCompaction } from "./plan.js";
import type { CompactionStore } from "./store.js";

/** Output budget of a summary, in tokens. */
export const SUMMARY_MAX_TOKENS = 2048;

/** How long one compaction may hold its conversation's lease, in ms (its model call is bounded by {@link SUMMARY_TIMEOUT_MS}). */
export const LEASE_MS = 150_000;

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
 * @param waitMs - how long to wait for the lease when another compaction of the conversation
 *   runs (default 0: answer `busy` at once).
 * @returns what happened; `busy` when another compaction held the lease throughout.
 * @throws `ModelUnavailableError` (the model call failed), {@link CompactionError} (refusal, empty
 *   summary, or the history changed under every try), or a Redis error; the history is unchanged.
 */
export async function compact(
  deps: CompactorDeps,
  job: CompactionJob,
  options: { waitMs?: number; signal?: AbortSignal } = {},
): Promise<CompactionResult> {
  const { store, config } = deps;
  const conversation: ConversationRef = job.conversation;
  const key = conversationKey(conversation);
  const log = deps.log.child({ chat: key, compaction: job.reason });
  const waitUntil = Date.now() + (options.waitMs ?? 0);
  let token = await store.lease(conversation, LEASE_MS);
  while (!token && Date.now() < waitUntil) {
    await new Promise((r) => setTimeout(r, 200));
    token = await store.lease(conversation, LEASE_MS);
  }
  if (!token) return { outcome: "busy" };
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
    await store.release(conversation, token);
    await tracer?.finish();
  }

  /** The summary's model call: no tools, the compaction prompt as system, the transcript as the one user turn; usage recorded. */
  async function summarise(
    d: CompactorDeps,
    plan: NonNullable<ReturnType<typeof planCompaction>>,
    signal?: AbortSignal,
  ): Promise<{ text: string; usage: ModelUsage }> {
    let response: Anthropic.Messages.Message;
    try {
      response = await d.client.messages.create(
        {
          model: d.config.ANTHROPIC_MODEL,
          max_tokens: SUMMARY_MAX_TOKENS,
          system: [{ type: "text", text: compactionPrompt() }],
          messages: [{ role: "user", content: compactionRequestText(plan) }],
        },
        { timeout: SUMMARY_TIMEOUT_MS, ...(signal ? { signal } : {}) },
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
      ?.record(job.owner, usage)
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
