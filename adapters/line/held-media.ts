/**
 * Files sent in a LINE group or multi-person chat, held for the message that addresses the bot.
 *
 * On LINE a picture, voice message or file is a message of its own, without text: in a group it
 * cannot mention the bot. So the adapter holds each one its sender posts there for
 * {@link HELD_MEDIA_TTL_SECONDS}, and the sender's next message that addresses the bot (a mention,
 * or a quote of the bot's message) carries them, as a caption would on Telegram or Discord
 * ("send the file, then @mention the bot with what to do with it"). A mention that quotes a held
 * picture or video (`quotedMessageId`) carries that one too, whoever sent it. Only references are
 * held (LINE message ids and what LINE announced: name, size), never the bytes: the worker
 * downloads them from LINE's content host when the message is answered, with the size checked
 * before the download (`media.ts`).
 */
import { MAX_MEDIA_REFS, MediaRefSchema, type MediaRef } from "../../src/queue/incoming.js";
import type { RedisClient } from "../../src/redis.js";

/** How long a file sent in a group waits for its sender to address the bot, seconds. */
export const HELD_MEDIA_TTL_SECONDS = 600;
/** Most files held per person and group (the newest are kept). */
export const HELD_MEDIA_MAX = 5;

/** The list of files `userId` sent in `chatId` that wait for a message addressing the bot. */
export function heldKey(chatId: string, userId: string): string {
  return `line:held:{${chatId}}:${userId}`;
}

/** One held file by its message id, for a quote of it. */
function quotedKey(chatId: string, messageId: string): string {
  return `line:held:{${chatId}}:msg:${messageId}`;
}

/**
 * Holds the files of `message` (a group message of files alone) for its sender; each ref carries
 * its message id (`MediaRef.messageId`).
 * @throws when Redis fails.
 */
export async function holdMedia(
  redis: RedisClient,
  message: { chatId: string; userId: string; messageId: string; media?: MediaRef[] | undefined },
): Promise<void> {
  const refs = (message.media ?? []).map((ref) => ({ ...ref, messageId: message.messageId }));
  if (refs.length === 0) return;
  const key = heldKey(message.chatId, message.userId);
  const multi = redis.multi();
  for (const ref of refs) multi.rpush(key, JSON.stringify(ref));
  multi.ltrim(key, -HELD_MEDIA_MAX, -1).expire(key, HELD_MEDIA_TTL_SECONDS);
  multi.set(quotedKey(message.chatId, message.messageId), JSON.stringify(refs), "EX", HELD_MEDIA_TTL_SECONDS);
  await multi.exec();
}

/**
 * Takes (and forgets) the files `userId` holds in `chatId`, and the held files of the message
 * `quotedMessageId` when given: the quoted message's first, then the sender's own oldest first,
 * without repeats, at most {@link MAX_MEDIA_REFS}.
 * Entries that do not parse are left out.
 * @throws when Redis fails.
 */
export async function takeHeldMedia(
  redis: RedisClient,
  chatId: string,
  userId: string,
  quotedMessageId?: string,
): Promise<MediaRef[]> {
  const key = heldKey(chatId, userId);
  const multi = redis.multi().lrange(key, 0, -1).del(key);
  if (quotedMessageId) multi.get(quotedKey(chatId, quotedMessageId));
  const results = (await multi.exec()) ?? [];
  const own = (results[0]?.[1] as string[] | null) ?? [];
  const quoted = quotedMessageId ? ((results[2]?.[1] as string | null) ?? undefined) : undefined;
  const raw: unknown[] = [];
  if (quoted) raw.push(...parseList(quoted));
  for (const entry of own) raw.push(parseOne(entry));
  const refs: MediaRef[] = [];
  const seen = new Set<string>();
  for (const item of raw) {
    const parsed = MediaRefSchema.safeParse(item);
    if (!parsed.success || seen.has(parsed.data.fileId ?? "")) continue;
    seen.add(parsed.data.fileId ?? "");
    refs.push(parsed.data);
  }
  return refs.slice(0, MAX_MEDIA_REFS);
}

function parseOne(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseList(text: string): unknown[] {
  const value = parseOne(text);
  return Array.isArray(value) ? value : [];
}
