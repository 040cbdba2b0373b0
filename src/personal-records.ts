/**
 * Numbered records of one person in Redis, the shape reminders and scheduled tasks share: a hash of
 * JSON records by id and a counter that gives out the ids, both under the person's hash tag
 * `{<platform>:<userId>}` (one Redis Cluster slot, so the scripts below touch one slot).
 *
 * Keys, for a `prefix` such as `reminder` or `task`:
 * - `<prefix>:{…}:items`: a hash, field = id, value = the record as JSON;
 * - `<prefix>:{…}:seq`: the last id given out (INCR), so ids are never reused and a queued job of a
 *   deleted record can never act on a new one.
 *
 * Every read goes through {@link decodeRecord}: a damaged record is logged and read as missing.
 */
import type { z } from "zod";
import { silentLogger, type Logger } from "./log.js";
import type { Platform } from "./queue/incoming.js";
import { decodeRecord, wellFormedJson } from "./records.js";
import type { RedisClient } from "./redis.js";

/** Whose records: the platform and the user id (a tool context is one). */
export interface RecordOwner {
  platform: Platform;
  userId: string;
}

/**
 * Where a reminder or scheduled task set in a tool call comes back: the chat, the Telegram topic,
 * the chat kind, the Discord server (for its access check) and the owner's display name, from the
 * tool context (only the fields present).
 */
export function placeOf(context: {
  chatId: string;
  topicId?: string | undefined;
  chatKind: "dm" | "group";
  guildId?: string | undefined;
  userName: string;
}): {
  chatId: string;
  topicId?: string;
  chatKind: "dm" | "group";
  guildId?: string;
  userName: string;
} {
  return {
    chatId: context.chatId,
    ...(context.topicId ? { topicId: context.topicId } : {}),
    chatKind: context.chatKind,
    ...(context.guildId ? { guildId: context.guildId } : {}),
    userName: context.userName,
  };
}

/**
 * Which records count toward the limit of {@link PersonalRecords.add}: `all` of them, or only the
 * `active` ones (a record with a `next` time: a one-off reminder that was posted keeps no `next`).
 */
export type LimitCount = "all" | "active";

/** The store of one kind of numbered personal record; see the module comment for its keys. */
export interface PersonalRecords<T extends { id: number }> {
  /** The person's hash tag, e.g. `{telegram:42}`, and the two keys built on it. */
  keys(owner: RecordOwner): { tag: string; items: string; seq: string };
  /**
   * Counts the person's records (all or active ones, as the store was made) and, when below
   * `limit`, stores a new one with the next id, in one script (parallel calls cannot pass the
   * limit together). The record's strings are stored well-formed (a lone UTF-16 surrogate, in a
   * name kept by an older version, as U+FFFD); the script decodes no record to store one, so no
   * record, stored or new, makes it fail.
   *
   * @returns the stored record (as stored), or `undefined` when the person already has `limit` of them.
   * @throws when Redis is unreachable.
   */
  add(redis: RedisClient, owner: RecordOwner, fields: Omit<T, "id">, limit: number): Promise<T | undefined>;
  /** One record of the person, or undefined (missing, or damaged: logged to `log`). */
  get(redis: RedisClient, owner: RecordOwner, id: number, log?: Logger): Promise<T | undefined>;
  /** All readable records of the person, in no particular order (damaged ones logged and left out). */
  all(redis: RedisClient, owner: RecordOwner, log?: Logger): Promise<T[]>;
  /** Writes the record back only if it still exists (a concurrent delete wins). @returns whether it was written. */
  update(redis: RedisClient, owner: RecordOwner, record: T): Promise<boolean>;
  /** Deletes a record. @returns it, or undefined when the person has no record with that id (or it was unreadable). */
  delete(redis: RedisClient, owner: RecordOwner, id: number, log?: Logger): Promise<T | undefined>;
  /** Deletes the records with these ids (no error for missing ones). */
  deleteIds(redis: RedisClient, owner: RecordOwner, ids: number[]): Promise<void>;
}

/**
 * Makes the store of one kind of personal record.
 *
 * @param prefix - first part of the keys, e.g. `reminder`.
 * @param schema - the zod schema of a stored record (with its `id`).
 * @param what - names the record in log lines about damaged records, e.g. `scheduled task`.
 * @param count - what {@link PersonalRecords.add}'s limit counts.
 */
export function personalRecords<S extends z.ZodType<{ id: number }>>(
  prefix: string,
  schema: S,
  what: string,
  count: LimitCount,
): PersonalRecords<z.output<S>> {
  type T = z.output<S>;
  const keys = (owner: RecordOwner): { tag: string; items: string; seq: string } => {
    const tag = `{${owner.platform}:${owner.userId}}`;
    return { tag, items: `${prefix}:${tag}:items`, seq: `${prefix}:${tag}:seq` };
  };
  const decode = (raw: string | null | undefined, log: Logger): T | undefined => decodeRecord(schema, raw, what, log);
  const addScript = count === "all" ? ADD_COUNTING_ALL : ADD_COUNTING_ACTIVE;
  return {
    keys,
    async add(redis, owner, fields, limit) {
      const k = keys(owner);
      // Stored well-formed: a lone surrogate (a name an older version kept) is written as U+FFFD.
      const written = JSON.stringify(fields);
      const json = wellFormedJson(written);
      const id = Number(await redis.eval(addScript, 2, k.items, k.seq, String(limit), json));
      if (id === 0) return undefined;
      return { id, ...(json === written ? fields : (JSON.parse(json) as typeof fields)) } as T;
    },
    async get(redis, owner, id, log = silentLogger) {
      return decode(await redis.hget(keys(owner).items, String(id)), log);
    },
    async all(redis, owner, log = silentLogger) {
      return Object.values(await redis.hgetall(keys(owner).items))
        .map((raw) => decode(raw, log))
        .filter((r): r is T => r !== undefined);
    },
    async update(redis, owner, record) {
      return (
        (await redis.eval(UPDATE_IF_EXISTS, 1, keys(owner).items, String(record.id), JSON.stringify(record))) === 1
      );
    },
    async delete(redis, owner, id, log = silentLogger) {
      const k = keys(owner);
      const raw = await redis.hget(k.items, String(id));
      if (raw === null) return undefined;
      return (await redis.hdel(k.items, String(id))) === 1 ? decode(raw, log) : undefined;
    },
    async deleteIds(redis, owner, ids) {
      if (ids.length > 0) await redis.hdel(keys(owner).items, ...ids.map(String));
    },
  };
}

/**
 * The end of both add scripts: the next id, and the record stored under it; returns the id. The
 * record is ARGV[2] (a JSON object, without its id) with `"id":<id>` put first, by joining text:
 * nothing is decoded, so no record makes the script fail (Redis' `cjson` refuses a lone surrogate's
 * escape, `\ud800`, which JavaScript reads), and the record is stored as JSON.stringify wrote it
 * (`cjson.encode` would write an empty list as `{}` and cut numbers to 14 digits).
 */
const STORE_NEXT = `
local id = redis.call('INCR', KEYS[2])
local rest = string.sub(ARGV[2], 2)
if rest ~= '}' then rest = ',' .. rest end
redis.call('HSET', KEYS[1], tostring(id), '{"id":' .. id .. rest)
return id`;

/** KEYS: items, seq. ARGV: limit, the record JSON without its id. Returns 0 at the limit, else the new id. */
const ADD_COUNTING_ALL = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end${STORE_NEXT}`;

/**
 * As {@link ADD_COUNTING_ALL}, counting only records that have a `next` time. A record Redis'
 * `cjson` cannot decode because it holds a surrogate's escape (`\ud800`, which JavaScript reads: an
 * older version's or another writer's) is decoded with such escapes read as U+FFFD, so it counts as
 * its store reads it; a damaged one (not JSON: its store reads it as missing) does not count.
 */
const ADD_COUNTING_ACTIVE = `
local active = 0
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local ok, r = pcall(cjson.decode, raw)
  if not ok then ok, r = pcall(cjson.decode, (string.gsub(raw, '\\\\u[dD][89a-fA-F]%x%x', '\\\\ufffd'))) end
  if ok and type(r) == 'table' and r.next ~= nil then active = active + 1 end
end
if active >= tonumber(ARGV[1]) then return 0 end${STORE_NEXT}`;

/** KEYS: items. ARGV: id, the record JSON. Writes it only when the id is still there; returns 1 if written. */
const UPDATE_IF_EXISTS = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0`;
