/**
 * Telegram albums: several photos (or files) sent together arrive as separate messages sharing a
 * `media_group_id`. They become ONE message for the model, gathered in Redis so that it works with
 * several adapter processes behind a webhook load balancer (no adapter's memory is involved):
 *
 * 1. the adapter records every item it sees ({@link AlbumStore.add}) with its arrival time and, for
 *    an item that addresses the bot, claims the album: only the first claim is queued (so an album
 *    passes the access gate, the rate limit and the queue cap once, like one message); the other
 *    items are only recorded (in groups the items without the caption that mentions the bot too);
 * 2. the worker, taking the claimed message, waits until no item has arrived for
 *    {@link ALBUM_QUIET_MS} (measured from the latest item's arrival, so slow uploads a few
 *    seconds apart still belong together), at most until {@link ALBUM_MAX_WAIT_MS} after the
 *    first item, then takes the album atomically ({@link AlbumStore.collect}): one message with
 *    every item's files (in message id order) and captions. An item arriving after that starts a
 *    new album message of its own.
 *
 * Arrival times are Redis's clock (`TIME` in the scripts), so adapters and workers on different
 * machines agree on them.
 *
 * Keys (hash tag of the conversation, `conversationTag`): `album:{…}:<group>` (sorted set of item
 * JSON, scored by arrival time in ms), `album-claim:{…}:<group>` (`claimed` or `done`), `album-taken:{…}:<messageId>` (what a collect
 * took, so a retried job gathers the same album again).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import {
  MediaRefSchema,
  MAX_MEDIA_REFS,
  type ConversationRef,
  type IncomingMessage,
  type MediaRef,
} from "../queue/incoming.js";
import { conversationTag } from "../queue/keys.js";

/**
 * How long after the album's latest item the worker takes it, in ms, unless told otherwise
 * (`CollectOptions.quietMs`; the worker passes `ALBUM_QUIET_MS` of the configuration, whose default
 * this is): items up to 3 s apart (a slow upload of each photo) belong to one album.
 */
export const ALBUM_QUIET_MS = 3000;

/**
 * Longest an album is waited for, in ms: the worker takes it at most this long after its first
 * item arrived (and never waits longer than this itself), however many items keep arriving.
 */
export const ALBUM_MAX_WAIT_MS = 10_000;

/**
 * Seconds the items and claim of an album nobody has claimed are kept, and a collected album's
 * `done` claim (items of one album arrive within seconds).
 */
export const ALBUM_TTL_SECONDS = 600;

/**
 * Seconds what a collect took is kept (as long as a job may be retried), and the items and claim of
 * a claimed album, from its claim and from every later item. A claimed album waits in the chat's
 * queue until the worker takes its message: behind up to `MAX_QUEUED_PER_CHAT` (default 20) answers
 * of up to `ANSWER_DEADLINE_SECONDS` (default 180) each, an hour, and longer while no worker runs;
 * {@link ALBUM_TTL_SECONDS} would let the album expire first (the worker would then answer the
 * claimed item's files alone). A day covers both and keeps no more than 10 small item records per
 * album that is never collected.
 */
export const ALBUM_TAKEN_TTL_SECONDS = 24 * 3600;

/** Most items kept per album (Telegram albums hold 2-10). */
const MAX_ITEMS = 10;

/** One album item as stored. */
const ItemSchema = z.object({ messageId: z.string(), text: z.string(), media: z.array(MediaRefSchema) });
type Item = z.output<typeof ItemSchema>;

/** The keys of album `groupId` in `conversation`. */
function albumKeys(conversation: ConversationRef, groupId: string): { items: string; claim: string } {
  const tag = conversationTag(conversation);
  return { items: `album:${tag}:${groupId}`, claim: `album-claim:${tag}:${groupId}` };
}

/** Lua: `now`, Redis's clock in ms. */
const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: items, claim. ARGV: [1] item JSON, [2] TTL of an unclaimed album (s), [3] most items,
 * [4] "1" when the item addresses the bot, [5] TTL of a claimed album (s). Adds the item scored by
 * its arrival (a redelivered item keeps its first arrival) and keeps the latest `most items`; for
 * an addressing item claims the album when nobody has (or the last claim was collected already).
 * The items of a claimed album get the claimed TTL (so they outlive the queue wait), any others
 * the unclaimed one. Returns 1 when the item must be queued.
 */
const ADD_SCRIPT = `
${NOW_MS}
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -tonumber(ARGV[3]) - 1)
local c = redis.call('GET', KEYS[2])
local queue = 0
if ARGV[4] == '1' and c ~= 'claimed' then
  redis.call('SET', KEYS[2], 'claimed', 'EX', ARGV[5])
  c = 'claimed'
  queue = 1
end
if c == 'claimed' then redis.call('EXPIRE', KEYS[1], ARGV[5]) else redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return queue
`;

/**
 * KEYS: items. ARGV: [1] quiet window (ms), [2] longest wait after the first item (ms). Returns
 * how many ms are left until the album is complete: until the latest item is `quiet` old, or the
 * first one `longest` old, whichever comes first; 0 when that has passed (or there are no items).
 */
const WAIT_SCRIPT = `
${NOW_MS}
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #first == 0 then return 0 end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local due = math.min(tonumber(last[2]) + tonumber(ARGV[1]), tonumber(first[2]) + tonumber(ARGV[2]))
return math.max(0, due - now)
`;

/**
 * KEYS: items, claim, taken. ARGV: [1] TTL of taken (s), [2] TTL of the `done` claim (s).
 * Returns what an earlier collect of the same message took, or takes the items: deletes them, marks
 * the claim `done` (an item arriving later claims anew) and records what was taken.
 */
const TAKE_SCRIPT = `
local before = redis.call('GET', KEYS[3])
if before then return before end
local items = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('SET', KEYS[2], 'done', 'EX', ARGV[2]) end
local taken = cjson.encode(items)
if #items == 0 then taken = '[]' end
redis.call('SET', KEYS[3], taken, 'EX', ARGV[1])
return taken
`;

type RedisWithAlbums = RedisClient & {
  albumAdd(
    items: string,
    claim: string,
    item: string,
    ttl: number,
    max: number,
    addressed: "0" | "1",
    claimedTtl: number,
  ): Promise<number>;
  albumWait(items: string, quietMs: number, maxWaitMs: number): Promise<number>;
  albumTake(items: string, claim: string, taken: string, ttl: number, doneTtl: number): Promise<string>;
};

/** Options of {@link AlbumStore.collect}. */
export interface CollectOptions {
  /** Default {@link ALBUM_QUIET_MS}. */
  quietMs?: number;
  /** Default {@link ALBUM_MAX_WAIT_MS}. */
  maxWaitMs?: number;
  /** Aborts the wait; its reason is rethrown. */
  signal?: AbortSignal;
}

/** See the module comment. */
export class AlbumStore {
  readonly #redis: RedisWithAlbums;

  constructor(redis: RedisClient) {
    if (!("albumAdd" in redis)) redis.defineCommand("albumAdd", { numberOfKeys: 2, lua: ADD_SCRIPT });
    if (!("albumWait" in redis)) redis.defineCommand("albumWait", { numberOfKeys: 1, lua: WAIT_SCRIPT });
    if (!("albumTake" in redis)) redis.defineCommand("albumTake", { numberOfKeys: 3, lua: TAKE_SCRIPT });
    this.#redis = redis as RedisWithAlbums;
  }

  /**
   * Records an album item (`message.mediaGroupId` set; its text and files).
   * The keys of an album nobody has claimed live {@link ALBUM_TTL_SECONDS}; from its claim on,
   * {@link ALBUM_TAKEN_TTL_SECONDS} (long enough to wait in the queue).
   * @param addressed - whether the item addresses the bot (in a DM every item does).
   * @returns true when the caller must queue `message` (the album's first addressing item).
   * @throws when Redis is unreachable.
   */
  async add(message: IncomingMessage, addressed: boolean): Promise<boolean> {
    if (!message.mediaGroupId) return addressed;
    const keys = albumKeys(message, message.mediaGroupId);
    const item: Item = { messageId: message.messageId, text: message.text, media: message.media ?? [] };
    return (
      (await this.#redis.albumAdd(
        keys.items,
        keys.claim,
        JSON.stringify(item),
        ALBUM_TTL_SECONDS,
        MAX_ITEMS,
        addressed ? "1" : "0",
        ALBUM_TAKEN_TTL_SECONDS,
      )) === 1
    );
  }

  /**
   * The whole album of `message`: waits until its latest item is `quietMs` old (at most until its
   * first is `maxWaitMs` old, and never longer than `maxWaitMs` from now), takes it,
   * and returns `message` with every item's files (each tagged with its `messageId`; at most
   * {@link MAX_MEDIA_REFS}) and their texts joined by line breaks, items in message id order.
   * A message without `mediaGroupId` is returned as it is, with no Redis command.
   * @throws when Redis is unreachable; the signal's reason when aborted.
   */
  async collect(message: IncomingMessage, options: CollectOptions = {}): Promise<IncomingMessage> {
    if (!message.mediaGroupId) return message;
    const keys = albumKeys(message, message.mediaGroupId);
    const taken = `album-taken:${conversationTag(message)}:${message.messageId}`;
    const quietMs = options.quietMs ?? ALBUM_QUIET_MS;
    const maxWaitMs = options.maxWaitMs ?? ALBUM_MAX_WAIT_MS;
    const until = Date.now() + maxWaitMs;
    if ((await this.#redis.exists(taken)) === 0) {
      for (;;) {
        const left = Math.min(await this.#redis.albumWait(keys.items, quietMs, maxWaitMs), until - Date.now());
        if (left <= 0) break;
        // An abort rejects with an AbortError; the signal's own reason is rethrown instead.
        await sleep(left, undefined, { signal: options.signal }).catch((error: unknown) => {
          options.signal?.throwIfAborted();
          throw error;
        });
      }
    }
    const raw = JSON.parse(
      await this.#redis.albumTake(keys.items, keys.claim, taken, ALBUM_TAKEN_TTL_SECONDS, ALBUM_TTL_SECONDS),
    ) as unknown;
    const items = new Map<string, Item>();
    items.set(message.messageId, { messageId: message.messageId, text: message.text, media: message.media ?? [] });
    for (const entry of Array.isArray(raw) ? raw : []) {
      try {
        const item = ItemSchema.parse(JSON.parse(String(entry)));
        if (!items.has(item.messageId)) items.set(item.messageId, item);
      } catch {
        // a damaged entry is skipped
      }
    }
    const ordered = [...items.values()].sort((a, b) => compareIds(a.messageId, b.messageId));
    const media: MediaRef[] = ordered
      .flatMap((item) =>
        item.media.map((ref) => (item.messageId === message.messageId ? ref : { ...ref, messageId: item.messageId })),
      )
      .slice(0, MAX_MEDIA_REFS);
    const text = ordered
      .map((item) => item.text.trim())
      .filter((t) => t !== "")
      .join("\n");
    return { ...message, text, ...(media.length > 0 ? { media } : {}) };
  }
}

/** Numeric ids in numeric order, others as strings. */
function compareIds(a: string, b: string): number {
  return /^\d+$/.test(a) && /^\d+$/.test(b) ? Number(a) - Number(b) : a.localeCompare(b);
}
