/**
 * The swap of a compaction: the summarised start of a conversation's history replaced by the new
 * summary line, and the replaced lines kept in the conversation's archive, in ONE script over the
 * conversation's hash-tagged keys (so it runs on a Redis Cluster too).
 *
 * Atomic with respect to everything else that writes the history: appends made while the summary
 * was being written stay (only the planned prefix is replaced, and everything after it is kept as
 * it is, in order); a history whose start changed meanwhile (a `/reset`, a trim, a run removed,
 * another compaction) is not touched, and the compaction is planned again from what is there now.
 */
import { z } from "zod";
import { summaryLine, type Summary } from "../history/summary.js";
import type { Logger } from "../log.js";
import type { ConversationRef } from "../queue/incoming.js";
import { conversationKeys } from "../queue/keys.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";
import { releaseIfHolder, renewIfHolder } from "../held-keys.js";

/** Compactions whose replaced lines the archive keeps (the oldest entries go first). */
export const ARCHIVE_MAX_ENTRIES = 20;

/**
 * KEYS: history, archive. ARGV: [1] the planned prefix, [2] the new summary line, [3] the archive
 * entry, [4] entries kept, [5] archive TTL (s).
 * Returns 1 after the swap; 0 when the history no longer starts with the prefix (nothing written).
 */
const SWAP_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2] .. string.sub(v, #ARGV[1] + 1), 'KEEPTTL')
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1
`;

/** One archive entry: what a compaction replaced. */
export const ArchiveEntrySchema = z.object({
  /** When it was replaced, ms since the Unix epoch. */
  at: z.number(),
  /** The replaced history lines as they were stored (summary line, messages, run tags). */
  lines: z.string(),
});

/** See {@link ArchiveEntrySchema}. */
export type ArchiveEntry = z.output<typeof ArchiveEntrySchema>;

type RedisWithSwap = RedisClient & {
  swapSummary(
    history: string,
    archive: string,
    prefix: string,
    line: string,
    entry: string,
    keep: number,
    ttl: number,
  ): Promise<number>;
};

/** The compaction side of a conversation's stored history. */
export class CompactionStore {
  constructor(
    private readonly redis: RedisClient,
    /** Seconds the archive is kept after its latest entry (the history's own expiry). */
    private readonly archiveTtlSeconds: number,
  ) {
    if (!("swapSummary" in redis)) redis.defineCommand("swapSummary", { numberOfKeys: 2, lua: SWAP_SCRIPT });
  }

  /** The stored history value (without renewing its expiry), or null. @throws when Redis is unreachable. */
  async raw(conversation: ConversationRef): Promise<string | null> {
    return this.redis.get(conversationKeys(conversation).history);
  }

  /**
   * Replaces `prefix` (the start of the history the summary was written from) with `summary`'s
   * line and archives it, when the history still starts with it.
   * @returns true after the swap, false when the history changed under the compaction.
   * @throws when Redis is unreachable (then nothing was written).
   */
  async swap(conversation: ConversationRef, prefix: string, summary: Summary): Promise<boolean> {
    const keys = conversationKeys(conversation);
    const entry = JSON.stringify({ at: summary.at, lines: prefix } satisfies ArchiveEntry);
    return (
      (await (this.redis as RedisWithSwap).swapSummary(
        keys.history,
        keys.archive,
        prefix,
        summaryLine(summary),
        entry,
        ARCHIVE_MAX_ENTRIES,
        this.archiveTtlSeconds,
      )) === 1
    );
  }

  /** The archive, oldest first (unreadable entries skipped and logged). @throws when Redis is unreachable. */
  async archive(conversation: ConversationRef, log: Logger): Promise<ArchiveEntry[]> {
    const raw = await this.redis.lrange(conversationKeys(conversation).archive, 0, -1);
    return raw
      .map((r) => decodeRecord(ArchiveEntrySchema, r, "compaction archive entry", log))
      .filter((e): e is ArchiveEntry => e !== undefined);
  }

  /**
   * Takes the conversation's compaction lease for `ms` (`SET NX PX`), its value `holder:random`
   * (`holder`: the compaction job's id, `-` for a compaction outside the queue).
   * @returns the value (the token to renew and release it with), or undefined when another holds it.
   * @throws when Redis is unreachable.
   */
  async lease(conversation: ConversationRef, ms: number, holder = "-"): Promise<string | undefined> {
    const token = `${holder}:${Math.random().toString(36).slice(2)}`;
    return (await this.redis.set(conversationKeys(conversation).compacting, token, "PX", ms, "NX")) === "OK"
      ? token
      : undefined;
  }

  /**
   * Who holds the conversation's compaction lease: the holder part of its value (see
   * {@link lease}), or undefined when nobody does. @throws when Redis is unreachable.
   */
  async leaseHolder(conversation: ConversationRef): Promise<string | undefined> {
    const value = await this.redis.get(conversationKeys(conversation).compacting);
    return value === null ? undefined : value.slice(0, Math.max(0, value.lastIndexOf(":")));
  }

  /**
   * Renews the lease for `ms` when it is still `token`'s (`renewIfHolder` of `src/held-keys.ts`).
   * @returns false when it expired or another took it. @throws when Redis is unreachable.
   */
  async renew(conversation: ConversationRef, token: string, ms: number): Promise<boolean> {
    return renewIfHolder(this.redis, conversationKeys(conversation).compacting, token, ms);
  }

  /** Gives the lease back, when it is still `token`'s. Never throws (an expired lease needs nothing). */
  async release(conversation: ConversationRef, token: string): Promise<void> {
    const key = conversationKeys(conversation).compacting;
    await releaseIfHolder(this.redis, key, token).catch(() => {});
  }
}
