/**
 * The chat lease: one `npm run chat` per conversation at a time on one Redis.
 *
 * Every `npm run chat` runs its own worker on the console's queues, so two of them on one
 * conversation would take each other's messages and print the answers in the wrong terminal. A
 * chat therefore takes this lease at start-up, before its worker starts, and a second one on the
 * same conversation stops with a line naming the holder. The demo (`--demo`, conversation `demo`)
 * and the real chat (`local`) are different conversations, so they run side by side.
 *
 * The lease is one key, `chat-lease:{console:<chatId>}` (the conversation's hash tag, see
 * `src/queue/keys.ts`), taken with `SET NX PX` ({@link CHAT_LEASE_TTL_MS}), renewed every
 * {@link CHAT_LEASE_REFRESH_MS} by its holder, and deleted when the chat exits; a chat that crashed
 * leaves it to expire. Its value names the holder (`{"pid":…,"host":…,"token":…}`); renewal and
 * release touch the key only while it holds exactly that value.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { z } from "zod";
import type { Logger } from "../../src/log.js";
import type { ConversationRef } from "../../src/queue/incoming.js";
import { conversationTag } from "../../src/queue/keys.js";
import { decodeRecord } from "../../src/records.js";
import type { RedisClient } from "../../src/redis.js";
import { releaseIfHolder, renewIfHolder } from "../../src/held-keys.js";

/** Lifetime of the lease without renewal, in ms: how long a crashed chat keeps its conversation. */
export const CHAT_LEASE_TTL_MS = 30_000;

/** How often the holder renews the lease, in ms (a third of its lifetime). */
export const CHAT_LEASE_REFRESH_MS = 10_000;

/** The lease key of a conversation: `chat-lease:{console:local}`. */
export function chatLeaseKey(chat: ConversationRef): string {
  return `chat-lease:${conversationTag(chat)}`;
}

/** Who holds a lease: the process id and host name of its `npm run chat`, and a random token of its tenure. */
const HolderSchema = z.object({ pid: z.number().int(), host: z.string(), token: z.string() });

/** See {@link HolderSchema}. */
export type ChatLeaseHolder = z.output<typeof HolderSchema>;

/** Options of {@link takeChatLease}. */
export interface ChatLeaseOptions {
  log: Logger;
  /** Lifetime in ms; default {@link CHAT_LEASE_TTL_MS}. */
  ttlMs?: number;
  /** Renewal interval in ms; default {@link CHAT_LEASE_REFRESH_MS}. */
  refreshMs?: number;
  /**
   * Called once when a renewal finds the lease held by another chat (this process was stopped
   * or paused past the lease's lifetime and another `npm run chat` took the conversation), with
   * that holder when it can be read. Renewal stops then.
   */
  onLost?: (holder: ChatLeaseHolder | undefined) => void;
}

/** A held lease: renewed until {@link ChatLease.release}. */
export interface ChatLease {
  readonly holder: ChatLeaseHolder;
  /** Stops renewing and deletes the lease if it is still ours. Never throws (a Redis failure leaves it to expire). */
  release(): Promise<void>;
}

/**
 * Takes the lease of `chat` for this process and renews it until released.
 *
 * @returns `{ lease }` when taken; `{ heldBy }` when another chat holds it (`heldBy` undefined when
 *   its value could not be read, e.g. it expired meanwhile or was written by another version).
 * @throws when Redis cannot be reached.
 */
export async function takeChatLease(
  redis: RedisClient,
  chat: ConversationRef,
  options: ChatLeaseOptions,
): Promise<{ lease: ChatLease } | { heldBy: ChatLeaseHolder | undefined }> {
  const key = chatLeaseKey(chat);
  const ttlMs = options.ttlMs ?? CHAT_LEASE_TTL_MS;
  const holder: ChatLeaseHolder = { pid: process.pid, host: hostname(), token: randomUUID() };
  const value = JSON.stringify(holder);
  const read = async () => decodeRecord(HolderSchema, await redis.get(key), "chat lease", options.log);
  if ((await redis.set(key, value, "PX", ttlMs, "NX")) !== "OK") return { heldBy: await read() };

  let released = false;
  const renew = async () => {
    try {
      if ((await renewIfHolder(redis, key, value, ttlMs)) || released) return;
      clearInterval(timer);
      const other = await read().catch(() => undefined);
      options.log.warn({ chat: key, holder: other }, "npm run chat: another chat took this conversation's lease");
      options.onLost?.(other);
    } catch (err) {
      // A passing outage: the next renewal tries again (the lease lasts three renewals).
      options.log.warn({ err }, "npm run chat: could not renew the conversation's lease");
    }
  };
  const timer = setInterval(() => void renew(), options.refreshMs ?? CHAT_LEASE_REFRESH_MS);
  timer.unref();
  return {
    lease: {
      holder,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        await releaseIfHolder(redis, key, value).catch((err: unknown) =>
          options.log.warn({ err }, "npm run chat: could not release the conversation's lease; it expires by itself"),
        );
      },
    },
  };
}
