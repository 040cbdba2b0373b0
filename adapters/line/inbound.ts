/**
 * Inbound: which LINE webhook events are for the bot, and how they become {@link IncomingMessage}s.
 *
 * One-to-one chats (`source.type` `user`): every message. Groups and multi-person chats (`group`,
 * `room`): a message that mentions the bot (`message.mention.mentionees[].isSelf`), quotes one of
 * the bot's messages (`quotedMessageId`, when `isOwnMessage` says it is the bot's), or is a command
 * (text beginning with `/`). The bot's mentions are removed from the text. The conversation is the
 * user, group or room (`chatId` its id: `U…`, `C…`, `R…`).
 *
 * Files: an image is an `image`, an audio message a `voice` (its `duration` in ms announced by
 * LINE), a file a `file` (name and size announced), a video a `video`; each is downloaded by the
 * worker from the content host with the message id as `fileId`. In a group such a message cannot
 * mention the bot: it is a `groupMedia` decision (the adapter holds it for its sender's next
 * message that addresses the bot). A sticker is answered politely:
 * its keywords, when LINE sends them, are its text; without them it is a hint.
 *
 * Source: webhook event objects, https://developers.line.biz/en/reference/messaging-api/#webhook-event-objects
 * (`test/fixtures/specs/line-messaging-api/webhook.yml`).
 */
import type { webhook } from "@line/bot-sdk";
import {
  IncomingMessageSchema,
  MAX_FILE_NAME_UNITS,
  MAX_INCOMING_TEXT,
  type IncomingMessage,
  type MediaRef,
} from "../../src/queue/incoming.js";
import { cutFileName } from "../../src/cut.js";
import { plainLine } from "../../src/plain-text.js";

/** The normalised fields without the text (for hints, commands and presses). */
export type LineBase = Omit<IncomingMessage, "text">;

/** What to do with one webhook event. */
export type LineDecision =
  | { kind: "ignore"; reason: string }
  | { kind: "hint"; reason: "media" | "empty" | "too_long" | "sticker"; message: LineBase }
  | { kind: "command"; command: string; args: string; message: LineBase }
  | { kind: "enqueue"; message: IncomingMessage }
  /**
   * A picture, voice message, file or video in a group or multi-person chat: it cannot mention the
   * bot, so it is answered when the group has the bot reply to every message, else held for its
   * sender's next message that addresses the bot (`adapter.ts`).
   */
  | { kind: "groupMedia"; message: IncomingMessage }
  | { kind: "unaddressed"; message: IncomingMessage }
  | { kind: "postback"; data: string; message: LineBase }
  | { kind: "follow" | "join"; message: LineBase }
  | { kind: "unfollow" | "leave"; chatId: string; chatKind: "dm" | "group" }
  /** People joined the group or room (`memberJoined`): `userIds` of the joined, `message` for the greeting. */
  | { kind: "memberJoined"; userIds: string[]; message: LineBase }
  /** People left the group or room (`memberLeft`, no reply token). */
  | { kind: "memberLeft"; chatId: string; chatKind: "group"; userIds: string[] };

/** The name used until the profile is known. */
export const UNKNOWN_NAME = "LINE user";

/** The chat of an event's source: its id and kind. */
export function chatOf(source: webhook.Source | undefined): { chatId: string; chatKind: "dm" | "group" } | undefined {
  if (!source) return undefined;
  if (source.type === "group") return { chatId: source.groupId, chatKind: "group" };
  if (source.type === "room") return { chatId: source.roomId, chatKind: "group" };
  if (source.type === "user" && source.userId) return { chatId: source.userId, chatKind: "dm" };
  return undefined;
}

/**
 * LINE ids: a user id is `U`, a group id `C`, a room id `R`, followed by 32 lowercase hex digits.
 * Ids from a webhook go into API paths (`/v2/bot/profile/{userId}` …): anything else is refused
 * at the webhook boundary ({@link malformedIdOf}), so a signed event cannot steer a request.
 * Source: https://developers.line.biz/en/docs/messaging-api/getting-user-ids/ (docs/line.md).
 */
export const LINE_ID_PATTERNS = {
  user: /^U[0-9a-f]{32}$/,
  group: /^C[0-9a-f]{32}$/,
  room: /^R[0-9a-f]{32}$/,
} as const;

/**
 * The field an event of a known type lacks, or has in the wrong shape, that the adapter reads
 * (source: the Messaging API's webhook event objects, https://developers.line.biz/en/reference/messaging-api/#webhook-event-objects):
 * `type` (a string), `message` of a `message` event (an object with a string `type` and `id`),
 * `postback` of a `postback` event (an object with a string `data`), `joined` / `left` of a
 * `memberJoined` / `memberLeft` event (an object with a `members` array). Undefined when the event
 * has them (or is of a type the adapter ignores). Such an event is skipped (`adapter.ts`).
 */
export function malformedShapeOf(event: webhook.Event): string | undefined {
  const raw = event as unknown as Record<string, unknown>;
  const object = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (typeof raw.type !== "string") return "type";
  if (raw.type === "message") {
    const m = raw.message;
    if (!object(m) || typeof m.type !== "string" || typeof m.id !== "string") return "message";
  }
  if (raw.type === "postback" && (!object(raw.postback) || typeof raw.postback.data !== "string")) return "postback";
  for (const [type, field] of [
    ["memberJoined", "joined"],
    ["memberLeft", "left"],
  ] as const) {
    const v = raw[field];
    if (raw.type === type && (!object(v) || !Array.isArray(v.members))) return field;
  }
  return undefined;
}

/**
 * The first id of `event` that is present but not a well-formed LINE id (source `userId`,
 * `groupId`, `roomId`, a mentionee's `userId`, a joined or left member's `userId`): its field and a
 * short safe preview (at most 8 characters, anything but letters and digits shown as `?`, plus its
 * length). Undefined when every id present is well formed.
 */
export function malformedIdOf(event: webhook.Event): { field: string; preview: string } | undefined {
  const checks: [string, unknown, RegExp][] = [];
  const source = event.source as { userId?: unknown; groupId?: unknown; roomId?: unknown; type?: unknown } | undefined;
  if (source) {
    if ("userId" in source) checks.push(["source.userId", source.userId, LINE_ID_PATTERNS.user]);
    if (source.type === "group" || "groupId" in source)
      checks.push(["source.groupId", source.groupId, LINE_ID_PATTERNS.group]);
    if (source.type === "room" || "roomId" in source)
      checks.push(["source.roomId", source.roomId, LINE_ID_PATTERNS.room]);
  }
  const message = (event as { message?: { mention?: { mentionees?: unknown } } }).message;
  const mentionees = message?.mention?.mentionees;
  if (Array.isArray(mentionees))
    for (const m of mentionees as { userId?: unknown }[])
      if (m && typeof m === "object" && "userId" in m)
        checks.push(["mentionee.userId", m.userId, LINE_ID_PATTERNS.user]);
  for (const side of ["joined", "left"] as const) {
    const members = (event as { [k in typeof side]?: { members?: unknown } })[side]?.members;
    if (Array.isArray(members))
      for (const m of members as { userId?: unknown }[])
        if (m && typeof m === "object" && "userId" in m)
          checks.push([`${side}.userId`, m.userId, LINE_ID_PATTERNS.user]);
  }
  for (const [field, value, pattern] of checks) {
    if (typeof value === "string" && pattern.test(value)) continue;
    const text = typeof value === "string" ? value : typeof value;
    return { field, preview: `${text.slice(0, 8).replace(/[^A-Za-z0-9]/g, "?")} (${text.length})` };
  }
  return undefined;
}

/** The file references of a message event (empty for text, stickers and others). */
export function mediaOf(message: webhook.MessageContent): MediaRef[] {
  switch (message.type) {
    case "image":
      return [{ kind: "image", fileId: message.id }];
    case "audio":
      return [
        {
          kind: "voice",
          fileId: message.id,
          mimeType: "audio/m4a",
          ...(message.duration !== undefined ? { duration: message.duration / 1000 } : {}),
        },
      ];
    case "video":
      return [{ kind: "video", fileId: message.id }];
    case "file": {
      // A plain line (as other adapters keep a file name), cut by UTF-16 units keeping the extension.
      const name = cutFileName(plainLine(message.fileName), MAX_FILE_NAME_UNITS);
      return [{ kind: "file", fileId: message.id, size: message.fileSize, ...(name ? { name } : {}) }];
    }
    default:
      return [];
  }
}

/** The user ids of a `memberJoined` / `memberLeft` event's members (source user objects), at most 100. */
function usersOf(members: webhook.UserSource[] | undefined): string[] {
  return (members ?? [])
    .map((m) => m.userId)
    .filter((id): id is string => typeof id === "string" && /^U[0-9a-f]{32}$/.test(id))
    .slice(0, 100);
}

/**
 * Decides what to do with one event.
 * @param isOwnMessage - whether a message id is one the bot sent (for `quotedMessageId`).
 */
export function classifyEvent(event: webhook.Event, isOwnMessage: (id: string) => boolean = () => false): LineDecision {
  const chat = chatOf(event.source);
  if (!chat) return { kind: "ignore", reason: "no chat" };
  if (event.type === "unfollow" || event.type === "leave") return { kind: event.type, ...chat };
  if (event.type === "memberLeft") {
    const userIds = usersOf(event.left.members);
    if (chat.chatKind !== "group" || userIds.length === 0)
      return { kind: "ignore", reason: "memberLeft without members" };
    return { kind: "memberLeft", chatId: chat.chatId, chatKind: "group", userIds };
  }
  const userId = event.source?.userId;
  const replyToken = "replyToken" in event && typeof event.replyToken === "string" ? event.replyToken : undefined;
  const base = (messageId: string): LineBase => ({
    platform: "line",
    chatId: chat.chatId,
    chatKind: chat.chatKind,
    userId: userId ?? chat.chatId,
    userName: UNKNOWN_NAME,
    messageId,
    sentAt: event.timestamp,
    reply: replyToken ? { replyToken, replyTokenAt: event.timestamp } : {},
  });
  if (event.type === "follow" || event.type === "join")
    return { kind: event.type, message: base(event.webhookEventId) };
  if (event.type === "memberJoined") {
    const userIds = usersOf(event.joined.members);
    if (chat.chatKind !== "group" || userIds.length === 0)
      return { kind: "ignore", reason: "memberJoined without members" };
    return { kind: "memberJoined", userIds, message: base(event.webhookEventId) };
  }
  if (!userId) return { kind: "ignore", reason: "no user" };
  if (event.type === "postback")
    return { kind: "postback", data: event.postback.data, message: base(event.webhookEventId) };
  if (event.type !== "message") return { kind: "ignore", reason: `event ${event.type}` };

  const message = event.message;
  const at = base(message.id);
  const group = chat.chatKind === "group";
  if (message.type === "sticker") {
    const keywords = (message.keywords ?? []).slice(0, 5).join(", ");
    if (group) return { kind: "ignore", reason: "sticker in a group" };
    if (!keywords) return { kind: "hint", reason: "sticker", message: at };
    const parsed = IncomingMessageSchema.safeParse({ ...at, text: `(LINE sticker: ${keywords})` });
    return parsed.success
      ? { kind: "enqueue", message: parsed.data }
      : { kind: "hint", reason: "sticker", message: at };
  }
  const media = mediaOf(message);
  if (message.type !== "text") {
    if (media.length === 0)
      return group
        ? { kind: "ignore", reason: `${message.type} in a group` }
        : { kind: "hint", reason: "media", message: at };
    const withMedia = IncomingMessageSchema.parse({ ...at, text: "", media });
    // In a group a file alone cannot mention the bot: it waits for its sender's next mention.
    return group ? { kind: "groupMedia", message: withMedia } : { kind: "enqueue", message: withMedia };
  }

  const text = message.text;
  const self = (message.mention?.mentionees ?? []).filter(
    (m) => m.type === "user" && (m as webhook.UserMentionee).isSelf === true,
  );
  const quoted = message.quotedMessageId !== undefined && isOwnMessage(message.quotedMessageId);
  const command = /^\/([A-Za-z][\w-]*)(?:@\S*)?(?:\s+([\s\S]*))?$/.exec(text.trim());
  // Any command-shaped text is a command: one not in the catalogue is answered "unknown command"
  // with the list (as `npm run chat` does), never queued for the model.
  if (group && self.length === 0 && !quoted && !command) {
    const parsed = IncomingMessageSchema.safeParse({ ...at, text });
    return parsed.success ? { kind: "unaddressed", message: parsed.data } : { kind: "ignore", reason: "not addressed" };
  }
  if (command)
    return { kind: "command", command: command[1]!.toLowerCase(), args: (command[2] ?? "").trim(), message: at };
  let stripped = text;
  for (const m of [...self].sort((a, b) => b.index - a.index))
    stripped = stripped.slice(0, m.index) + stripped.slice(m.index + m.length);
  stripped = stripped
    .replace(/^[\s,，:：、]+/, "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
  const parsed = IncomingMessageSchema.safeParse({ ...at, text: stripped });
  if (!parsed.success)
    return { kind: "hint", reason: stripped.length > MAX_INCOMING_TEXT ? "too_long" : "empty", message: at };
  return { kind: "enqueue", message: parsed.data };
}
