/**
 * Per-chat history in Redis: one string per chat (`history:{platform:chatId}`) of lines, oldest
 * first, each ending in `\n`:
 *
 * - `U{…}`: a Messages API message (JSON) that is a user text turn (a place where trimming may cut);
 * - `{…}`: any other message (JSON);
 * - `#{"id":…}`: after a run's messages, the platform message id the run answered (and the answer
 *   text when it is not simply the text of the run's last assistant turn), so a retried job finds
 *   its answer in the history instead of in a key of its own.
 *
 * A run's lines are written with ONE command (`APPEND`, or `SET … EX NX` for a new chat), so two
 * writers appending whole runs — a resumed approval and a new message — still leave a valid
 * sequence. Reading is ONE `GETEX … EX ttl`, which also renews the expiry (every message of a chat
 * reads its history), so appends need no `EXPIRE`. Trimming to `maxMessages` plus some slack runs as
 * a Lua script only once the stored lines outgrow that by another slack (every ~10 runs of a long
 * chat), and cuts only in front of a user text turn. Reading trims at a safe boundary
 * ({@link trimHistory}).
 */
import type { Redis } from "ioredis";
import type { MessageParam } from "../agent/contract.js";
import type { ChatRef } from "../queue/incoming.js";
import { chatKeys } from "../queue/keys.js";
import { DEFAULT_HISTORY_MAX_CHARS, isUserTextTurn, trimHistory } from "./trim.js";

/** Settings of a {@link HistoryStore}. */
export interface HistoryOptions {
  /** Most messages kept per chat (`HISTORY_MAX_MESSAGES`). */
  maxMessages: number;
  /**
   * Seconds a quiet chat's history is kept (`HISTORY_TTL_DAYS` × 86 400, see `historyTtlSeconds`):
   * set when the history is created and renewed by every {@link HistoryStore.load}/{@link HistoryStore.read}
   * (each message of the chat reads it).
   */
  ttlSeconds: number;
  /** Rough size budget of what is sent to the model, in characters of JSON. Default {@link DEFAULT_HISTORY_MAX_CHARS}. */
  maxChars?: number;
}

/**
 * Extra raw messages kept in Redis beyond `maxMessages`, so a trim point moved forward past a tool
 * exchange still leaves close to `maxMessages` to send. Trimming starts once the stored messages
 * exceed `maxMessages + 2 × SLACK` and cuts back to about `maxMessages + SLACK`.
 */
const SLACK = 20;

/** What {@link HistoryStore.read} returns. */
export interface HistoryRead {
  /** The history as it may be sent to the model (see {@link HistoryStore.load}). */
  messages: MessageParam[];
  /** Number of messages stored in Redis (before trimming for the model); 0 for a new chat. */
  stored: number;
  /** True when the chat had no history key (new, reset or expired chat). */
  fresh: boolean;
  /**
   * When `answeredId` was given and a run tagged with it is stored: that run's answer text (the
   * worker's retried job reuses it instead of calling the model again).
   */
  answer?: string;
}

/** Tags a run's lines with the platform message id it answered. */
export interface RunTag {
  /** The platform message id the run answered. */
  messageId: string;
  /** The answer text sent to the user. */
  text: string;
}

/**
 * KEYS: history. ARGV: keep (messages), TTL (s).
 * Cuts the oldest lines so that at most `keep` messages remain, moving the cut forward to the next
 * user text turn (`U` line); rewrites the value with `SET … EX`. Returns the messages kept.
 */
const TRIM_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local keep = tonumber(ARGV[1])
local starts = {}
local users = {}
for s, line in string.gmatch(v, '()([^\\n]*)\\n') do
  local c = string.sub(line, 1, 1)
  if c ~= '#' and c ~= '' then
    starts[#starts + 1] = s
    users[#starts] = (c == 'U')
  end
end
local total = #starts
if total <= keep then return total end
local i = total - keep + 1
while i <= total and not users[i] do i = i + 1 end
if i > total then i = total - keep + 1 end
redis.call('SET', KEYS[1], string.sub(v, starts[i]), 'EX', ARGV[2])
return total - i + 1
`;

interface RedisWithHistory extends Redis {
  trimHistory(history: string, keep: number, ttl: number): Promise<number>;
}

/** The text of an assistant message's text blocks, joined without separator. */
function textOf(message: MessageParam | undefined): string | undefined {
  if (!message || message.role !== "assistant") return undefined;
  if (typeof message.content === "string") return message.content;
  return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/** The history of every chat, in one Redis. */
export class HistoryStore {
  constructor(
    private readonly redis: Redis,
    private readonly options: HistoryOptions,
  ) {
    if (!("trimHistory" in redis)) redis.defineCommand("trimHistory", { numberOfKeys: 1, lua: TRIM_SCRIPT });
  }

  /**
   * The chat's history as it may be sent to the model: at most `maxMessages`, starting with a user
   * text turn, ending with a finished assistant turn, within the size budget. `[]` for a new or
   * expired chat. A line that is not valid JSON ends the usable prefix (everything up to and
   * including it is dropped). Renews the chat's expiry (one `GETEX`).
   *
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async load(chat: ChatRef): Promise<MessageParam[]> {
    return (await this.read(chat)).messages;
  }

  /**
   * Like {@link load} (one `GETEX … EX ttl`), and also reports how many messages are stored,
   * whether the chat is new, and — with `answeredId` — the answer of the run tagged with that
   * platform message id, if one is stored. A history left in an older layout (a list) is deleted
   * and read as empty.
   *
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async read(chat: ChatRef, answeredId?: string): Promise<HistoryRead> {
    const key = chatKeys(chat).history;
    let value: string | null;
    try {
      value = await this.redis.getex(key, "EX", this.options.ttlSeconds);
    } catch (error) {
      if (!/^WRONGTYPE/.test((error as Error).message)) throw error;
      await this.redis.del(key);
      value = null;
    }
    if (value === null) return { messages: [], stored: 0, fresh: true };
    let messages: MessageParam[] = [];
    let sizes: number[] = [];
    let stored = 0;
    let answer: string | undefined;
    for (const line of value.split("\n")) {
      if (line === "") continue;
      if (line.startsWith("#")) {
        if (answeredId === undefined) continue;
        try {
          const tag = JSON.parse(line.slice(1)) as { id?: unknown; text?: unknown };
          if (tag.id === answeredId) answer = typeof tag.text === "string" ? tag.text : textOf(messages.at(-1)) ?? "";
        } catch {
          // a damaged tag tags nothing
        }
        continue;
      }
      stored += 1;
      const json = line.startsWith("U") ? line.slice(1) : line;
      try {
        messages.push(JSON.parse(json) as MessageParam);
        sizes.push(json.length);
      } catch {
        messages = [];
        sizes = [];
      }
    }
    const kept = trimHistory(messages, { maxMessages: this.options.maxMessages, maxChars: this.options.maxChars ?? DEFAULT_HISTORY_MAX_CHARS }, sizes);
    return { messages: kept, stored, fresh: false, ...(answer !== undefined ? { answer } : {}) };
  }

  /**
   * Appends one run's `messages` atomically with ONE command: `APPEND` of their lines (and of the
   * run's tag, with `tag`), or, when `after` says the chat had no history, `SET … EX ttl NX` (which
   * also sets the expiry; should another writer have created the key meanwhile, `APPEND` follows).
   * When the key was created by `APPEND` (a writer that did not read first), an `EXPIRE` follows.
   * When the stored messages (`after.stored` + these) exceed `maxMessages + 2 × 20`, a trim script
   * cuts them back to `maxMessages + 20` in front of a user text turn.
   *
   * @param after - what {@link read} returned before the run, when the caller read it.
   * @throws when Redis is unreachable; then nothing was written (a failed trim is not thrown: the
   *   next append trims).
   */
  async append(chat: ChatRef, messages: readonly MessageParam[], tag?: RunTag, after?: Pick<HistoryRead, "stored" | "fresh">): Promise<void> {
    if (messages.length === 0 && !tag) return;
    const key = chatKeys(chat).history;
    let lines = messages.map((m) => `${isUserTextTurn(m) ? "U" : ""}${JSON.stringify(m)}\n`).join("");
    if (tag) {
      const derived = textOf(messages.at(-1));
      lines += `#${JSON.stringify(derived === tag.text ? { id: tag.messageId } : { id: tag.messageId, text: tag.text })}\n`;
    }
    let created = false;
    if (after?.fresh) created = (await this.redis.set(key, lines, "EX", this.options.ttlSeconds, "NX")) === "OK";
    if (!created) {
      const length = await this.redis.append(key, lines);
      if (length === Buffer.byteLength(lines)) await this.redis.expire(key, this.options.ttlSeconds);
    }
    const keep = this.options.maxMessages + SLACK;
    if (after && after.stored + messages.length > keep + SLACK) {
      await (this.redis as RedisWithHistory).trimHistory(key, keep, this.options.ttlSeconds).catch(() => {});
    }
  }

  /** Forgets the chat's history (`/reset`). @throws when Redis is unreachable. */
  async reset(chat: ChatRef): Promise<void> {
    await this.redis.del(chatKeys(chat).history);
  }
}
