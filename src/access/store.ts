/**
 * Access grants and pairing codes in Redis, shared by every adapter process and `npm run access`.
 *
 * Keys (all built here, one hash tag `{access}` so the pairing script stays on one node):
 * - `access:{access}:users`, `access:{access}:chats`: sets of `platform:id` granted at run time
 *   (the env lists `ALLOWED_USERS` / `ALLOWED_CHATS` add to them, see `policy.ts`);
 * - `access:{access}:code:<CODE>`: the pending pairing (JSON {@link Pairing}), expiring after 1 hour;
 * - `access:{access}:codeof:<platform>:<userId>`: the code a stranger was given;
 * - `access:{access}:pending:<platform>`: sorted set of pending codes by expiry (at most
 *   {@link MAX_PENDING_CODES} per platform);
 * - `access:{access}:told:<what>:<platform>:<id>`: "said once today" marks.
 */
import { randomInt } from "node:crypto";
import type { RedisClient } from "../redis.js";

/** Letters and digits of a pairing code: no look-alikes (no 0/O, 1/I/L). */
export const PAIRING_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/** Characters in a pairing code. */
export const PAIRING_CODE_LENGTH = 8;
/** How long a pairing code is valid, in ms (1 hour). */
export const PAIRING_TTL_MS = 3_600_000;
/** Pending codes per platform; strangers beyond are told to try later. */
export const MAX_PENDING_CODES = 3;

/** A stranger waiting for approval: who, and the DM to tell them in. */
export interface Pairing {
  code: string;
  platform: string;
  userId: string;
  userName: string;
  /** The DM chat the code was given in (where "you are in" is sent). */
  chatId: string;
  /** ms since the epoch. */
  expiresAt: number;
}

const TAG = "{access}";
const key = (...parts: string[]) => ["access", TAG, ...parts].join(":");

/**
 * KEYS: codeof (the stranger's code), pending (sorted set), code key of the new code.
 * ARGV: now (ms), ttl (ms), new code, pairing JSON, max pending.
 * Returns {1, code} for the code given earlier, {2, code} for a new one, {0, ''} when the platform
 * already has the most pending codes.
 */
const PAIR_SCRIPT = `
local existing = redis.call('GET', KEYS[1])
if existing then return {1, existing} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return {0, ''} end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3])
return {2, ARGV[3]}
`;

type RedisWithAccess = RedisClient & {
  accessPair(codeof: string, pending: string, codeKey: string, now: number, ttl: number, code: string, json: string, max: number): Promise<[number, string]>;
};

/** A new random pairing code (8 characters of {@link PAIRING_ALPHABET}). */
export function newPairingCode(): string {
  let code = "";
  for (let i = 0; i < PAIRING_CODE_LENGTH; i += 1) code += PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)];
  return code;
}

/** The result of asking for a pairing code. */
export type PairingResult = { status: "new" | "same"; code: string } | { status: "full" };

/** Grants and pairing codes; see the module comment. Every method throws when Redis fails. */
export class AccessStore {
  readonly #redis: RedisClient;

  constructor(redis: RedisClient) {
    this.#redis = redis;
    if (!("accessPair" in redis)) redis.defineCommand("accessPair", { numberOfKeys: 3, lua: PAIR_SCRIPT });
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
    const [users, chats] = await Promise.all([this.#redis.smembers(AccessStore.usersKey), this.#redis.smembers(AccessStore.chatsKey)]);
    return { users: users.sort(), chats: chats.sort() };
  }

  /**
   * The pairing code of a stranger: the one given within the last hour, or a new one (atomic:
   * at most {@link MAX_PENDING_CODES} pending per platform).
   */
  async pair(who: Omit<Pairing, "code" | "expiresAt">, now = Date.now()): Promise<PairingResult> {
    const code = newPairingCode();
    const pairing: Pairing = { ...who, code, expiresAt: now + PAIRING_TTL_MS };
    const [status, given] = await (this.#redis as RedisWithAccess).accessPair(
      key("codeof", who.platform, who.userId),
      key("pending", who.platform),
      key("code", code),
      now,
      PAIRING_TTL_MS,
      code,
      JSON.stringify(pairing),
      MAX_PENDING_CODES,
    );
    if (status === 0) return { status: "full" };
    return { status: status === 2 ? "new" : "same", code: given };
  }

  /** Pending pairings of every platform, oldest first. */
  async pending(now = Date.now()): Promise<Pairing[]> {
    const out: Pairing[] = [];
    for (const platform of ["telegram", "discord"]) {
      const codes = await this.#redis.zrangebyscore(key("pending", platform), now, "+inf");
      for (const code of codes) {
        const json = await this.#redis.get(key("code", code));
        if (json) out.push(JSON.parse(json) as Pairing);
      }
    }
    return out.sort((a, b) => a.expiresAt - b.expiresAt);
  }

  /**
   * Approves a pairing code (case-insensitive, spaces and dashes ignored): grants the user and
   * removes the code.
   * @returns the approved pairing, or undefined when no such code is pending (unknown or expired).
   */
  async approve(rawCode: string): Promise<Pairing | undefined> {
    const code = rawCode.toUpperCase().replace(/[\s-]/g, "");
    if (!new RegExp(`^[${PAIRING_ALPHABET}]{${PAIRING_CODE_LENGTH}}$`).test(code)) return undefined;
    const json = await this.#redis.get(key("code", code));
    if (!json) return undefined;
    const pairing = JSON.parse(json) as Pairing;
    await this.#redis
      .multi()
      .sadd(AccessStore.usersKey, `${pairing.platform}:${pairing.userId}`)
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
}
