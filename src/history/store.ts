/**
 * Per-chat history in Redis: one list per chat (`history:{platform:chatId}`), one Messages API
 * message (JSON) per element, oldest first.
 *
 * A run's messages are appended with ONE `RPUSH` (they start with a user turn and end with an
 * assistant turn, so two writers appending whole runs — a resumed approval and a new message —
 * still leave a valid sequence), followed by `LTRIM` and `EXPIRE` in the same transaction.
 * Reading trims at a safe boundary ({@link trimHistory}).
 */
import type { Redis } from "ioredis";
import type { MessageParam } from "../agent/contract.js";
import type { ChatRef } from "../queue/incoming.js";
import { chatKeys } from "../queue/keys.js";
import { DEFAULT_HISTORY_MAX_CHARS, trimHistory } from "./trim.js";

/** Settings of a {@link HistoryStore}. */
export interface HistoryOptions {
  /** Most messages kept per chat (`HISTORY_MAX_MESSAGES`). */
  maxMessages: number;
  /** Seconds a quiet chat's history is kept (`HISTORY_TTL_DAYS` × 86 400, see `historyTtlSeconds`); every append renews it. */
  ttlSeconds: number;
  /** Rough size budget of what is sent to the model, in characters of JSON. Default {@link DEFAULT_HISTORY_MAX_CHARS}. */
  maxChars?: number;
}

/**
 * Extra raw messages kept in Redis beyond `maxMessages`, so a trim point moved forward past a tool
 * exchange still leaves close to `maxMessages` to send.
 */
const SLACK = 20;

/**
 * KEYS: history, record key (or "" for none). ARGV: keep, history TTL (s), record value, record TTL (s), messages….
 */
const APPEND_SCRIPT = `
if KEYS[2] ~= "" then redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4]) end
if #ARGV > 4 then
  local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 5))
  if n > tonumber(ARGV[1]) then redis.call('LTRIM', KEYS[1], -tonumber(ARGV[1]), -1) end
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1
`;

interface RedisWithHistory extends Redis {
  appendHistory(history: string, record: string, keep: number, ttl: number, value: string, recordTtl: number, ...messages: string[]): Promise<number>;
}

/** The history of every chat, in one Redis. */
export class HistoryStore {
  constructor(
    private readonly redis: Redis,
    private readonly options: HistoryOptions,
  ) {
    if (!("appendHistory" in redis)) redis.defineCommand("appendHistory", { numberOfKeys: 2, lua: APPEND_SCRIPT });
  }

  /**
   * The chat's history as it may be sent to the model: at most `maxMessages`, starting with a user
   * text turn, ending with a finished assistant turn, within the size budget. `[]` for a new or
   * expired chat. Elements that are not valid JSON end the usable prefix (everything up to and
   * including them is dropped).
   *
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async load(chat: ChatRef): Promise<MessageParam[]> {
    const raw = await this.redis.lrange(chatKeys(chat).history, -(this.options.maxMessages + SLACK), -1);
    let messages: MessageParam[] = [];
    let sizes: number[] = [];
    for (const item of raw) {
      try {
        messages.push(JSON.parse(item) as MessageParam);
        sizes.push(item.length);
      } catch {
        messages = [];
        sizes = [];
      }
    }
    return trimHistory(messages, { maxMessages: this.options.maxMessages, maxChars: this.options.maxChars ?? DEFAULT_HISTORY_MAX_CHARS }, sizes);
  }

  /**
   * Appends one run's `messages` atomically (one Lua script, a transaction like MULTI): one `RPUSH`
   * of all of them, `LTRIM` to `maxMessages` plus some slack when the list grew past it, `EXPIRE`
   * to `ttlSeconds`. With `record`, also `SET record.key record.value EX record.ttlSeconds` in the
   * same step (the worker stores the computed answer with the history append, so a retried job
   * neither calls the model again nor appends twice).
   *
   * @throws when Redis is unreachable; then nothing was written.
   */
  async append(chat: ChatRef, messages: readonly MessageParam[], record?: { key: string; value: string; ttlSeconds: number }): Promise<void> {
    if (messages.length === 0 && !record) return;
    const keep = this.options.maxMessages + SLACK;
    await (this.redis as RedisWithHistory).appendHistory(
      chatKeys(chat).history,
      record?.key ?? "",
      keep,
      this.options.ttlSeconds,
      record?.value ?? "",
      record?.ttlSeconds ?? 0,
      ...messages.map((m) => JSON.stringify(m)),
    );
  }

  /** Forgets the chat's history (`/reset`). @throws when Redis is unreachable. */
  async reset(chat: ChatRef): Promise<void> {
    await this.redis.del(chatKeys(chat).history);
  }
}
