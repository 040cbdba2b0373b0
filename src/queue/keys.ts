/**
 * Redis key names of the queue, worker and history. Every key of one chat carries the chat's
 * `platform:chatId` inside `{…}` (a Redis Cluster hash tag), so the Lua scripts that touch several
 * keys of one chat stay on one node.
 */
import { chatKey, type ChatRef } from "./incoming.js";

/** Name of the BullMQ queue of chat jobs (one job drains one chat's inbox). */
export const CHATS_QUEUE = "chats";

/** Name of the BullMQ queue of approval decisions; its own Worker, so decisions never wait behind a chat. */
export const DECISIONS_QUEUE = "decisions";

/** The `{platform:chatId}` hash tag of a chat. */
export function chatTag(chat: ChatRef): string {
  return `{${chatKey(chat)}}`;
}

/** Keys of one chat. */
export interface ChatKeys {
  /** List of validated `IncomingMessage` JSON strings waiting for the worker, oldest first. */
  inbox: string;
  /** Set while a BullMQ job for the chat exists (`"1"`); cleared only when the inbox is empty. */
  scheduled: string;
  /** List of Messages API messages (JSON), oldest first. */
  history: string;
}

/** The keys of `chat`. */
export function chatKeys(chat: ChatRef): ChatKeys {
  const tag = chatTag(chat);
  return { inbox: `inbox:${tag}`, scheduled: `scheduled:${tag}`, history: `history:${tag}` };
}

/** Marks a platform message as accepted (`SET NX` with a TTL), so a redelivered update is queued once. */
export function dedupeKey(chat: ChatRef, messageId: string): string {
  return `seen:${chatTag(chat)}:${messageId}`;
}

/**
 * Per-message progress of the worker: a JSON `{ answer }` stored with the history append, and
 * the number of answer chunks already sent. Lets a retried job reuse the answer and skip sent chunks.
 */
export function progressKeys(chat: ChatRef, messageId: string): { answer: string; sent: string } {
  const tag = chatTag(chat);
  return { answer: `answer:${tag}:${messageId}`, sent: `sent:${tag}:${messageId}` };
}

/**
 * A BullMQ job id for a chat job: platform, chat and message id, made safe for BullMQ (which
 * refuses `:` in custom ids and ids that are plain integers).
 */
export function chatJobId(chat: ChatRef, messageId: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return `${chat.platform}-${safe(chat.chatId)}-${safe(messageId)}`;
}
