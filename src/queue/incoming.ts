/**
 * The normalised incoming message: what every adapter produces and every worker consumes.
 * One zod schema; the type flows from it.
 */
import { z } from "zod";

/** Platforms the bot speaks on. */
export const PLATFORMS = ["telegram", "discord", "console"] as const;
/** A platform name. */
export type Platform = (typeof PLATFORMS)[number];

/** Longest text accepted from a user, in UTF-16 code units (Telegram's own limit is 4096). */
export const MAX_INCOMING_TEXT = 8000;

/**
 * A message addressed to the bot, normalised by an adapter.
 *
 * - `chatId`: the platform's chat (Telegram `chat.id`, Discord channel or thread id, console session).
 * - `chatKind`: `dm` for a private chat, `group` for anything shared.
 * - `userId` / `userName`: the person who wrote it (for Telegram `sender_chat` messages, the
 *   sending chat's id prefixed `chat:` so anonymous admins are not merged into one user).
 * - `text`: the text with the bot's mention removed, 1 to {@link MAX_INCOMING_TEXT} UTF-16 units.
 * - `messageId`: the platform's message id; with the platform and chat it forms the job id.
 * - `sentAt`: when the platform says it was sent, in ms since the Unix epoch.
 * - `topicId`: the Telegram topic (`message_thread_id` of a message with `is_topic_message`): with
 *   the platform and chat it names the {@link ConversationRef}; absent elsewhere.
 * - `reply`: what the outbound side needs to answer: `threadId` (Telegram forum topic) and
 *   `guildId` (Discord) when present.
 * - `locale`: the user's client language when the platform tells it (`en`, `zh-hant`…), informational.
 * - `receivedAt`: when the adapter received it, in ms since the Unix epoch (set by the access gate;
 *   the metrics' queue wait and answer times start here).
 */
export const IncomingMessageSchema = z.object({
  platform: z.enum(PLATFORMS),
  chatId: z.string().min(1).max(128),
  chatKind: z.enum(["dm", "group"]),
  userId: z.string().min(1).max(128),
  userName: z.string().min(1).max(256),
  text: z.string().trim().min(1).max(MAX_INCOMING_TEXT),
  messageId: z.string().min(1).max(128),
  sentAt: z.number().int().nonnegative(),
  topicId: z.string().min(1).max(32).optional(),
  reply: z
    .object({
      threadId: z.string().max(128).optional(),
      guildId: z.string().max(128).optional(),
    })
    .default({}),
  locale: z.string().max(35).optional(),
  receivedAt: z.number().int().nonnegative().optional(),
});

/** A message addressed to the bot; see {@link IncomingMessageSchema}. */
export type IncomingMessage = z.output<typeof IncomingMessageSchema>;

/**
 * A conversation: the unit of history, ordering, `/reset`, traces and pending approvals.
 * It is a chat, or one Telegram topic of a chat (forum supergroups, and private-chat topics of
 * Bot API 9.3); Discord threads are channels of their own, so they are chats already.
 *
 * An {@link IncomingMessage} is itself a `ConversationRef` (it carries `topicId`).
 */
export interface ConversationRef {
  platform: Platform;
  chatId: string;
  /** Telegram `message_thread_id` of a topic message (`is_topic_message`); absent elsewhere. */
  topicId?: string | undefined;
}

/**
 * The one key builder of a conversation: `platform:chatId`, or `platform:chatId/topicId` for a
 * Telegram topic. A chat without topics keeps the key it always had, so its stored history,
 * traces and approvals stay valid without any migration.
 */
export function conversationKey(conversation: ConversationRef): string {
  const base = `${conversation.platform}:${conversation.chatId}`;
  return conversation.topicId ? `${base}/${conversation.topicId}` : base;
}

/** The {@link ConversationRef} of a message (drops every other field). */
export function conversationOf(message: ConversationRef): ConversationRef {
  return message.topicId ? { platform: message.platform, chatId: message.chatId, topicId: message.topicId } : { platform: message.platform, chatId: message.chatId };
}
