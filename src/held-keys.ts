/**
 * Keys held by one holder at a time (leases, locks): a key whose value names its holder is renewed
 * or released only by that holder, in one script each, so a holder whose key expired and was taken
 * by another never renews or deletes the other's. Used by the Telegram polling lease, the terminal
 * chat's lease, the compaction lease and a scheduled task's running lock.
 */
import type { RedisClient } from "./redis.js";

/** KEYS: the key. ARGV: [1] the holder's value, [2] ttl (ms). Renews and returns 1 when the value is exactly ours, else 0. */
const RENEW_IF_HOLDER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`;

/** KEYS: the key. ARGV: [1] the holder's value. Deletes the key when its value is exactly ours; returns 1 when deleted. */
const RELEASE_IF_HOLDER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Renews `key` for `ttlMs` ms when it still holds `value`.
 * @returns true when renewed; false when the key is gone or another holder's. @throws when Redis is unreachable.
 */
export async function renewIfHolder(redis: RedisClient, key: string, value: string, ttlMs: number): Promise<boolean> {
  return Number(await redis.eval(RENEW_IF_HOLDER, 1, key, value, ttlMs)) === 1;
}

/**
 * Deletes `key` when it still holds `value` (an expired or taken-over key is left alone).
 * @returns true when deleted. @throws when Redis is unreachable.
 */
export async function releaseIfHolder(redis: RedisClient, key: string, value: string): Promise<boolean> {
  return Number(await redis.eval(RELEASE_IF_HOLDER, 1, key, value)) === 1;
}
