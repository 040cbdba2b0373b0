/**
 * Settings per conversation: the persona, the model, the language of the bot's own messages,
 * streaming, how the bot joins a group's conversation, and voice replies. Stored in Redis under the
 * conversation's hash tag (`settings:{platform:chatId}`, `settings:{platform:chatId/topicId}` for
 * a Telegram topic) as one JSON object of the fields that were changed; a field that is not there
 * has its default. A Telegram topic starts from its group's settings: each field it has not set
 * itself is the group's (its chat's record).
 *
 * Read once per answer, in the same tick as the history (both are in flight together: no round
 * trip of its own), so a change counts from the next message on every worker.
 * Written one field at a time by a script, so two changes at once never undo each other. `/reset`
 * does not touch them; they have no expiry.
 */
import { z } from "zod";
import { LOCALES, type Config, type Locale } from "../config.js";
import type { Logger } from "../log.js";
import { conversationKeys } from "../queue/keys.js";
import type { ConversationRef } from "../queue/incoming.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";

/** Longest persona, in characters (code points). */
export const PERSONA_MAX = 1000;

/** The names of the settings. */
export const SETTING_NAMES = ["persona", "model", "language", "streaming", "replies", "voice"] as const;
/** One of {@link SETTING_NAMES}. */
export type SettingName = (typeof SETTING_NAMES)[number];

/**
 * How the bot joins a group: `mention` (default: it answers mentions, replies to its messages and
 * commands) or `all` (every text message of the group or topic is addressed to it).
 */
export type RepliesMode = "mention" | "all";

/** The choices of voice replies (`TTS_BASE_URL` set): none (default), to voice messages only, or to every answer. */
export const VOICE_REPLIES = ["off", "when-spoken", "always"] as const;
/**
 * When answers come as voice too (`docs/voice.md`): `off` (default), `when-spoken` (an answer to
 * a voice message), `always` (every answer to a message).
 */
export type VoiceReplies = (typeof VOICE_REPLIES)[number];

/** The stored record of one conversation: only the fields someone changed. */
export const SettingsRecordSchema = z.object({
  persona: z
    .string()
    .min(1)
    .max(PERSONA_MAX * 2)
    .optional(),
  model: z.string().min(1).max(100).optional(),
  language: z.enum(LOCALES).optional(),
  streaming: z.enum(["on", "off"]).optional(),
  replies: z.enum(["mention", "all"]).optional(),
  voice: z.enum(VOICE_REPLIES).optional(),
});

/** See {@link SettingsRecordSchema}. */
export type SettingsRecord = z.output<typeof SettingsRecordSchema>;

/** A conversation's settings in effect: the stored fields over the defaults. */
export interface Settings {
  /** The owner's instructions on tone and role, added to the system prompt; absent = none. */
  persona?: string;
  /** The model of this conversation's requests: one of `MODELS` (a stored model no longer listed falls back to `ANTHROPIC_MODEL`). */
  model: string;
  /** The language of the bot's own messages, and the answers' language when the user's is unclear (default `BOT_LOCALE`). */
  language: Locale;
  /** Whether answers are streamed: `STREAMING=on` and not turned off here. */
  streaming: boolean;
  /** How the bot joins a group's conversation (meaningless in a private chat). */
  replies: RepliesMode;
  /** When answers come as voice too; `off` without `TTS_BASE_URL` whatever is stored. */
  voice: VoiceReplies;
}

/** The settings of a conversation nobody changed: every default. */
export function defaultSettings(config: Pick<Config, "ANTHROPIC_MODEL" | "BOT_LOCALE" | "STREAMING">): Settings {
  return {
    model: config.ANTHROPIC_MODEL,
    language: config.BOT_LOCALE,
    streaming: config.STREAMING === "on",
    replies: "mention",
    voice: "off",
  };
}

/**
 * The settings in effect from stored records, later ones over earlier ones (a topic's record over
 * its group's), over the defaults. A model that `MODELS` no longer lists is ignored; so are voice
 * replies while `TTS_BASE_URL` is unset.
 */
export function effectiveSettings(
  config: Pick<Config, "ANTHROPIC_MODEL" | "BOT_LOCALE" | "STREAMING" | "MODELS"> &
    Partial<Pick<Config, "TTS_BASE_URL">>,
  ...records: (SettingsRecord | undefined)[]
): Settings {
  const merged: SettingsRecord = Object.assign({}, ...records.filter((r) => r !== undefined));
  const settings = defaultSettings(config);
  if (merged.persona) settings.persona = merged.persona;
  if (merged.model && config.MODELS.some((m) => m.id === merged.model)) settings.model = merged.model;
  if (merged.language) settings.language = merged.language;
  if (merged.streaming === "off") settings.streaming = false;
  if (merged.replies) settings.replies = merged.replies;
  if (merged.voice && config.TTS_BASE_URL) settings.voice = merged.voice;
  return settings;
}

/**
 * A persona as stored: line breaks kept (as `\n`), other control characters and invisible format
 * characters removed, each line's trailing spaces and the whole text trimmed.
 * @returns the persona, or `""` when nothing visible is left.
 */
export function cleanPersona(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .replace(/[\p{Zl}\p{Zp}]/gu, "\n")
    .replace(/[^\P{Cc}\n]/gu, " ")
    .replace(/\p{Cf}/gu, "")
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * KEYS: the settings record. ARGV: [1] the field, [2] its new value (`""` removes it).
 * Rewrites the record with that one field changed (a record that is not a JSON object is replaced);
 * an empty record is deleted. Returns 1. A record Redis' `cjson` cannot decode because it holds a
 * surrogate's escape (`\ud800`: a persona an older version stored with half an emoji) is decoded
 * with such escapes read as U+FFFD, so its other settings are kept (and written well-formed).
 */
const SET_FIELD_SCRIPT = `
local raw = redis.call('GET', KEYS[1])
local ok, record = pcall(cjson.decode, raw or '{}')
if not ok and raw then ok, record = pcall(cjson.decode, (string.gsub(raw, '\\\\u[dD][89a-fA-F]%x%x', '\\\\ufffd'))) end
if not ok or type(record) ~= 'table' then record = {} end
if ARGV[2] == '' then record[ARGV[1]] = nil else record[ARGV[1]] = ARGV[2] end
if next(record) == nil then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], cjson.encode(record)) end
return 1
`;

type RedisWithSettings = RedisClient & { setSettingField(key: string, field: string, value: string): Promise<number> };

/** The conversation whose record a topic starts from: its chat (the group), or undefined for a conversation that is not a topic. */
function parentOf(conversation: ConversationRef): ConversationRef | undefined {
  return conversation.topicId ? { platform: conversation.platform, chatId: conversation.chatId } : undefined;
}

/** Settings of every conversation, in one Redis; see the module comment. */
export class SettingsStore {
  readonly #redis: RedisWithSettings;
  readonly #config: Config;
  readonly #log: Logger;

  constructor(redis: RedisClient, config: Config, log: Logger) {
    if (!("setSettingField" in redis))
      redis.defineCommand("setSettingField", { numberOfKeys: 1, lua: SET_FIELD_SCRIPT });
    this.#redis = redis as RedisWithSettings;
    this.#config = config;
    this.#log = log;
  }

  /**
   * The settings in effect in `conversation`: one `GET` (a topic: two, its own record and its
   * group's, issued together). Call it in the same tick as the conversation's other reads (the
   * history) and they cost one round trip together.
   * @throws when Redis is unreachable.
   */
  async read(conversation: ConversationRef): Promise<Settings> {
    const { own, inherited } = await this.records(conversation);
    return effectiveSettings(this.#config, inherited, own);
  }

  /**
   * The settings of `conversation` when its own record is read by another command (the worker's
   * one `MGET` when an answer begins, `HistoryStore.readAlong`): `key` is the record to read there;
   * `settings(value)` decodes it, with — for a topic — its group's record, whose `GET` (another hash
   * slot) is issued now, so call this in the same tick as that read and both cost one round trip.
   * @returns the key of the conversation's own record, and the settings from its value (null: no record).
   *   `settings` rejects when Redis was unreachable for the group's record.
   */
  readWith(conversation: ConversationRef): { key: string; settings(value: string | null): Promise<Settings> } {
    const key = conversationKeys(conversation).settings;
    const parent = parentOf(conversation);
    const inherited = parent ? this.#record(parent) : undefined;
    // Awaited by `settings`; a rejection before that is not left unhandled.
    inherited?.catch(() => {});
    return {
      key,
      settings: async (value) => {
        const own = decodeRecord(SettingsRecordSchema, value, "conversation settings", this.#log, { chat: key });
        return effectiveSettings(this.#config, await inherited, own);
      },
    };
  }

  /**
   * The stored records: the conversation's own, and for a topic its group's.
   * @throws when Redis is unreachable.
   */
  async records(conversation: ConversationRef): Promise<{ own?: SettingsRecord; inherited?: SettingsRecord }> {
    const parent = parentOf(conversation);
    const [own, inherited] = await Promise.all([this.#record(conversation), parent ? this.#record(parent) : undefined]);
    return { ...(own ? { own } : {}), ...(inherited ? { inherited } : {}) };
  }

  /**
   * The language set in `conversation` (its own, or for a topic its group's), or undefined when
   * nobody set one: the adapter's choice (`BOT_LOCALE`, a Discord client's language) stands.
   * @throws when Redis is unreachable.
   */
  async language(conversation: ConversationRef): Promise<Locale | undefined> {
    const { own, inherited } = await this.records(conversation);
    return own?.language ?? inherited?.language;
  }

  /**
   * Changes one setting of `conversation` (for a topic: of the topic only), or removes it with
   * `undefined` (the default, or the group's value in a topic, applies again). The value is not
   * checked here: the commands check it (`src/commands/settings.ts`).
   * @throws when Redis is unreachable.
   */
  async set(conversation: ConversationRef, name: SettingName, value: string | undefined): Promise<void> {
    await this.#redis.setSettingField(conversationKeys(conversation).settings, name, value ?? "");
  }

  async #record(conversation: ConversationRef): Promise<SettingsRecord | undefined> {
    const key = conversationKeys(conversation).settings;
    return decodeRecord(SettingsRecordSchema, await this.#redis.get(key), "conversation settings", this.#log, {
      chat: key,
    });
  }
}

/**
 * Whether a group message that does not address the bot is for it all the same: its
 * conversation's replies are set to `all`. One `GET` (two in a topic) per such message, so a
 * change counts from the next message; false in a private chat, and
 * when Redis cannot be reached (logged: the message is then ignored, as before the setting).
 */
export async function repliesToAll(
  settings: SettingsStore,
  message: ConversationRef & { chatKind: "dm" | "group" },
  log: Logger,
): Promise<boolean> {
  if (message.chatKind !== "group") return false;
  try {
    return (await settings.read(message)).replies === "all";
  } catch (error) {
    log.warn(
      { err: error, platform: message.platform, chatId: message.chatId },
      "could not read the group's replies setting; an unaddressed message is ignored",
    );
    return false;
  }
}
