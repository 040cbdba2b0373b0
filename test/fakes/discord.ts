/**
 * A strict fake Discord: REST under `/api/v10` and a WebSocket gateway (package `ws`) speaking the
 * real gateway protocol, so the real discord.js and `@discordjs/rest` clients can be tested
 * against it. Reusable by the end-to-end suite.
 *
 * Every REST request is first checked against Discord's OpenAPI description of its HTTP API
 * (`discord-spec.ts`: the route and method exist, path and query parameters are declared and
 * well-formed, the JSON body validates against the operation's schema, unknown fields included).
 * A request that fails is answered as Discord answers it (404, 405, or 400 with code 50035 and
 * `errors`) and recorded in `spec-violations.ts`, which fails the running test (see
 * {@link FakeDiscord.takeSpecViolations}).
 *
 * Start it with {@link FakeDiscord.start}, point the bot at {@link FakeDiscord.apiUrl}
 * (`DISCORD_API_URL`, a base ending in `/api`) with {@link FakeDiscord.token}, inject user events
 * with {@link FakeDiscord.sendUserMessage}, {@link FakeDiscord.slashCommand},
 * {@link FakeDiscord.clickButton} and {@link FakeDiscord.react}, read what the bot did from
 * {@link FakeDiscord.sent}, {@link FakeDiscord.edits}, {@link FakeDiscord.typing},
 * {@link FakeDiscord.reactions}, {@link FakeDiscord.interactions} (each with its `response` and
 * `edits`), {@link FakeDiscord.commandRegistrations}, {@link FakeDiscord.requests}, and wait with
 * {@link FakeDiscord.waitFor}.
 *
 * @example
 * ```ts
 * const fake = await FakeDiscord.start();
 * const env = { DISCORD_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl, DISCORD_GUILD_ID: fake.guildId };
 * // … start the bot with env …
 * const alice = { id: "700000000000000001", username: "alice", global_name: "Alice" };
 * fake.sendUserMessage(alice, "明天會下雨嗎？", { dm: true });
 * fake.sendUserMessage(alice, `<@${fake.bot.id}> 幫我算 2+2`); // guild channel, mentions the bot
 * const answer = await fake.waitFor(() => fake.sent.find((m) => m.content.includes("4")));
 * const prompt = fake.sent.find((m) => (m.message.components as unknown[]).length > 0)!;
 * fake.clickButton(alice, prompt.id, "ap:<id>:y"); // or fake.react(alice, prompt.id, "✅")
 * await fake.close();
 * ```
 *
 * Protocol sources: https://discord.com/developers/docs/topics/gateway (HELLO op 10, IDENTIFY op 2,
 * READY, GUILD_CREATE, HEARTBEAT op 1 / ACK op 11, close codes 4004, 4012, 4013, 4014),
 * https://discord.com/developers/docs/resources/message (create/edit message, 2000 characters,
 * `nonce` of at most 25 characters and `enforce_nonce`: {@link FakeDiscord.nonceReplays};
 * {@link FakeDiscord.holdNextCreate} accepts a message and never answers, as when the client dies),
 * https://discord.com/developers/docs/interactions/receiving-and-responding (3 s to respond,
 * one initial response), https://discord.com/developers/docs/topics/opcodes-and-status-codes
 * (JSON error codes 10003, 10008, 10062, 40060, 50006, 50035, 0/401).
 *
 * Attachments (https://discord.com/developers/docs/resources/message#attachment-object):
 * {@link FakeDiscord.addAttachment} stores bytes and returns the attachment object a message
 * carries (`id`, `filename`, `size`, `content_type`, `width`/`height`, `url` and `proxy_url`
 * signed with `ex`/`is`/`hm` like Discord's CDN links). The fake serves them on its own origin
 * (the origin of `apiUrl`, standing in for the CDN) at `GET /attachments/<channel>/<id>/<filename>`;
 * an unknown, unsigned, tampered or expired link answers 404 "This content is no longer available.".
 * {@link FakeDiscord.attachmentDownloads} records every download.
 */
import { createHmac } from "node:crypto";
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage as HttpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { checkDiscordRequest } from "./discord-spec.js";
import { readMultipart } from "./multipart.js";
import { recordSpecViolation, takeSpecViolations, type SpecViolation } from "./spec-violations.js";

/**
 * How long an idle keep-alive connection stays open, in ms. Node's default (5 s) races the client's
 * own idle timeout on a busy machine: a request sent on a socket the fake has just closed fails with
 * ECONNRESET. The real service keeps idle connections far longer than a test waits between calls.
 */
const KEEP_ALIVE_MS = 60_000;

/** A Discord user object as the API sends it. */
export interface FakeUser {
  id: string;
  username: string;
  global_name?: string | null;
  bot?: boolean;
}

/** Gateway intents used by the fake (https://discord.com/developers/docs/topics/gateway#gateway-intents). */
export const INTENTS = {
  Guilds: 1 << 0,
  GuildMessages: 1 << 9,
  GuildMessageReactions: 1 << 10,
  DirectMessages: 1 << 12,
  DirectMessageReactions: 1 << 13,
  MessageContent: 1 << 15,
} as const;

/** Options of {@link FakeDiscord.start}. */
export interface FakeDiscordOptions {
  /** The bot token the fake accepts (REST `Authorization: Bot <token>`, IDENTIFY `token`). */
  token?: string;
  /** Gateway heartbeat interval sent in HELLO, in ms (Discord: 41250). */
  heartbeatIntervalMs?: number;
  /** Privileged intents enabled "in the developer portal"; requesting another closes with 4014. Default: MessageContent. */
  privilegedIntents?: number;
  /** How long an interaction token accepts its initial response, in ms (Discord: 3000). */
  interactionWindowMs?: number;
  /** How long a message-create `nonce` is remembered for `enforce_nonce`, in ms (Discord: "the past few minutes"; default 5 min). */
  nonceWindowMs?: number;
  /** The `shards` recommendation of `GET /gateway/bot`. Default 1. */
  recommendedShards?: number;
  /**
   * The clock the interaction and nonce windows are measured on, in ms since the epoch. Default
   * `Date.now`; a test of a window passes a clock it moves itself instead of sleeping past it.
   */
  now?: () => number;
}

/**
 * The shard that receives a guild's events: `(guild_id >> 22) % shard_count`; DMs go to shard 0.
 * Source: https://discord.com/developers/docs/topics/gateway#sharding-sharding-formula
 */
export function shardOf(guildId: string | undefined, shardCount: number): number {
  return guildId === undefined ? 0 : Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

/** A message as stored by the fake (the API's message object). */
export type FakeMessage = Record<string, unknown> & {
  id: string;
  channel_id: string;
  content: string;
  author: FakeUser;
};

/** A message the bot created over REST. */
export interface SentMessage {
  id: string;
  channelId: string;
  content: string;
  /** The JSON body the bot posted (content, allowed_mentions, message_reference, components…). */
  payload: Record<string, unknown>;
  /** The message object the fake created (e.g. `mention_everyone`, computed from `allowed_mentions`). */
  message: FakeMessage;
  /** The uploaded file parts (`files[n]`), with their bytes, when the message was multipart. */
  files?: FakeUpload[];
  at: number;
}

/** A file part of a multipart message create (https://discord.com/developers/docs/reference#uploading-files). */
export interface FakeUpload {
  /** The part's name, `files[n]`. */
  name: string;
  filename: string;
  mimeType: string;
  bytes: Buffer;
}

/** Message flags a bot may set when creating a message (SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_VOICE_MESSAGE, IS_COMPONENTS_V2). */
const CREATE_FLAGS = (1 << 2) | (1 << 12) | (1 << 13) | (1 << 15);
/** IS_VOICE_MESSAGE (https://discord.com/developers/docs/resources/message#message-object-message-flags). */
export const IS_VOICE_MESSAGE = 1 << 13;

/** One recorded REST request. */
export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  status: number;
}

/** An interaction the fake dispatched, with what the bot answered. */
export interface FakeInteraction {
  id: string;
  token: string;
  createdAt: number;
  payload: Record<string, unknown>;
  /** Initial response (`POST /interactions/{id}/{token}/callback`), once given. */
  response?: { type: number; data?: Record<string, unknown>; at: number };
  /** Edits of the original response (`PATCH /webhooks/{app}/{token}/messages/@original`), and the updates (response type 7) of presses on its buttons. */
  edits: Record<string, unknown>[];
  /** When the original response was last edited (ms since the epoch), once it was. */
  editedAt?: number;
}

/**
 * The original response to `interaction` as its edits left it: the response's data (`content`,
 * `components`, `flags`) with each edit's fields laid over it in order (an edit leaves out what it
 * does not change); undefined before the interaction is answered.
 */
export function originalResponse(interaction: FakeInteraction): Record<string, unknown> | undefined {
  if (!interaction.response) return undefined;
  return Object.assign({}, interaction.response.data ?? {}, ...interaction.edits) as Record<string, unknown>;
}

const DISCORD_EPOCH = 1420070400000n;

/** Message edits accepted per channel per window before a 429 (Discord's observed bucket: 5 per 5 s). */
export const EDIT_RATE_LIMIT = { count: 5, windowMs: 5000 };

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(String(body.message));
  }
}

const invalidForm = (field: string, code: string, message: string) =>
  new HttpError(400, {
    code: 50035,
    message: "Invalid Form Body",
    errors: { [field]: { _errors: [{ code, message }] } },
  });

interface Session {
  socket: WebSocket;
  sessionId: string;
  seq: number;
  intents: number;
  ready: boolean;
  /** `[shard_id, num_shards]` of its IDENTIFY (`[0, 1]` when it sent none). */
  shard: [number, number];
}

interface Channel {
  id: string;
  type: number;
  guild_id?: string;
  name?: string;
  parent_id?: string;
  recipient?: FakeUser;
}

/**
 * The fake Discord. One guild (`guildId`) with a text channel (`channelId`), a thread
 * (`threadId`) and the bot's managed role (`botRoleId`); DM channels are created per user.
 */
export class FakeDiscord {
  readonly token: string;
  readonly bot: FakeUser = { id: "900000000000000001", username: "helper", global_name: "Helper", bot: true };
  readonly applicationId = "900000000000000001";
  readonly guildId = "800000000000000001";
  readonly channelId = "810000000000000001";
  readonly threadId = "810000000000000002";
  readonly botRoleId = "820000000000000001";

  /** Messages the bot created, in order. */
  readonly sent: SentMessage[] = [];
  /** Bot messages removed with `DELETE /channels/{c}/messages/{m}`, as they were when deleted. */
  readonly deleted: SentMessage[] = [];
  /** Message edits answered 429 by the edit rate limit ({@link EDIT_RATE_LIMIT}). */
  readonly editRateLimited: { channelId: string; at: number }[] = [];
  /** Message edits by the bot: channel, message and the JSON body. */
  readonly edits: { channelId: string; messageId: string; payload: Record<string, unknown>; at: number }[] = [];
  /** Typing indicator calls. */
  readonly typing: { channelId: string; at: number }[] = [];
  /** Reactions added or removed over REST (`userId` is the bot for `@me`). */
  readonly reactions: { op: "add" | "remove"; channelId: string; messageId: string; emoji: string; userId: string }[] =
    [];
  /** Every interaction dispatched, by id. */
  readonly interactions = new Map<string, FakeInteraction>();
  /** Application command registrations: the route (`global` or the guild id) and the body. */
  readonly commandRegistrations: { scope: string; body: Record<string, unknown>[] }[] = [];
  /** Every REST request, with the status the fake answered. */
  readonly requests: RecordedRequest[] = [];
  /** Every request for an attachment's bytes (path and status), in order. */
  readonly attachmentDownloads: { path: string; status: number }[] = [];
  readonly #attachments = new Map<string, { bytes: Buffer; filename: string; contentType: string; expires: number }>();
  /** IDENTIFY payloads received (`token` replaced by whether it matched). */
  readonly identifies: Record<string, unknown>[] = [];
  /** Heartbeats received (op 1) and ACKs sent. */
  heartbeats = 0;
  /** Message creates with `enforce_nonce` whose nonce was already used: the earlier message was returned and nothing was created. */
  readonly nonceReplays: { channelId: string; nonce: string; messageId: string }[] = [];
  /** Message creates that were accepted (created, dispatched, in {@link sent}) but never answered, by {@link holdNextCreate}. */
  readonly heldCreates: { channelId: string; messageId: string }[] = [];

  readonly #options: Required<FakeDiscordOptions>;
  readonly #events = new EventEmitter();
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<Session>();
  /** Sessions that may be resumed (op 6), by session id: their intents and last sequence. */
  readonly #resumable = new Map<string, { intents: number; seq: number; shard: [number, number] }>();
  /** Guilds besides {@link guildId} (see {@link addGuild}), by id: their text channel. */
  readonly #extraGuilds = new Map<string, { channelId: string }>();
  /** RESUME payloads accepted (op 6). */
  resumes = 0;
  readonly #messages = new Map<string, FakeMessage>();
  readonly #channels = new Map<string, Channel>();
  readonly #users = new Map<string, FakeUser>();
  /** Users who left the guild ({@link leaveGuild}). */
  readonly #left = new Set<string>();
  /** The user ids `GET /guilds/{guild.id}/members/{user.id}` was asked about, in order. */
  readonly memberLookups: string[] = [];
  readonly #msgReactions = new Map<string, Set<string>>(); // messageId → "emoji|userId"
  readonly #editTimes = new Map<string, number[]>();
  readonly #nonces = new Map<string, { messageId: string; at: number }>(); // "authorId|nonce" → the message created with it
  readonly #holds: { channelId: string | undefined; after: number; times: number }[] = [];
  readonly #failures: {
    method?: string;
    path?: RegExp;
    after: number;
    status: number;
    body: Record<string, unknown>;
    headers: Record<string, string>;
    times: number;
  }[] = [];
  #counter = 0n;
  #port = 0;

  private constructor(options: FakeDiscordOptions) {
    this.#options = {
      token: options.token ?? "fake-discord-token.abcdef.0123456789",
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41250,
      privilegedIntents: options.privilegedIntents ?? INTENTS.MessageContent,
      interactionWindowMs: options.interactionWindowMs ?? 3000,
      nonceWindowMs: options.nonceWindowMs ?? 5 * 60_000,
      recommendedShards: options.recommendedShards ?? 1,
      now: options.now ?? Date.now,
    };
    this.token = this.#options.token;
    this.#events.setMaxListeners(100);
    this.#users.set(this.bot.id, this.bot);
    this.#channels.set(this.channelId, { id: this.channelId, type: 0, guild_id: this.guildId, name: "general" });
    this.#channels.set(this.threadId, {
      id: this.threadId,
      type: 11,
      guild_id: this.guildId,
      name: "a-thread",
      parent_id: this.channelId,
    });
    this.#server = createServer({ keepAliveTimeout: KEEP_ALIVE_MS }, (req, res) => void this.#handle(req, res));
    this.#wss = new WebSocketServer({ noServer: true });
    this.#server.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname !== "/gateway") return socket.destroy();
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onConnection(ws, url));
    });
  }

  /** Starts the fake on a free port of 127.0.0.1. */
  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const fake = new FakeDiscord(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, "127.0.0.1", resolve));
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  /** The REST base to give the bot as `DISCORD_API_URL` (ends in `/api`; clients add `/v10`). */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.#port}/api`;
  }

  /** The gateway address returned by `GET /gateway/bot`. */
  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.#port}/gateway`;
  }

  /**
   * Adds a guild the bot is in, with one text channel, e.g. to put guilds on different shards
   * ({@link shardOf}). @returns its text channel's id.
   */
  addGuild(guildId: string): string {
    const channelId = this.#snowflake();
    this.#extraGuilds.set(guildId, { channelId });
    this.#channels.set(channelId, { id: channelId, type: 0, guild_id: guildId, name: "general" });
    return channelId;
  }

  /** The shard pairs (`[shard_id, num_shards]`) of the ready gateway sessions. */
  get readyShards(): [number, number][] {
    return [...this.#sessions].filter((s) => s.ready).map((s) => s.shard);
  }

  /** Number of gateway sessions that completed IDENTIFY and got READY. */
  get readySessions(): number {
    return [...this.#sessions].filter((s) => s.ready).length;
  }

  /** Stops the servers and drops every connection. */
  async close(): Promise<void> {
    for (const s of this.#sessions) s.socket.terminate();
    this.#sessions.clear();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /**
   * Returns the requests refused so far because Discord's API description does not allow them, and
   * forgets them (else the running test fails when it ends). For a test that sends such a request on purpose.
   */
  takeSpecViolations(): SpecViolation[] {
    return takeSpecViolations("discord");
  }

  /**
   * Resolves with the predicate's first truthy value, checked now, after every recorded change and
   * every 20 ms (so conditions outside the fake, such as a test's queue, work too).
   * @throws {Error} after `timeoutMs` (default 5000) naming `what`.
   */
  async waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs = 5000, what = "condition"): Promise<T> {
    const now = predicate();
    if (now) return now;
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = predicate();
        if (value) {
          cleanup();
          resolve(value);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`FakeDiscord.waitFor timed out after ${timeoutMs} ms: ${what}`));
      }, timeoutMs);
      const poll = setInterval(check, 20);
      const cleanup = () => {
        clearTimeout(timer);
        clearInterval(poll);
        this.#events.off("change", check);
      };
      this.#events.on("change", check);
    });
  }

  /**
   * Makes the next `times` REST requests that match fail with `status` (e.g. 500 to test retries).
   * @param match - HTTP method and a pattern for the path (`/api/v10/...`); both optional. `after`
   *   matching requests are answered normally first (e.g. `after: 1` fails the second chunk of an answer).
   */
  failNext(
    match: { method?: string; path?: RegExp; after?: number },
    status: number,
    times = 1,
    body: Record<string, unknown> = { message: "Internal Server Error", code: 0 },
    headers: Record<string, string> = {},
  ): void {
    this.#failures.push({ ...match, after: match.after ?? 0, status, body, headers, times });
  }

  /**
   * Answers the next matching request 429 with `Retry-After` (seconds) and the `X-RateLimit-*`
   * headers, as Discord does (https://discord.com/developers/docs/topics/rate-limits).
   */
  rateLimitNext(match: { method?: string; path?: RegExp }, retryAfterSeconds: number): void {
    this.failNext(
      match,
      429,
      1,
      { message: "You are being rate limited.", retry_after: retryAfterSeconds, global: false },
      {
        "retry-after": String(retryAfterSeconds),
        "x-ratelimit-limit": "5",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset-after": String(retryAfterSeconds),
        "x-ratelimit-bucket": "fakebucket",
        "x-ratelimit-scope": "user",
      },
    );
  }

  /**
   * The next `times` message creates (in `channelId`, or anywhere) are accepted — the message is
   * created, dispatched and recorded in {@link sent} — but the HTTP response is never sent: what a
   * client sees when it dies (or its connection drops) after Discord accepted its message.
   * Accepted-but-unanswered creates are listed in {@link heldCreates}. `after` matching creates
   * are answered normally first (e.g. `after: 1` holds the second chunk of an answer).
   */
  holdNextCreate(match: { channelId?: string; after?: number } = {}, times = 1): void {
    this.#holds.push({ channelId: match.channelId, after: match.after ?? 0, times });
  }

  /** A stored message (the bot's or a user's), by id. */
  message(id: string): FakeMessage | undefined {
    return this.#messages.get(id);
  }

  /** Adds a user the fake knows (for mentions and members). */
  /**
   * Makes `user` leave the guild (kicked, banned or gone): `GET /guilds/{guild.id}/members/{user.id}`
   * then answers 404 `10007 Unknown Member`, as Discord does for a user who is not a member.
   */
  leaveGuild(user: FakeUser): void {
    this.#left.add(user.id);
  }

  addUser(user: FakeUser): FakeUser {
    this.#users.set(user.id, user);
    return user;
  }

  /**
   * The DM channel id between the bot and `user` (created on first use, with `id` when given, e.g.
   * one that stays the same across restarts; else a new snowflake).
   */
  dmChannel(user: FakeUser, id?: string): string {
    this.addUser(user);
    const existing = [...this.#channels.values()].find((c) => c.type === 1 && c.recipient?.id === user.id);
    if (existing) return existing.id;
    const channelId = id ?? this.#snowflake();
    this.#channels.set(channelId, { id: channelId, type: 1, recipient: user });
    return channelId;
  }

  /** The bot's messages in channel `channelId` (posted, not edits), in order. */
  messagesIn(channelId: string): SentMessage[] {
    return this.sent.filter((m) => m.channelId === channelId);
  }

  /**
   * `author` writes `content` ({@link sendUserMessage}; `where` as there, default the guild's text
   * channel) and the bot's next message in that channel is awaited ({@link waitFor}).
   * @param timeoutMs - how long to wait for the answer, in ms (default 5000).
   * @returns the user's message and the bot's answer.
   * @throws {Error} when no answer came within `timeoutMs`.
   */
  async ask(
    author: FakeUser,
    content: string,
    where: { dm?: boolean; channelId?: string } = {},
    timeoutMs = 5000,
  ): Promise<{ message: FakeMessage; answer: SentMessage }> {
    const channelId = where.dm ? this.dmChannel(author) : (where.channelId ?? this.channelId);
    const before = this.messagesIn(channelId).length;
    const message = this.sendUserMessage(author, content, where);
    const answer = await this.waitFor(() => this.messagesIn(channelId)[before], timeoutMs, `an answer to "${content}"`);
    return { message, answer };
  }

  /**
   * Dispatches MESSAGE_CREATE for a message written by `author`, as Discord builds it: `mentions`
   * from `<@id>`/`<@!id>` in the text, `mention_roles` from `<@&id>`, a reply's
   * `message_reference` and `referenced_message`, `member` in guilds.
   *
   * @param where - `{ dm: true }`, or a guild channel id (default the text channel); `flags`, the
   *   message flags (e.g. IS_VOICE_MESSAGE, 1 << 13, for a voice message).
   * @returns the message object dispatched.
   */
  sendUserMessage(
    author: FakeUser,
    content: string,
    where: {
      dm?: boolean;
      channelId?: string;
      replyTo?: string;
      pingReply?: boolean;
      attachments?: unknown[];
      webhookId?: string;
      type?: number;
      flags?: number;
    } = {},
  ): FakeMessage {
    this.addUser(author);
    const channelId = where.dm ? this.dmChannel(author) : (where.channelId ?? this.channelId);
    const channel = this.#channels.get(channelId);
    if (!channel) throw new Error(`unknown channel ${channelId}`);
    const mentions = new Map<string, FakeUser>();
    for (const m of content.matchAll(/<@!?(\d+)>/g)) {
      const u = this.#users.get(m[1]!);
      if (u) mentions.set(u.id, u);
    }
    const roles = [...content.matchAll(/<@&(\d+)>/g)].map((m) => m[1]!);
    let reference: FakeMessage | undefined;
    if (where.replyTo) {
      reference = this.#messages.get(where.replyTo);
      if (!reference) throw new Error(`unknown message ${where.replyTo}`);
      if (where.pingReply) mentions.set(reference.author.id, reference.author);
    }
    const message = this.#buildMessage(channel, author, {
      content,
      mentions: [...mentions.values()],
      mention_roles: roles,
      mention_everyone: /@(everyone|here)/.test(content),
      attachments: where.attachments ?? [],
      ...(where.webhookId ? { webhook_id: where.webhookId } : {}),
      ...(reference
        ? {
            type: 19,
            message_reference: {
              type: 0,
              message_id: reference.id,
              channel_id: channel.id,
              ...(channel.guild_id ? { guild_id: channel.guild_id } : {}),
            },
            referenced_message: reference,
          }
        : {}),
      ...(where.type !== undefined ? { type: where.type } : {}),
      ...(where.flags !== undefined ? { flags: where.flags } : {}),
    });
    this.#messages.set(message.id, message);
    this.#dispatchMessage(message, channel);
    return message;
  }

  /**
   * `author` forwards a message: dispatches MESSAGE_CREATE as Discord builds a forward — empty
   * `content`, no mentions or attachments of its own, flag HAS_SNAPSHOT (1 << 14),
   * `message_reference` of type 1 (FORWARD) and no `referenced_message`, and the forwarded
   * message in `message_snapshots[0].message` (type, content, embeds, attachments, timestamps,
   * flags, mentions, mention_roles, stickers, components; no author).
   * Sources: https://discord.com/developers/docs/resources/message#message-reference-types,
   * #message-snapshot-object, #message-object-message-flags.
   *
   * @param source - the id of a stored message, or the text (and attachments) of a message in a
   * channel the bot cannot see.
   * @param where - `{ dm: true }`, or a guild channel id (default the text channel).
   */
  forwardMessage(
    author: FakeUser,
    source: string | { content: string; attachments?: unknown[] },
    where: { dm?: boolean; channelId?: string } = {},
  ): FakeMessage {
    this.addUser(author);
    const channelId = where.dm ? this.dmChannel(author) : (where.channelId ?? this.channelId);
    const channel = this.#channels.get(channelId);
    if (!channel) throw new Error(`unknown channel ${channelId}`);
    let original: FakeMessage;
    if (typeof source === "string") {
      const stored = this.#messages.get(source);
      if (!stored) throw new Error(`unknown message ${source}`);
      original = stored;
    } else {
      const elsewhere: Channel = { id: this.#snowflake(), type: 0, guild_id: "800000000000000099", name: "elsewhere" };
      const mentions = [...source.content.matchAll(/<@!?(\d+)>/g)]
        .map((m) => this.#users.get(m[1]!))
        .filter((u): u is FakeUser => u !== undefined);
      original = this.#buildMessage(
        elsewhere,
        { id: "700000000000000099", username: "someone" },
        { content: source.content, attachments: source.attachments ?? [], mentions },
      );
    }
    const snapshot: Record<string, unknown> = {};
    for (const key of [
      "type",
      "content",
      "embeds",
      "attachments",
      "timestamp",
      "edited_timestamp",
      "flags",
      "mentions",
      "mention_roles",
      "stickers",
      "components",
    ]) {
      snapshot[key] = original[key] ?? (key === "stickers" || key === "mention_roles" ? [] : null);
    }
    const message = this.#buildMessage(channel, author, {
      content: "",
      flags: 1 << 14,
      message_reference: {
        type: 1,
        message_id: original.id,
        channel_id: original.channel_id,
        ...(original.guild_id ? { guild_id: original.guild_id } : {}),
      },
      message_snapshots: [{ message: snapshot }],
    });
    this.#messages.set(message.id, message);
    this.#dispatchMessage(message, channel);
    return message;
  }

  /** Asks every connected client to reconnect (op 7 RECONNECT); discord.js then resumes (op 6). */
  requestReconnect(): void {
    for (const s of this.#sessions) s.socket.send(JSON.stringify({ op: 7, d: null, s: null, t: null }));
  }

  /**
   * Closes every gateway connection with `code` (e.g. 4004 "Authentication failed" after the token
   * was reset, which discord.js does not recover from; 4000 "Unknown error", which it resumes).
   */
  closeGateway(code: number, reason: string): void {
    for (const s of this.#sessions) s.socket.close(code, reason);
  }

  /**
   * While true, the gateway is "down": every new connection is closed after 100 ms with 4000
   * (Unknown error), so clients keep reconnecting without getting through.
   */
  gatewayDown = false;

  /** Dispatches a raw MESSAGE_CREATE payload to every ready session (no intent filtering). */
  dispatchRaw(event: string, data: Record<string, unknown>): void {
    for (const s of this.#sessions) if (s.ready) this.#send(s, event, data);
  }

  /**
   * Dispatches INTERACTION_CREATE for a chat-input command (type 2).
   * @returns the interaction (its `response` is filled when the bot answers).
   */
  slashCommand(
    user: FakeUser,
    name: string,
    options: {
      tag?: string;
      dm?: boolean;
      channelId?: string;
      locale?: string;
      values?: Record<string, string>;
      permissions?: string;
    } = {},
  ): FakeInteraction {
    const data: Record<string, unknown> = { id: this.#snowflake(), name, type: 1 };
    const values = { ...(options.tag !== undefined ? { tag: options.tag } : {}), ...options.values };
    if (Object.keys(values).length > 0)
      data.options = Object.entries(values).map(([n, value]) => ({ name: n, type: 3, value }));
    return this.#interaction(user, 2, data, {
      dm: options.dm,
      channelId: options.channelId,
      locale: options.locale,
      permissions: options.permissions,
    });
  }

  /** Member permissions (a bit string) with Manage Messages (1 << 13), for `slashCommand`'s `permissions`. */
  static readonly MANAGE_MESSAGES_PERMISSIONS = String(2248473465835073n | (1n << 13n));

  /**
   * Dispatches INTERACTION_CREATE for a button press (type 3, component_type 2) on `messageId`.
   * @throws {Error} when the message has no button with that `custom_id`.
   */
  clickButton(user: FakeUser, messageId: string, customId: string): FakeInteraction {
    const message = this.#messages.get(messageId);
    if (!message) throw new Error(`unknown message ${messageId}`);
    const rows = (message.components ?? []) as { components: { custom_id?: string }[] }[];
    if (!rows.some((r) => r.components.some((c) => c.custom_id === customId)))
      throw new Error(`no button ${customId} on ${messageId}`);
    const channel = this.#channels.get(message.channel_id)!;
    return this.#interaction(
      user,
      3,
      { custom_id: customId, component_type: 2 },
      { dm: channel.type === 1, channelId: channel.id, message },
    );
  }

  /**
   * Presses a button of the ephemeral reply the bot gave to `answered` (e.g. `/reminders`), as its
   * edits left it ({@link originalResponse}: a deferred reply's buttons come with the edit):
   * dispatches INTERACTION_CREATE whose `message` is that reply (flags 64).
   * `options.permissions`: the member's resolved permissions the press carries (default without
   * Manage Messages, as for any interaction: e.g. a member whose role changed since the command).
   * @throws {Error} when `user` did not invoke `answered` (only the invoker sees an ephemeral
   *   message), the reply was not ephemeral, or it has no button `customId`.
   */
  clickEphemeralButton(
    user: FakeUser,
    answered: FakeInteraction,
    customId: string,
    options: { permissions?: string } = {},
  ): FakeInteraction {
    const invoker =
      (answered.payload.member as { user?: FakeUser } | undefined)?.user ??
      (answered.payload.user as FakeUser | undefined);
    if (invoker?.id !== user.id) throw new Error("only the user who invoked the command sees its ephemeral reply");
    const data = originalResponse(answered) ?? {};
    if (((data.flags as number | undefined) ?? 0) & 64 ? false : true) throw new Error("the reply is not ephemeral");
    const rows = (data.components ?? []) as { components: { custom_id?: string }[] }[];
    if (!rows.some((r) => r.components.some((c) => c.custom_id === customId)))
      throw new Error(`no button ${customId} on the ephemeral reply`);
    const channelId = answered.payload.channel_id as string;
    const message = this.#buildMessage(this.#channels.get(channelId)!, this.bot, {
      content: data.content ?? "",
      components: rows,
      flags: 64,
      interaction_metadata: { id: answered.id, type: 2, user, authorizing_integration_owners: { "0": this.guildId } },
    });
    return this.#interaction(
      user,
      3,
      { custom_id: customId, component_type: 2 },
      { channelId, message, ...(options.permissions ? { permissions: options.permissions } : {}) },
    );
  }

  /** A user adds a reaction: records it and dispatches MESSAGE_REACTION_ADD. */
  react(user: FakeUser, messageId: string, emoji: string): void {
    this.addUser(user);
    const message = this.#messages.get(messageId);
    if (!message) throw new Error(`unknown message ${messageId}`);
    this.#addReaction(message, emoji, user);
  }

  /** Users who currently reacted `emoji` on a message. */
  reactionUsers(messageId: string, emoji: string): string[] {
    return [...(this.#msgReactions.get(messageId) ?? [])]
      .filter((k) => k.startsWith(`${emoji}|`))
      .map((k) => k.slice(emoji.length + 1));
  }

  // ---- internals -------------------------------------------------------------------------

  #snowflake(): string {
    this.#counter += 1n;
    return (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (this.#counter & 0x3fffffn)).toString();
  }

  #changed(): void {
    this.#events.emit("change");
  }

  #member(user: FakeUser): Record<string, unknown> {
    return {
      roles: user.id === this.bot.id ? [this.botRoleId] : [],
      joined_at: new Date(0).toISOString(),
      deaf: false,
      mute: false,
      flags: 0,
      nick: null,
    };
  }

  #buildMessage(channel: Channel, author: FakeUser, extra: Record<string, unknown>): FakeMessage {
    const message: FakeMessage = {
      id: this.#snowflake(),
      channel_id: channel.id,
      author,
      content: "",
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      type: 0,
      flags: 0,
      components: [],
      ...extra,
    };
    if (channel.guild_id) {
      message.guild_id = channel.guild_id;
      message.member = this.#member(author);
    }
    return message;
  }

  /** Whether session `s` receives an event of `guildId` (undefined: a DM), as Discord routes them ({@link shardOf}). */
  #routes(s: Session, guildId: string | undefined): boolean {
    return s.ready && shardOf(guildId, s.shard[1]) === s.shard[0];
  }

  #dispatchMessage(message: FakeMessage, channel: Channel): void {
    const dm = channel.type === 1;
    for (const s of this.#sessions) {
      if (!this.#routes(s, channel.guild_id)) continue;
      if (!(s.intents & (dm ? INTENTS.DirectMessages : INTENTS.GuildMessages))) continue;
      let data: Record<string, unknown> = { ...message, channel_type: channel.type };
      const mentioned = ((message.mentions as FakeUser[]) ?? []).some((u) => u.id === this.bot.id);
      if (!(s.intents & INTENTS.MessageContent) && !dm && !mentioned && message.author.id !== this.bot.id) {
        data = { ...data, content: "", embeds: [], attachments: [], components: [] };
      }
      this.#send(s, "MESSAGE_CREATE", data);
    }
  }

  #interaction(
    user: FakeUser,
    type: number,
    data: Record<string, unknown>,
    where: { dm?: boolean; channelId?: string; message?: FakeMessage; locale?: string; permissions?: string },
  ): FakeInteraction {
    this.addUser(user);
    const channelId = where.dm ? this.dmChannel(user) : (where.channelId ?? this.channelId);
    const channel = this.#channels.get(channelId)!;
    const id = this.#snowflake();
    const token = `aW50ZXJhY3Rpb24${id}${Math.random().toString(36).slice(2)}`;
    const payload: Record<string, unknown> = {
      id,
      application_id: this.applicationId,
      type,
      data,
      token,
      version: 1,
      locale: where.locale ?? "zh-TW",
      app_permissions: "2248473465835073",
      entitlements: [],
      authorizing_integration_owners: { "0": this.guildId },
      context: channel.type === 1 ? 1 : 0,
      channel_id: channel.id,
      channel: this.#channelObject(channel),
      ...(where.message ? { message: where.message } : {}),
    };
    if (channel.guild_id) {
      payload.guild_id = channel.guild_id;
      payload.guild_locale = "zh-TW";
      // A member's resolved permissions in the channel; by default without Manage Messages (1 << 13).
      payload.member = { ...this.#member(user), user, permissions: where.permissions ?? "2248473465835073" };
    } else {
      payload.user = user;
    }
    const interaction: FakeInteraction = { id, token, createdAt: this.#options.now(), payload, edits: [] };
    this.interactions.set(id, interaction);
    for (const s of this.#sessions) if (this.#routes(s, channel.guild_id)) this.#send(s, "INTERACTION_CREATE", payload);
    return interaction;
  }

  #channelObject(channel: Channel): Record<string, unknown> {
    if (channel.type === 1)
      return { id: channel.id, type: 1, recipients: [channel.recipient], last_message_id: null, flags: 0 };
    const base: Record<string, unknown> = {
      id: channel.id,
      type: channel.type,
      guild_id: channel.guild_id,
      name: channel.name,
      position: 0,
      permission_overwrites: [],
      nsfw: false,
      topic: null,
      last_message_id: null,
      rate_limit_per_user: 0,
      parent_id: channel.parent_id ?? null,
      flags: 0,
    };
    if (channel.type === 11) {
      base.owner_id = this.bot.id;
      base.thread_metadata = {
        archived: false,
        auto_archive_duration: 1440,
        archive_timestamp: new Date().toISOString(),
        locked: false,
      };
      base.message_count = 0;
      base.member_count = 1;
    }
    return base;
  }

  #addReaction(message: FakeMessage, emoji: string, user: FakeUser): void {
    const set = this.#msgReactions.get(message.id) ?? new Set<string>();
    this.#msgReactions.set(message.id, set);
    const key = `${emoji}|${user.id}`;
    if (set.has(key)) return;
    set.add(key);
    const channel = this.#channels.get(message.channel_id)!;
    const dm = channel.type === 1;
    const data: Record<string, unknown> = {
      user_id: user.id,
      channel_id: channel.id,
      message_id: message.id,
      emoji: { id: null, name: emoji },
      message_author_id: message.author.id,
      burst: false,
      burst_colors: [],
      type: 0,
    };
    if (channel.guild_id) {
      data.guild_id = channel.guild_id;
      data.member = { ...this.#member(user), user };
    }
    for (const s of this.#sessions) {
      if (
        this.#routes(s, channel.guild_id) &&
        s.intents & (dm ? INTENTS.DirectMessageReactions : INTENTS.GuildMessageReactions)
      )
        this.#send(s, "MESSAGE_REACTION_ADD", data);
    }
    this.#changed();
  }

  // ---- gateway ---------------------------------------------------------------------------

  #send(s: Session, t: string, d: unknown): void {
    s.seq += 1;
    s.socket.send(JSON.stringify({ op: 0, t, s: s.seq, d }));
  }

  #onConnection(socket: WebSocket, url: URL): void {
    if (this.gatewayDown) {
      setTimeout(() => socket.close(4000, "Unknown error"), 100);
      return;
    }
    if (url.searchParams.get("v") !== "10") return socket.close(4012, "Invalid API version");
    if (url.searchParams.get("encoding") !== "json") return socket.close(4002, "Error while decoding payload.");
    const session: Session = { socket, sessionId: "", seq: 0, intents: 0, ready: false, shard: [0, 1] };
    this.#sessions.add(session);
    socket.on("close", () => {
      if (session.ready)
        this.#resumable.set(session.sessionId, { intents: session.intents, seq: session.seq, shard: session.shard });
      this.#sessions.delete(session);
      this.#changed();
    });
    socket.send(
      JSON.stringify({ op: 10, d: { heartbeat_interval: this.#options.heartbeatIntervalMs }, s: null, t: null }),
    );
    socket.on("message", (raw) => {
      let payload: { op?: number; d?: Record<string, unknown> | number | null };
      try {
        payload = JSON.parse(String(raw));
      } catch {
        return socket.close(4002, "Error while decoding payload.");
      }
      switch (payload.op) {
        case 1:
          this.heartbeats += 1;
          socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
          this.#changed();
          return;
        case 2:
          return this.#identify(session, (payload.d ?? {}) as Record<string, unknown>);
        case 3: // presence update
        case 4: // voice state
        case 8: // request guild members
          return;
        case 6: {
          const d = (payload.d ?? {}) as { token?: string; session_id?: string; seq?: number };
          if (d.token !== this.token) return socket.close(4004, "Authentication failed.");
          const known = d.session_id ? this.#resumable.get(d.session_id) : undefined;
          if (!known) {
            socket.send(JSON.stringify({ op: 9, d: false, s: null, t: null }));
            return;
          }
          this.#resumable.delete(d.session_id!);
          Object.assign(session, {
            sessionId: d.session_id,
            intents: known.intents,
            seq: known.seq,
            shard: known.shard,
            ready: true,
          });
          this.resumes += 1;
          this.#send(session, "RESUMED", {});
          this.#changed();
          return;
        }
        default:
          return socket.close(4001, "Unknown opcode.");
      }
    });
  }

  #identify(session: Session, d: Record<string, unknown>): void {
    const { socket } = session;
    this.identifies.push({ ...d, token: d.token === this.token ? "[valid]" : "[invalid]" });
    if (session.ready) return socket.close(4005, "Already authenticated.");
    if (d.token !== this.token) return socket.close(4004, "Authentication failed.");
    const props = d.properties as Record<string, unknown> | undefined;
    if (
      !props ||
      typeof props.os !== "string" ||
      typeof props.browser !== "string" ||
      typeof props.device !== "string"
    ) {
      return socket.close(4002, "Error while decoding payload.");
    }
    if (typeof d.intents !== "number" || !Number.isInteger(d.intents) || d.intents < 0 || d.intents >= 1 << 26) {
      return socket.close(4013, "Invalid intent(s).");
    }
    const privileged = (1 << 1) | (1 << 8) | INTENTS.MessageContent;
    if (d.intents & privileged & ~this.#options.privilegedIntents) return socket.close(4014, "Disallowed intent(s).");
    // `shard`: [shard_id, num_shards], 0 <= shard_id < num_shards; anything else is 4010 Invalid shard.
    const shard = d.shard ?? [0, 1];
    if (
      !Array.isArray(shard) ||
      shard.length !== 2 ||
      !shard.every((n) => Number.isInteger(n)) ||
      shard[1] < 1 ||
      shard[0] < 0 ||
      shard[0] >= shard[1]
    ) {
      return socket.close(4010, "Invalid shard.");
    }
    session.shard = [shard[0], shard[1]];
    session.intents = d.intents;
    session.sessionId = Math.random().toString(16).slice(2);
    session.ready = true;
    this.#send(session, "READY", {
      v: 10,
      user: { ...this.bot, discriminator: "0", avatar: null, verified: true, mfa_enabled: false, flags: 0 },
      guilds: this.#guildIds()
        .filter((id) => shardOf(id, session.shard[1]) === session.shard[0])
        .map((id) => ({ id, unavailable: true })),
      session_id: session.sessionId,
      session_type: "normal",
      resume_gateway_url: this.gatewayUrl,
      shard: session.shard,
      application: { id: this.applicationId, flags: 1 << 19 },
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      user_settings: {},
      geo_ordered_rtc_regions: [],
    });
    for (const guildId of this.#guildIds()) {
      if (!(d.intents & INTENTS.Guilds) || shardOf(guildId, session.shard[1]) !== session.shard[0]) continue;
      const channels = [...this.#channels.values()].filter((c) => c.guild_id === guildId);
      this.#send(session, "GUILD_CREATE", {
        id: guildId,
        name: "Fake Guild",
        icon: null,
        owner_id: "700000000000000009",
        afk_timeout: 300,
        verification_level: 0,
        default_message_notifications: 0,
        explicit_content_filter: 0,
        mfa_level: 0,
        nsfw_level: 0,
        premium_tier: 0,
        preferred_locale: "zh-TW",
        features: [],
        roles: [
          {
            id: guildId,
            name: "@everyone",
            permissions: "1071698660929",
            position: 0,
            color: 0,
            hoist: false,
            managed: false,
            mentionable: false,
            flags: 0,
          },
          {
            id: this.botRoleId,
            name: "Helper",
            permissions: "1071698660929",
            position: 1,
            color: 0,
            hoist: false,
            managed: true,
            mentionable: false,
            flags: 0,
            tags: { bot_id: this.bot.id },
          },
        ],
        emojis: [],
        stickers: [],
        joined_at: new Date(0).toISOString(),
        large: false,
        unavailable: false,
        member_count: 2,
        voice_states: [],
        members: [{ ...this.#member(this.bot), user: this.bot }],
        channels: channels.filter((c) => c.type !== 11).map((c) => this.#channelObject(c)),
        threads: channels.filter((c) => c.type === 11).map((c) => this.#channelObject(c)),
        presences: [],
        stage_instances: [],
        guild_scheduled_events: [],
        soundboard_sounds: [],
      });
    }
    this.#changed();
  }

  /**
   * Stores an attachment's bytes and returns the attachment object for {@link sendUserMessage}'s
   * `attachments`.
   * @param options.size - the announced `size`; default the real size.
   * @param options.channelId - the channel in the URL path; default the text channel.
   * @param options.extra - more fields (e.g. `duration_secs` and `waveform` of a voice message).
   */
  addAttachment(
    bytes: Buffer,
    options: {
      filename: string;
      contentType?: string;
      width?: number;
      height?: number;
      size?: number;
      channelId?: string;
      extra?: Record<string, unknown>;
    },
  ): Record<string, unknown> {
    const id = this.#snowflake();
    const expires = Math.floor(Date.now() / 1000) + 24 * 3600;
    const path = `/attachments/${options.channelId ?? this.channelId}/${id}/${encodeURIComponent(options.filename)}`;
    const query = `?ex=${expires.toString(16)}&is=${Math.floor(Date.now() / 1000).toString(16)}&hm=${this.#sign(path, expires)}&`;
    this.#attachments.set(id, {
      bytes,
      filename: options.filename,
      contentType: options.contentType ?? "application/octet-stream",
      expires,
    });
    const origin = `http://127.0.0.1:${this.#port}`;
    return {
      id,
      filename: options.filename,
      size: options.size ?? bytes.length,
      url: `${origin}${path}${query}`,
      proxy_url: `${origin}${path}${query}`,
      ...(options.contentType ? { content_type: options.contentType } : {}),
      ...(options.width !== undefined ? { width: options.width, height: options.height } : {}),
      ...options.extra,
    };
  }

  #sign(path: string, expires: number): string {
    return createHmac("sha256", this.token).update(`${path}:${expires}`).digest("hex");
  }

  /** `GET /attachments/…`: the bytes of a stored attachment when the link's signature holds. */
  #serveAttachment(req: HttpRequest, url: URL, res: ServerResponse): void {
    const id = /^\/attachments\/\d+\/(\d+)\/[^/]+$/.exec(url.pathname)?.[1];
    const file = id ? this.#attachments.get(id) : undefined;
    const expires = parseInt(url.searchParams.get("ex") ?? "", 16);
    const valid =
      file &&
      req.method === "GET" &&
      url.searchParams.get("hm") === this.#sign(url.pathname, expires) &&
      expires === file.expires &&
      expires * 1000 > Date.now();
    this.attachmentDownloads.push({ path: url.pathname, status: valid ? 200 : 404 });
    if (!valid) {
      res.writeHead(404, { "content-type": "text/plain" }).end("This content is no longer available.");
    } else {
      res
        .writeHead(200, { "content-type": file.contentType, "content-length": String(file.bytes.length) })
        .end(file.bytes);
    }
    this.#changed();
  }

  /** Every guild the bot is in: {@link guildId} and those of {@link addGuild}. */
  #guildIds(): string[] {
    return [this.guildId, ...this.#extraGuilds.keys()];
  }

  // ---- REST ------------------------------------------------------------------------------

  async #handle(req: HttpRequest, res: ServerResponse): Promise<void> {
    if ((req.url ?? "").startsWith("/attachments/"))
      return this.#serveAttachment(req, new URL(req.url ?? "/", "http://x"), res);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const bytes = Buffer.concat(chunks);
    let raw = bytes.toString("utf8");
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    let body: unknown = undefined;
    let status: number;
    let out: unknown;
    let headers: Record<string, string> = {};
    let uploads: FakeUpload[] | undefined;
    const failure = this.#failures.find(
      (f) => (!f.method || f.method === method) && (!f.path || f.path.test(url.pathname)),
    );
    try {
      let files: string[] | undefined;
      const type = req.headers["content-type"] ?? "";
      if (raw && type.includes("multipart/form-data")) {
        // Files with a JSON part (https://discord.com/developers/docs/reference#uploading-files).
        const form = await readMultipart(req.headers, bytes, { keepFiles: true });
        files = [...form.files.map((f) => f.name), ...[...form.fields.keys()].filter((k) => k !== "payload_json")];
        uploads = form.files.map((f) => ({
          name: f.name,
          filename: f.filename,
          mimeType: f.mimeType,
          bytes: f.bytes ?? Buffer.alloc(0),
        }));
        raw = form.fields.get("payload_json") ?? "";
      }
      if (raw) {
        try {
          body = JSON.parse(raw);
        } catch {
          throw new HttpError(400, { code: 50109, message: "The request body contains invalid JSON." });
        }
      }
      const check = checkDiscordRequest({ method, path: url.pathname, query: url.searchParams, body, files });
      if (!check.ok) {
        recordSpecViolation({
          platform: "discord",
          request: check.route,
          problems: check.problems,
          payload: body,
          at: Date.now(),
        });
        throw new HttpError(check.status, check.body);
      }
      if (failure && failure.after > 0) {
        failure.after -= 1;
      } else if (failure) {
        failure.times -= 1;
        if (failure.times <= 0) this.#failures.splice(this.#failures.indexOf(failure), 1);
        headers = failure.headers;
        throw new HttpError(failure.status, failure.body);
      }
      const result = this.#route(method, url, req.headers.authorization, body, uploads);
      status = result.status;
      out = result.body;
      const created = result.created;
      const hold = created ? this.#holds.find((h) => !h.channelId || h.channelId === created.channel_id) : undefined;
      if (created && hold && hold.after > 0) {
        hold.after -= 1;
      } else if (created && hold) {
        hold.times -= 1;
        if (hold.times <= 0) this.#holds.splice(this.#holds.indexOf(hold), 1);
        this.heldCreates.push({ channelId: created.channel_id, messageId: created.id });
        this.requests.push({ method, path: url.pathname + url.search, body, status: 0 });
        this.#changed();
        return; // accepted, never answered (the connection stays open until the client goes away)
      }
    } catch (error) {
      if (error instanceof HttpError) {
        status = error.status;
        out = error.body;
        if (error.headers) headers = error.headers;
      } else {
        // A bug in the fake: answer 500 and keep serving, so the test sees it in `requests`.
        status = 500;
        out = { message: `fake error: ${error instanceof Error ? error.message : String(error)}`, code: 0 };
      }
    }
    this.requests.push({ method, path: url.pathname + url.search, body, status });
    if (status === 204) {
      res.writeHead(204).end();
    } else {
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(out));
    }
    this.#changed();
  }

  #route(
    method: string,
    url: URL,
    auth: string | undefined,
    body: unknown,
    uploads?: FakeUpload[],
  ): { status: number; body?: unknown; created?: FakeMessage } {
    const path = url.pathname;
    if (!path.startsWith("/api/v10/")) throw new HttpError(404, { message: "404: Not Found", code: 0 });
    const parts = path.slice("/api/v10/".length).split("/").map(decodeURIComponent);
    const route = `${method} ${parts.map((p, i) => (i % 2 === 1 && /^\d+$|^@me$|^@original$/.test(p) ? ":" : p)).join("/")}`;

    // Interaction responses and webhooks use the interaction token, not the bot token.
    if (method === "POST" && parts[0] === "interactions" && parts[3] === "callback" && parts.length === 4)
      return this.#callback(parts[1]!, parts[2]!, body);
    if (parts[0] === "webhooks" && parts[3] === "messages" && parts[4] === "@original" && method === "PATCH") {
      return this.#editOriginal(parts[1]!, parts[2]!, body);
    }

    if (auth !== `Bot ${this.token}`) throw new HttpError(401, { message: "401: Unauthorized", code: 0 });
    const b = (body ?? {}) as Record<string, unknown>;
    switch (route) {
      case "GET gateway/bot":
        return {
          status: 200,
          body: {
            url: this.gatewayUrl,
            shards: this.#options.recommendedShards,
            session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
          },
        };
      case "GET users/:":
        return { status: 200, body: { ...this.bot, discriminator: "0", avatar: null } };
      case "GET applications/:":
        return {
          status: 200,
          body: {
            id: this.applicationId,
            name: "Helper",
            description: "",
            bot_public: true,
            bot_require_code_grant: false,
            flags: 1 << 19,
            bot: this.bot,
          },
        };
      case "PUT applications/:/commands":
        return this.#putCommands(parts[1]!, "global", body);
      case "PUT applications/:/guilds/:/commands":
        if (parts[3] !== this.guildId) throw new HttpError(403, { message: "Missing Access", code: 50001 });
        return this.#putCommands(parts[1]!, parts[3]!, body);
      case "GET guilds/:/members/:": {
        // https://discord.com/developers/docs/resources/guild#get-guild-member: a guild member
        // object; 404 10004 Unknown Guild, 404 10007 Unknown Member for a user not in the guild.
        if (parts[1] !== this.guildId) throw new HttpError(404, { message: "Unknown Guild", code: 10004 });
        const user = this.#users.get(parts[3]!);
        this.memberLookups.push(parts[3]!);
        if (!user || this.#left.has(user.id)) throw new HttpError(404, { message: "Unknown Member", code: 10007 });
        return { status: 200, body: { ...this.#member(user), user: { ...user, discriminator: "0", avatar: null } } };
      }
      case "GET channels/:":
        // discord.js fetches a channel it has not cached, e.g. a DM after a restart (GET /channels/{channel.id}).
        return { status: 200, body: this.#channelObject(this.#channel(parts[1]!)) };
      case "POST channels/:/messages": {
        const replayed = this.#nonceReplay(parts[1]!, b);
        if (replayed) return { status: 200, body: replayed };
        const created = this.#createMessage(parts[1]!, b, uploads);
        return { status: 200, body: created, created };
      }
      case "GET channels/:/messages/:": {
        this.#channel(parts[1]!);
        return { status: 200, body: this.#existing(parts[1]!, parts[3]!) };
      }
      case "PATCH channels/:/messages/:":
        this.#editRateLimit(parts[1]!);
        return { status: 200, body: this.#editMessage(parts[1]!, parts[3]!, b) };
      case "DELETE channels/:/messages/:": {
        this.#channel(parts[1]!);
        const message = this.#existing(parts[1]!, parts[3]!);
        if (message.author.id !== this.bot.id)
          throw new HttpError(403, { message: "Missing Permissions", code: 50013 });
        this.#messages.delete(message.id);
        const index = this.sent.findIndex((m) => m.id === message.id);
        if (index >= 0) this.deleted.push(...this.sent.splice(index, 1));
        return { status: 204 };
      }
      case "POST channels/:/typing":
        this.#channel(parts[1]!);
        this.typing.push({ channelId: parts[1]!, at: Date.now() });
        return { status: 204 };
    }
    // reactions: channels/{c}/messages/{m}/reactions/{emoji}/{@me|user}
    if (parts[0] === "channels" && parts[2] === "messages" && parts[4] === "reactions" && parts.length === 7) {
      this.#channel(parts[1]!);
      const message = this.#existing(parts[1]!, parts[3]!);
      const emoji = parts[5]!;
      const userId = parts[6] === "@me" ? this.bot.id : parts[6]!;
      if (method === "PUT" && parts[6] === "@me") {
        this.reactions.push({ op: "add", channelId: parts[1]!, messageId: parts[3]!, emoji, userId });
        this.#addReaction(message, emoji, this.bot);
        return { status: 204 };
      }
      if (method === "DELETE") {
        if (userId !== this.bot.id && this.#channels.get(parts[1]!)?.type === 1)
          throw new HttpError(403, { message: "Cannot execute action on a DM channel", code: 50003 });
        this.reactions.push({ op: "remove", channelId: parts[1]!, messageId: parts[3]!, emoji, userId });
        this.#msgReactions.get(message.id)?.delete(`${emoji}|${userId}`);
        return { status: 204 };
      }
    }
    throw new HttpError(404, { message: "404: Not Found", code: 0 });
  }

  #channel(id: string): Channel {
    const channel = this.#channels.get(id);
    if (!channel) throw new HttpError(404, { message: "Unknown Channel", code: 10003 });
    return channel;
  }

  #existing(channelId: string, messageId: string): FakeMessage {
    const message = this.#messages.get(messageId);
    if (!message || message.channel_id !== channelId)
      throw new HttpError(404, { message: "Unknown Message", code: 10008 });
    return message;
  }

  /** Checks content and components as Discord does; returns the content. */
  #validate(b: Record<string, unknown>, requireSomething: boolean): void {
    // Types and lengths (content ≤ 2000, label ≤ 80, custom_id 1-100) were checked against the spec already.
    const components = (b.components ?? []) as Record<string, unknown>[];
    if (!Array.isArray(components) || components.length > 5)
      throw invalidForm("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.");
    for (const row of components) {
      const inner = row.components as Record<string, unknown>[] | undefined;
      if (row.type !== 1 || !Array.isArray(inner) || inner.length < 1 || inner.length > 5) {
        throw invalidForm(
          "components",
          "COMPONENT_LAYOUT_WIDTH_EXCEEDED",
          "An action row must hold 1 to 5 components.",
        );
      }
      for (const c of inner) {
        if (c.type !== 2)
          throw invalidForm("components", "UNION_TYPE_CHOICES", 'Value of field "type" must be one of (2,).');
        // A button that is not a link needs a custom_id (the spec leaves it optional; the docs do not).
        if (c.style !== 5 && typeof c.custom_id !== "string")
          throw invalidForm("components", "BASE_TYPE_REQUIRED", "This field is required");
      }
    }
    const hasContent = typeof b.content === "string" && b.content.trim().length > 0;
    const hasOther =
      (Array.isArray(b.embeds) && b.embeds.length > 0) ||
      (Array.isArray(b.sticker_ids) && b.sticker_ids.length > 0) ||
      components.length > 0;
    if (requireSomething && !hasContent && !hasOther)
      throw new HttpError(400, { message: "Cannot send an empty message", code: 50006 });
  }

  /** Whether the text would ping everyone under these `allowed_mentions` (absent = parse all). */
  #pingsEveryone(content: string, allowed: unknown): boolean {
    if (!/@(everyone|here)/.test(content)) return false;
    if (allowed === undefined || allowed === null) return true;
    const parse = (allowed as { parse?: string[] }).parse ?? [];
    return parse.includes("everyone");
  }

  /**
   * `nonce` (an integer or a string of at most 25 characters) with `enforce_nonce: true`: when the
   * bot created a message with the same nonce within the window, that message is returned and
   * nothing is created (https://discord.com/developers/docs/resources/message#create-message).
   */
  #nonceReplay(channelId: string, b: Record<string, unknown>): FakeMessage | undefined {
    this.#channel(channelId);
    const nonce = b.nonce;
    if (nonce === undefined || nonce === null) return undefined;
    if (b.enforce_nonce !== true) return undefined;
    const seen = this.#nonces.get(`${this.bot.id}|${String(nonce)}`);
    const earlier =
      seen && this.#options.now() - seen.at <= this.#options.nonceWindowMs
        ? this.#messages.get(seen.messageId)
        : undefined;
    if (!earlier) return undefined;
    this.nonceReplays.push({ channelId, nonce: String(nonce), messageId: earlier.id });
    return earlier;
  }

  /**
   * The user ids the text pings under these `allowed_mentions` (absent = parse all). Discord refuses
   * `users` both in `parse` and as a list (50035).
   */
  #pingedUsers(content: string, allowed: unknown): string[] {
    const ids = [...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1]!);
    if (allowed === undefined || allowed === null) return ids;
    const a = allowed as { parse?: string[]; users?: string[] };
    if (a.parse?.includes("users") && a.users)
      throw invalidForm(
        "allowed_mentions",
        "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
        'parse:["users"] and users: [ids] are mutually exclusive.',
      );
    if (a.parse?.includes("users")) return ids;
    return ids.filter((id) => (a.users ?? []).includes(id));
  }

  /**
   * The attachments of a message create: each uploaded `files[n]` part, with the metadata of the
   * `attachments` entry whose `id` is `n` (`filename`, `duration_secs`, `waveform`). An entry naming
   * no uploaded file is refused (50035), as is a flag a bot cannot set. A voice message (flag
   * IS_VOICE_MESSAGE) must be exactly one Ogg Opus attachment (50160) with `duration_secs` and
   * `waveform` (base64 of at most 256 samples; 50161) and nothing else: no content, embeds,
   * stickers or components (50159).
   * Sources: https://discord.com/developers/docs/reference#uploading-files,
   * https://discord.com/developers/docs/topics/opcodes-and-status-codes#json-json-error-codes.
   */
  #attachmentsOf(channelId: string, b: Record<string, unknown>, uploads: FakeUpload[]): Record<string, unknown>[] {
    const flags = Number(b.flags ?? 0);
    if (!Number.isInteger(flags) || (flags & ~CREATE_FLAGS) !== 0)
      throw invalidForm("flags", "MESSAGE_FLAGS_INVALID", "Invalid flags for a message create.");
    const metas = (Array.isArray(b.attachments) ? b.attachments : []) as Record<string, unknown>[];
    const index = new Map(uploads.map((u) => [/^files\[(\d+)\]$/.exec(u.name)?.[1], u]));
    for (const meta of metas)
      if (!index.has(String(meta.id)))
        throw invalidForm("attachments", "ATTACHMENT_NOT_FOUND", `Unknown attachment id ${String(meta.id)}.`);
    const attachments = uploads.map((upload) => {
      const n = /^files\[(\d+)\]$/.exec(upload.name)?.[1];
      const meta = metas.find((m) => String(m.id) === n) ?? {};
      const filename = typeof meta.filename === "string" ? meta.filename : upload.filename;
      const object = this.addAttachment(upload.bytes, { filename, contentType: upload.mimeType, channelId });
      return {
        ...object,
        ...(meta.duration_secs !== undefined ? { duration_secs: meta.duration_secs } : {}),
        ...(meta.waveform !== undefined ? { waveform: meta.waveform } : {}),
      };
    });
    if (flags & IS_VOICE_MESSAGE) {
      const extra =
        (typeof b.content === "string" && b.content !== "") ||
        (Array.isArray(b.embeds) && b.embeds.length > 0) ||
        (Array.isArray(b.sticker_ids) && b.sticker_ids.length > 0) ||
        (Array.isArray(b.components) && b.components.length > 0);
      if (extra)
        throw new HttpError(400, { message: "Voice messages do not support additional content.", code: 50159 });
      const bytes = uploads[0]?.bytes;
      const oggOpus =
        bytes !== undefined &&
        bytes.subarray(0, 4).toString("latin1") === "OggS" &&
        bytes.subarray(0, 512).includes("OpusHead");
      if (uploads.length !== 1 || !oggOpus)
        throw new HttpError(400, { message: "Voice messages must have a single audio attachment.", code: 50160 });
      const [voice] = attachments;
      const waveform = typeof voice!.waveform === "string" ? Buffer.from(voice!.waveform, "base64") : undefined;
      if (
        typeof voice!.duration_secs !== "number" ||
        voice!.duration_secs <= 0 ||
        !waveform ||
        waveform.length === 0 ||
        waveform.length > 256 ||
        waveform.toString("base64") !== voice!.waveform
      )
        throw new HttpError(400, { message: "Voice messages must have supporting metadata.", code: 50161 });
    }
    return attachments;
  }

  #createMessage(channelId: string, b: Record<string, unknown>, uploads: FakeUpload[] = []): FakeMessage {
    const channel = this.#channel(channelId);
    this.#validate(b, uploads.length === 0);
    const attachments = this.#attachmentsOf(channelId, b, uploads);
    const content = (b.content as string | undefined) ?? "";
    const extra: Record<string, unknown> = {
      attachments,
      flags: Number(b.flags ?? 0),
      content,
      components: b.components ?? [],
      embeds: b.embeds ?? [],
      mention_everyone: this.#pingsEveryone(content, b.allowed_mentions),
      mentions: this.#pingedUsers(content, b.allowed_mentions).map((id) => this.#users.get(id) ?? { id }),
    };
    const ref = b.message_reference as { message_id?: string; fail_if_not_exists?: boolean } | undefined;
    if (ref?.message_id) {
      const target = this.#messages.get(ref.message_id);
      if (!target || target.channel_id !== channelId) {
        if (ref.fail_if_not_exists !== false)
          throw invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message");
      } else {
        Object.assign(extra, {
          type: 19,
          message_reference: { type: 0, message_id: target.id, channel_id: channelId, guild_id: channel.guild_id },
          referenced_message: target,
        });
      }
    }
    if (b.nonce !== undefined && b.nonce !== null) extra.nonce = b.nonce;
    const message = this.#buildMessage(channel, this.bot, extra);
    this.#messages.set(message.id, message);
    if (b.nonce !== undefined && b.nonce !== null && b.enforce_nonce === true)
      this.#nonces.set(`${this.bot.id}|${String(b.nonce)}`, { messageId: message.id, at: this.#options.now() });
    this.sent.push({
      id: message.id,
      channelId,
      content,
      payload: b,
      message,
      ...(uploads.length > 0 ? { files: uploads } : {}),
      at: Date.now(),
    });
    this.#dispatchMessage(message, channel);
    return message;
  }

  /**
   * Discord's rate limit of message edits: at most {@link EDIT_RATE_LIMIT}`.count` per channel per
   * `windowMs` (the shared `PATCH /channels/{id}/messages/{id}` bucket); past it the edit is
   * answered 429 with `retry_after` and the `X-RateLimit-*` headers
   * (https://discord.com/developers/docs/topics/rate-limits).
   */
  #editRateLimit(channelId: string): void {
    const now = Date.now();
    const recent = (this.#editTimes.get(channelId) ?? []).filter((t) => now - t < EDIT_RATE_LIMIT.windowMs);
    if (recent.length >= EDIT_RATE_LIMIT.count) {
      const retryAfter = Math.max(0.001, (recent[0]! + EDIT_RATE_LIMIT.windowMs - now) / 1000);
      this.#editTimes.set(channelId, recent);
      this.editRateLimited.push({ channelId, at: now });
      throw new HttpError(
        429,
        { message: "You are being rate limited.", retry_after: retryAfter, global: false },
        {
          "retry-after": String(Math.ceil(retryAfter)),
          "x-ratelimit-limit": String(EDIT_RATE_LIMIT.count),
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset-after": retryAfter.toFixed(3),
          "x-ratelimit-bucket": `edit-${channelId}`,
          "x-ratelimit-scope": "user",
        },
      );
    }
    recent.push(now);
    this.#editTimes.set(channelId, recent);
  }

  #editMessage(channelId: string, messageId: string, b: Record<string, unknown>): FakeMessage {
    this.#channel(channelId);
    const message = this.#existing(channelId, messageId);
    if (message.author.id !== this.bot.id)
      throw new HttpError(403, { message: "Cannot edit a message authored by another user", code: 50005 });
    this.#validate(b, false);
    const content = typeof b.content === "string" ? b.content : message.content;
    const components = (b.components ?? message.components) as unknown[];
    if (content.trim() === "" && components.length === 0 && (message.embeds as unknown[]).length === 0) {
      throw new HttpError(400, { message: "Cannot send an empty message", code: 50006 });
    }
    message.content = content;
    message.components = components;
    message.edited_timestamp = new Date().toISOString();
    this.edits.push({ channelId, messageId, payload: b, at: Date.now() });
    return message;
  }

  #putCommands(appId: string, scope: string, body: unknown): { status: number; body: unknown } {
    if (appId !== this.applicationId) throw new HttpError(403, { message: "Missing Access", code: 50001 });
    if (!Array.isArray(body)) throw invalidForm("_", "LIST_TYPE_CONVERT", "Must be an array.");
    body.forEach((cmd: Record<string, unknown>) => {
      if (typeof cmd.name !== "string" || !/^[-_\p{Ll}\p{N}]{1,32}$/u.test(cmd.name))
        throw invalidForm("name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid");
      if (typeof cmd.description !== "string" || cmd.description.length < 1 || cmd.description.length > 100) {
        throw invalidForm("description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
      }
      for (const opt of (cmd.options ?? []) as Record<string, unknown>[]) {
        const choices = (opt.choices ?? []) as { name: string; value: unknown }[];
        if (choices.length > 25) throw invalidForm("options", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
        if (choices.some((c) => typeof c.name !== "string" || c.name.length < 1 || c.name.length > 100)) {
          throw invalidForm("options", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
        }
      }
    });
    const commands = (body as Record<string, unknown>[]).map((cmd) => ({
      id: this.#snowflake(),
      application_id: appId,
      version: this.#snowflake(),
      type: 1,
      default_member_permissions: null,
      ...(scope === "global" ? {} : { guild_id: scope }),
      ...cmd,
    }));
    this.commandRegistrations.push({ scope, body: body as Record<string, unknown>[] });
    return { status: 200, body: commands };
  }

  #callback(id: string, token: string, body: unknown): { status: number } {
    const interaction = this.interactions.get(id);
    if (!interaction || interaction.token !== token)
      throw new HttpError(404, { message: "Unknown interaction", code: 10062 });
    if (interaction.response)
      throw new HttpError(400, { message: "Interaction has already been acknowledged.", code: 40060 });
    if (this.#options.now() - interaction.createdAt > this.#options.interactionWindowMs)
      throw new HttpError(404, { message: "Unknown interaction", code: 10062 });
    const b = (body ?? {}) as { type?: number; data?: Record<string, unknown> };
    if (![1, 4, 5, 6, 7, 8, 9].includes(b.type ?? -1))
      throw invalidForm("type", "BASE_TYPE_CHOICES", "Value must be one of {1, 4, 5, 6, 7, 8, 9}.");
    if (b.type === 4) this.#validate(b.data ?? {}, true);
    if (b.type === 7) this.#validate(b.data ?? {}, false);
    interaction.response = { type: b.type!, data: b.data, at: Date.now() };
    // UPDATE_MESSAGE on a button of an ephemeral reply edits that reply (the pressed message): as
    // Discord shows it, the reply's interaction's original response now carries the update.
    if (b.type === 7) {
      const message = interaction.payload.message as { interaction_metadata?: { id?: string } } | undefined;
      const pressed = this.interactions.get(message?.interaction_metadata?.id ?? "");
      if (pressed?.response) {
        pressed.edits.push(b.data ?? {});
        pressed.editedAt = Date.now();
      }
    }
    return { status: 204 };
  }

  #editOriginal(appId: string, token: string, body: unknown): { status: number; body: unknown } {
    const interaction = [...this.interactions.values()].find((i) => i.token === token);
    if (appId !== this.applicationId || !interaction || !interaction.response)
      throw new HttpError(404, { message: "Unknown Webhook", code: 10015 });
    if (this.#options.now() - interaction.createdAt > 15 * 60_000)
      throw new HttpError(401, { message: "Invalid Webhook Token", code: 50027 });
    const b = (body ?? {}) as Record<string, unknown>;
    this.#validate(b, false);
    interaction.edits.push(b);
    interaction.editedAt = Date.now();
    const channelId = (interaction.payload.channel_id as string) ?? this.channelId;
    const channel = this.#channels.get(channelId)!;
    const message = this.#buildMessage(channel, this.bot, {
      content: (b.content as string) ?? "",
      flags: (b.flags as number) ?? 0,
      webhook_id: this.applicationId,
      application_id: this.applicationId,
    });
    return { status: 200, body: message };
  }
}
