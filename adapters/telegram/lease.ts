/**
 * The polling lease: one long-polling adapter per bot at a time, across processes and machines.
 *
 * Telegram allows one `getUpdates` consumer per token; two pollers take turns with `409 Conflict`
 * (https://core.telegram.org/bots/api#getupdates). So a polling adapter first takes a lease in
 * Redis; the others wait and try again every `retryEveryMs`. The holder renews it every
 * `renewEveryMs`; one that stops releases it (the next adapter takes over within `retryEveryMs`),
 * one that dies lets it expire (`ttlMs`, then at most `retryEveryMs`).
 *
 * Fencing: each tenure gets a number from a counter that only grows (the fence). The lease's value
 * is `holder:fence`, and the holder confirms exactly that value in Redis (one script, which also
 * renews it) before every `getUpdates` call. A process that was paused (a stopped container, a
 * long GC, a frozen VM) past the lease's expiry finds another tenure there when it resumes, and
 * stops polling without sending another `getUpdates`.
 *
 * Keys (one hash tag, so the scripts run on Redis Cluster): `telegram:poller:{<h>}` (the lease) and
 * `telegram:poller:{<h>}:fence` (the counter), where `<h>` is the first 16 hex digits of SHA-256 of
 * `telegram-bot:<bot id>`. The bot token never reaches Redis.
 */
import { createHash, randomUUID } from "node:crypto";
import type { RedisClient } from "../../src/redis.js";
import { releaseIfHolder, renewIfHolder } from "../../src/held-keys.js";

/** Timings of the lease, in ms (tests shorten them). */
export interface LeaseOptions {
  /** Lifetime of the lease without renewal. Default 6000. */
  ttlMs?: number;
  /** How often the holder renews it. Default 2000 (a third of the default lifetime). */
  renewEveryMs?: number;
  /** How often a waiting adapter tries to take it. Default 1000. */
  retryEveryMs?: number;
}

/** Defaults of {@link LeaseOptions}: a dead poller is replaced within about 7 s. */
export const LEASE_DEFAULTS: Required<LeaseOptions> = { ttlMs: 6000, renewEveryMs: 2000, retryEveryMs: 1000 };

/**
 * The lease key of a bot: derived from a hash of its numeric id (the part of the token before the
 * colon, `getMe().id`), never from the token. Its hash tag is the bot's own.
 */
export function pollingLeaseKey(botId: number | string): string {
  const hash = createHash("sha256").update(`telegram-bot:${botId}`).digest("hex").slice(0, 16);
  return `telegram:poller:{${hash}}`;
}

/**
 * KEYS: lease, fence counter. ARGV: [1] holder id, [2] ttl (ms).
 * Takes the lease when it is free (a new fence) and returns the fence; returns 0 when another
 * holder has it. A holder that already has it keeps its fence (and renews).
 */
const ACQUIRE = `
local current = redis.call('GET', KEYS[1])
if current then
  local holder, fence = string.match(current, '^(.*):(%d+)$')
  if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(fence)
  end
  return 0
end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. fence, 'PX', ARGV[2])
return fence
`;

/** See the module comment. One instance per adapter; it may hold several tenures one after another. */
export class PollingLease {
  /** This process's holder id (random; logged, never secret). */
  readonly holder = randomUUID();
  readonly #redis: RedisClient;
  readonly #key: string;
  readonly #options: Required<LeaseOptions>;
  /** The current tenure's fence, or undefined when not holding. */
  #fence: number | undefined;
  /** Until when (performance.now() ms) the lease is surely ours: the last confirmation plus the lifetime, less a margin. */
  #validUntil = 0;
  /** When (performance.now() ms) Redis last answered a lease call. */
  #lastAnswer = performance.now();

  /** @param botId - the bot's numeric id (see {@link pollingLeaseKey}). */
  constructor(redis: RedisClient, botId: number | string, options: LeaseOptions = {}) {
    this.#redis = redis;
    this.#key = pollingLeaseKey(botId);
    this.#options = { ...LEASE_DEFAULTS, ...options };
  }

  /** The timings in use. */
  get options(): Required<LeaseOptions> {
    return this.#options;
  }

  /** The current tenure's fence, or undefined when this process does not hold the lease. */
  get fence(): number | undefined {
    return this.#fence;
  }

  /**
   * Takes the lease if it is free (or already ours).
   * @returns true when this process holds it now.
   * @throws when Redis cannot be reached (the caller tries again later).
   */
  async tryAcquire(): Promise<boolean> {
    const started = performance.now();
    const fence = Number(
      await this.#redis.eval(ACQUIRE, 2, this.#key, `${this.#key}:fence`, this.holder, this.#options.ttlMs),
    );
    this.#lastAnswer = performance.now();
    if (fence <= 0) {
      this.#fence = undefined;
      return false;
    }
    this.#fence = fence;
    this.#validUntil = started + this.#options.ttlMs - this.#options.renewEveryMs / 2;
    return true;
  }

  /**
   * Confirms in Redis that the current tenure still holds the lease, and renews it. Call before
   * every `getUpdates` and every `renewEveryMs`.
   * @returns true when it holds. On a Redis error: true only while the last confirmation is still
   *   surely valid (so a short outage does not stop polling, and a long one does).
   */
  async confirm(): Promise<boolean> {
    if (this.#fence === undefined) return false;
    const value = `${this.holder}:${this.#fence}`;
    const started = performance.now();
    try {
      const ours = await renewIfHolder(this.#redis, this.#key, value, this.#options.ttlMs);
      this.#lastAnswer = performance.now();
      if (!ours) {
        this.#fence = undefined;
        return false;
      }
      this.#validUntil = started + this.#options.ttlMs - this.#options.renewEveryMs / 2;
      return true;
    } catch {
      if (performance.now() < this.#validUntil) return true;
      this.#fence = undefined;
      return false;
    }
  }

  /** True while the last confirmation is surely still valid (no Redis call). */
  held(): boolean {
    return this.#fence !== undefined && performance.now() < this.#validUntil;
  }

  /** True when Redis answered a lease call within the last `withinMs` ms (a waiting adapter's health). */
  reachable(withinMs: number): boolean {
    return performance.now() - this.#lastAnswer <= withinMs;
  }

  /** Gives the lease up (only the current tenure's). Never throws. */
  async release(): Promise<void> {
    const fence = this.#fence;
    this.#fence = undefined;
    if (fence === undefined) return;
    await releaseIfHolder(this.#redis, this.#key, `${this.holder}:${fence}`).catch(() => undefined);
  }
}
