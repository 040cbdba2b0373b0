/**
 * Moving a conversation to a new chat id: a Telegram group upgraded to a supergroup gets a new id
 * (Bot API `Message.migrate_to_chat_id` in the old group, `migrate_from_chat_id` in the new
 * supergroup, and `400 … group chat was upgraded to a supergroup chat` with
 * `ResponseParameters.migrate_to_chat_id` for calls to the old id:
 * https://core.telegram.org/bots/api#responseparameters). Everything the bot keeps for the old
 * conversation carries over to the new one.
 *
 * **The one list of conversation-keyed stores is {@link CONVERSATION_STORES}.** A store that keeps
 * data under a conversation (its key carries the conversation's hash tag, or its records name the
 * chat) adds one entry there, next to the others, saying how its data moves:
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
import { memoryKey } from "../memory/store.js";
import { scanKeys, type RedisClient } from "../redis.js";
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
 * Every conversation-keyed store, walked in order by {@link migrateConversation}. Add yours here
 * (settings, memory of a group, the compaction summary and archive, scheduled tasks …).
 */
export const CONVERSATION_STORES: ConversationStore[] = [
  // The compaction summary is the history's `S` line: it moves with the history.
  { name: "history", keys: (c) => [conversationKeys(c).history], merge: "append" },
  // What compactions replaced (`/context`'s counts, the archive of summarised turns; src/compaction/store.ts).
  // The compaction lease (`compacting`) is not moved: it expires, and a compaction of the old id then finds nothing.
  { name: "compaction archive", keys: (c) => [conversationKeys(c).archive] },
  { name: "settings", keys: (c) => [conversationKeys(c).settings] },
  // How many times `/reset` forgot the conversation (src/history/store.ts): approvals asked before a reset stay closed after the move.
  { name: "reset generation", keys: (c) => [conversationKeys(c).resets] },
  { name: "drafts-off", keys: (c) => [draftsOffKey(c)] },
  // A group's shared memory (`memory:group:{<platform>:<chatId>}`, src/memory/store.ts); a topic shares its group's, so only the whole chat moves it.
  {
    name: "group memory",
    keys: (c) => (c.topicId ? [] : [memoryKey({ kind: "group", platform: c.platform, chatId: c.chatId })]),
  },
  {
    // Group enablement (`/enable`, `npm run access -- allow-chat`): the chat's `platform:chatId` in the granted chats.
    name: "access chats",
    move: async (redis, from, to) => {
      const key = AccessStore.chatsKey;
      if ((await redis.sismember(key, `${from.platform}:${from.chatId}`)) === 1)
        await redis.sadd(key, `${to.platform}:${to.chatId}`);
    },
  },
  {
    // "Always allow" grants: `grants:{<platform>:<userId>}:<conversation>`, one hash per person (src/approvals/grants.ts).
    name: "grants",
    move: async (redis, from, to) => {
      for (const key of await scanKeys(redis, `grants:{${from.platform}:*}:${globEscape(conversationKey(from))}`)) {
        const target = key.slice(0, key.length - conversationKey(from).length) + conversationKey(to);
        await moveKey(redis, key, target);
      }
    },
  },
  {
    // Reminders: per person (`reminder:{<platform>:<userId>}:items`), each record naming the chat it is posted in.
    name: "reminders",
    move: async (redis, from, to) => {
      for (const key of await scanKeys(redis, `reminder:{${from.platform}:*}:items`)) {
        for (const [field, raw] of Object.entries(await redis.hgetall(key))) {
          let record: { chatId?: unknown; topicId?: unknown };
          try {
            record = JSON.parse(raw) as typeof record;
          } catch {
            continue; // decoded (and reported) by the reminder store when read
          }
          if (
            record.chatId !== from.chatId ||
            (from.topicId ?? undefined) !== ((record.topicId as string | undefined) ?? undefined)
          )
            continue;
          await redis.hset(key, field, JSON.stringify({ ...record, chatId: to.chatId }));
        }
      }
    },
  },
  {
    // Scheduled tasks: per person (`task:{<platform>:<userId>}:items`, src/tasks/store.ts), each record naming the chat it runs in.
    name: "tasks",
    move: async (redis, from, to) => {
      for (const key of await scanKeys(redis, `task:{${from.platform}:*}:items`)) {
        for (const [field, raw] of Object.entries(await redis.hgetall(key))) {
          let record: { chatId?: unknown; topicId?: unknown };
          try {
            record = JSON.parse(raw) as typeof record;
          } catch {
            continue; // decoded (and reported) by the task store when read
          }
          if (
            record.chatId !== from.chatId ||
            (from.topicId ?? undefined) !== ((record.topicId as string | undefined) ?? undefined)
          )
            continue;
          await redis.hset(key, field, JSON.stringify({ ...record, chatId: to.chatId }));
        }
      }
    },
  },
];

/** How long the marker of a migration is kept, in seconds (a day). */
export const MIGRATION_MARKER_SECONDS = 24 * 3600;

/** The marker claimed by the one run that moves `from`'s data. */
export function migrationMarkerKey(from: ConversationRef): string {
  return `chat-migration:${conversationTag(from)}`;
}

/**
 * Moves every store of {@link CONVERSATION_STORES} from conversation `from` to `to` (see the module
 * comment). Returns true when this call did the move, false when another run has claimed it.
 * A store that fails is logged and the others still move. With `again` the marker is not claimed:
 * what was written to the old conversation after its move (an answer in flight) moves too.
 *
 * @throws when Redis is unreachable for the marker.
 */
export async function migrateConversation(
  redis: RedisClient,
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
  for (const store of CONVERSATION_STORES) {
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

/** Moves `from` to `to` with its TTL (`DUMP` / `RESTORE`, cluster-safe); an existing `to` is kept (`append`: the old value added after it). */
async function moveKey(redis: RedisClient, from: string, to: string, merge?: "append"): Promise<void> {
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
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
