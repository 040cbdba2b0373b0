/**
 * Moving a conversation's Redis data, key by key (`src/conversations/migrate.ts` and the features'
 * own `move` steps): cluster-safe, idempotent.
 */
import { scanKeys, type RedisClient } from "../redis.js";

/**
 * Moves `from` to `to` with its TTL (`DUMP` / `RESTORE`, cluster-safe: the two keys may hash to
 * different slots); an existing `to` is kept (`append`: the old value is added after it).
 * @throws when Redis is unreachable.
 */
export async function moveKey(redis: RedisClient, from: string, to: string, merge?: "append"): Promise<void> {
  if (merge === "append") {
    // A string taken with one GETDEL: what a writer appends meanwhile starts the old key anew and moves on the next pass.
    const ttl = await redis.pttl(from);
    const value = await redis.getdelBuffer(from);
    if (value === null) return;
    const created = ttl > 0 ? await redis.set(to, value, "PX", ttl, "NX") : await redis.set(to, value, "NX");
    if (created !== "OK") await redis.append(to, value);
    return;
  }
  const dump = await redis.dumpBuffer(from);
  if (dump === null) return;
  if ((await redis.exists(to)) === 0) {
    const ttl = await redis.pttl(from);
    try {
      await redis.restore(to, ttl > 0 ? ttl : 0, dump);
    } catch (error) {
      if (!/BUSYKEY/.test((error as Error).message)) throw error; // written meanwhile: the new one is kept
    }
  }
  await redis.del(from);
}

/** `text` with the glob characters of `SCAN MATCH` escaped. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * Rewrites the records of every hash matching `pattern` (per-person stores whose records name the
 * chat they belong to: reminders, scheduled tasks) from conversation `from` to `to`: a record whose
 * `chatId` and `topicId` are `from`'s gets `to`'s `chatId`. Idempotent; an undecodable record is
 * left as it is (its store reports it when reading).
 */
export async function moveRecordsOfChat(
  redis: RedisClient,
  pattern: string,
  from: { chatId: string; topicId?: string | undefined },
  to: { chatId: string },
): Promise<void> {
  for (const key of await scanKeys(redis, pattern)) {
    for (const [field, raw] of Object.entries(await redis.hgetall(key))) {
      let record: { chatId?: unknown; topicId?: unknown };
      try {
        record = JSON.parse(raw) as typeof record;
      } catch {
        continue; // decoded (and reported) by the record's store when read
      }
      if (
        record.chatId !== from.chatId ||
        (from.topicId ?? undefined) !== ((record.topicId as string | undefined) ?? undefined)
      )
        continue;
      await redis.hset(key, field, JSON.stringify({ ...record, chatId: to.chatId }));
    }
  }
}
