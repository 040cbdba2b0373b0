/**
 * Access grants and pairing codes in Redis, shared by every adapter process and `npm run access`.
 *
 * Keys (all built here, one hash tag `{access}` so the pairing script stays on one node):
 * - `access:{access}:users`, `access:{access}:chats`: sets of `platform:id` granted at run time
 *   (the env lists `ALLOWED_USERS` / `ALLOWED_CHATS` add to them, see `policy.ts`);
 * - `access:{access}:code:<CODE>`: the pairing (JSON {@link Pairing}), expiring after 1 hour; it is
 *   pending while its code is in the platform's sorted set below;
 * - `access:{access}:codeof:<platform>:<userId>`: the code a stranger was given;
 * - `access:{access}:pending:<platform>`: sorted set of pending codes by expiry; a pending code is
 *   never pushed out by newer ones (it ends when approved or expired);
 * - `access:{access}:asked:<platform>:<userId>`: codes given to a stranger in the last day (at most
 *   {@link PAIRING_CODES_PER_USER_PER_DAY}; a stranger has one pending code at a time, so never more
 *   than that pending);
 * - `access:{access}:issued:<platform>`: sorted set of the codes given in the last hour by time, at
 *   most {@link PAIRING_CODES_PER_PLATFORM_PER_HOUR}: a flood of throwaway accounts uses up new
 *   codes for an hour, and the codes already given (a real stranger's) stay valid;
 * - `access:{access}:turned:<platform>`: hash of what was turned away in the last day, for
 *   `npm run access -- list`: `limited` (requests over the per-user limit), `flooded` (new strangers
 *   refused by the platform's hourly limit), `since` (ms of the first count; the hash expires a day later);
 * - `access:{access}:approved:<CODE>`: an approved code's record (JSON {@link ApprovedCode}: whom it let in,
 *   who approved it, when), written in the same `MULTI` that approves, kept {@link APPROVED_CODE_TTL_SECONDS}
 *   (a day) so that approving it again is answered "already approved (whom, by whom, when)" rather
 *   than "mistyped or expired". It is only read for that answer: it never grants anything;
 * - `access:{access}:told:<what>:<platform>:<id>`: "said once today" marks;
 * - `access:{access}:notice:<what>:<conversation>`: when a notice was last said there (ms, by the
 *   clock of the process that said it), kept as long as its window ({@link AccessStore.noticeDue}).
 */
import { randomInt } from "node:crypto";
import { plainLine } from "../plain-text.js";
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import type { RedisClient } from "../redis.js";
import { LOCALES } from "../config.js";
import { decodeRecord } from "../records.js";

/** Letters and digits of a pairing code: no look-alikes (no 0/O, 1/I/L). */
export const PAIRING_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/** Characters in a pairing code. */
export const PAIRING_CODE_LENGTH = 8;
/** How long a pairing code is valid, in ms (1 hour). */
export const PAIRING_TTL_MS = 3_600_000;
/**
 * New pairing codes per platform in any hour. Past it, new strangers are told to try again later
 * (and counted as `flooded` for `npm run access -- list`), while every code already given stays
 * pending: 50 throwaway accounts cannot push out a real stranger's code. As a code lives an hour,
 * this also bounds the codes pending on a platform.
 */
export const PAIRING_CODES_PER_PLATFORM_PER_HOUR = 20;
/** Codes one stranger may be given in a day (a code is valid for an hour; asking again while it is pending returns it). */
export const PAIRING_CODES_PER_USER_PER_DAY = 3;
/** A day in ms: the window of {@link PAIRING_CODES_PER_USER_PER_DAY} and of the turned-away counts. */
const DAY_MS = 86_400_000;
/** An hour in ms: the window of {@link PAIRING_CODES_PER_PLATFORM_PER_HOUR}. */
const HOUR_MS = 3_600_000;

/**
 * A stranger waiting for approval: who, and the DM to tell them in (`chatId`, where "you are in"
 * is sent), in the language they were answered in (`locale`; absent in pairings of older versions:
 * `BOT_LOCALE`); `expiresAt` in ms since the epoch. Decoded with this schema when read back from Redis.
 */
export const PairingSchema = z.object({
  code: z.string(),
  platform: z.string(),
  userId: z.string(),
  userName: z.string(),
  chatId: z.string(),
  locale: z.enum(LOCALES).optional(),
  expiresAt: z.number(),
});

/** See {@link PairingSchema}. */
export type Pairing = z.output<typeof PairingSchema>;

/**
 * How long an approved code's record is kept, in seconds (a day): longer than a code is valid
 * ({@link PAIRING_TTL_MS}, an hour), so an admin who tries a code again the next morning, or a
 * second admin who approves it after the first, is told it was approved, and by whom.
 */
export const APPROVED_CODE_TTL_SECONDS = 86_400;

/**
 * An approved pairing code ({@link AccessStore.approvedCode}): the code, whom it let in (platform,
 * user id, name), who approved it (`by`: the approver's `platform:userId`, `cli` for
 * `npm run access`, `console` for the web console) with their name when known (`byName`), and
 * when (`at`, ms since the epoch). Decoded with this schema when read back from Redis.
 */
export const ApprovedCodeSchema = z.object({
  code: z.string(),
  platform: z.string(),
  userId: z.string(),
  userName: z.string(),
  by: z.string(),
  byName: z.string().optional(),
  at: z.number(),
});

/** See {@link ApprovedCodeSchema}. */
export type ApprovedCode = z.output<typeof ApprovedCodeSchema>;

const TAG = "{access}";
/** Platforms strangers pair on. */
const PAIRING_PLATFORMS = ["telegram", "discord", "line"] as const;
const key = (...parts: string[]) => ["access", TAG, ...parts].join(":");

/** A pairing code as typed, upper case without spaces and dashes; undefined when it cannot be one. */
function normalCode(raw: string): string | undefined {
  const code = raw.toUpperCase().replace(/[\s-]/g, "");
  return new RegExp(`^[${PAIRING_ALPHABET}]{${PAIRING_CODE_LENGTH}}$`).test(code) ? code : undefined;
}

/**
 * KEYS: codeof (the stranger's code), pending (sorted set), code key of the new code, asked (the
 * stranger's codes today), turned (the platform's turned-away counts), issued (the platform's codes
 * of the last hour).
 * ARGV: now (ms), ttl (ms), new code, pairing JSON, max new codes per platform an hour, max codes
 * per user a day, a day (ms), an hour (ms).
 * Returns {1, code} for the stranger's code that is still pending, {2, code} for a new one, {0, ''}
 * when the stranger was given the most codes for a day, {3, ''} when the platform gave the most
 * new codes for an hour.
 */
const PAIR_SCRIPT = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local existing = redis.call('GET', KEYS[1])
if existing and redis.call('ZSCORE', KEYS[2], existing) then return {1, existing} end
local function count(field, n)
  redis.call('HINCRBY', KEYS[5], field, n)
  if redis.call('HSETNX', KEYS[5], 'since', ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[5], ARGV[7]) end
end
if tonumber(redis.call('GET', KEYS[4]) or '0') >= tonumber(ARGV[6]) then
  count('limited', 1)
  return {0, ''}
end
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now - tonumber(ARGV[8]))
if redis.call('ZCARD', KEYS[6]) >= tonumber(ARGV[5]) then
  count('flooded', 1)
  return {3, ''}
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3])
redis.call('ZADD', KEYS[6], now, ARGV[3])
redis.call('PEXPIRE', KEYS[6], ARGV[8])
if redis.call('INCR', KEYS[4]) == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[7]) end
return {2, ARGV[3]}
`;

/**
 * KEYS: the notice's mark. ARGV: now (ms), the window (ms).
 * Returns 1, and marks the notice said now for the window, when the mark is missing or its time is a
 * whole window before now; else 0 (also for a mark ahead of now: another process's clock).
 */
const NOTICE_SCRIPT = `
local last = tonumber(redis.call('GET', KEYS[1]))
if last and tonumber(ARGV[1]) - last < tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

type RedisWithAccess = RedisClient & {
  accessNotice(mark: string, now: number, windowMs: number): Promise<number>;
  accessPair(
    codeof: string,
    pending: string,
    codeKey: string,
    asked: string,
    turned: string,
    issued: string,
    now: number,
    ttl: number,
    code: string,
    json: string,
    maxPerHour: number,
    maxPerUser: number,
    dayMs: number,
    hourMs: number,
  ): Promise<[number, string]>;
};

/** A new random pairing code (8 characters of {@link PAIRING_ALPHABET}). */
export function newPairingCode(): string {
  let code = "";
  for (let i = 0; i < PAIRING_CODE_LENGTH; i += 1) code += PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)];
  return code;
}

/**
 * The result of asking for a pairing code: `limited` when the stranger had
 * {@link PAIRING_CODES_PER_USER_PER_DAY} today, `busy` when the platform gave
 * {@link PAIRING_CODES_PER_PLATFORM_PER_HOUR} new codes in the last hour.
 */
export type PairingResult = { status: "new" | "same"; code: string } | { status: "limited" } | { status: "busy" };

/** What was turned away on one platform in the last day ({@link AccessStore.turnedAway}). */
export interface TurnedAway {
  platform: string;
  /** Requests of strangers who had had {@link PAIRING_CODES_PER_USER_PER_DAY} codes that day. */
  limited: number;
  /** Requests of new strangers refused by the platform's hourly limit ({@link PAIRING_CODES_PER_PLATFORM_PER_HOUR}): a flood. */
  flooded: number;
  /** ms since the epoch of the first count (the counts cover a day from there). */
  since: number;
}

/** Grants and pairing codes; see the module comment. Every method throws when Redis fails. */
export class AccessStore {
  readonly #redis: RedisClient;
  readonly #log: Logger;

  /** @param log - where an unreadable pairing record is reported (it is then treated as missing). */
  constructor(redis: RedisClient, log: Logger = silentLogger) {
    this.#redis = redis;
    this.#log = log;
    if (!("accessPair" in redis)) redis.defineCommand("accessPair", { numberOfKeys: 6, lua: PAIR_SCRIPT });
    if (!("accessNotice" in redis)) redis.defineCommand("accessNotice", { numberOfKeys: 1, lua: NOTICE_SCRIPT });
  }

  /** Key of the set of granted users. */
  static readonly usersKey = key("users");
  /** Key of the set of granted chats. */
  static readonly chatsKey = key("chats");

  /** Whether `principal` (`platform:id`) was granted as a user. Issued at once (auto-pipelined). */
  hasUser(principal: string): Promise<boolean> {
    return this.#redis.sismember(AccessStore.usersKey, principal).then((n) => n === 1);
  }

  /** Whether any of `principals` (`platform:id` of a chat, a guild…) was granted as a chat. */
  hasAnyChat(principals: string[]): Promise<boolean> {
    if (principals.length === 0) return Promise.resolve(false);
    return this.#redis.smismember(AccessStore.chatsKey, ...principals).then((r) => r.some((n) => n === 1));
  }

  /** Grants `principal` as a user. @returns false when it was granted already. */
  async allowUser(principal: string): Promise<boolean> {
    return (await this.#redis.sadd(AccessStore.usersKey, principal)) === 1;
  }

  /** Revokes a granted user. @returns false when it was not granted. */
  async revokeUser(principal: string): Promise<boolean> {
    return (await this.#redis.srem(AccessStore.usersKey, principal)) === 1;
  }

  /** Grants a chat (group, guild or channel). @returns false when granted already. */
  async allowChat(principal: string): Promise<boolean> {
    return (await this.#redis.sadd(AccessStore.chatsKey, principal)) === 1;
  }

  /** Revokes a granted chat. @returns false when it was not granted. */
  async revokeChat(principal: string): Promise<boolean> {
    return (await this.#redis.srem(AccessStore.chatsKey, principal)) === 1;
  }

  /** Granted users and chats, sorted. */
  async grants(): Promise<{ users: string[]; chats: string[] }> {
    const [users, chats] = await Promise.all([
      this.#redis.smembers(AccessStore.usersKey),
      this.#redis.smembers(AccessStore.chatsKey),
    ]);
    return { users: users.sort(), chats: chats.sort() };
  }

  /**
   * The pairing code of a stranger: the one still pending, or a new one (atomic). A stranger who
   * was given {@link PAIRING_CODES_PER_USER_PER_DAY} codes in the last day gets none (`limited`);
   * past {@link PAIRING_CODES_PER_PLATFORM_PER_HOUR} new codes on the platform in the last hour,
   * nobody new gets one (`busy`) — codes already given are never taken back.
   * The name is stored as one plain line (`plainLine`), since `npm run access -- list` prints it.
   */
  async pair(who: Omit<Pairing, "code" | "expiresAt">, now = Date.now()): Promise<PairingResult> {
    const code = newPairingCode();
    const pairing: Pairing = {
      ...who,
      userName: plainLine(who.userName, 256) || who.userId,
      code,
      expiresAt: now + PAIRING_TTL_MS,
    };
    const [status, given] = await (this.#redis as RedisWithAccess).accessPair(
      key("codeof", who.platform, who.userId),
      key("pending", who.platform),
      key("code", code),
      key("asked", who.platform, who.userId),
      key("turned", who.platform),
      key("issued", who.platform),
      now,
      PAIRING_TTL_MS,
      code,
      JSON.stringify(pairing),
      PAIRING_CODES_PER_PLATFORM_PER_HOUR,
      PAIRING_CODES_PER_USER_PER_DAY,
      DAY_MS,
      HOUR_MS,
    );
    if (status === 0) return { status: "limited" };
    if (status === 3) return { status: "busy" };
    return { status: status === 2 ? "new" : "same", code: given };
  }

  /** Pending pairings of every platform, oldest first. */
  async pending(now = Date.now()): Promise<Pairing[]> {
    const out: Pairing[] = [];
    for (const platform of PAIRING_PLATFORMS) {
      const codes = await this.#redis.zrangebyscore(key("pending", platform), now, "+inf");
      for (const code of codes) {
        const pairing = decodeRecord(PairingSchema, await this.#redis.get(key("code", code)), "pairing", this.#log);
        if (pairing) out.push(pairing);
      }
    }
    return out.sort((a, b) => a.expiresAt - b.expiresAt);
  }

  /** What was turned away in the last day, per platform (platforms with nothing turned away are left out). */
  async turnedAway(): Promise<TurnedAway[]> {
    const out: TurnedAway[] = [];
    for (const platform of PAIRING_PLATFORMS) {
      const counts = await this.#redis.hgetall(key("turned", platform));
      if (!counts.since) continue;
      out.push({
        platform,
        limited: Number(counts.limited ?? 0),
        flooded: Number(counts.flooded ?? 0),
        since: Number(counts.since),
      });
    }
    return out;
  }

  /**
   * Approves a pairing code (case-insensitive, spaces and dashes ignored): grants the user, removes
   * the code and records it as approved (`by`, `byName`, now) for {@link APPROVED_CODE_TTL_SECONDS},
   * all in one `MULTI`. Only a pending code approves: an approved, denied or expired one never again.
   * @param by - who approves: their `platform:userId`, `cli` (`npm run access`) or `console` (the web console).
   * @param byName - the approver's name, when known.
   * @returns the approved pairing, or undefined when no such code is pending (unknown, expired or
   *   approved already: {@link approvedCode} tells the last).
   * @throws when Redis fails.
   */
  async approve(rawCode: string, by = "cli", byName?: string): Promise<Pairing | undefined> {
    const code = normalCode(rawCode);
    if (!code) return undefined;
    const pairing = decodeRecord(PairingSchema, await this.#redis.get(key("code", code)), "pairing", this.#log);
    if (!pairing) return undefined;
    // A code taken out of the pending set is no longer pending, though its record waits for its expiry.
    if ((await this.#redis.zscore(key("pending", pairing.platform), code)) === null) return undefined;
    const approved: ApprovedCode = {
      code,
      platform: pairing.platform,
      userId: pairing.userId,
      userName: pairing.userName,
      by,
      ...(byName ? { byName } : {}),
      at: Date.now(),
    };
    const results = await this.#redis
      .multi()
      .zrem(key("pending", pairing.platform), code)
      .sadd(AccessStore.usersKey, `${pairing.platform}:${pairing.userId}`)
      .del(key("code", code), key("codeof", pairing.platform, pairing.userId))
      .set(key("approved", code), JSON.stringify(approved), "EX", APPROVED_CODE_TTL_SECONDS)
      .exec();
    // Another approval of the same code got there first (its ZREM took it out of the pending set).
    if (results?.[0]?.[1] === 0) return undefined;
    return pairing;
  }

  /**
   * The record of an approved pairing code (read as {@link approve} reads a code), for the answer
   * to approving it again; undefined when the code was not approved in the last
   * {@link APPROVED_CODE_TTL_SECONDS} (or its record is unreadable: logged). Grants nothing.
   * @throws when Redis fails.
   */
  async approvedCode(rawCode: string): Promise<ApprovedCode | undefined> {
    const code = normalCode(rawCode);
    if (!code) return undefined;
    return decodeRecord(ApprovedCodeSchema, await this.#redis.get(key("approved", code)), "approved code", this.#log);
  }

  /**
   * Denies a pending pairing code (as {@link approve} reads it): the code is removed, nobody is
   * granted; the stranger's codes of the day still count toward {@link PAIRING_CODES_PER_USER_PER_DAY}.
   * @returns the denied pairing, or undefined when no such code is pending.
   */
  async deny(rawCode: string): Promise<Pairing | undefined> {
    const code = normalCode(rawCode);
    if (!code) return undefined;
    const pairing = decodeRecord(PairingSchema, await this.#redis.get(key("code", code)), "pairing", this.#log);
    if (!pairing) return undefined;
    if ((await this.#redis.zscore(key("pending", pairing.platform), code)) === null) return undefined;
    await this.#redis
      .multi()
      .del(key("code", code), key("codeof", pairing.platform, pairing.userId))
      .zrem(key("pending", pairing.platform), code)
      .exec();
    return pairing;
  }

  /**
   * True the first time in `seconds` (default a day) that `what` is said to `principal`; false
   * afterwards (`SET NX EX`). For "this bot is private" and "an admin must enable this group".
   */
  async firstTime(what: string, principal: string, seconds = 86_400): Promise<boolean> {
    return (await this.#redis.set(key("told", what, principal), "1", "EX", seconds, "NX")) === "OK";
  }

  /**
   * True when `what` (e.g. `busy`) may be said in `conversation` now: it was not said there in the
   * `windowMs` before `now`, by this process or another one on the same Redis; the notice then
   * counts as said at `now` (one script, atomic: of several processes asking at once, one gets true).
   * Unlike {@link firstTime}, the window is measured with the caller's clock, so a test can move it.
   * @param conversation - the conversation's key (`conversationKey`: `platform:chatId[/topicId]`).
   * @param now - ms since the Unix epoch.
   */
  async noticeDue(what: string, conversation: string, now: number, windowMs: number): Promise<boolean> {
    return (
      (await (this.#redis as RedisWithAccess).accessNotice(key("notice", what, conversation), now, windowMs)) === 1
    );
  }
}
