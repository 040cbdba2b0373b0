/**
 * "Always allow" grants: a requester who pressed "always allow" on an approval prompt lets later
 * calls of that one tool, by them, in that one conversation, run without asking, until the grant
 * expires (`ALWAYS_ALLOW_DAYS`) or they revoke it (`/permissions`).
 *
 * A grant belongs to requester × tool × conversation. The conversation is the one key builder's
 * (`conversationKey`): a chat, or one Telegram topic of it, so a grant given in one topic does not
 * apply in another topic of the same group (as the history, `/reset` and pending approvals).
 *
 * Keys: one hash per person and conversation, `grants:{<platform>:<userId>}:<conversationKey>`
 * (the person's own Redis Cluster hash tag; every script here touches that one key). Its fields
 * are tool names; each value is `{"grantedAt":ms,"expiresAt":ms}`. A grant counts only while
 * `expiresAt` is in the future, checked at every use; the key's own TTL is stretched to its
 * latest grant, so Redis drops a person's grants there once all have expired. There is no cache
 * in any process: a revoke is seen by every worker at the next call.
 */
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import { alwaysAllowMs, type Config } from "../config.js";
import { conversationKey, conversationOf, type ConversationRef } from "../queue/incoming.js";

/** Whose grants: a person (`userId`, as in `IncomingMessage.userId`) in one conversation. */
export interface GrantOwner extends ConversationRef {
  userId: string;
}

/** One grant. */
export interface Grant {
  /** The tool's name, as registered in the toolbox. */
  tool: string;
  /** When it was given (or last renewed), ms since the Unix epoch. */
  grantedAt: number;
  /** When it stops counting, ms since the Unix epoch. */
  expiresAt: number;
}

/** Options of a {@link GrantStore}. */
export interface GrantStoreOptions {
  /** How long a new grant lasts, in ms (`alwaysAllowMs(config)` of `src/config.ts`). */
  ttlMs: number;
  /** Key prefix. Default `grants:`. */
  prefix?: string;
  /** The clock, ms since the Unix epoch. Default `Date.now`. */
  now?: () => number;
  log?: Logger;
}

/** Sets one field and stretches the key's TTL to at least ARGV[3] ms (never shortens it). */
const GRANT = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
local want = tonumber(ARGV[3])
if ttl < want then redis.call('PEXPIRE', KEYS[1], want) end
return 1
`;

/** Deletes a field only when it still holds ARGV[2] (an expired grant that nobody renewed meanwhile). */
const DROP_IF_SAME = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
`;

const ValueSchema = z.object({ grantedAt: z.number(), expiresAt: z.number() });

/** The Redis-backed grants; see the module comment. Safe to share; holds no state but its options. */
export class GrantStore {
  readonly #redis: RedisClient;
  readonly #ttlMs: number;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #log: Logger;

  /**
   * @param redis - a shared ioredis connection (commands only).
   * @param options - see {@link GrantStoreOptions}; `ttlMs` is required.
   * @throws {RangeError} when `ttlMs` is not a positive number.
   */
  constructor(redis: RedisClient, options: GrantStoreOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError("ttlMs must be a positive number of ms");
    this.#redis = redis;
    this.#ttlMs = Math.ceil(options.ttlMs);
    this.#prefix = options.prefix ?? "grants:";
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? silentLogger;
  }

  /** How long a new grant lasts, in ms. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /**
   * Records (or renews, from now) the grant of `tool` to `owner` in their conversation.
   * @returns the grant as stored.
   * @throws when Redis is unreachable.
   */
  async grant(owner: GrantOwner, tool: string): Promise<Grant> {
    const grantedAt = this.#now();
    const grant: Grant = { tool, grantedAt, expiresAt: grantedAt + this.#ttlMs };
    await this.#redis.eval(
      GRANT,
      1,
      this.key(owner),
      tool,
      JSON.stringify({ grantedAt, expiresAt: grant.expiresAt }),
      this.#ttlMs,
    );
    this.#log.info(
      {
        owner: `${owner.platform}:${owner.userId}`,
        conversation: conversationKey(owner),
        tool,
        expiresAt: new Date(grant.expiresAt).toISOString(),
      },
      "always-allow grant recorded",
    );
    return grant;
  }

  /**
   * The grant of `tool` to `owner` in their conversation, when there is one that has not expired
   * (read from Redis at every call; an expired one is removed).
   * @throws when Redis is unreachable.
   */
  async find(owner: GrantOwner, tool: string): Promise<Grant | undefined> {
    const key = this.key(owner);
    const raw = await this.#redis.hget(key, tool);
    if (raw === null) return undefined;
    const grant = this.#parse(tool, raw);
    if (grant && grant.expiresAt > this.#now()) return grant;
    await this.#redis.eval(DROP_IF_SAME, 1, key, tool, raw);
    return undefined;
  }

  /**
   * Every grant of `owner` in their conversation that has not expired, by tool name (expired
   * ones are removed).
   * @throws when Redis is unreachable.
   */
  async list(owner: GrantOwner): Promise<Grant[]> {
    const key = this.key(owner);
    const hash = await this.#redis.hgetall(key);
    const now = this.#now();
    const grants: Grant[] = [];
    const drops: Promise<unknown>[] = [];
    for (const [tool, raw] of Object.entries(hash)) {
      const grant = this.#parse(tool, raw);
      if (grant && grant.expiresAt > now) grants.push(grant);
      else drops.push(this.#redis.eval(DROP_IF_SAME, 1, key, tool, raw));
    }
    await Promise.all(drops);
    return grants.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  }

  /**
   * Removes the grant of `tool` to `owner` in their conversation; from the next call on, every
   * worker asks again.
   * @returns whether there was one (expired or not).
   * @throws when Redis is unreachable.
   */
  async revoke(owner: GrantOwner, tool: string): Promise<boolean> {
    const removed = (await this.#redis.hdel(this.key(owner), tool)) > 0;
    if (removed)
      this.#log.info(
        { owner: `${owner.platform}:${owner.userId}`, conversation: conversationKey(owner), tool },
        "always-allow grant revoked",
      );
    return removed;
  }

  /** The hash of `owner`'s grants in their conversation: `grants:{platform:userId}:<conversationKey>`. */
  key(owner: GrantOwner): string {
    return `${this.#prefix}{${owner.platform}:${owner.userId}}:${conversationKey(owner)}`;
  }

  #parse(tool: string, raw: string): Grant | undefined {
    try {
      const value = ValueSchema.parse(JSON.parse(raw));
      return { tool, ...value };
    } catch {
      this.#log.warn({ tool }, "unreadable always-allow grant; ignored");
      return undefined;
    }
  }
}

/**
 * The grant store of a process: `ALWAYS_ALLOW_DAYS` of `config` as the length of new grants.
 * @param redis - a shared ioredis connection (commands only).
 */
export function grantStoreFor(redis: RedisClient, config: Pick<Config, "ALWAYS_ALLOW_DAYS">, log?: Logger): GrantStore {
  return new GrantStore(redis, { ttlMs: alwaysAllowMs(config), ...(log ? { log } : {}) });
}

/**
 * The agent loop's `grantFor` for one message: the grant of a tool to the message's sender in the
 * message's conversation (see `AgentDeps.grantFor`).
 * @param message - the message being answered (its conversation and `userId`).
 */
export function grantLookup(
  grants: GrantStore,
  message: ConversationRef & { userId: string },
): (tool: string) => Promise<Grant | undefined> {
  const owner: GrantOwner = { ...conversationOf(message), userId: message.userId };
  return (tool) => grants.find(owner, tool);
}
