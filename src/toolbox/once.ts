/**
 * Exactly-once tool calls: a call that changes data runs at most once per `tool_use` id, across
 * job retries, processes and crashes. The approval store uses it for approved dangerous calls; the
 * worker for every other tool that does not declare `readOnly` (see `ToolDefinition.readOnly`).
 *
 * One key per call, `<prefix><tool_use id>`: first the claim (`SET NX`), then the result.
 */
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import type { ToolExecution } from "./toolbox.js";

/**
 * What the model reads when a call was claimed by a process that stopped before it recorded the
 * result. The tool is not run again (it may have worked: deleting twice could delete the wrong
 * todo after renumbering) and we cannot say it worked, so the model is told the truth and how to
 * find out.
 */
export const UNKNOWN_OUTCOME =
  "This action was started earlier, but the bot stopped before its result was recorded, so it is unknown whether it took effect. " +
  "It was not run again. Check the current state first (for todos: call list_todos) and tell the user what you find.";

/** Runs `execute` at most once per `toolUseId`; see {@link ExecutionLedger.executeOnce}. */
export type ExecuteOnce = (toolUseId: string, execute: () => Promise<ToolExecution>) => Promise<ToolExecution>;

/** Options of an {@link ExecutionLedger}. */
export interface ExecutionLedgerOptions {
  /** Key prefix, e.g. `approval:{approval}:exec:`; the key is the prefix plus the `tool_use` id. */
  prefix: string;
  /** Life of a claim and its result, in ms. Default 24 hours. */
  ttlMs?: number;
  /**
   * How long a caller waits for another caller's result, in ms, before it treats the claim as
   * abandoned by a crash. Default 35 000 (the default tool timeout is 30 s).
   */
  waitMs?: number;
  /** The clock, ms since the Unix epoch. Default `Date.now`. */
  now?: () => number;
  log?: Logger;
}

const ExecutionSchema = z.discriminatedUnion("state", [
  z.object({ state: z.literal("running"), claimedAt: z.number() }),
  z.object({
    state: z.literal("done"),
    ok: z.boolean(),
    content: z.string(),
    durationMs: z.number(),
    images: z
      .array(
        z.object({
          mediaType: z.enum(["image/png", "image/jpeg", "image/gif", "image/webp"]),
          data: z.string(),
          at: z.number().int().nonnegative().optional(),
        }),
      )
      .optional(),
    forUser: z.array(z.string()).optional(),
  }),
]);

/** Claims and results of tool calls in Redis. */
export class ExecutionLedger {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #ttlMs: number;
  readonly #waitMs: number;
  readonly #now: () => number;
  readonly #log: Logger;

  /** @param redis - a shared ioredis connection (commands only). */
  constructor(redis: RedisClient, options: ExecutionLedgerOptions) {
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#ttlMs = options.ttlMs ?? 24 * 3600_000;
    this.#waitMs = options.waitMs ?? 35_000;
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? silentLogger;
  }

  /**
   * Runs a tool call at most once per `tool_use` id.
   *
   * The first caller claims the id (`SET NX`) before it runs `execute`, then stores the result.
   * A later caller gets the stored result without running anything. A caller that finds a claim
   * without a result waits (polling, up to `waitMs`) for the result; when the claim is older than
   * that, the claimer is taken to have crashed between claim and result, and the caller gets
   * `{ ok: false, content: UNKNOWN_OUTCOME }`: the tool is not run a second time. If `execute`
   * throws, the same unknown-outcome result is stored and returned.
   *
   * Bound to the instance, so it can be passed around as `ledger.executeOnce`.
   *
   * @param toolUseId - the model's `tool_use` id.
   * @param execute - runs the tool (e.g. `() => toolbox.execute(name, input, context)`).
   * @throws when Redis is unreachable before the claim (nothing ran then).
   */
  readonly executeOnce: ExecuteOnce = async (toolUseId, execute) => {
    const key = `${this.#prefix}${toolUseId}`;
    const claimed = await this.#redis.set(
      key,
      JSON.stringify({ state: "running", claimedAt: this.#now() }),
      "PX",
      this.#ttlMs,
      "NX",
    );
    if (claimed === "OK") {
      let result: ToolExecution;
      try {
        result = await execute();
      } catch (err) {
        this.#log.error({ err, toolUseId }, "a tool call threw; its outcome is unknown");
        result = { ok: false, content: UNKNOWN_OUTCOME, durationMs: 0 };
      }
      const stored = {
        state: "done",
        ok: result.ok,
        content: result.content,
        durationMs: result.durationMs,
        ...(result.images ? { images: result.images } : {}),
        ...(result.forUser ? { forUser: result.forUser } : {}),
      };
      await this.#redis.set(key, JSON.stringify(stored), "PX", this.#ttlMs);
      return result;
    }
    const deadline = this.#now() + this.#waitMs;
    for (let delay = 20; ; delay = Math.min(delay * 2, 500)) {
      const raw = await this.#redis.get(key);
      const state = raw ? ExecutionSchema.safeParse(JSON.parse(raw)) : undefined;
      if (state?.success && state.data.state === "done") {
        const { ok, content, durationMs, images, forUser } = state.data;
        this.#log.info({ toolUseId }, "tool call already ran; returning its recorded result");
        return { ok, content, durationMs, ...(images ? { images } : {}), ...(forUser ? { forUser } : {}) };
      }
      const claimedAt = state?.success && state.data.state === "running" ? state.data.claimedAt : 0;
      if (this.#now() - claimedAt >= this.#waitMs || this.#now() >= deadline) {
        this.#log.warn({ toolUseId }, "a tool call was claimed but never finished; reporting its outcome as unknown");
        return { ok: false, content: UNKNOWN_OUTCOME, durationMs: 0 };
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  };
}
