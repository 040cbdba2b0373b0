/**
 * Redis key names of the queue, worker and history. Every key of one conversation (a chat, or
 * one Telegram topic of it) carries its `conversationKey` (`platform:chatId` or
 * `platform:chatId/topicId`) inside `{…}` (a Redis Cluster hash tag), so the Lua scripts that
 * touch several keys of one conversation stay on one node. A chat without topics keeps the keys
 * it always had.
 */
import { isCluster, type RedisClient } from "../redis.js";
import { conversationKey, type ConversationRef } from "./incoming.js";

/** Name of the BullMQ queue of chat jobs (one job drains one chat's inbox). */
export const CHATS_QUEUE = "chats";

/** Name of the BullMQ queue of approval decisions; its own Worker, so decisions never wait behind a chat. */
export const DECISIONS_QUEUE = "decisions";

/** Name of the BullMQ queue of compactions (`src/compaction/`): one job per conversation at a time, never inside an answer. */
export const COMPACTIONS_QUEUE = "compactions";

/**
 * The BullMQ key prefix of the queue named `queue`, for its `Queue` and `Worker` alike. On one
 * Redis: `prefix` as given (BullMQ's `bull` by default), so a Redis in use keeps its queued jobs
 * and reminder schedulers. On a Redis Cluster: `{<prefix>:<queue>}`, a hash tag as BullMQ requires
 * there (its Lua scripts touch several keys of one queue; https://docs.bullmq.io/patterns/redis-cluster),
 * one per queue so that the queues spread over the masters.
 *
 * @param prefix - the base prefix, without braces (tests and `npm run chat` use their own).
 */
export function bullPrefix(redis: RedisClient, queue: string, prefix = "bull"): string {
  return isCluster(redis) ? `{${prefix}:${queue}}` : prefix;
}

/** The `{platform:chatId}` (or `{platform:chatId/topicId}`) hash tag of a conversation. */
export function conversationTag(conversation: ConversationRef): string {
  return `{${conversationKey(conversation)}}`;
}

/** Keys of one conversation (a chat, or a topic of it). */
export interface ConversationKeys {
  /** List of validated `IncomingMessage` JSON strings waiting for the worker, oldest first. */
  inbox: string;
  /**
   * The key that exists exactly while the chat has a job or one is being added: the inbox itself
   * (a chat's job is added when a message enters an empty inbox, and ends when its finish script
   * pops the last message). Wait for this key to disappear to see a chat go idle (`npm run chat`).
   */
  scheduled: string;
  /** The chat's history: one string of lines, oldest first, its summary first (format in `src/history/store.ts`). */
  history: string;
  /**
   * The archive of what compactions replaced: a list of JSON entries (`src/compaction/store.ts`),
   * oldest first, bounded in entries and with the history's expiry; deleted by `/reset`.
   */
  archive: string;
  /** Held while one worker compacts the conversation (`SET NX PX` with a random token), so two never do at once. */
  compacting: string;
  /** The conversation's settings (persona, model, language…): one JSON string (`src/settings/store.ts`). Kept by `/reset`. */
  settings: string;
  /**
   * The conversation's reset generation: how many times `/reset` forgot it (an integer string,
   * absent = 0), incremented in the same transaction as the history is deleted
   * (`HistoryStore.reset`) and kept {@link RESETS_TTL_SECONDS} after the last reset or read. An
   * answer notes it when it begins (an approval when it is asked), and its history append is
   * refused when it changed meanwhile, so nothing said before a `/reset` comes back.
   */
  resets: string;
  /**
   * When `/reset` last forgot the conversation (ms since the Unix epoch, by the clock of the
   * process that ran it), written in the same transaction and kept {@link RESETS_TTL_SECONDS}: an
   * answer compares it with the time its attempt began when it appends to the history, so it needs
   * no read of the reset generation when it begins (`HistoryStore.append` with `since`).
   */
  resetAt: string;
}

/**
 * The Redis pub/sub channel on which `HistoryStore.reset` announces each `/reset` (the message is
 * the JSON of the conversation's `ConversationRef`), so that workers close the conversation's
 * open approval prompts at once (`approvalFlow` of `src/approvals/wiring.ts`). Best effort: a
 * worker that misses it still closes them at the next press or at their expiry.
 */
export const RESETS_CHANNEL = "conversation-resets";

/**
 * Seconds a conversation's reset generation is kept after its last reset or read (30 days):
 * far longer than any answer, checkpoint or approval lives, so it cannot vanish between the
 * moment one notes it and the moment its append compares it.
 */
export const RESETS_TTL_SECONDS = 30 * 24 * 3600;

/** The keys of `conversation`. */
export function conversationKeys(conversation: ConversationRef): ConversationKeys {
  const tag = conversationTag(conversation);
  return {
    inbox: `inbox:${tag}`,
    scheduled: `inbox:${tag}`,
    history: `history:${tag}`,
    archive: `archive:${tag}`,
    compacting: `compacting:${tag}`,
    settings: `settings:${tag}`,
    resets: `resets:${tag}`,
    resetAt: `reset-at:${tag}`,
  };
}

/** Marks a platform message as accepted (`SET NX` with a TTL), so a redelivered update is queued once. */
export function dedupeKey(conversation: ConversationRef, messageId: string): string {
  return `seen:${conversationTag(conversation)}:${messageId}`;
}

/**
 * Per-message progress of the worker: the number of answer chunks already sent, written only
 * for an answer that may need more than one chunk (the finish script's pop records that the last
 * chunk went out). The computed answer itself is found in the history (a tag line with the
 * message id), so a retried job neither calls the model again nor sends a chunk twice.
 * `run` holds the run saved before its first call that changes data (`RunState` of
 * `src/agent/contract.ts`), so a retried job resumes it instead of asking the model again; it is
 * written only by runs that call such a tool and deleted once the answer is in the history.
 * `started` holds when the worker began answering (ms since the Unix epoch), written only when an
 * attempt fails and the job will retry, so the retry keeps the answer's one deadline.
 * `stream` holds the messages a streamed answer posted so far (JSON list of `SentRef`), so a retried
 * or redelivered job edits them to the final answer (or deletes them) instead of posting a second
 * copy; deleted once the answer is delivered.
 * `crashes` counts the attempts at the answer that began and never ended in a worker process
 * (written when an attempt begins, deleted when it ends, so only attempts whose process died
 * remain counted): the answer pipeline skips a message whose processing crashed a worker twice.
 */
export function progressKeys(
  conversation: ConversationRef,
  messageId: string,
): { sent: string; run: string; started: string; stream: string; crashes: string } {
  const tag = conversationTag(conversation);
  return {
    sent: `sent:${tag}:${messageId}`,
    run: `run:${tag}:${messageId}`,
    started: `started:${tag}:${messageId}`,
    stream: `stream:${tag}:${messageId}`,
    crashes: `crashes:${tag}:${messageId}`,
  };
}

/**
 * The exactly-once record of one tool call that changes data (claim, then result), by the model's
 * `tool_use` id (see `src/toolbox/once.ts`).
 */
export const TOOL_CALL_PREFIX = "toolcall:";

/**
 * Exists while the chat refuses drafts (a `sendMessageDraft` refused for good, e.g. Telegram 400
 * `TEXTDRAFT_PEER_INVALID`): its streamed answers are posted and edited instead, on every worker,
 * until the key expires after {@link DRAFTS_OFF_SECONDS}.
 */
export function draftsOffKey(conversation: ConversationRef): string {
  return `drafts-off:${conversationTag(conversation)}`;
}

/** How long a chat that refused a draft gets no drafts, in seconds (an hour). */
export const DRAFTS_OFF_SECONDS = 3600;

/**
 * A BullMQ job id for a chat job: platform, chat and message id, made safe for BullMQ (which
 * refuses `:` in custom ids and ids that are plain integers).
 */
export function chatJobId(conversation: ConversationRef, messageId: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return `${conversation.platform}-${safe(conversation.chatId)}-${safe(messageId)}`;
}
