/**
 * Moving a conversation to a new chat id: a Telegram group upgraded to a supergroup gets a new id
 * (Bot API `Message.migrate_to_chat_id` in the old group, `migrate_from_chat_id` in the new
 * supergroup, and `400 … group chat was upgraded to a supergroup chat` with
 * `ResponseParameters.migrate_to_chat_id` for calls to the old id:
 * https://core.telegram.org/bots/api#responseparameters). Everything the bot keeps for the old
 * conversation carries over to the new one.
 *
 * **The conversation-keyed stores are the core's ({@link CORE_CONVERSATION_STORES}) and each
 * feature's (`Feature.conversation.stores`, `src/feature.ts`).** A feature that keeps data under a
 * conversation (its key carries the conversation's hash tag, or its records name the chat) lists
 * its stores in its own `feature.ts`, saying how its data moves:
 * - `keys`: the keys of the conversation (built by the store's own key builder); each is moved as
 *   it is (`DUMP` / `RESTORE` with its TTL, then `DEL`: the old and new keys hash to different
 *   Redis Cluster slots). A key the new conversation already has is kept, and the old one left.
 * - `move`: anything else (members of a set, keys found by a bounded `SCAN` of the person-tagged
 *   keys, records that name the chat), written by the store: it must be idempotent (running it a
 *   second time changes nothing).
 *
 * Running it twice, or on two workers at once (the 400 seen by a worker and the service message
 * seen by the adapter), is safe: a marker `chat-migration:{<platform>:<old id>}` is claimed with
 * `SET NX` first, so one run moves the data and the others return; every step is idempotent too,
 * so a run cut off halfway is finished by the next trigger once its marker has expired (1 day).
 */
import { AccessStore } from "../access/store.js";
import type { Logger } from "../log.js";
import { z } from "zod";
import { conversationKey, PLATFORMS, type ConversationRef } from "../queue/incoming.js";
import { conversationKeys, conversationTag, draftsOffKey } from "../queue/keys.js";
import type { RedisClient } from "../redis.js";
import { moveKey } from "./keys.js";
import { decodeRecord } from "../records.js";

/** A store whose data belongs to a conversation: how it moves to a new chat id. */
export interface ConversationStore {
  /** The store, for logs (e.g. `history`). */
  name: string;
  /** The conversation's keys of this store, moved as they are. */
  keys?: (conversation: ConversationRef) => string[];
  /**
   * `append` for a string that writers only append to (a history: whole lines of whole runs): it
   * is taken with `GETDEL` and added after the new key's value when there is one, so nothing
   * written is lost, even by a writer appending meanwhile. Default: the key is moved with
   * `DUMP` / `RESTORE` and a key the new conversation already has is kept as it is.
   */
  merge?: "append";
  /** Moves the rest of the store's data from `from` to `to`; idempotent. */
  move?: (redis: RedisClient, from: ConversationRef, to: ConversationRef) => Promise<void>;
}

/**
 * The core's conversation-keyed stores, moved first; each feature's follow (`Feature.conversation.stores`:
 * {@link conversationStores} puts them together).
 */
export const CORE_CONVERSATION_STORES: readonly ConversationStore[] = [
  // The compaction summary is the history's `S` line: it moves with the history.
  { name: "history", keys: (c) => [conversationKeys(c).history], merge: "append" },
  // How many times `/reset` forgot the conversation (src/history/store.ts): approvals asked before a reset stay closed after the move.
  { name: "reset generation", keys: (c) => [conversationKeys(c).resets] },
  { name: "drafts-off", keys: (c) => [draftsOffKey(c)] },
  {
    // Group enablement (`/enable`, `npm run access -- allow-chat`): the chat's `platform:chatId` in the granted chats.
    name: "access chats",
    move: async (redis, from, to) => {
      const key = AccessStore.chatsKey;
      if ((await redis.sismember(key, `${from.platform}:${from.chatId}`)) === 1)
        await redis.sadd(key, `${to.platform}:${to.chatId}`);
    },
  },
];

/**
 * Every conversation-keyed store: the core's ({@link CORE_CONVERSATION_STORES}), then those of
 * `features` in their order (`Feature.conversation.stores`, `src/feature.ts`).
 */
export function conversationStores(
  features: readonly { conversation?: { stores?: readonly ConversationStore[] } | undefined }[],
): ConversationStore[] {
  return [...CORE_CONVERSATION_STORES, ...features.flatMap((f) => f.conversation?.stores ?? [])];
}

/** How long the marker of a migration is kept, in seconds (a day). */
export const MIGRATION_MARKER_SECONDS = 24 * 3600;

/** The marker claimed by the one run that moves `from`'s data. */
export function migrationMarkerKey(from: ConversationRef): string {
  return `chat-migration:${conversationTag(from)}`;
}

/**
 * Moves every store of `stores` (the core's and the features': {@link conversationStores}) from
 * conversation `from` to `to` (see the module comment). Returns true when this call did the move, false when another run has claimed it.
 * A store that fails is logged and the others still move. With `again` the marker is not claimed:
 * what was written to the old conversation after its move (an answer in flight) moves too.
 *
 * @throws when Redis is unreachable for the marker.
 */
export async function migrateConversation(
  redis: RedisClient,
  stores: readonly ConversationStore[],
  from: ConversationRef,
  to: ConversationRef,
  log: Logger,
  options: { again?: boolean } = {},
): Promise<boolean> {
  if (conversationKey(from) === conversationKey(to)) return false;
  if (!options.again) {
    const claimed = await redis.set(migrationMarkerKey(from), JSON.stringify(to), "EX", MIGRATION_MARKER_SECONDS, "NX");
    if (claimed !== "OK") return false;
  }
  for (const store of stores) {
    try {
      const targets = store.keys?.(to) ?? [];
      for (const [i, key] of (store.keys?.(from) ?? []).entries()) await moveKey(redis, key, targets[i]!, store.merge);
      await store.move?.(redis, from, to);
    } catch (err) {
      log.error(
        { err, store: store.name, from: conversationKey(from), to: conversationKey(to) },
        `could not move the ${store.name} of a migrated chat`,
      );
    }
  }
  if (!options.again)
    log.info(
      { from: conversationKey(from), to: conversationKey(to) },
      "the chat moved to a new id (group upgraded to a supergroup); its conversation data moved with it",
    );
  return true;
}

/**
 * Where `from` moved, when it did within {@link MIGRATION_MARKER_SECONDS} (its marker), else
 * undefined: an answer that was in flight moves what it wrote after it (`again`).
 */
export async function movedTo(
  redis: RedisClient,
  from: ConversationRef,
  log: Logger,
): Promise<ConversationRef | undefined> {
  return decodeRecord(MovedToSchema, await redis.get(migrationMarkerKey(from)), "chat migration marker", log);
}

const MovedToSchema = z.object({
  platform: z.enum(PLATFORMS),
  chatId: z.string().min(1),
  topicId: z.string().min(1).optional(),
});
