/**
 * Per-conversation history in Redis: one string per conversation (`history:{platform:chatId}`, or
 * `history:{platform:chatId/topicId}` for a Telegram topic) of lines, oldest first, each ending in `\n`:
 *
 * - `U{…}`: a Messages API message (JSON) that is a user text turn (a place where trimming may cut);
 * - `{…}`: any other message (JSON);
 * - `#{"id":…}`: after a run's messages, the platform message id the run answered (and the answer
 *   text when it is not simply the text of the run's last assistant turn; `n`, the tokens of the
 *   run's last model request, when known), so a retried job finds its answer in the history
 *   instead of in a key of its own;
 * - `S{…}`: first, when the conversation was compacted: its summary (`summary.ts`). Trimming keeps
 *   it in front; the compaction's swap (`src/compaction/store.ts`) replaces it and the turns it
 *   summarised in one script.
 *
 * A run's lines are written with ONE command (`APPEND`, or `SET … EX NX` for a new chat), so two
 * writers appending whole runs — a resumed approval and a new message — still leave a valid
 * sequence. Reading is ONE `GETEX … EX ttl`, which also renews the expiry, so appends need no
 * `EXPIRE`; the worker's read when an answer begins (`readAlong`) is one `MGET` with the
 * conversation's other keys and renews the expiry once an hour. Trimming to `maxMessages` plus some slack happens
 * only once the stored lines outgrow that by another slack (every ~10 runs of a long chat): that
 * run's append is a script writing the trimmed value with one `SET … EX … GET`; it cuts only in
 * front of a user text turn. Reading trims at a safe boundary
 * ({@link trimHistory}).
 */
import { createHash } from "node:crypto";
import type { RedisClient } from "../redis.js";
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import { conversationOf, type ConversationRef } from "../queue/incoming.js";
import { conversationKeys, RESETS_CHANNEL, RESETS_TTL_SECONDS } from "../queue/keys.js";
import { decodeRecord, wellFormedJson } from "../records.js";
import { asStoredMessage, MessageParamSchema } from "./message.js";
import { SummarySchema, type Summary } from "./summary.js";
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
  /**
   * Most bytes (UTF-8) of one chat's stored value. Default {@link DEFAULT_HISTORY_MAX_STORED_BYTES}.
   * Once an append would pass it, the oldest runs are cut (in front of a user text turn) until the
   * value is at most 3/4 of it, so trimming happens once every several runs, not on every one.
   */
  maxStoredBytes?: number;
  /** Where an unreadable line is reported (see {@link HistoryStore.read}). Default none. */
  log?: Logger;
  /**
   * Most characters of stored values whose parsed lines a store keeps (see {@link HistoryStore.read}),
   * over all conversations; the conversations read longest ago go first. Default
   * {@link DEFAULT_PARSED_CACHE_CHARS}; 0 keeps none.
   */
  parsedCacheChars?: number;
}

/**
 * Default of {@link HistoryOptions.parsedCacheChars}: 4 000 000 characters of stored values (about
 * 10 conversations at the largest stored size, or 2 000 of 2 000 characters), with their parsed messages.
 */
export const DEFAULT_PARSED_CACHE_CHARS = 4_000_000;

/** A stored value as {@link HistoryStore.read} parsed it, kept so that a value that only grew parses only its new lines. */
interface Parsed {
  /** The value parsed (ends with a line break). */
  raw: string;
  /** Messages parsed so far (never changed once kept: a later read copies them before adding). */
  messages: MessageParam[];
  /** Each message's JSON length. */
  sizes: number[];
  stored: number;
  summary?: Summary;
  /** The last tag line (`#…`), or "". */
  lastTag: string;
  /** That tag line decoded (undefined when there is none or it is unreadable). */
  tag: Tag | undefined;
}

/** A run's tag line (`#{…}`): the platform message id it answered, and the answer when it is not the run's last text. */
export const TagSchema = z.object({
  id: z.string(),
  text: z.string().optional(),
  n: z.number().int().nonnegative().optional(),
});

/** A run's tag as {@link TagSchema} outputs it. */
export type Tag = z.output<typeof TagSchema>;

/** The keys of a tag line, in the order {@link TagSchema} outputs them (`id` always). */
const TAG_KEYS = ["id", "text", "n"] as const;

/**
 * `json` (a tag line as `JSON.parse` returned it) as a tag, without zod, when it already has
 * exactly the form {@link TagSchema} outputs: `id`, then `text` and `n` when present, in that order
 * and no other key, each of the schema's type (`n` a safe integer ≥ 0). Every read decodes the
 * newest tag (each answer appends one); anything else is left to the schema (undefined).
 */
export function asTag(json: unknown): Tag | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  let next = 0;
  for (const key in json) {
    while (next < TAG_KEYS.length && TAG_KEYS[next] !== key) next += 1;
    if (next === TAG_KEYS.length) return undefined;
    next += 1;
  }
  const { id, text, n } = json as { id?: unknown; text?: unknown; n?: unknown };
  if (typeof id !== "string") return undefined;
  if ("text" in json && typeof text !== "string") return undefined;
  if ("n" in json && !(typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) return undefined;
  return json as Tag;
}

/** A tag line's JSON (after its `#`) decoded: {@link asTag}, else with {@link TagSchema} (an unreadable one logged). */
function decodeTag(text: string, log: Logger, chat: string): Tag | undefined {
  return asTag(parseJson(text)) ?? decodeRecord(TagSchema, text, "history run tag", log, { chat });
}

/**
 * Default of {@link HistoryOptions.maxStoredBytes}: 400 000 bytes, four times the default budget
 * sent to the model ({@link DEFAULT_HISTORY_MAX_CHARS} characters), so that budget fits even in
 * three-byte characters (CJK) after a trim to 3/4.
 */
export const DEFAULT_HISTORY_MAX_STORED_BYTES = 400_000;

/**
 * Extra raw messages kept in Redis beyond `maxMessages`, so a trim point moved forward past a tool
 * exchange still leaves close to `maxMessages` to send. Trimming starts once the stored messages
 * exceed `maxMessages + 2 × SLACK` and cuts back to about `maxMessages + SLACK`.
 */
const SLACK = 20;

/** How often {@link HistoryStore.readAlong} renews a conversation's history expiry, in ms (an hour). */
export const RENEW_EVERY_MS = 3_600_000;

/** How many conversations' renewal times {@link HistoryStore.readAlong} remembers (the oldest is forgotten first). */
const RENEWALS_KEPT = 10_000;

/** What {@link HistoryStore.read} returns. */
export interface HistoryRead {
  /** The history as it may be sent to the model (see {@link HistoryStore.load}). */
  messages: MessageParam[];
  /** Number of messages stored in Redis (before trimming for the model); 0 for a new chat. */
  stored: number;
  /** True when the chat had no history key (new, reset or expired chat). */
  fresh: boolean;
  /** The stored value as read (lets {@link HistoryStore.append} trim without reading it again); absent for a new chat. */
  raw?: string;
  /**
   * When `answeredId` was given and a run tagged with it is stored: that run's answer text (the
   * worker's retried job reuses it instead of calling the model again).
   */
  answer?: string;
  /** The conversation's summary, when it was compacted (sent first: `withSummary` of `summary.ts`). */
  summary?: Summary;
  /** Tokens of the latest run's last model request, as its tag recorded them (`RunTag.tokens`), when known. */
  lastTokens?: number;
}

/**
 * The latest run tag of a stored history value (`raw`, as {@link HistoryStore.read} reads it): the
 * message id it answered and the tokens of its last model request, when recorded.
 * @returns undefined when `raw` holds no (readable) tag. Never throws.
 */
export function lastRunTag(raw: string): { id: string; tokens?: number } | undefined {
  const line = raw
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("#"));
  if (!line) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(line.slice(1));
  } catch {
    return undefined;
  }
  const tag = TagSchema.safeParse(json);
  if (!tag.success) return undefined;
  return { id: tag.data.id, ...(tag.data.n !== undefined ? { tokens: tag.data.n } : {}) };
}

/** Tags a run's lines with the platform message id it answered. */
export interface RunTag {
  /** The platform message id the run answered. */
  messageId: string;
  /** The answer text sent to the user. */
  text: string;
  /** Tokens of the run's last model request (input + cache reads + cache writes), for `/context`; absent when unknown. */
  tokens?: number;
}

/**
 * The Lua lines of the appends' reset guard ({@link HistoryStore.append}): KEYS[2] the reset
 * generation, KEYS[3] the time of the last reset; ARGV[g] the generation the run belongs to, or
 * ARGV[g+1] when its attempt began (ms since the Unix epoch), or both `''` (no guard). Returns 0
 * from the script when the conversation was reset since: one `GET` either way.
 */
function resetGuardLua(g: number): string {
  return `
if ARGV[${g}] ~= '' then
  if (tonumber(redis.call('GET', KEYS[2]) or '0') or 0) ~= tonumber(ARGV[${g}]) then return 0 end
elseif ARGV[${g + 1}] ~= '' then
  if (tonumber(redis.call('GET', KEYS[3]) or '0') or 0) > tonumber(ARGV[${g + 1}]) then return 0 end
end`;
}

/**
 * KEYS: history, reset generation, reset time. ARGV: [1] the new value (the value read, plus this run's lines, trimmed by the
 * caller with {@link trimLines}), [2] SHA-1 of the value read, [3] this run's lines, [4] keep
 * (messages), [5] TTL (s), [6] most bytes kept, [7] the reset generation the run belongs to, [8]
 * when its attempt began (see {@link resetGuardLua}).
 * Returns 0 and writes nothing when the conversation was reset since the run began. Otherwise
 * writes the new value with ONE `SET … EX … GET`; when the value it replaced is not the one read
 * (another writer appended meanwhile, or the chat was reset), rebuilds it from what was there plus
 * this run's lines, trimmed the same way, and writes that instead. Returns 1, or 2 after a rebuild.
 */
const TRIM_APPEND_SCRIPT = `${resetGuardLua(7)}
local old = redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[5], 'GET')
if old and redis.sha1hex(old) == ARGV[2] then return 1 end
local v = (old or '') .. ARGV[3]
local summary = ''
if string.sub(v, 1, 1) == 'S' then
  local e = string.find(v, '\\n', 1, true)
  summary = string.sub(v, 1, e)
  v = string.sub(v, e + 1)
end
local keep = tonumber(ARGV[4])
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
local maxBytes = tonumber(ARGV[6])
local i = 1
if total > keep then
  i = total - keep + 1
  while i <= total and not users[i] do i = i + 1 end
  if i > total then i = total - keep + 1 end
end
if total > 0 and #v - starts[i] + 1 > maxBytes then
  local j = i + 1
  while j <= total do
    if users[j] then
      i = j
      if #v - starts[i] + 1 <= maxBytes then break end
    end
    j = j + 1
  end
end
if total > 0 then v = string.sub(v, starts[i]) end
redis.call('SET', KEYS[1], summary .. v, 'EX', ARGV[5])
return 2
`;

/**
 * Cuts the oldest lines of a stored history value so that at most `keep` messages remain, moving
 * the cut forward to the next user text turn (`U` line; when there is none, the raw cut stands and
 * reading drops what does not start validly); then, while the rest is longer than `maxBytes`
 * (UTF-8), moves the cut on to later user text turns (never past the last one: the newest run is
 * kept whole). Tag lines travel with the messages after them are cut (a tag follows its run's
 * messages). A summary line (`S`, first) stays first and is not counted. Same rule as the Lua in
 * the trimming append.
 */
export function trimLines(value: string, keep: number, maxBytes = Infinity): string {
  if (value.startsWith("S")) {
    const end = value.indexOf("\n") + 1;
    if (end > 0) return value.slice(0, end) + trimLines(value.slice(end), keep, maxBytes);
  }
  const lines = value.split("\n");
  const messages: number[] = [];
  lines.forEach((line, i) => {
    if (line !== "" && !line.startsWith("#")) messages.push(i);
  });
  if (messages.length === 0) return value;
  let k = 0;
  if (messages.length > keep) {
    k = messages.length - keep;
    while (k < messages.length && !lines[messages[k]!]!.startsWith("U")) k += 1;
    if (k >= messages.length) k = messages.length - keep;
  }
  // bytes from the start of line i to the end of the value
  const bytesFrom = (i: number) => {
    let n = 0;
    for (let l = i; l < lines.length; l += 1) n += Buffer.byteLength(lines[l]!) + (l < lines.length - 1 ? 1 : 0);
    return n;
  };
  if (Number.isFinite(maxBytes) && bytesFrom(messages[k]!) > maxBytes) {
    for (let j = k + 1; j < messages.length; j += 1) {
      if (!lines[messages[j]!]!.startsWith("U")) continue;
      k = j;
      if (bytesFrom(messages[k]!) <= maxBytes) break;
    }
  }
  return k === 0 ? value : lines.slice(messages[k]).join("\n");
}

/**
 * KEYS: history. ARGV: [1] the start of the run's tag line, `#{"id":<JSON of the message id>`.
 * Removes the newest run tagged with that id: its tag and the messages in front of it back to its
 * user text turn (a run is appended in one command, so its lines are contiguous; a run without
 * messages, e.g. a refusal, is only its tag). Keeps the TTL. Returns 1 when a run was removed.
 */
const FORGET_RUN_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local lines = {}
for line in string.gmatch(v, '([^\\n]*)\\n') do lines[#lines + 1] = line end
local t = nil
for i = #lines, 1, -1 do
  local l = lines[i]
  local after = string.sub(l, #ARGV[1] + 1, #ARGV[1] + 1)
  if string.sub(l, 1, #ARGV[1]) == ARGV[1] and (after == ',' or after == '}') then t = i break end
end
if not t then return 0 end
local u = t
local i = t - 1
while i >= 1 do
  local c = string.sub(lines[i], 1, 1)
  if c == '#' then break end
  if c == 'U' then u = i break end
  i = i - 1
end
local out = {}
for k = 1, #lines do
  if k < u or k > t then out[#out + 1] = lines[k] .. '\\n' end
end
if #out == 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], table.concat(out), 'KEEPTTL') end
return 1
`;

/**
 * KEYS: history, reset generation, reset time. ARGV: [1] this run's lines, [2] TTL (s), [3] the
 * reset generation the run belongs to, [4] when its attempt began (see {@link resetGuardLua}).
 * Appends the lines (setting the expiry when this created the key) only when the conversation was
 * not reset since. Returns 1 when appended, 0 when it was reset meanwhile.
 */
const GUARDED_APPEND_SCRIPT = `${resetGuardLua(3)}
local n = redis.call('APPEND', KEYS[1], ARGV[1])
if n == string.len(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 1
`;

type RedisWithHistory = RedisClient & {
  forgetRun(history: string, tagStart: string): Promise<number>;
  trimAppendHistory(
    history: string,
    resets: string,
    resetAt: string,
    value: string,
    sha: string,
    lines: string,
    keep: number,
    ttl: number,
    maxBytes: number,
    expected: string,
    since: string,
  ): Promise<number>;
  guardedAppendHistory(
    history: string,
    resets: string,
    resetAt: string,
    lines: string,
    ttl: number,
    expected: string,
    since: string,
  ): Promise<number>;
};

/**
 * The reset generation of `conversation` (see `ConversationKeys.resets`): 0 until its first `/reset`.
 * Renews the key's expiry ({@link RESETS_TTL_SECONDS}) with the read (one `GETEX`), so a value
 * noted now is still there when a later append compares it.
 *
 * @throws when Redis is unreachable.
 */
export async function resetGeneration(redis: RedisClient, conversation: ConversationRef): Promise<number> {
  const value = await redis.getex(conversationKeys(conversation).resets, "EX", RESETS_TTL_SECONDS);
  const n = Number(value ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * `JSON.parse(text)` with well-formed strings (a lone surrogate's escape, in a line written before
 * messages were made well-formed, is read as U+FFFD: {@link wellFormedJson}), or undefined when
 * `text` is not JSON.
 */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(wellFormedJson(text));
  } catch {
    return undefined;
  }
}

/** The text of an assistant message's text blocks, joined without separator. */
function textOf(message: MessageParam | undefined): string | undefined {
  if (!message || message.role !== "assistant") return undefined;
  if (typeof message.content === "string") return message.content;
  return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/** What an image a tool returned becomes in the stored history (the run itself saw the image). */
export const TOOL_IMAGE_PLACEHOLDER = "[an image the tool returned; not kept in the history]";

/**
 * `message` with the image blocks inside its `tool_result` blocks (MCP image content) replaced by
 * {@link TOOL_IMAGE_PLACEHOLDER} text, so stored history stays small; other messages unchanged.
 */
export function withoutToolImages(message: MessageParam): MessageParam {
  if (
    typeof message.content === "string" ||
    !message.content.some(
      (b) => b.type === "tool_result" && Array.isArray(b.content) && b.content.some((c) => c.type === "image"),
    )
  )
    return message;
  const content = message.content.map((b) =>
    b.type === "tool_result" && Array.isArray(b.content)
      ? {
          ...b,
          content: b.content.map((c) =>
            c.type === "image" ? { type: "text" as const, text: TOOL_IMAGE_PLACEHOLDER } : c,
          ),
        }
      : b,
  );
  return { ...message, content } as MessageParam;
}

/** The history of every chat, in one Redis. */
export class HistoryStore {
  readonly #log: Logger;
  /** The last value read of each conversation (by history key) and its parsed lines; see {@link read}. */
  readonly #parsed = new Map<string, Parsed>();
  /** Characters of the values in {@link #parsed}. */
  #parsedChars = 0;
  /** When this store last renewed each conversation's history (by history key, ms since the Unix epoch), oldest first; see {@link readAlong}. */
  readonly #renewals = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: HistoryOptions,
  ) {
    this.#log = options.log ?? silentLogger;
    if (!("trimAppendHistory" in redis))
      redis.defineCommand("trimAppendHistory", { numberOfKeys: 3, lua: TRIM_APPEND_SCRIPT });
    if (!("guardedAppendHistory" in redis))
      redis.defineCommand("guardedAppendHistory", { numberOfKeys: 3, lua: GUARDED_APPEND_SCRIPT });
    if (!("forgetRun" in redis)) redis.defineCommand("forgetRun", { numberOfKeys: 1, lua: FORGET_RUN_SCRIPT });
  }

  /**
   * The chat's history as it may be sent to the model: at most `maxMessages`, starting with a user
   * text turn, ending with a finished assistant turn, within the size budget. `[]` for a new or
   * expired chat. A line that is not a readable message (not JSON, or not of a message's shape;
   * logged) ends the usable prefix (everything up to and including it is dropped). Renews the chat's expiry (one `GETEX`).
   * Every string of what it returns is well-formed: a lone UTF-16 surrogate's escape (`\ud800`) in a
   * line written before messages were made well-formed is read as U+FFFD (`wellFormedJson` of
   * `src/records.ts`, only where a line holds a surrogate's escape), so the Messages API, which
   * refuses a lone surrogate, accepts the history.
   *
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async load(conversation: ConversationRef): Promise<MessageParam[]> {
    return (await this.read(conversation)).messages;
  }

  /**
   * Like {@link load} (one `GETEX … EX ttl`), and also reports how many messages are stored,
   * whether the chat is new, and — with `answeredId` — the answer of the run tagged with that
   * platform message id, if one is stored. A history left in an older layout (a list) is deleted
   * and read as empty.
   *
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async read(conversation: ConversationRef, answeredId?: string): Promise<HistoryRead> {
    const key = conversationKeys(conversation).history;
    let value: string | null;
    try {
      value = await this.redis.getex(key, "EX", this.options.ttlSeconds);
      this.#renewed(key);
    } catch (error) {
      if (!/^WRONGTYPE/.test((error as Error).message)) throw error;
      await this.redis.del(key);
      value = null;
    }
    return this.#parse(key, value, answeredId);
  }

  /**
   * Like {@link read}, and also the values of `along` (other string keys of the same conversation,
   * in its hash slot: its settings, a pending approval's hint), in ONE command: `MGET` of the
   * history and `along`. The history's expiry is renewed (`GETEX`, as {@link read}, beside an `MGET`
   * of `along` in the same write) only when this store has not renewed it within the hour
   * ({@link RENEW_EVERY_MS}; it remembers the last {@link RENEWALS_KEPT} conversations): a
   * conversation's history lives its TTL after its latest message, less at most an hour. The
   * first read of a conversation by a process renews it, and so also meets a history left in an
   * older layout (a list; deleted as {@link read} does).
   *
   * @param along - keys in the conversation's hash slot (a Redis Cluster refuses others in one `MGET`).
   * @returns the history as {@link read} returns it, and the values of `along` in their order (null: no key).
   * @throws when Redis is unreachable (after the connection's retries).
   */
  async readAlong(
    conversation: ConversationRef,
    answeredId: string | undefined,
    along: readonly string[],
  ): Promise<{ history: HistoryRead; values: (string | null)[] }> {
    const key = conversationKeys(conversation).history;
    const renewedAt = this.#renewals.get(key);
    if (renewedAt === undefined || Date.now() - renewedAt >= RENEW_EVERY_MS || along.length === 0) {
      const [history, values] = await Promise.all([
        this.read(conversation, answeredId),
        along.length > 0 ? this.redis.mget(...along) : [],
      ]);
      return { history, values };
    }
    const [value, ...values] = await this.redis.mget(key, ...along);
    return { history: this.#parse(key, value ?? null, answeredId), values };
  }

  /** Notes that the history under `key` was just renewed (see {@link readAlong}). */
  #renewed(key: string): void {
    this.#renewals.delete(key);
    this.#renewals.set(key, Date.now());
    if (this.#renewals.size > RENEWALS_KEPT) this.#renewals.delete(this.#renewals.keys().next().value!);
  }

  /** Parses a history value read under `key` (null: no key) as {@link read} returns it. */
  #parse(key: string, value: string | null, answeredId: string | undefined): HistoryRead {
    if (value === null) {
      this.#forget(key);
      return { messages: [], stored: 0, fresh: true };
    }
    // Every message of a conversation reads its history, which mostly grew by the last answer's
    // lines since the previous read: those alone are parsed (JSON and schema), the rest is taken
    // from the previous read's result. A value that changed otherwise (trimmed, compacted, reset,
    // or damaged) is parsed whole. The answer lookup of a retried job (`answeredId`) parses whole.
    const known = answeredId === undefined ? this.#parsed.get(key) : undefined;
    const grown = known !== undefined && value.length >= known.raw.length && value.startsWith(known.raw);
    let messages: MessageParam[] = grown ? known.messages.slice() : [];
    let sizes: number[] = grown ? known.sizes.slice() : [];
    let stored = grown ? known.stored : 0;
    let answer: string | undefined;
    let summary: Summary | undefined = grown ? known.summary : undefined;
    let lastTokens: number | undefined;
    let lastTag = grown ? known.lastTag : "";
    const from = grown ? known.raw.length : 0;
    const lines = (from === 0 ? value : value.slice(from)).split("\n");
    for (const line of lines) {
      if (line === "") continue;
      if (line.startsWith("S")) {
        summary = decodeRecord(SummarySchema, line.slice(1), "conversation summary", this.#log, { chat: key });
        continue;
      }
      if (line.startsWith("#")) {
        lastTag = line;
        if (answeredId === undefined) continue;
        // A damaged tag tags nothing.
        const tag = decodeTag(line.slice(1), this.#log, key);
        if (tag?.id === answeredId) answer = tag.text ?? textOf(messages.at(-1)) ?? "";
        continue;
      }
      stored += 1;
      const json = line.startsWith("U") ? line.slice(1) : line;
      // A line the bot wrote has the schema's exact form: taken as parsed (`asStoredMessage`), else decoded with the schema.
      const message =
        asStoredMessage(parseJson(json)) ??
        decodeRecord(MessageParamSchema, json, "history message", this.#log, { chat: key });
      if (message) {
        messages.push(message);
        sizes.push(json.length);
      } else {
        messages = [];
        sizes = [];
      }
    }
    // The last tag is decoded once, when it changes (a damaged one is logged once).
    const tag =
      grown && lastTag === known.lastTag
        ? known.tag
        : lastTag === ""
          ? undefined
          : decodeTag(lastTag.slice(1), this.#log, key);
    this.#remember(key, { raw: value, messages, sizes, stored, ...(summary ? { summary } : {}), lastTag, tag });
    lastTokens = tag?.n;
    // Right after a compaction its estimate is the size; a run answered later measures it again.
    if (summary?.tokens !== undefined && (tag === undefined || tag.id === summary.after)) lastTokens = summary.tokens;
    const kept = trimHistory(
      messages,
      { maxMessages: this.options.maxMessages, maxChars: this.options.maxChars ?? DEFAULT_HISTORY_MAX_CHARS },
      sizes,
    );
    return {
      messages: kept,
      stored,
      fresh: false,
      raw: value,
      ...(answer !== undefined ? { answer } : {}),
      ...(summary ? { summary } : {}),
      ...(lastTokens !== undefined ? { lastTokens } : {}),
    };
  }

  /** Keeps `parsed` as the last read of `key` (see {@link read}), within {@link HistoryOptions.parsedCacheChars}. */
  #remember(key: string, parsed: Parsed): void {
    this.#forget(key);
    const limit = this.options.parsedCacheChars ?? DEFAULT_PARSED_CACHE_CHARS;
    // Only a value of whole lines can be continued by the lines appended after it.
    if (parsed.raw.length > limit || !parsed.raw.endsWith("\n")) return;
    this.#parsed.set(key, parsed);
    this.#parsedChars += parsed.raw.length;
    for (const [oldest, entry] of this.#parsed) {
      if (this.#parsedChars <= limit) break;
      this.#parsed.delete(oldest);
      this.#parsedChars -= entry.raw.length;
    }
  }

  /** Drops what {@link read} kept of `key`. */
  #forget(key: string): void {
    const entry = this.#parsed.get(key);
    if (!entry) return;
    this.#parsed.delete(key);
    this.#parsedChars -= entry.raw.length;
  }

  /**
   * Appends one run's `messages` atomically with ONE command: `APPEND` of their lines (and of the
   * run's tag, with `tag`), or, when `after` says the chat had no history, `SET … EX ttl NX` (which
   * also sets the expiry; should another writer have created the key meanwhile, `APPEND` follows).
   * When the key was created by `APPEND` (a writer that did not read first), an `EXPIRE` follows.
   * When the stored messages (`after.stored` + these) exceed `maxMessages + 2 × 20`, the append is
   * instead one script that writes the value read plus these lines, cut back to `maxMessages + 20`
   * messages in front of a user text turn ({@link trimLines}), with one `SET … EX … GET` (and
   * rebuilds it from what was there when another writer appended meanwhile): once every ~10 runs
   * of a long chat, one command more than an `APPEND`. The same script runs when the stored value
   * would pass `maxStoredBytes`: it is then also cut, in front of a user text turn, to at most 3/4
   * of that (the newest run is always kept whole).
   *
   * With `resets`, the append (either way) is one script that first checks that the conversation
   * was not reset (`/reset`) after the run began — else it writes nothing: what the run says belongs
   * to the forgotten conversation. Either by the reset generation noted when the run began (a
   * number), or by the time the run's attempt began (`{ since }`, ms since the Unix epoch, compared
   * with the time of the last reset: no read when the run begins). One `GET` in the script either way.
   *
   * @param after - what {@link read} returned before the run, when the caller read it.
   * @param resets - the conversation's reset generation ({@link resetGeneration}) when the run
   *   began (for a resumed approval: when it was asked), or when it began; absent = append whatever
   *   happened meanwhile. Comparing times assumes the clocks of the bot's processes agree (NTP): a
   *   `/reset` within their difference of the answer's start may count on either side of it.
   * @returns true when the lines were written; false when `resets` no longer matched (nothing written).
   * @throws when Redis is unreachable; then nothing was written.
   */
  async append(
    conversation: ConversationRef,
    messages: readonly MessageParam[],
    tag?: RunTag,
    after?: Pick<HistoryRead, "stored" | "fresh" | "raw">,
    resets?: number | { since: number },
  ): Promise<boolean> {
    if (messages.length === 0 && !tag) return true;
    const keys = conversationKeys(conversation);
    const key = keys.history;
    let lines = messages
      .map((m) => `${isUserTextTurn(m) ? "U" : ""}${JSON.stringify(withoutToolImages(m))}\n`)
      .join("");
    if (tag) {
      const derived = textOf(messages.at(-1));
      const record = {
        id: tag.messageId,
        ...(derived === tag.text ? {} : { text: tag.text }),
        ...(tag.tokens !== undefined ? { n: tag.tokens } : {}),
      };
      lines += `#${JSON.stringify(record)}\n`;
    }
    const expected = typeof resets === "number" ? String(resets) : "";
    const since = typeof resets === "object" ? String(Math.floor(resets.since)) : "";
    const keep = this.options.maxMessages + SLACK;
    const maxBytes = this.options.maxStoredBytes ?? DEFAULT_HISTORY_MAX_STORED_BYTES;
    const tooLong =
      after?.raw !== undefined &&
      after.raw.length + lines.length > maxBytes / 3 &&
      Buffer.byteLength(after.raw) + Buffer.byteLength(lines) > maxBytes;
    if (after?.raw !== undefined && (after.stored + messages.length > keep + SLACK || tooLong)) {
      const target = Math.floor((maxBytes * 3) / 4);
      const value = trimLines(after.raw + lines, keep, target);
      const sha = createHash("sha1").update(after.raw).digest("hex");
      return (
        (await (this.redis as RedisWithHistory).trimAppendHistory(
          key,
          keys.resets,
          keys.resetAt,
          value,
          sha,
          lines,
          keep,
          this.options.ttlSeconds,
          target,
          expected,
          since,
        )) !== 0
      );
    }
    if (resets !== undefined)
      return (
        (await (this.redis as RedisWithHistory).guardedAppendHistory(
          key,
          keys.resets,
          keys.resetAt,
          lines,
          this.options.ttlSeconds,
          expected,
          since,
        )) === 1
      );
    let created = false;
    if (after?.fresh) created = (await this.redis.set(key, lines, "EX", this.options.ttlSeconds, "NX")) === "OK";
    if (!created) {
      const length = await this.redis.append(key, lines);
      if (length === Buffer.byteLength(lines)) await this.redis.expire(key, this.options.ttlSeconds);
    }
    return true;
  }

  /**
   * Removes the run that answered `messageId` (its messages and its tag), e.g. because its answer
   * could never be delivered: the model must not believe the user saw it. One script; other runs
   * are untouched and the history stays valid (a whole run, from its user text turn, is removed).
   *
   * @returns whether a run tagged with `messageId` was found and removed.
   * @throws when Redis is unreachable.
   */
  async forget(conversation: ConversationRef, messageId: string): Promise<boolean> {
    const removed = await (this.redis as RedisWithHistory).forgetRun(
      conversationKeys(conversation).history,
      `#{"id":${JSON.stringify(messageId)}`,
    );
    return removed === 1;
  }

  /**
   * Forgets the conversation (`/reset`): its history, its summary (the history's first line) and
   * the keys of `alsoDelete` (the features' reset keys, e.g. the archive of what compactions
   * replaced: `src/conversations/reset.ts`), and increments its reset generation and notes the time
   * of the reset (both kept {@link RESETS_TTL_SECONDS}), in one `MULTI` (the keys share the conversation's hash tag), so a
   * run that began before it can no longer append to the history ({@link append} with `resets`);
   * then announces it on {@link RESETS_CHANNEL}, so workers close its open approval prompts (a
   * failed announcement is logged, not thrown).
   * @throws when Redis is unreachable.
   */
  async reset(conversation: ConversationRef, alsoDelete: readonly string[] = []): Promise<void> {
    const keys = conversationKeys(conversation);
    const results = await this.redis
      .multi()
      .del(keys.history, ...alsoDelete)
      .incr(keys.resets)
      .expire(keys.resets, RESETS_TTL_SECONDS)
      .set(keys.resetAt, String(Date.now()), "EX", RESETS_TTL_SECONDS)
      .exec();
    if (!results) throw new Error("redis transaction was aborted");
    for (const [err] of results) if (err) throw err;
    // The conversation is forgotten either way; workers close its open approval prompts when they hear of it.
    await this.redis
      .publish(RESETS_CHANNEL, JSON.stringify(conversationOf(conversation)))
      .catch((err: unknown) =>
        this.#log.warn(
          { err },
          "could not announce the reset to the workers; its open approval prompts close at their next press or expiry",
        ),
      );
  }

  /** The conversation's reset generation ({@link resetGeneration}). @throws when Redis is unreachable. */
  async generation(conversation: ConversationRef): Promise<number> {
    return resetGeneration(this.redis, conversation);
  }

  /**
   * The conversation's reset generation as it was at `since` (ms since the Unix epoch, e.g. when an
   * answer began): the generation now, or one less when the last `/reset` came after `since`
   * (what a run that began then and asks for an approval now must note). One round trip: the
   * generation's `GETEX` and the reset time's `GET` go out together.
   * @throws when Redis is unreachable.
   */
  async generationAt(chat: ConversationRef, since: number): Promise<number> {
    const [now, at] = await Promise.all([
      resetGeneration(this.redis, chat),
      this.redis.get(conversationKeys(chat).resetAt),
    ]);
    return Number(at ?? 0) > since && now > 0 ? now - 1 : now;
  }
}
