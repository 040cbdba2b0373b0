/**
 * A strict fake Telegram Bot API server for tests (node:http), reusable by the end-to-end suite.
 *
 * It speaks the real wire protocol (`POST|GET /bot<token>/<method>`, query string, JSON, form or
 * multipart bodies, the `{ ok, result }` / `{ ok: false, error_code, description, parameters }`
 * envelope) so the real grammy client can be pointed at it with `TELEGRAM_API_ROOT`.
 *
 * Every call is first checked against the published Bot API (`telegram-spec.ts`: the method
 * exists, every parameter is one of its fields, required ones present, types and nested types
 * match, the documented limits hold — 1-4096 characters of text after entity parsing, counted in
 * code points; 1-64 bytes of `callback_data`; 0-200 characters of a callback answer …). A call
 * that fails is answered 400 (404 for an unknown method) as Telegram would, and recorded in
 * `spec-violations.ts`, which fails the running test (see {@link FakeTelegram.takeSpecViolations}).
 *
 * Beyond the spec it is strict like Telegram (https://core.telegram.org/bots/api): 401 for a
 * wrong token; 400 "can't parse entities" for HTML Telegram rejects; 400 for a text that is empty
 * after parsing; "message is not modified"; answering a callback query
 * twice; 409 for getUpdates while a webhook is set, and 409 "terminated by other getUpdates request"
 * for a long poll that a newer `getUpdates` call (another poller with the same token) replaces;
 * 400 "message thread not found" for a `message_thread_id` that is not a topic of the chat.
 * `sendMessageDraft` (Bot API 9.3, https://core.telegram.org/bots/api#sendmessagedraft) is
 * accepted only for private chats (400 "Bad Request: TEXTDRAFT_PEER_INVALID" elsewhere), with a
 * non-zero integer `draft_id`; drafts are recorded in {@link FakeTelegram.drafts}.
 * `deleteMessage` removes a bot message from {@link FakeTelegram.sent} (recorded in
 * {@link FakeTelegram.deleted}); 400 "message to delete not found" for an unknown one.
 *
 * Files (https://core.telegram.org/bots/api#getfile): {@link FakeTelegram.addFile} stores bytes and
 * returns their `file_id`; `getFile` answers `{ file_id, file_unique_id, file_size, file_path }`
 * (400 "invalid file_id" for an unknown id, 400 "file is too big" over 20 MB, as for bots on the
 * official server), and the bytes are served at `GET /file/bot<token>/<file_path>` (404 otherwise).
 * A file may announce a smaller `file_size` than it has, and be served without `Content-Length`,
 * to test downloads that must be cut off; {@link FakeTelegram.fileDownloads} records what was sent.
 *
 * Topics (https://core.telegram.org/bots/api#forumtopic): {@link FakeTelegram.createTopic} opens a
 * topic in a forum supergroup (`is_forum`) or, when the bot has `has_topics_enabled` (Bot API 9.3),
 * in a private chat. A user message in a topic has `message_thread_id` and `is_topic_message`, and,
 * like on Telegram, the topic's creation message as `reply_to_message` when it replies to nothing
 * else. A message replying in an ordinary group carries the reply thread's `message_thread_id`
 * without `is_topic_message`. A bot message sent with `message_thread_id` goes to that topic (it
 * must exist); one without it that replies to a topic message lands in the replied message's topic.
 *
 * @example
 * ```ts
 * const tg = await FakeTelegram.start();
 * // TELEGRAM_BOT_TOKEN = tg.token, TELEGRAM_API_ROOT = tg.apiRoot
 * const alice = tg.user(7, "Alice");
 * tg.sendUserMessage({ chat: tg.privateChat(alice), from: alice, text: "hi" });
 * const answer = await tg.waitFor(() => tg.sent.find((m) => m.chatId === 7));
 * await tg.stop();
 * ```
 */
import { createServer, type IncomingMessage as HttpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { CallbackQuery, Chat, InlineKeyboardMarkup, Message, MessageEntity, Update, User } from "grammy/types";
import { readMultipart } from "./multipart.js";
import { recordSpecViolation, takeSpecViolations, type SpecViolation } from "./spec-violations.js";
import { checkTelegramRequest, INPUT_FILE, type InputFilePart, type TextParser } from "./telegram-spec.js";

/**
 * How long an idle keep-alive connection stays open, in ms. Node's default (5 s) races the client's
 * own idle timeout on a busy machine: a request sent on a socket the fake has just closed fails with
 * ECONNRESET. The real service keeps idle connections far longer than a test waits between calls.
 */
const KEEP_ALIVE_MS = 60_000;

/** One Bot API call the bot made. */
export interface FakeCall {
  method: string;
  payload: Record<string, unknown>;
  /** ms since the Unix epoch. */
  at: number;
}

/** A message the bot sent, with its current state (edits are applied). */
export interface FakeSentMessage {
  chatId: number;
  messageId: number;
  /** The text after entity parsing (what users see). */
  text: string;
  /** The entities Telegram would store (from the HTML). */
  entities: MessageEntity[];
  /** The `sendMessage` payload as received (e.g. `parse_mode`, `reply_parameters`, `message_thread_id`). */
  payload: Record<string, unknown>;
  /** The stored message object (updated by edits). */
  message: Message;
  /** When the fake received it, ms since the Unix epoch. */
  at: number;
}

/** A voice message the bot sent (`sendVoice`). */
export interface FakeSentVoice {
  chatId: number;
  messageId: number;
  /** `voice` when Telegram shows it as a voice message, `document` when the audio was of another format. */
  shownAs: "voice" | "document";
  /** The uploaded file part. */
  file: { filename: string; mimeType: string; bytes: Buffer };
  /** The other fields, as received (`duration`, `reply_parameters`, `message_thread_id`, …). */
  payload: Record<string, unknown>;
  message: Message;
  /** ms since the Unix epoch. */
  at: number;
}

/** A one-shot failure for the next call of a method. */
export interface FakeFailure {
  error_code: number;
  description: string;
  /** Seconds, sent as `parameters.retry_after` (429). */
  retry_after?: number;
}

/** A file stored with {@link FakeTelegram.addFile}. */
export interface FakeFileInput {
  /** The size `getFile` (and the message) announce; default the real size. */
  fileSize?: number;
  /** Path under the file endpoint; default `documents/file_<n>` (`photos/…` for `photo: true`). */
  path?: string;
  /** Serve the bytes in 64 KB chunks without `Content-Length` (as a proxy might). */
  chunked?: boolean;
}

/** One download from the file endpoint. */
export interface FakeFileDownload {
  path: string;
  /** Bytes written before the transfer ended. */
  sent: number;
  /** True when every byte was sent. */
  complete: boolean;
}

/** Telegram's download limit for bots (`getFile`), in bytes. */
export const FAKE_GETFILE_MAX_BYTES = 20 * 1024 * 1024;

/** Options of {@link FakeTelegram.start}. */
export interface FakeTelegramOptions {
  /** The bot token the server accepts; default a fresh valid-looking token. */
  token?: string;
  /** The bot's `getMe` answer; default id 900000001, username `taiwan_test_bot`. */
  bot?: Partial<User> & { username?: string };
  /**
   * The first `message_id` this fake gives (then counting up); default 1000. `npm run fakes` starts
   * it from the clock, so a restarted fake's messages are not taken for the earlier run's (the bot
   * remembers a conversation's message ids for 2 days, in Redis).
   */
  firstMessageId?: number;
}

/** Input of {@link FakeTelegram.sendUserMessage}. */
export interface UserMessageInput {
  chat: Chat;
  /** The sender; for `sender_chat` messages Telegram sets the placeholder bot (default here). */
  from?: User;
  text?: string;
  /** Default: computed like Telegram does (mentions `@name`, `/commands`). */
  entities?: MessageEntity[];
  caption?: string;
  /** A non-text message: e.g. `{ sticker: {...} }` or `{ photo: [...] }`; merged into the message. */
  extra?: Record<string, unknown>;
  /** The message replied to: a message object or the id of a stored message of this chat. */
  reply_to_message?: Message | number;
  sender_chat?: Chat;
  /**
   * Topic id: a topic of the chat (sets `is_topic_message`; an unknown id in a forum supergroup
   * opens that topic first, as if it existed before). Not allowed in other chats: there a reply
   * thread's id follows from `reply_to_message`.
   */
  message_thread_id?: number;
}

const ALLOWED_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "a",
  "code",
  "pre",
  "blockquote",
  "span",
  "tg-spoiler",
  "tg-emoji",
]);
const ENTITY_OF: Record<string, MessageEntity["type"]> = {
  b: "bold",
  strong: "bold",
  i: "italic",
  em: "italic",
  u: "underline",
  ins: "underline",
  s: "strikethrough",
  strike: "strikethrough",
  del: "strikethrough",
  a: "text_link",
  code: "code",
  pre: "pre",
  blockquote: "blockquote",
  span: "spoiler",
  "tg-spoiler": "spoiler",
  "tg-emoji": "custom_emoji",
};
const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };
/** Telegram's placeholder sender of anonymous group admins' messages (`@GroupAnonymousBot`). */
export const GROUP_ANONYMOUS_BOT: User = {
  id: 1087968824,
  is_bot: true,
  first_name: "Group",
  username: "GroupAnonymousBot",
};

/** Thrown inside the server for a Bot API error answer. */
class ApiFailure extends Error {
  constructor(
    readonly code: number,
    description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }
}

const bad = (description: string) => new ApiFailure(400, `Bad Request: ${description}`);

/**
 * Parses Telegram HTML the way the Bot API does (subset): returns the visible text and entities.
 * @throws {ApiFailure} 400 "can't parse entities: …" for an unsupported tag, a misnested or
 *   unclosed tag, a stray `<`, or a `&` that does not start a known entity.
 */
export function parseTelegramHtml(html: string): { text: string; entities: MessageEntity[] } {
  const fail = (why: string) => bad(`can't parse entities: ${why}`);
  let text = "";
  const entities: MessageEntity[] = [];
  const stack: { tag: string; offset: number; attrs: string; byte: number }[] = [];
  let i = 0;
  const byteOffset = (at: number) => Buffer.byteLength(html.slice(0, at));
  while (i < html.length) {
    const ch = html[i]!;
    if (ch === "<") {
      const m = /^<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*>/.exec(
        html.slice(i),
      );
      if (!m) throw fail(`Unexpected character '<' at byte offset ${byteOffset(i)}: escape it as &lt;`);
      const tag = m[2]!.toLowerCase();
      if (!ALLOWED_TAGS.has(tag))
        throw fail(`Unsupported ${m[1] ? "end" : "start"} tag "${tag}" at byte offset ${byteOffset(i)}`);
      if (m[1]) {
        const top = stack.pop();
        if (!top) throw fail(`Unexpected end tag at byte offset ${byteOffset(i)}`);
        if (top.tag !== tag)
          throw fail(`Unmatched end tag at byte offset ${byteOffset(i)}, expected "</${top.tag}>", found "</${tag}>"`);
        const length = text.length - top.offset;
        if (length > 0 && !(top.tag === "code" && stack.at(-1)?.tag === "pre")) {
          const entity: Record<string, unknown> = { type: ENTITY_OF[tag], offset: top.offset, length };
          const href = /href\s*=\s*"([^"]*)"/.exec(top.attrs)?.[1];
          if (tag === "a") entity.url = href === undefined ? undefined : decodeEntities(href);
          // An inline mention `tg://user?id=<id>` becomes a text_mention of that user (Bot API "formatting options").
          const mentioned = tag === "a" ? /^tg:\/\/user\?id=(\d+)$/.exec(String(entity.url ?? "")) : null;
          if (mentioned) {
            entity.type = "text_mention";
            entity.user = {
              id: Number(mentioned[1]),
              is_bot: false,
              first_name: text.slice(top.offset, top.offset + length),
            };
            delete entity.url;
          }
          if (tag === "pre") {
            const lang = /class\s*=\s*"language-([^"]+)"/.exec(top.attrs)?.[1];
            if (lang) entity.language = lang;
          }
          entities.push(entity as unknown as MessageEntity);
        }
      } else {
        if (tag === "a" && !/href\s*=/.test(m[3] ?? ""))
          throw fail(`Can't find the href attribute of the tag "a" at byte offset ${byteOffset(i)}`);
        if (tag === "code" && stack.at(-1)?.tag === "pre" && /class\s*=\s*"language-([^"]+)"/.test(m[3] ?? "")) {
          stack.at(-1)!.attrs += m[3];
        }
        stack.push({ tag, offset: text.length, attrs: m[3] ?? "", byte: byteOffset(i) });
      }
      i += m[0].length;
    } else if (ch === "&") {
      const m = /^&(#\d{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z]+);/.exec(html.slice(i));
      if (!m) throw fail(`Character '&' is reserved at byte offset ${byteOffset(i)}: escape it as &amp;`);
      const body = m[1]!;
      if (body.startsWith("#x")) text += String.fromCodePoint(parseInt(body.slice(2), 16));
      else if (body.startsWith("#")) text += String.fromCodePoint(parseInt(body.slice(1), 10));
      else if (NAMED_ENTITIES[body]) text += NAMED_ENTITIES[body];
      else throw fail(`Unsupported HTML entity "&${body};" at byte offset ${byteOffset(i)}`);
      i += m[0].length;
    } else {
      text += ch;
      i += 1;
    }
  }
  const open = stack.pop();
  if (open) throw fail(`Can't find end tag corresponding to start tag "${open.tag}" at byte offset ${open.byte}`);
  entities.sort((a, b) => a.offset - b.offset);
  return { text, entities };
}

/** Entities Telegram computes for a user's plain text: `@mentions` and `/commands`. */
export function detectEntities(text: string): MessageEntity[] {
  const entities: MessageEntity[] = [];
  for (const m of text.matchAll(/(^|\s)(\/[a-zA-Z0-9_]{1,32}(?:@[a-zA-Z0-9_]{5,32})?)(?=$|\s)/g)) {
    entities.push({ type: "bot_command", offset: m.index + m[1]!.length, length: m[2]!.length });
  }
  for (const m of text.matchAll(/(^|[^\w/])(@[a-zA-Z0-9_]{5,32})/g)) {
    entities.push({ type: "mention", offset: m.index + m[1]!.length, length: m[2]!.length });
  }
  return entities.sort((a, b) => a.offset - b.offset);
}

/** The strict fake Bot API server. Start with {@link FakeTelegram.start}; always {@link FakeTelegram.stop}. */
export class FakeTelegram {
  /** The accepted bot token. */
  readonly token: string;
  /** The bot's own user (`getMe`). */
  readonly bot: User & { username: string };
  /** Every call the bot made, in order (including failed ones). */
  readonly calls: FakeCall[] = [];
  /** Basic groups upgraded to supergroups: old id → new id ({@link upgradeGroup}). */
  readonly #migrated = new Map<number, number>();
  /** Private chats whose drafts are refused ({@link refuseDrafts}). */
  readonly #draftsRefused = new Set<number>();
  /** Private chats whose user blocked the bot (see {@link FakeTelegram.blockBot}). */
  readonly #blockedBy = new Map<number, string>();
  /** Held long polls ended by a newer `getUpdates` (409 "terminated by other getUpdates request"): two pollers fighting. */
  conflicts = 0;
  /** Messages the bot sent, in order, with edits applied. */
  readonly sent: FakeSentMessage[] = [];
  /** `sendChatAction` payloads. */
  readonly chatActions: Record<string, unknown>[] = [];
  /** Successful `editMessageText` / `editMessageReplyMarkup` calls. */
  readonly edits: FakeCall[] = [];
  /** Refused `editMessageText` / `editMessageReplyMarkup` calls: which message and Telegram's description. */
  readonly refusedEdits: { method: string; chatId: number; messageId: number; description: string }[] = [];
  /** Accepted `sendMessageDraft` calls: chat, draft id, the text shown and when. */
  readonly drafts: { chatId: number; draftId: number; text: string; at: number }[] = [];
  /**
   * Accepted `sendVoice` calls, in order: the message (with `voice`, or `document` when the upload
   * was not Ogg Opus, MP3 or M4A — Telegram then shows a file, not a voice message), the upload's
   * name, content type and bytes, and the payload's other fields.
   */
  readonly voices: FakeSentVoice[] = [];
  /** Bot messages removed with `deleteMessage`, as they were when deleted. */
  readonly deleted: FakeSentMessage[] = [];
  /** `answerCallbackQuery` payloads that were accepted. */
  readonly callbackAnswers: Record<string, unknown>[] = [];
  /**
   * The notices shown to whoever pressed a button: each accepted `answerCallbackQuery` with a `text`
   * (https://core.telegram.org/bots/api#answercallbackquery), in order: the query, the text, whether
   * it is an alert (`show_alert`: a dialog to dismiss) rather than a toast, and when (ms since the epoch).
   */
  readonly toasts: { callbackQueryId: string; text: string; alert: boolean; at: number }[] = [];
  #lastStamp = 0;

  /**
   * When the fake received what the bot sent, edited or answered (the `at` of {@link sent},
   * {@link edits}, {@link toasts}, {@link drafts}, {@link voices}): ms since the Unix epoch, strictly
   * increasing (a thousandth of a ms past the last when the clock has not moved), so sorting by it
   * keeps the order of arrival also within one millisecond.
   */
  #stamp(): number {
    this.#lastStamp = Math.max(Date.now(), this.#lastStamp + 0.001);
    return this.#lastStamp;
  }
  /** The last accepted `setMyCommands` payload per `language_code` ("" for the default). */
  readonly commands = new Map<string, Record<string, unknown>>();
  /** The current webhook (`setWebhook` payload), if any. */
  webhook: Record<string, unknown> | undefined;
  /** HTTP status of each webhook delivery, in order. */
  readonly webhookDeliveries: number[] = [];
  /** Administrators per chat id, for `getChatMember` (everyone else is a `member`, unless {@link departed}). */
  readonly admins = new Map<number, Set<number>>();
  /**
   * Users no longer in a chat, per chat id: `getChatMember` answers `ChatMemberLeft` (`left`) or
   * `ChatMemberBanned` (`kicked`, `until_date` 0: forever), as Telegram does after a user leaves
   * or is removed.
   */
  readonly departed = new Map<number, Map<number, "left" | "kicked">>();
  /**
   * BotFather's group privacy of the bot (on by default, as for a new bot): `getMe` answers
   * `can_read_all_group_messages: !privacyMode`. (Which group messages a test sends is up to the
   * test: with privacy on, Telegram delivers only mentions, replies and commands.)
   */
  privacyMode = true;

  #server: Server;
  #port = 0;
  #updates: Update[] = [];
  #nextUpdateId = 1;
  #nextMessageId = 1000;
  #nextQueryId = 1;
  #messages = new Map<string, Message>();
  /** Topics as `chatId:message_thread_id`. */
  #topics = new Set<string>();
  #queries = new Map<string, { answered: boolean }>();
  #waiters = new Set<() => void>();
  #failures = new Map<string, FakeFailure[]>();
  #pending = new Set<ServerResponse>();
  #allowedUpdates: unknown[] | undefined;
  /** Held long polls, each with the function that ends it: replaced by a newer call (409) or the token revoked (401). */
  #polls = new Set<(why: "replaced" | "revoked") => void>();
  #drops = new Map<string, number>();
  /** Calls of a method answered normally before its {@link dropNext} drops begin. */
  #dropsAfter = new Map<string, number>();
  #floods = new Map<string, { until: number; retryAfter: number }>();
  #revoked = false;
  #files = new Map<string, { bytes: Buffer; fileSize: number; path: string; unique: string; chunked: boolean }>();
  #nextFile = 1;
  /** Every request to the file endpoint, in order. */
  readonly fileDownloads: FakeFileDownload[] = [];

  private constructor(options: FakeTelegramOptions) {
    this.token =
      options.token ?? `900000001:${"A".repeat(10)}fake${Math.random().toString(36).slice(2, 14).padEnd(12, "x")}`;
    this.bot = {
      id: 900000001,
      is_bot: true,
      first_name: "Taiwan Bot",
      username: "taiwan_test_bot",
      ...options.bot,
    } as User & { username: string };
    this.#server = createServer({ keepAliveTimeout: KEEP_ALIVE_MS }, (req, res) => void this.#handle(req, res));
    if (options.firstMessageId !== undefined) this.#nextMessageId = options.firstMessageId;
  }

  /** Starts a server on 127.0.0.1 with a free port. */
  static async start(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
    const fake = new FakeTelegram(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, "127.0.0.1", resolve));
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  /** The Bot API root for `TELEGRAM_API_ROOT`, e.g. `http://127.0.0.1:41234`. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Stops the server, ending held long polls. */
  async stop(): Promise<void> {
    for (const res of this.#pending) res.destroy();
    this.#pending.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** A user object (not a bot). */
  user(id: number, firstName: string, extra: Partial<User> = {}): User {
    return { id, is_bot: false, first_name: firstName, language_code: "zh-hant", ...extra };
  }

  /** The private chat with `user`. */
  privateChat(user: User): Chat {
    return { id: user.id, type: "private", first_name: user.first_name } as Chat;
  }

  /** A basic group (a small negative id; Telegram moves it to a supergroup with {@link upgradeGroup}). */
  basicGroup(id: number, title: string): Chat {
    return { id, type: "group", title } as Chat;
  }

  /**
   * What Telegram does when a basic group becomes a supergroup (a member turns on a setting that
   * needs one): the chat gets a new id (`-100…`), every later call naming the old id is answered
   * `400 Bad Request: group chat was upgraded to a supergroup chat` with
   * `parameters.migrate_to_chat_id` (Bot API `ResponseParameters`), and the bot receives the two
   * service messages: `migrate_to_chat_id` in the old group, `migrate_from_chat_id` in the new
   * supergroup (Bot API `Message`). `serviceMessages: false` leaves them out (a bot that missed
   * them, e.g. while no adapter was polling). Returns the new supergroup.
   */
  upgradeGroup(group: Chat, by: User, options: { serviceMessages?: boolean } = {}): Chat {
    const title = (group as { title?: string }).title ?? "Group";
    const next = { id: -Number(`100${Math.abs(group.id)}`), type: "supergroup", title } as Chat;
    this.#migrated.set(group.id, next.id);
    if (options.serviceMessages !== false) {
      const date = Math.floor(Date.now() / 1000);
      this.injectUpdate({
        message: { message_id: this.#nextMessageId++, date, chat: group, from: by, migrate_to_chat_id: next.id },
      } as Omit<Update, "update_id">);
      this.injectUpdate({
        message: { message_id: this.#nextMessageId++, date, chat: next, from: by, migrate_from_chat_id: group.id },
      } as Omit<Update, "update_id">);
    }
    return next;
  }

  /** A supergroup (negative id like Telegram's `-100…`); `forum` for topics. */
  group(id: number, title: string, forum = false): Chat {
    return { id, type: "supergroup", title, ...(forum ? { is_forum: true } : {}) } as Chat;
  }

  /**
   * Opens a topic (what a user's `createForumTopic` does): stores its `forum_topic_created` service
   * message, whose id is the topic's `message_thread_id`, and returns that id.
   *
   * @param chat - a forum supergroup (`group(id, title, true)`), or a private chat when the bot has
   *   `has_topics_enabled` (Bot API 9.3 private-chat topics).
   * @param threadId - the topic's id; default the next message id.
   * @throws {Error} for any other chat, or an id already in use in the chat.
   */
  createTopic(chat: Chat, name: string, threadId?: number, creator?: User): number {
    const forum = chat.type === "supergroup" && (chat as { is_forum?: boolean }).is_forum === true;
    const privateTopics =
      chat.type === "private" && (this.bot as { has_topics_enabled?: boolean }).has_topics_enabled === true;
    if (!forum && !privateTopics)
      throw new Error(
        `FakeTelegram: chat ${chat.id} has no topics (not a forum supergroup, nor a private chat of a bot with has_topics_enabled)`,
      );
    const id = threadId ?? this.#nextMessageId++;
    if (this.#messages.has(`${chat.id}:${id}`))
      throw new Error(`FakeTelegram: message ${id} already exists in chat ${chat.id}`);
    const created = {
      message_id: id,
      message_thread_id: id,
      date: Math.floor(Date.now() / 1000),
      chat,
      ...(creator ? { from: creator } : {}),
      forum_topic_created: { name, icon_color: 0x6fb9f0 },
      is_topic_message: true,
    } as unknown as Message;
    this.#messages.set(`${chat.id}:${id}`, created);
    this.#topics.add(`${chat.id}:${id}`);
    return id;
  }

  /** Whether `threadId` is a topic of chat `chatId`. */
  hasTopic(chatId: number, threadId: number): boolean {
    return this.#topics.has(`${chatId}:${threadId}`);
  }

  /** Makes the next call of `method` fail once with `failure` (e.g. a 429 with `retry_after`). */
  failNext(method: string, failure: FakeFailure): void {
    const list = this.#failures.get(method) ?? [];
    list.push(failure);
    this.#failures.set(method, list);
  }

  /**
   * Flood control, as Telegram does it: for the next `forMs` ms every call of `method` answers
   * `429 Too Many Requests: retry after N` with `parameters.retry_after` N = `retryAfter` seconds
   * (at most the seconds left in the window, at least 1), and changes nothing.
   */
  rateLimit(method: string, options: { retryAfter: number; forMs: number }): void {
    this.#floods.set(method, { until: Date.now() + options.forMs, retryAfter: options.retryAfter });
  }

  /**
   * The user of the private chat `chatId` blocks the bot (or a group removes it): from now on
   * every call naming that `chat_id` answers 403 with `description` (default `Forbidden: bot was
   * blocked by the user`; a group's is `Forbidden: bot was kicked from the supergroup chat`), as
   * Telegram does, until {@link unblockBot}.
   */
  blockBot(chatId: number, description = "Forbidden: bot was blocked by the user"): void {
    this.#blockedBy.set(chatId, description);
  }

  /** The user of the private chat `chatId` unblocks the bot (see {@link blockBot}). */
  unblockBot(chatId: number): void {
    this.#blockedBy.delete(chatId);
  }

  /**
   * Makes `sendMessageDraft` to the private chat `chatId` fail for good with the real `400 Bad
   * Request: TEXTDRAFT_PEER_INVALID`, as Telegram answers for a peer that cannot show drafts.
   */
  refuseDrafts(chatId: number): void {
    this.#draftsRefused.add(chatId);
  }

  /**
   * Makes the next `count` calls of `method` fail at the network level: the connection is closed
   * with no answer. With `after`, that many calls of `method` are answered normally first (e.g.
   * `after: 1` drops the second chunk of an answer).
   */
  dropNext(method: string, count = 1, options: { after?: number } = {}): void {
    this.#drops.set(method, (this.#drops.get(method) ?? 0) + count);
    if (options.after) this.#dropsAfter.set(method, options.after);
  }

  /** The token is revoked (as with @BotFather `/revoke`): held long polls and every later call answer 401. */
  revokeToken(): void {
    this.#revoked = true;
    for (const end of [...this.#polls]) end("revoked");
  }

  /**
   * Another process polls with the bot's token for `ms` milliseconds: one long poll after another,
   * each replacing (409) the bot's own held poll, as Telegram does. Resolves when it stops.
   */
  async competingPoller(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const timeout = Math.max(1, Math.ceil((until - Date.now()) / 1000));
      await fetch(`${this.apiRoot}/bot${this.token}/getUpdates?timeout=${Math.min(timeout, 1)}&limit=1`).then(
        (r) => r.arrayBuffer(),
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Queues (or posts to the webhook) a raw update; `update_id` is assigned. */
  injectUpdate(update: Omit<Update, "update_id">): Update {
    const full = { update_id: this.#nextUpdateId++, ...update } as Update;
    if (this.webhook) {
      void this.#deliver(full);
    } else {
      this.#updates.push(full);
      this.#wake();
    }
    return full;
  }

  /** A user writes in a chat: builds the `message` update Telegram would send and returns the message. */
  sendUserMessage(input: UserMessageInput): Message {
    const message = this.#userMessage(input);
    this.injectUpdate({ message } as Omit<Update, "update_id">);
    return message;
  }

  /** The bot's messages in `chat` (sent, not edits), in order. */
  messagesTo(chat: Chat): FakeSentMessage[] {
    return this.sent.filter((m) => m.chatId === chat.id);
  }

  /**
   * The bot's first message after the first `seen` of {@link sent} that answers `message`: in a
   * private chat any message there (the bot just writes), in a group one that replies to it
   * (`reply_parameters.message_id`).
   * @param timeoutMs - how long to wait, in ms. @throws {Error} when none came within it.
   */
  waitForReply(message: Message, seen: number, timeoutMs: number): Promise<FakeSentMessage> {
    const replies = (m: FakeSentMessage) =>
      message.chat.type === "private" ||
      (m.payload.reply_parameters as { message_id?: number } | undefined)?.message_id === message.message_id;
    return this.waitFor(
      () => this.sent.slice(seen).find((m) => m.chatId === message.chat.id && replies(m)),
      timeoutMs,
      `a reply to "${message.text ?? ""}"`,
    );
  }

  /**
   * A user writes in a chat ({@link sendUserMessage}) and the bot's next message in that chat is
   * awaited ({@link waitFor}).
   * @param timeoutMs - how long to wait for the answer, in ms (default 5000).
   * @returns the user's message and the bot's answer.
   * @throws {Error} when no answer came within `timeoutMs`.
   */
  async ask(input: UserMessageInput, timeoutMs = 5000): Promise<{ message: Message; answer: FakeSentMessage }> {
    const before = this.messagesTo(input.chat).length;
    const message = this.sendUserMessage(input);
    const what = input.text !== undefined ? `an answer to "${input.text}"` : "the bot's answer";
    const answer = await this.waitFor(() => this.messagesTo(input.chat)[before], timeoutMs, what);
    return { message, answer };
  }

  /** A user edits an earlier message (an `edited_message` update). */
  editUserMessage(original: Message, text: string): Message {
    const message = {
      ...original,
      text,
      entities: detectEntities(text),
      edit_date: Math.floor(Date.now() / 1000),
    } as Message;
    this.injectUpdate({ edited_message: message } as Omit<Update, "update_id">);
    return message;
  }

  /** A user presses an inline button of a bot message; returns the `callback_query` id. */
  pressButton(input: { from: User; message: Message | FakeSentMessage; data: string }): string {
    const message = "messageId" in input.message ? input.message.message : input.message;
    const id = String(this.#nextQueryId++);
    this.#queries.set(id, { answered: false });
    const query = {
      id,
      from: input.from,
      message,
      chat_instance: `ci${message.chat.id}`,
      data: input.data,
    } as CallbackQuery;
    this.injectUpdate({ callback_query: query });
    return id;
  }

  /** The `callback_data` of every button of a sent message, row by row. */
  buttons(message: FakeSentMessage): { text: string; callback_data?: string }[] {
    const markup = message.message.reply_markup as InlineKeyboardMarkup | undefined;
    return (markup?.inline_keyboard ?? []).flat() as { text: string; callback_data?: string }[];
  }

  /**
   * The `callback_data` of the approve button (data ending in `:y`) of an approval prompt.
   * @throws when the message has no such button.
   */
  approveData(message: FakeSentMessage): string {
    const data = this.buttons(message)
      .map((b) => b.callback_data)
      .find((d) => d?.endsWith(":y"));
    if (!data) throw new Error(`message ${message.messageId} has no approve button`);
    return data;
  }

  /**
   * The `callback_data` of the decline button (data ending in `:n`) of an approval prompt.
   * @throws when the message has no such button.
   */
  declineData(message: FakeSentMessage): string {
    const data = this.buttons(message)
      .map((b) => b.callback_data)
      .find((d) => d?.endsWith(":n"));
    if (!data) throw new Error(`message ${message.messageId} has no decline button`);
    return data;
  }

  /** A user (`id`, `firstName`) and their private chat with the bot. */
  dm(id: number, firstName: string): { user: User; chat: Chat } {
    const user = this.user(id, firstName);
    return { user, chat: this.privateChat(user) };
  }

  /**
   * The bot's first message in chat `chatId` with buttons (an approval prompt, a menu), once there.
   * @throws {Error} when there is none within `timeoutMs` (default 5000).
   */
  buttonsMessage(chatId: number, timeoutMs = 5000): Promise<FakeSentMessage> {
    return this.waitFor(
      () => this.sent.find((m) => m.chatId === chatId && this.buttons(m).length > 0),
      timeoutMs,
      `an approval prompt in chat ${chatId}`,
    );
  }

  /**
   * The text of the bot's answer to callback query `id` (its toast; "" without text), once given.
   * @throws {Error} when there is none within `timeoutMs` (default 5000).
   */
  async toast(id: string, timeoutMs = 5000): Promise<string> {
    const answer = await this.waitFor(
      () => this.callbackAnswers.find((a) => String(a.callback_query_id) === id),
      timeoutMs,
      `the answer to callback query ${id}`,
    );
    return String(answer.text ?? "");
  }

  /**
   * Stores a file (as if a user had uploaded it) and returns its ids and announced size, for a
   * message's `photo`, `document`, `voice`…
   */
  addFile(bytes: Buffer, options: FakeFileInput = {}): { file_id: string; file_unique_id: string; file_size: number } {
    const n = this.#nextFile++;
    const fileId = `BQACAgUAAxkBAAI${n.toString(36).padStart(6, "0")}fake`;
    const unique = `AgAD${n.toString(36).padStart(4, "0")}`;
    const fileSize = options.fileSize ?? bytes.length;
    this.#files.set(fileId, {
      bytes,
      fileSize,
      path: options.path ?? `documents/file_${n}`,
      unique,
      chunked: options.chunked ?? false,
    });
    return { file_id: fileId, file_unique_id: unique, file_size: fileSize };
  }

  /**
   * Returns the calls refused so far because the Bot API does not allow them, and forgets them
   * (else the running test fails when it ends). For a test that sends such a call on purpose.
   */
  takeSpecViolations(): SpecViolation[] {
    return takeSpecViolations("telegram");
  }

  /** Calls made to `method`. */
  callsOf(method: string): FakeCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /**
   * Waits until `check` returns a truthy value (checked every 10 ms) and returns it.
   * @throws {Error} after `timeoutMs` (default 5000) with `what` in the message.
   */
  async waitFor<T>(check: () => T | undefined | null | false, timeoutMs = 5000, what = "condition"): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`FakeTelegram: timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  #userMessage(input: UserMessageInput): Message {
    const chatId = input.chat.id;
    let reply: Message | undefined;
    if (typeof input.reply_to_message === "number") {
      reply = this.#messages.get(`${chatId}:${input.reply_to_message}`);
      if (!reply) throw new Error(`FakeTelegram: no message ${input.reply_to_message} in chat ${chatId}`);
    } else reply = input.reply_to_message;
    let thread: { message_thread_id: number; is_topic_message?: true } | undefined;
    if (input.message_thread_id !== undefined) {
      const id = input.message_thread_id;
      const forum = input.chat.type === "supergroup" && (input.chat as { is_forum?: boolean }).is_forum === true;
      if (!this.hasTopic(chatId, id)) {
        if (!forum) throw new Error(`FakeTelegram: chat ${chatId} has no topic ${id} (use createTopic)`);
        this.createTopic(input.chat, `Topic ${id}`, id);
      }
      thread = { message_thread_id: id, is_topic_message: true };
      // Telegram sets the topic's creation message as reply_to_message of a message that replies to nothing else.
      reply ??= this.#messages.get(`${chatId}:${id}`);
    } else if (reply?.is_topic_message && reply.message_thread_id !== undefined) {
      // A reply to a topic message is in that topic.
      thread = { message_thread_id: reply.message_thread_id, is_topic_message: true };
    } else if (reply && input.chat.type === "supergroup" && (input.chat as { is_forum?: boolean }).is_forum !== true) {
      // A reply in an ordinary supergroup belongs to the reply thread of the message it answers (no is_topic_message).
      thread = { message_thread_id: reply.message_thread_id ?? reply.message_id };
    }
    const message: Record<string, unknown> = {
      message_id: this.#nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      chat: input.chat,
      from: input.from ?? (input.sender_chat ? GROUP_ANONYMOUS_BOT : undefined),
      ...(input.sender_chat ? { sender_chat: input.sender_chat } : {}),
      ...(input.text !== undefined ? { text: input.text, entities: input.entities ?? detectEntities(input.text) } : {}),
      ...(input.caption !== undefined
        ? { caption: input.caption, caption_entities: input.entities ?? detectEntities(input.caption) }
        : {}),
      ...(reply ? { reply_to_message: reply } : {}),
      ...thread,
      ...input.extra,
    };
    if (message.entities && (message.entities as unknown[]).length === 0) delete message.entities;
    if (message.caption_entities && (message.caption_entities as unknown[]).length === 0)
      delete message.caption_entities;
    const m = message as unknown as Message;
    this.#messages.set(`${chatId}:${m.message_id}`, m);
    return m;
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  async #deliver(update: Update): Promise<void> {
    const url = String(this.webhook!.url);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (typeof this.webhook!.secret_token === "string")
      headers["x-telegram-bot-api-secret-token"] = this.webhook!.secret_token;
    try {
      const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(update) });
      await res.arrayBuffer();
      this.webhookDeliveries.push(res.status);
    } catch {
      this.webhookDeliveries.push(0);
    }
  }

  async #handle(req: HttpRequest, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    if (url.pathname.startsWith("/file/")) return this.#serveFile(url, res);
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    const send = (status: number, body: unknown) => {
      this.#pending.delete(res);
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    if (!m) return send(404, { ok: false, error_code: 404, description: "Not Found" });
    if (m[1] !== this.token || this.#revoked)
      return send(401, { ok: false, error_code: 401, description: "Unauthorized" });
    const method = m[2]!;
    const drops = this.#drops.get(method) ?? 0;
    const before = this.#dropsAfter.get(method) ?? 0;
    if (drops > 0 && before > 0) {
      this.#dropsAfter.set(method, before - 1);
    } else if (drops > 0) {
      this.#drops.set(method, drops - 1);
      this.calls.push({ method, payload: {}, at: Date.now() });
      this.#pending.delete(res);
      req.socket.destroy();
      return;
    }
    let payload: Record<string, unknown>;
    try {
      payload = { ...Object.fromEntries(url.searchParams), ...(await readBody(req)) };
    } catch {
      return send(400, { ok: false, error_code: 400, description: "Bad Request: invalid request body" });
    }
    this.calls.push({ method, payload, at: Date.now() });
    const check = checkTelegramRequest(method, payload, parseForSpec);
    if (!check.ok) {
      recordSpecViolation({ platform: "telegram", request: method, problems: check.problems, payload, at: Date.now() });
      return send(check.status, { ok: false, error_code: check.status, description: check.description });
    }
    const movedTo = payload.chat_id === undefined ? undefined : this.#migrated.get(Number(payload.chat_id));
    if (movedTo !== undefined) {
      return send(400, {
        ok: false,
        error_code: 400,
        description: "Bad Request: group chat was upgraded to a supergroup chat",
        parameters: { migrate_to_chat_id: movedTo },
      });
    }
    const flood = this.#floods.get(method);
    if (flood && Date.now() < flood.until) {
      const retryAfter = Math.max(1, Math.min(flood.retryAfter, Math.ceil((flood.until - Date.now()) / 1000)));
      return send(429, {
        ok: false,
        error_code: 429,
        description: `Too Many Requests: retry after ${retryAfter}`,
        parameters: { retry_after: retryAfter },
      });
    }
    const blockedChat = Number((payload as { chat_id?: unknown } | undefined)?.chat_id);
    const blocked = method === "getUpdates" ? undefined : this.#blockedBy.get(blockedChat);
    if (blocked !== undefined) return send(403, { ok: false, error_code: 403, description: blocked });
    const failure = this.#failures.get(method)?.shift();
    if (failure) {
      return send(failure.error_code, {
        ok: false,
        error_code: failure.error_code,
        description: failure.description,
        ...(failure.retry_after !== undefined ? { parameters: { retry_after: failure.retry_after } } : {}),
      });
    }
    try {
      const result = method === "getUpdates" ? await this.#getUpdates(payload, res) : this.#call(method, payload);
      send(200, { ok: true, result });
    } catch (error) {
      if (error instanceof ApiFailure) {
        send(error.code, {
          ok: false,
          error_code: error.code,
          description: error.message,
          ...(error.retryAfter ? { parameters: { retry_after: error.retryAfter } } : {}),
        });
      } else {
        send(500, { ok: false, error_code: 500, description: `Internal Server Error: ${(error as Error).message}` });
      }
    }
  }

  async #getUpdates(payload: Record<string, unknown>, res: ServerResponse): Promise<Update[]> {
    if (this.webhook)
      throw new ApiFailure(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    const offset = Number(payload.offset ?? 0);
    const limit = Math.min(100, Math.max(1, Number(payload.limit ?? 100)));
    const timeout = Math.max(0, Number(payload.timeout ?? 0));
    // Telegram keeps the last allowed_updates when a call omits it.
    if (payload.allowed_updates !== undefined) this.#allowedUpdates = parseList(payload.allowed_updates);
    const allowed = this.#allowedUpdates;
    if (offset > 0) this.#updates = this.#updates.filter((u) => u.update_id >= offset);
    // A newer getUpdates ends every held one: "Conflict: terminated by other getUpdates request".
    for (const end of [...this.#polls]) end("replaced");
    const ready = () =>
      this.#updates
        .filter((u) => !allowed || allowed.length === 0 || allowed.some((k) => String(k) in u))
        .slice(0, limit);
    let found = ready();
    if (found.length > 0 || timeout === 0) return found;
    this.#pending.add(res);
    const ended = await new Promise<"replaced" | "revoked" | undefined>((resolve) => {
      const done = (why?: "replaced" | "revoked") => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        this.#polls.delete(replace);
        res.off("close", closed);
        resolve(why);
      };
      const closed = () => done();
      const replace = (why: "replaced" | "revoked") => done(why);
      const wake = () => {
        if (ready().length > 0) done();
      };
      const timer = setTimeout(done, timeout * 1000);
      this.#waiters.add(wake);
      this.#polls.add(replace);
      res.once("close", closed);
    });
    if (ended === "revoked") throw new ApiFailure(401, "Unauthorized");
    if (ended === "replaced") this.conflicts += 1;
    if (ended === "replaced")
      throw new ApiFailure(
        409,
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
      );
    found = ready();
    return found;
  }

  /** `GET /file/bot<token>/<file_path>`: the bytes, or 401/404 like the Bot API's file server. */
  #serveFile(url: URL, res: ServerResponse): void {
    const m = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (!m || m[1] !== this.token || this.#revoked) {
      res
        .writeHead(m ? 401 : 404, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: false, error_code: m ? 401 : 404, description: m ? "Unauthorized" : "Not Found" }));
      return;
    }
    const path = decodeURIComponent(m[2]!);
    const file = [...this.#files.values()].find((f) => f.path === path);
    if (!file) {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ ok: false, error_code: 404, description: "Not Found" }));
      return;
    }
    const record: FakeFileDownload = { path, sent: 0, complete: false };
    this.fileDownloads.push(record);
    if (!file.chunked) {
      res
        .writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.bytes.length) })
        .end(file.bytes);
      record.sent = file.bytes.length;
      record.complete = true;
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    let offset = 0;
    const pump = () => {
      if (res.destroyed) return;
      if (offset >= file.bytes.length) {
        record.complete = true;
        res.end();
        return;
      }
      const chunk = file.bytes.subarray(offset, offset + 64 * 1024);
      offset += chunk.length;
      res.write(chunk, () => {
        record.sent = offset;
        setTimeout(pump, 2);
      });
    };
    pump();
  }

  #call(method: string, p: Record<string, unknown>): unknown {
    switch (method) {
      case "getFile": {
        const file = this.#files.get(String(p.file_id ?? ""));
        if (!file) throw bad("invalid file_id");
        if (file.fileSize > FAKE_GETFILE_MAX_BYTES) throw bad("file is too big");
        return {
          file_id: String(p.file_id),
          file_unique_id: file.unique,
          file_size: file.fileSize,
          file_path: file.path,
        };
      }
      case "getMe":
        return {
          ...this.bot,
          can_join_groups: true,
          can_read_all_group_messages: !this.privacyMode,
          supports_inline_queries: false,
        };
      case "deleteWebhook":
        this.webhook = undefined;
        if (p.drop_pending_updates === true || p.drop_pending_updates === "true") this.#updates = [];
        return true;
      case "setWebhook": {
        const url = String(p.url ?? "");
        if (url === "") {
          this.webhook = undefined;
          return true;
        }
        if (!URL.canParse(url)) throw bad("bad webhook: invalid URL");
        if (p.secret_token !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(String(p.secret_token)))
          throw bad("bad webhook: invalid secret token");
        this.webhook = { ...p };
        if (p.allowed_updates !== undefined) this.#allowedUpdates = parseList(p.allowed_updates);
        return true;
      }
      case "setMyCommands": {
        const commands = parseList(p.commands) as unknown as { command: string; description: string }[];
        // BotCommand: "Can contain only lowercase English letters, digits and underscores" (not in the spec's structure).
        for (const c of commands) if (!/^[a-z0-9_]{1,32}$/.test(c.command)) throw bad("BOT_COMMAND_INVALID");
        this.commands.set(String(p.language_code ?? ""), { ...p, commands });
        return true;
      }
      case "sendChatAction":
        if (p.chat_id === undefined) throw bad("chat not found");
        this.#threadOf(Number(p.chat_id), p);
        this.chatActions.push(p);
        return true;
      case "sendMessage":
        return this.#sendMessage(p);
      case "editMessageText":
      case "editMessageReplyMarkup":
        try {
          return this.#edit(method, p);
        } catch (error) {
          this.refusedEdits.push({
            method,
            chatId: Number(p.chat_id),
            messageId: Number(p.message_id),
            description: (error as Error).message,
          });
          throw error;
        }
      case "sendMessageDraft":
        return this.#draft(p);
      case "sendVoice":
        return this.#sendVoice(p);
      case "deleteMessage": {
        const key = `${Number(p.chat_id)}:${Number(p.message_id)}`;
        const index = this.sent.findIndex((s) => `${s.chatId}:${s.messageId}` === key);
        if (index < 0 || !this.#messages.has(key)) throw bad("message to delete not found");
        this.#messages.delete(key);
        this.deleted.push(...this.sent.splice(index, 1));
        return true;
      }
      case "getChatMember": {
        const chatId = Number(p.chat_id);
        const userId = Number(p.user_id);
        if (!Number.isInteger(userId)) throw bad("user_id is required");
        const gone = this.departed.get(chatId)?.get(userId);
        if (gone === "left")
          return { status: "left", user: { id: userId, is_bot: false, first_name: `user${userId}` } };
        if (gone === "kicked")
          return { status: "kicked", user: { id: userId, is_bot: false, first_name: `user${userId}` }, until_date: 0 };
        const admin = this.admins.get(chatId)?.has(userId) === true;
        return {
          status: admin ? "administrator" : "member",
          user: { id: userId, is_bot: false, first_name: `user${userId}` },
          ...(admin ? { can_be_edited: false, is_anonymous: true } : {}),
        };
      }
      case "answerCallbackQuery": {
        const query = this.#queries.get(String(p.callback_query_id));
        if (!query || query.answered) throw bad("query is too old and response timeout expired or query ID is invalid");
        query.answered = true;
        this.callbackAnswers.push(p);
        if (typeof p.text === "string" && p.text !== "")
          this.toasts.push({
            callbackQueryId: String(p.callback_query_id),
            text: p.text,
            alert: p.show_alert === true || p.show_alert === "true",
            at: this.#stamp(),
          });
        return true;
      }
      default:
        throw new ApiFailure(404, "Not Found: method not found");
    }
  }

  #render(p: Record<string, unknown>): { text: string; entities: MessageEntity[] } {
    if (typeof p.text !== "string") throw bad("message text is empty");
    const parseMode = p.parse_mode === undefined ? undefined : String(p.parse_mode);
    if (parseMode !== undefined && parseMode !== "HTML") throw new Error(`the fake only parses HTML, not ${parseMode}`);
    const parsed = parseMode === "HTML" ? parseTelegramHtml(p.text) : { text: p.text, entities: [] };
    // Telegram trims the text; the spec check has already bounded its length (1-4096 characters).
    if (parsed.text.trim() === "") throw bad("message text is empty");
    return parsed;
  }

  #markup(p: Record<string, unknown>): InlineKeyboardMarkup | undefined {
    if (p.reply_markup === undefined) return undefined;
    const markup = (
      typeof p.reply_markup === "string" ? JSON.parse(p.reply_markup) : p.reply_markup
    ) as InlineKeyboardMarkup;
    for (const button of (markup.inline_keyboard ?? []).flat()) if (!button.text) throw bad("BUTTON_TEXT_INVALID");
    return markup;
  }

  #sendMessage(p: Record<string, unknown>): Message {
    const chatId = Number(p.chat_id);
    if (!Number.isFinite(chatId)) throw bad("chat not found");
    const { text, entities } = this.#render(p);
    const markup = this.#markup(p);
    const replyParameters = (
      typeof p.reply_parameters === "string" ? JSON.parse(p.reply_parameters) : p.reply_parameters
    ) as { message_id: number; allow_sending_without_reply?: boolean } | undefined;
    let reply: Message | undefined;
    if (replyParameters) {
      reply = this.#messages.get(`${chatId}:${replyParameters.message_id}`);
      if (!reply && !replyParameters.allow_sending_without_reply) throw bad("message to be replied not found");
    }
    const chat = this.#chatOf(chatId);
    // An explicit topic must exist; without one, a reply lands in the replied message's topic.
    const threadId = this.#threadOf(chatId, p) ?? (reply?.is_topic_message ? reply.message_thread_id : undefined);
    const message = {
      message_id: this.#nextMessageId++,
      from: this.bot,
      chat,
      date: Math.floor(Date.now() / 1000),
      text,
      ...(entities.length ? { entities } : {}),
      ...(reply ? { reply_to_message: reply } : {}),
      ...(threadId !== undefined ? { message_thread_id: threadId, is_topic_message: true } : {}),
      ...(markup ? { reply_markup: markup } : {}),
    } as Message;
    this.#messages.set(`${chatId}:${message.message_id}`, message);
    this.sent.push({ chatId, messageId: message.message_id, text, entities, payload: p, message, at: this.#stamp() });
    return message;
  }

  /**
   * `sendVoice` (https://core.telegram.org/bots/api#sendvoice) with an uploaded file: up to 50 MB;
   * an Ogg Opus, MP3 or M4A file becomes a voice message (`voice`: duration as given, mime type,
   * size), any other file a `document` ("other formats may be sent as Audio or Document"). A
   * `file_id` or URL string is refused here (the bot always uploads).
   */
  #sendVoice(p: Record<string, unknown>): Message {
    const chatId = Number(p.chat_id);
    if (!Number.isFinite(chatId)) throw bad("chat not found");
    const upload = (
      typeof p.voice === "string" && p.voice.startsWith("attach://") ? p[p.voice.slice("attach://".length)] : p.voice
    ) as InputFilePart | string | undefined;
    if (typeof upload !== "object" || upload === null || !upload.bytes)
      throw bad("wrong remote file identifier specified: the fake takes uploaded voice files only");
    if (upload.size === 0) throw bad("file must be non-empty");
    if (upload.size > 50 * 1024 * 1024) throw new ApiFailure(413, "Request Entity Too Large");
    const bytes = upload.bytes;
    const head = bytes.subarray(0, 512);
    const isOggOpus = head.subarray(0, 4).toString("latin1") === "OggS" && head.includes("OpusHead");
    const isMp3 =
      head.subarray(0, 3).toString("latin1") === "ID3" || (head[0] === 0xff && ((head[1] ?? 0) & 0xe0) === 0xe0);
    const isM4a = head.subarray(4, 8).toString("latin1") === "ftyp";
    const shownAs = isOggOpus || isMp3 || isM4a ? "voice" : "document";
    const replyParameters = (
      typeof p.reply_parameters === "string" ? JSON.parse(p.reply_parameters) : p.reply_parameters
    ) as { message_id: number; allow_sending_without_reply?: boolean } | undefined;
    let reply: Message | undefined;
    if (replyParameters) {
      reply = this.#messages.get(`${chatId}:${replyParameters.message_id}`);
      if (!reply && !replyParameters.allow_sending_without_reply) throw bad("message to be replied not found");
    }
    const threadId = this.#threadOf(chatId, p) ?? (reply?.is_topic_message ? reply.message_thread_id : undefined);
    const fileId = `voice-${this.#nextMessageId}`;
    const file = { file_id: fileId, file_unique_id: `u${fileId}`, file_size: upload.size };
    const mimeType = isOggOpus ? "audio/ogg" : isMp3 ? "audio/mpeg" : isM4a ? "audio/mp4" : upload.mimeType;
    const message = {
      message_id: this.#nextMessageId++,
      from: this.bot,
      chat: this.#chatOf(chatId),
      date: Math.floor(Date.now() / 1000),
      ...(shownAs === "voice"
        ? { voice: { ...file, duration: Number(p.duration ?? 0), mime_type: mimeType } }
        : { document: { ...file, file_name: upload.filename, ...(mimeType ? { mime_type: mimeType } : {}) } }),
      ...(reply ? { reply_to_message: reply } : {}),
      ...(threadId !== undefined ? { message_thread_id: threadId, is_topic_message: true } : {}),
    } as Message;
    this.#messages.set(`${chatId}:${message.message_id}`, message);
    const payload = Object.fromEntries(
      Object.entries(p).filter(([name, value]) => name !== "voice" && value !== upload),
    );
    this.voices.push({
      chatId,
      messageId: message.message_id,
      shownAs,
      file: { filename: upload.filename, mimeType: upload.mimeType ?? "", bytes },
      payload,
      message,
      at: this.#stamp(),
    });
    return message;
  }

  /**
   * The `message_thread_id` of a send, checked: it must be a topic of the chat.
   * @throws {ApiFailure} 400 "message thread not found" otherwise.
   */
  #threadOf(chatId: number, p: Record<string, unknown>): number | undefined {
    if (p.message_thread_id === undefined) return undefined;
    const id = Number(p.message_thread_id);
    if (!Number.isInteger(id) || !this.hasTopic(chatId, id)) throw bad("message thread not found");
    return id;
  }

  #chatOf(chatId: number): Chat {
    for (const m of this.#messages.values()) if (m.chat.id === chatId) return m.chat;
    return {
      id: chatId,
      type: chatId > 0 ? "private" : "supergroup",
      ...(chatId > 0 ? { first_name: "User" } : { title: "Group" }),
    } as Chat;
  }

  /** `sendMessageDraft`: private chats only (a user id, positive), `draft_id` a non-zero integer (the spec check bounds the text). */
  #draft(p: Record<string, unknown>): true {
    const chatId = Number(p.chat_id);
    if (!Number.isInteger(chatId)) throw bad("chat not found");
    if (this.#chatOf(chatId).type !== "private" || this.#draftsRefused.has(chatId)) throw bad("TEXTDRAFT_PEER_INVALID");
    const draftId = Number(p.draft_id);
    if (!Number.isInteger(draftId) || draftId === 0) throw bad('parameter "draft_id" must be non-zero');
    const text = p.text === undefined ? "" : String(p.text);
    const parsed = p.parse_mode === "HTML" ? parseTelegramHtml(text) : { text };
    this.#threadOf(chatId, p);
    this.drafts.push({ chatId, draftId, text: parsed.text, at: this.#stamp() });
    return true;
  }

  #edit(method: string, p: Record<string, unknown>): Message {
    const key = `${Number(p.chat_id)}:${Number(p.message_id)}`;
    const message = this.#messages.get(key);
    const sent = this.sent.find((s) => `${s.chatId}:${s.messageId}` === key);
    if (!message || !sent) throw bad("message to edit not found");
    const markup = this.#markup(p);
    const rendered = method === "editMessageText" ? this.#render(p) : { text: sent.text, entities: sent.entities };
    const sameText = rendered.text === sent.text && JSON.stringify(rendered.entities) === JSON.stringify(sent.entities);
    const sameMarkup = JSON.stringify(markup ?? null) === JSON.stringify(message.reply_markup ?? null);
    if (sameText && sameMarkup) {
      throw bad(
        "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      );
    }
    const updated = { ...message, text: rendered.text, edit_date: Math.floor(Date.now() / 1000) } as Message &
      Record<string, unknown>;
    if (rendered.entities.length) updated.entities = rendered.entities;
    else delete updated.entities;
    if (markup && (markup.inline_keyboard ?? []).length > 0) updated.reply_markup = markup;
    else delete updated.reply_markup;
    this.#messages.set(key, updated);
    sent.text = rendered.text;
    sent.entities = rendered.entities;
    sent.message = updated;
    this.edits.push({ method, payload: p, at: this.#stamp() });
    return updated;
  }
}

function decodeEntities(text: string): string {
  return text.replace(/&(#\d{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z]+);/g, (m, body: string) => {
    if (body.startsWith("#x")) return String.fromCodePoint(parseInt(body.slice(2), 16));
    if (body.startsWith("#")) return String.fromCodePoint(parseInt(body.slice(1), 10));
    return NAMED_ENTITIES[body] ?? m;
  });
}

function parseList(value: unknown): unknown[] | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value;
  if (typeof value === "string") {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed : undefined;
  }
  return undefined;
}

/** The text Telegram shows for a `parse_mode` (for the spec's limits after entity parsing); `undefined` when the fake cannot parse it. */
const parseForSpec: TextParser = (text, parseMode) => {
  if (parseMode === undefined) return text;
  if (parseMode !== "HTML") return undefined;
  try {
    return parseTelegramHtml(text).text;
  } catch {
    return undefined;
  }
};

/** The request's parameters: a JSON, form or multipart body (a multipart file part becomes an {@link InputFilePart}). */
async function readBody(req: HttpRequest): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const bytes = Buffer.concat(chunks);
  if (bytes.length === 0) return {};
  const type = req.headers["content-type"] ?? "";
  if (type.includes("application/json")) return JSON.parse(bytes.toString("utf8")) as Record<string, unknown>;
  if (type.includes("application/x-www-form-urlencoded"))
    return Object.fromEntries(new URLSearchParams(bytes.toString("utf8")));
  if (type.includes("multipart/form-data")) {
    const { fields, files } = await readMultipart(req.headers, bytes, { keepFiles: true });
    const params: Record<string, unknown> = Object.fromEntries(fields);
    for (const f of files) {
      const part: InputFilePart = { [INPUT_FILE]: true, filename: f.filename, size: f.size };
      // The content type and bytes are for the methods that look at the upload (`sendVoice`); not
      // enumerable, so the spec check sees the part as Telegram's InputFile.
      Object.defineProperty(part, "mimeType", { value: f.mimeType, enumerable: false });
      Object.defineProperty(part, "bytes", { value: f.bytes, enumerable: false });
      params[f.name] = part;
    }
    return params;
  }
  throw new Error(`unsupported content type ${type}`);
}
