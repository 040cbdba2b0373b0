/**
 * Inbound: which Telegram messages are for the bot, and how they become {@link IncomingMessage}s.
 *
 * Private chats: every text message (or caption). Groups: a `mention` entity `@botusername`
 * (case-insensitive), a `text_mention` of the bot, a reply to one of the bot's messages, or a
 * command at the start of the text, bare (`/tools`) or ending in `@botusername`. The mention is removed
 * from the text. Ignored: the bot's own and other bots' messages, service messages (no text and
 * no media). `sender_chat` messages (anonymous admins, channels) are attributed to that chat.
 *
 * Topics: a message with `is_topic_message` (a forum supergroup's topic, or a topic of a private
 * chat with the bot, Bot API 9.3) belongs to the conversation of its topic: `topicId` and
 * `reply.threadId` are its `message_thread_id`. A `message_thread_id` without `is_topic_message`
 * (the reply thread of an ordinary group, the General topic) is not a conversation of its own.
 * In a topic, a message that replies to nothing carries the topic's creation message as
 * `reply_to_message`; that is not a reply to the bot even when the bot created the topic.
 *
 * Files: a photo (the largest size whose file is within {@link IMAGE_MAX_DOWNLOAD_BYTES}), a
 * document (an image document is an image; PDFs and text files are read by the worker), a voice
 * message, video, video note, animation or audio become file references ({@link mediaOf}) with the
 * caption as the text; a photo without caption is queued too. A sticker is its emoji. An album item
 * (`media_group_id`) carries its group id; in a group, items that do not address the bot (the ones
 * without the captioned mention) are `album_item`s: recorded for the album, never queued alone.
 * Source: Bot API `Message`, `MessageEntity`, `PhotoSize`, `Document` (https://core.telegram.org/bots/api#message).
 */
import type { Message, MessageEntity, UserFromGetMe } from "grammy/types";
import { IMAGE_MAX_DOWNLOAD_BYTES, IMAGE_MEDIA_TYPES } from "../../src/media/limits.js";
import { cutFileName, sliceUnits } from "../../src/cut.js";
import { plainLine } from "../../src/plain-text.js";
import {
  IncomingMessageSchema,
  MAX_FILE_NAME_UNITS,
  MAX_INCOMING_TEXT,
  type IncomingMessage,
  type MediaRef,
} from "../../src/queue/incoming.js";
import { isInstantCommand } from "./commands.js";

/** What to do with one incoming Telegram message. */
export type InboundDecision =
  /** Not for the bot: do nothing. */
  | { kind: "ignore"; reason: string }
  /**
   * For the bot but without usable text (`media`: a sticker or photo without caption; `empty`: only
   * the mention; `too_long`: over {@link MAX_INCOMING_TEXT} UTF-16 units): answer with a one-line hint.
   */
  | { kind: "hint"; reason: "media" | "empty" | "too_long"; message: IncomingMessageBase }
  /** One of our commands (`src/commands/catalog.ts`), answered by the adapter; `command` is lower case. */
  | { kind: "command"; command: string; args: string; message: IncomingMessageBase }
  /** A message for the queue (an album item with `mediaGroupId`: the album's, see `src/media/album.ts`). */
  | { kind: "enqueue"; message: IncomingMessage }
  /** An album item that does not address the bot itself (in a group): recorded for its album only. */
  | { kind: "album_item"; message: IncomingMessage }
  /**
   * A group message with text that does not address the bot: queued only where the group's
   * replies are set to `all` (`/settings`), otherwise ignored.
   */
  | { kind: "unaddressed"; message: IncomingMessage };

/** The normalised fields without the text (for hints and commands). */
export type IncomingMessageBase = Omit<IncomingMessage, "text">;

/** Message fields that carry content; a message with none of them and no text is a service message. */
const CONTENT_FIELDS = [
  "animation",
  "audio",
  "document",
  "paid_media",
  "photo",
  "sticker",
  "story",
  "video",
  "video_note",
  "voice",
  "contact",
  "dice",
  "game",
  "poll",
  "venue",
  "location",
  "checklist",
] as const;

/**
 * The file references of a message (empty for text and other content), and a sticker's emoji.
 * An animation (a GIF sent as MP4) is a video; its `document` twin is not read.
 */
export function mediaOf(message: Message): { media: MediaRef[]; sticker?: string } {
  const sized = (size: number | undefined) => (size !== undefined ? { size } : {});
  if (message.photo?.length) {
    const sizes = [...message.photo].sort((a, b) => b.width * b.height - a.width * a.height);
    const pick =
      sizes.find((s) => s.file_size === undefined || s.file_size <= IMAGE_MAX_DOWNLOAD_BYTES) ??
      sizes[sizes.length - 1]!;
    return {
      media: [
        { kind: "image", fileId: pick.file_id, width: pick.width, height: pick.height, ...sized(pick.file_size) },
      ],
    };
  }
  const other = message.animation ?? message.video ?? message.video_note ?? message.voice ?? message.audio;
  if (other) {
    const kind = message.voice ? "voice" : message.video_note ? "video_note" : message.audio ? "audio" : "video";
    const audio = message.voice ?? message.audio;
    const name = message.audio?.file_name ? cutFileName(plainLine(message.audio.file_name), MAX_FILE_NAME_UNITS) : "";
    return {
      media: [
        {
          kind,
          fileId: other.file_id,
          ...sized(other.file_size),
          ...("mime_type" in other && other.mime_type ? { mimeType: other.mime_type.slice(0, 255) } : {}),
          ...(name ? { name } : {}),
          ...(audio ? { duration: audio.duration } : {}),
        },
      ],
    };
  }
  const doc = message.document;
  if (doc) {
    const image = (IMAGE_MEDIA_TYPES as readonly string[]).includes(doc.mime_type ?? "");
    const name = cutFileName(plainLine(doc.file_name ?? ""), MAX_FILE_NAME_UNITS);
    return {
      media: [
        {
          kind: image ? "image" : "file",
          fileId: doc.file_id,
          ...sized(doc.file_size),
          ...(doc.mime_type ? { mimeType: doc.mime_type.slice(0, 255) } : {}),
          ...(name ? { name } : {}),
        },
      ],
    };
  }
  if (message.sticker) return { media: [], ...(message.sticker.emoji ? { sticker: message.sticker.emoji } : {}) };
  return { media: [] };
}

/**
 * The name shown for a user (first and last name, else the username) or a sending chat (its title),
 * as one plain line of at most 256 characters ({@link plainLine}: a name is chosen by its owner, and
 * reaches prompts, approval prompts, logs and `npm run access -- list`).
 */
function displayName(user: { first_name?: string; last_name?: string; username?: string; title?: string }): string {
  const name = plainLine(user.title ?? [user.first_name, user.last_name].filter(Boolean).join(" "), 256);
  return name || plainLine(user.username ?? "", 256) || "Telegram user";
}

/**
 * Decides what to do with a `message` update.
 *
 * @param message - the update's message (not `edited_message`: edits are never processed).
 * @param me - the bot (`getMe`), for mentions, replies and `/cmd@bot`.
 */
export function classifyMessage(message: Message, me: UserFromGetMe): InboundDecision {
  const from = message.from;
  const sender = message.sender_chat;
  if (from?.id === me.id) return { kind: "ignore", reason: "own message" };
  if (!sender && (!from || from.is_bot)) return { kind: "ignore", reason: "from a bot" };
  const { media, sticker } = mediaOf(message);
  const text = message.text ?? message.caption ?? sticker ?? (media.length > 0 ? "" : undefined);
  const entities: MessageEntity[] =
    (message.text !== undefined
      ? message.entities
      : message.caption !== undefined
        ? message.caption_entities
        : undefined) ?? [];
  const hasContent = CONTENT_FIELDS.some((f) => f in message);
  if (text === undefined && !hasContent) return { kind: "ignore", reason: "service message" };

  const isPrivate = message.chat.type === "private";
  const topic =
    message.is_topic_message && message.message_thread_id !== undefined ? String(message.message_thread_id) : undefined;
  const base: IncomingMessageBase = {
    platform: "telegram",
    chatId: String(message.chat.id),
    chatKind: isPrivate ? "dm" : "group",
    userId: sender ? `chat:${sender.id}` : String(from!.id),
    userName: displayName(sender ?? from!),
    messageId: String(message.message_id),
    sentAt: message.date * 1000,
    ...(topic ? { topicId: topic } : {}),
    reply: topic ? { threadId: topic } : {},
    ...(from?.language_code && !sender ? { locale: from.language_code } : {}),
    ...(message.forward_origin ? { forwarded: true as const } : {}),
  };

  if (text === undefined)
    return isPrivate
      ? { kind: "hint", reason: "media", message: base }
      : { kind: "ignore", reason: "no text in a group" };

  const username = me.username.toLowerCase();
  const slice = (e: MessageEntity) => text.slice(e.offset, e.offset + e.length);
  const isMe = (e: MessageEntity) =>
    (e.type === "mention" && slice(e).toLowerCase() === `@${username}`) ||
    (e.type === "text_mention" && e.user.id === me.id);

  // A command at the start: `/name`, `/name@bot` or `/name@other` (another bot's).
  const first = entities.find((e) => e.type === "bot_command" && e.offset === 0);
  let command: { name: string; target?: string; args: string } | undefined;
  if (first) {
    const [name = "", target] = slice(first).slice(1).split("@");
    command = { name: name.toLowerCase(), target: target?.toLowerCase(), args: text.slice(first.length).trim() };
    if (command.target && command.target !== username) return { kind: "ignore", reason: "command for another bot" };
  }

  const mentioned = entities.some(isMe);
  const repliedTo = message.reply_to_message;
  const repliedToMe = repliedTo?.from?.id === me.id && !("forum_topic_created" in repliedTo);
  // A command at the start addresses us when bare or `@us` (`@other` was ignored above).
  const ownCommand = command !== undefined;
  const files = {
    ...(media.length > 0 ? { media } : {}),
    ...(message.media_group_id && media.length > 0 ? { mediaGroupId: message.media_group_id.slice(0, 64) } : {}),
  };
  if (!isPrivate && !mentioned && !repliedToMe && !ownCommand) {
    const item = files.mediaGroupId
      ? IncomingMessageSchema.safeParse({ ...base, ...files, text: sliceUnits(text, MAX_INCOMING_TEXT) })
      : undefined;
    if (item?.success) return { kind: "album_item", message: item.data };
    const unaddressed =
      text.trim() !== "" && !command ? IncomingMessageSchema.safeParse({ ...base, ...files, text }) : undefined;
    return unaddressed?.success
      ? { kind: "unaddressed", message: unaddressed.data }
      : { kind: "ignore", reason: "not addressed" };
  }

  // A command of ours is run; any other command-shaped one is too, answered "unknown command" with
  // the list (as `npm run chat` does) rather than queued: a typo of `/approve CODE` must not reach the model.
  if (command && (isInstantCommand(command.name) || isCommandShaped(command.name, text.slice(first!.length))))
    return { kind: "command", command: command.name, args: command.args, message: base };

  // Remove the bot's mentions and the `@bot` of a command, from the end so offsets stay valid.
  const cuts: [number, number][] = entities.filter(isMe).map((e) => [e.offset, e.offset + e.length]);
  if (first && command?.target) {
    const at = slice(first).indexOf("@");
    cuts.push([first.offset + at, first.offset + first.length]);
  }
  let stripped = text;
  for (const [start, end] of cuts.sort((a, b) => b[0] - a[0]))
    stripped = stripped.slice(0, start) + stripped.slice(end);
  stripped = stripped
    .replace(/^[\s,，:：、]+/, "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();

  const parsed = IncomingMessageSchema.safeParse({ ...base, ...files, text: stripped });
  if (!parsed.success)
    return { kind: "hint", reason: stripped.length > MAX_INCOMING_TEXT ? "too_long" : "empty", message: base };
  return { kind: "enqueue", message: parsed.data };
}

/**
 * Whether a `bot_command` entity at the start names a command as Telegram's menu allows one
 * (1-32 of `a-z 0-9 _`) and ends its word (`rest`, the text after the entity, is empty or starts
 * with a space): such a command that is not ours is answered "unknown command", never queued.
 */
function isCommandShaped(name: string, rest: string): boolean {
  return /^[a-z0-9_]{1,32}$/.test(name) && (rest === "" || /^\s/.test(rest));
}
