/**
 * The normalised incoming message: what every adapter produces and every worker consumes.
 * One zod schema; the type flows from it.
 */
import { z } from "zod";
import { INVISIBLE } from "../plain-text.js";

/** Platforms the bot speaks on. */
export const PLATFORMS = ["telegram", "discord", "line", "console"] as const;
/** A platform name. */
export type Platform = (typeof PLATFORMS)[number];

/**
 * True when `text` shows nothing: it holds only whitespace and invisible characters
 * ({@link INVISIBLE}: zero-width spaces and joiners, the word joiner, the BOM, bidi controls…).
 * Such a text is no question, as a whitespace-only one is not: {@link IncomingMessageSchema} makes
 * it `""` (a message without text and without files is refused, and each adapter answers that
 * refusal with its "write your question" notice, or ignores the line as the console does).
 */
export function isBlankText(text: string): boolean {
  return text.replace(INVISIBLE, "").replace(SHOWS_NOTHING_ALONE, "").trim() === "";
}

/**
 * What shows nothing on its own besides {@link INVISIBLE} and whitespace: controls (`\p{Cc}`, NEL
 * U+0085 among them), variation selectors 1–16 (they only change the character before them) and the
 * blank Braille pattern U+2800.
 */
const SHOWS_NOTHING_ALONE = /[\p{Cc}\uFE00-\uFE0F\u2800]/gu;

/**
 * A string schema whose value is made well-formed first: every lone UTF-16 surrogate (half of a
 * pair cut apart, e.g. by a cut counted in UTF-16 units) becomes U+FFFD
 * (`String.prototype.toWellFormed`). A lone surrogate is valid in a JavaScript string, and
 * `JSON.stringify` writes it as an escape (`"\ud800"`), but Redis' Lua `cjson` cannot decode that
 * escape ("invalid unicode escape code") and the Messages API refuses it (400, "no low surrogate
 * in string"); so no string of a normalised message carries one.
 */
const wellFormed = () => z.string().overwrite((s) => s.toWellFormed());

/** Longest text accepted from a user, in UTF-16 code units (Telegram's own limit is 4096). */
export const MAX_INCOMING_TEXT = 8000;

/** Longest file name of a {@link MediaRef}, in UTF-16 code units (adapters cut longer ones with `cutFileName`, keeping the extension). */
export const MAX_FILE_NAME_UNITS = 255;

/** Most file references one message may carry (a Telegram album holds at most 10 items; Discord allows 10 attachments). */
export const MAX_MEDIA_REFS = 20;

/**
 * The kinds of file a message may carry. `image` and `file` are read (within limits, see
 * `src/media/limits.ts`): `file` is a PDF or a text file, decided by the worker from its type and
 * name; `voice` and `audio` are transcribed when `STT_BASE_URL` is set (`src/media/voice.ts`);
 * the others (`video`, `video_note`, and voice and audio without `STT_BASE_URL`) are answered
 * with what is supported.
 */
export const MEDIA_KINDS = ["image", "file", "voice", "video", "video_note", "audio"] as const;

/**
 * A reference to a file on the platform, put in the job by the adapter; the worker downloads it
 * (only from the platform's own file hosts) and converts it. Never the file itself.
 *
 * - `kind`: see {@link MEDIA_KINDS}.
 * - `fileId`: Telegram `file_id` (resolved with `getFile` by the worker); `url`: a Discord
 *   attachment URL. Exactly one of the two.
 * - `size`: the size the platform announced, in bytes (Telegram `file_size`, Discord `size`);
 *   checked before downloading, and the download is cut off past it.
 * - `mimeType`, `name`: as the platform announced them (informational: the worker checks the bytes).
 * - `width`, `height`: announced pixels of an image, when known.
 * - `duration`: announced length of a voice message or audio file, in seconds (Telegram
 *   `duration`, Discord `duration_secs` of a voice message), when known; checked against
 *   `MAX_VOICE_SECONDS` before downloading.
 * - `messageId`: the platform message that carried the file, when it is not the message itself
 *   (the other items of a Telegram album).
 */
export const MediaRefSchema = z
  .object({
    kind: z.enum(MEDIA_KINDS),
    fileId: wellFormed().min(1).max(256).optional(),
    url: wellFormed().url().max(2048).optional(),
    size: z.number().int().nonnegative().optional(),
    mimeType: wellFormed().max(255).optional(),
    name: wellFormed().max(MAX_FILE_NAME_UNITS).optional(),
    width: z.number().int().nonnegative().optional(),
    height: z.number().int().nonnegative().optional(),
    duration: z.number().nonnegative().max(1_000_000).optional(),
    messageId: wellFormed().min(1).max(128).optional(),
  })
  .refine((ref) => (ref.fileId === undefined) !== (ref.url === undefined), {
    message: "a media reference needs exactly one of fileId and url",
  });

/** A file reference; see {@link MediaRefSchema}. */
export type MediaRef = z.output<typeof MediaRefSchema>;

/**
 * A message addressed to the bot, normalised by an adapter.
 *
 * Every string is made well-formed when parsed (a lone UTF-16 surrogate becomes U+FFFD; see
 * `wellFormed` above): what the producer queues, and what a worker reads back, is JSON that Redis'
 * Lua `cjson` and the Messages API both accept, whatever an adapter cut.
 *
 * - `chatId`: the platform's chat (Telegram `chat.id`, Discord channel or thread id, console session).
 * - `chatKind`: `dm` for a private chat, `group` for anything shared.
 * - `userId` / `userName`: the person who wrote it (for Telegram `sender_chat` messages, the
 *   sending chat's id prefixed `chat:` so anonymous admins are not merged into one user).
 * - `text`: the text with the bot's mention removed, at most {@link MAX_INCOMING_TEXT} UTF-16 units;
 *   empty only when the message carries `media` (a photo without caption is answered too). A text
 *   of only whitespace and invisible characters ({@link isBlankText}) counts as empty.
 * - `messageId`: the platform's message id; with the platform and chat it forms the job id.
 * - `sentAt`: when the platform says it was sent, in ms since the Unix epoch.
 * - `topicId`: the Telegram topic (`message_thread_id` of a message with `is_topic_message`): with
 *   the platform and chat it names the {@link ConversationRef}; absent elsewhere.
 * - `reply`: what the outbound side needs to answer: `threadId` (Telegram forum topic),
 *   `guildId` (Discord) and `replyToken` (LINE: the webhook event's reply token, single use, valid
 *   about a minute from `replyTokenAt`, the event's time in ms) when present.
 * - `locale`: the user's client language when the platform tells it (`en`, `zh-hant`…), informational.
 * - `receivedAt`: when the adapter received it, in ms since the Unix epoch (set by the access gate;
 *   the metrics' queue wait and answer times start here).
 * - `queuedAt`: when it entered its conversation's inbox, in ms since the Unix epoch (set by the
 *   producer, `ChatQueue.enqueue`, by its clock): a message queued behind an inbox head queued
 *   longer ago than `STALLED_INBOX_MS` gets the conversation's stalled inbox checked
 *   (`src/queue/producer.ts`). Absent in what older versions queued.
 * - `media`: file references ({@link MediaRefSchema}), at most {@link MAX_MEDIA_REFS}; absent for text.
 * - `mediaGroupId`: Telegram `media_group_id` of an album item: the worker gathers the album's
 *   items into this one message (`src/media/album.ts`).
 * - `scheduled`: set on the message of a scheduled task's occurrence (`src/worker/task.ts`), which
 *   no platform sent: `taskId` of its owner's task and `dueAt`, the occurrence's time in ms since
 *   the Unix epoch. Its `messageId` is the occurrence's own id; answers to it reply to nothing and
 *   mention the owner in groups ({@link https://core.telegram.org/bots/api#formatting-options}).
 * - `forwarded`: true when the message is a forward of someone else's (Telegram `forward_origin`,
 *   Discord `message_reference.type` 1): outside content, so a memory write of its answer is
 *   offered for undo (`src/memory/undo.ts`).
 * - `traceparent`: the W3C trace context of the adapter's receipt span, set only while
 *   OpenTelemetry is on (`src/telemetry/otel.ts`), so the answer joins the message's trace even when
 *   a job started for an earlier message answers it, or when it resumes after an approval.
 *   Source: https://www.w3.org/TR/trace-context/#traceparent-header
 */
export const IncomingMessageSchema = z
  .object({
    platform: z.enum(PLATFORMS),
    chatId: wellFormed().min(1).max(128),
    chatKind: z.enum(["dm", "group"]),
    userId: wellFormed().min(1).max(128),
    userName: wellFormed().min(1).max(256),
    text: wellFormed()
      .trim()
      .overwrite((t) => (isBlankText(t) ? "" : t))
      .max(MAX_INCOMING_TEXT),
    messageId: wellFormed().min(1).max(128),
    sentAt: z.number().int().nonnegative(),
    topicId: wellFormed().min(1).max(32).optional(),
    reply: z
      .object({
        threadId: wellFormed().max(128).optional(),
        guildId: wellFormed().max(128).optional(),
        replyToken: wellFormed().max(256).optional(),
        replyTokenAt: z.number().int().nonnegative().optional(),
      })
      .default({}),
    locale: wellFormed().max(35).optional(),
    receivedAt: z.number().int().nonnegative().optional(),
    queuedAt: z.number().int().nonnegative().optional(),
    media: z.array(MediaRefSchema).min(1).max(MAX_MEDIA_REFS).optional(),
    mediaGroupId: wellFormed().min(1).max(64).optional(),
    scheduled: z.object({ taskId: z.number().int().positive(), dueAt: z.number().int().nonnegative() }).optional(),
    forwarded: z.literal(true).optional(),
    traceparent: z
      .string()
      .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
      .optional(),
  })
  .refine((m) => m.text !== "" || m.media !== undefined, {
    message: "Too small: expected string to have >=1 characters",
    path: ["text"],
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
  return message.topicId
    ? { platform: message.platform, chatId: message.chatId, topicId: message.topicId }
    : { platform: message.platform, chatId: message.chatId };
}
