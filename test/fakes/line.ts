/**
 * A strict fake LINE platform for tests (node:http): the Messaging API (`api.line.me`), the content
 * host (`api-data.line.me`, a second server) and the webhook sender, so the real `@line/bot-sdk`
 * clients can be pointed at it with `LINE_API_URL` and `LINE_DATA_API_URL`.
 *
 * Every request is first checked against LINE's published OpenAPI description (`line-spec.ts`):
 * the operation exists on that host, the body matches its schema (5 messages per call, 5,000
 * characters per text, 300 characters of postback data, no unknown fields …). A request that fails
 * is answered 400 as LINE answers and recorded in `spec-violations.ts`, which fails the running test.
 *
 * Beyond the spec it is strict like LINE (https://developers.line.biz/en/reference/messaging-api/):
 * - 401 `Authentication failed` without `Authorization: Bearer <channel access token>`;
 * - reply tokens: issued with each webhook event that carries one, usable once, for
 *   {@link REPLY_TOKEN_TTL_MS} on the fake's clock ({@link FakeLine.advance} moves it, no real wait);
 *   otherwise 400 `Invalid reply token`;
 * - push messages count against a monthly quota ({@link FakeLineOptions.pushQuota}; one per push
 *   request, as LINE counts a request to one recipient); over it, 429 `You have reached your
 *   monthly limit.`; a push to an unknown chat is 400 `Failed to send messages`, to a user who
 *   unfollowed or a group the bot left is 403;
 * - `X-Line-Retry-Key`: a push repeated with an accepted key is not sent again: 409 with
 *   `x-line-accepted-request-id` (https://developers.line.biz/en/reference/messaging-api/#retry-api-request);
 * - {@link FakeLine.failNext} makes the next calls of an operation answer 429 `The API rate limit
 *   has been exceeded. Try again later.` (or any status), to test the bot's retries;
 * - the loading animation (`/v2/bot/chat/loading/start`) only in one-to-one chats (a user id);
 * - groups and multi-person chats (rooms) have members ({@link FakeLine.group}, {@link FakeLine.room},
 *   changed by {@link FakeLine.memberEvent} and {@link FakeLine.setMember}): the member profile
 *   (`GET /v2/bot/group/{groupId}/member/{userId}`, `/v2/bot/room/{roomId}/member/{userId}`) is
 *   404 `Not found` for anyone who is not a member now, as LINE answers;
 * - rich menus: created within LINE's size and bounds rules, a picture (PNG or JPEG of exactly the
 *   menu's size, at most 1 MB, once) uploaded to the data host, set as the default only with a picture;
 * - audio messages (https://developers.line.biz/en/reference/messaging-api/#audio-message):
 *   `originalContentUrl` HTTPS and at most 2,000 characters, `duration` a positive whole number of
 *   ms; the fake then fetches the URL as LINE does (through {@link FakeLineOptions.rewriteUrl}, which
 *   maps the public HTTPS base to the bot's local server) and refuses the call (400) unless it
 *   answers 200 with m4a or mp3 (`audio/mp4`, `audio/x-m4a`, `audio/mpeg`) of 1 byte to 200 MB;
 *   what it fetched is in {@link FakeLine.audios}. (LINE fetches when the message is shown; the
 *   fake does it during the call, so a test sees the result at once.)
 * - webhooks are signed (`x-line-signature`: base64 HMAC-SHA256 of the body with the channel
 *   secret) and carry `webhookEventId` and `deliveryContext.isRedelivery`.
 */
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage as HttpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkLineRequest, checkLineWebhookBody } from "./line-spec.js";
import { recordSpecViolation, takeSpecViolations, type SpecViolation } from "./spec-violations.js";

/** How long a reply token stays usable on the fake's clock, in ms ("about a minute"). */
export const REPLY_TOKEN_TTL_MS = 60_000;

/** Options of {@link FakeLine.start}. */
export interface FakeLineOptions {
  /** Push requests allowed this month; default unlimited. */
  pushQuota?: number;
  /** Maps an audio message's `originalContentUrl` to the address the fake fetches (a test's local server); default as is. */
  rewriteUrl?: (url: string) => string;
  /**
   * The first message id this fake gives (then counting up); default 600000000000000. `npm run fakes`
   * starts it from the clock, so a restarted fake's messages are not taken for the earlier run's.
   */
  firstMessageId?: number;
}

/** LINE's largest audio file, bytes (https://developers.line.biz/en/reference/messaging-api/#audio-message). */
export const LINE_AUDIO_MAX_BYTES = 200 * 1024 * 1024;

/** A LINE user known to the fake. */
export interface FakeLineUser {
  userId: string;
  displayName: string;
}

/** Where an event happens: a one-to-one chat with `from`, a group or a multi-person chat (room). */
export interface FakeLinePlace {
  from: FakeLineUser;
  groupId?: string;
  roomId?: string;
}

/** A message the bot sent (one message object of a reply or push call). */
export interface FakeLineMessage {
  /** The chat it went to: a user, group or room id. */
  to: string;
  via: "reply" | "push";
  /** LINE's id of the sent message. */
  id: string;
  /** The message object as sent. */
  message: Record<string, unknown>;
  /** `text` of a text message, the template's `text` of a template message; "" otherwise. */
  text: string;
  /** The `data` of every postback action of the message (template actions and quick reply items). */
  postbacks: string[];
  /** Fake-clock ms. */
  at: number;
}

/** One request the fake answered. */
export interface FakeLineCall {
  route: string;
  body: unknown;
  status: number;
  at: number;
}

interface ReplyToken {
  chatId: string;
  issuedAt: number;
  used: boolean;
}

type Json = Record<string, unknown>;

/** See the module comment. */
export class FakeLine {
  /** The channel access token the bot must send. */
  readonly token = `fake-line-token-${randomBytes(16).toString("hex")}`;
  /** The channel secret webhooks are signed with (32 hex digits). */
  readonly secret = randomBytes(16).toString("hex");
  /** The bot's own user id (`GET /v2/bot/info`). */
  readonly botUserId = lineId("U");
  readonly botName = "台灣工具助理";
  readonly sent: FakeLineMessage[] = [];
  readonly calls: FakeLineCall[] = [];
  /** Loading animations shown: chat id and seconds. */
  readonly loadings: { chatId: string; loadingSeconds: number; at: number }[] = [];
  /** Audio fetched for audio messages, in order: the message's URL, the Content-Type and the bytes. */
  readonly audios: { url: string; contentType: string; bytes: Buffer }[] = [];
  /** Push requests accepted this month. */
  pushes = 0;
  /** Rich menus created (`POST /v2/bot/richmenu`), by id, with the picture uploaded for each. */
  readonly richMenus = new Map<string, { menu: Json; image?: { type: string; bytes: Buffer } }>();
  /** The rich menu every user sees (`POST /v2/bot/user/all/richmenu/{richMenuId}`). */
  defaultRichMenuId: string | undefined;
  /** Where webhooks go (the bot's `http://host:LINE_WEBHOOK_PORT/LINE_WEBHOOK_PATH`); set by the test. */
  webhookUrl = "";
  readonly #users = new Map<string, FakeLineUser>();
  readonly #groups = new Map<string, Set<string>>();
  readonly #gone = new Set<string>();
  readonly #tokens = new Map<string, ReplyToken>();
  readonly #retryKeys = new Map<string, string>();
  readonly #contents = new Map<string, { bytes: Buffer; type: string }>();
  readonly #failures: { route: string; status: number; body: Json; times: number }[] = [];
  #offset = 0;
  #nextId = 600000000000000;

  private constructor(
    private readonly api: Server,
    private readonly data: Server,
    private readonly options: FakeLineOptions,
  ) {
    if (options.firstMessageId !== undefined) this.#nextId = options.firstMessageId;
  }

  /** Starts the API and data servers on 127.0.0.1. */
  static async start(options: FakeLineOptions = {}): Promise<FakeLine> {
    const handlers: { fake?: FakeLine } = {};
    const api = createServer((req, res) => void handlers.fake!.#handle("api", req, res));
    const data = createServer((req, res) => void handlers.fake!.#handle("data", req, res));
    const fake = new FakeLine(api, data, options);
    handlers.fake = fake;
    for (const server of [api, data]) {
      server.keepAliveTimeout = 60_000;
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    }
    return fake;
  }

  /** `LINE_API_URL`. */
  get apiUrl(): string {
    return `http://127.0.0.1:${(this.api.address() as AddressInfo).port}`;
  }

  /** `LINE_DATA_API_URL`. */
  get dataUrl(): string {
    return `http://127.0.0.1:${(this.data.address() as AddressInfo).port}`;
  }

  /** The fake's clock (ms): real time plus what {@link advance} added. */
  now(): number {
    return Date.now() + this.#offset;
  }

  /** Moves the fake's clock forward (reply tokens expire by it). */
  advance(ms: number): void {
    this.#offset += ms;
  }

  /**
   * A new user who has added the bot as a friend.
   * @param userId - the user's id (`U` and 32 hex digits, e.g. {@link stableLineId}); default a random one.
   */
  user(displayName: string, userId = lineId("U")): FakeLineUser {
    const user = { userId, displayName };
    this.#users.set(user.userId, user);
    return user;
  }

  /**
   * A new group with the bot and `members` in it; returns its id.
   * @param id - the group's id (`C` and 32 hex digits, e.g. {@link stableLineId}); default a random one.
   */
  group(members: FakeLineUser[], id = lineId("C")): string {
    this.#groups.set(id, new Set(members.map((m) => m.userId)));
    return id;
  }

  /** A new multi-person chat (room) with the bot and `members` in it; returns its id. */
  room(members: FakeLineUser[]): string {
    const id = lineId("R");
    this.#groups.set(id, new Set(members.map((m) => m.userId)));
    return id;
  }

  /** Whether `user` is a member of group or room `chatId` now. */
  isMember(chatId: string, user: FakeLineUser): boolean {
    return this.#groups.get(chatId)?.has(user.userId) === true;
  }

  /** Makes `user` a member of group or room `chatId` or not, without an event (one LINE did not deliver). */
  setMember(chatId: string, user: FakeLineUser, member: boolean): void {
    const members = this.#groups.get(chatId);
    if (!members) throw new Error(`FakeLine: no group or room ${chatId}`);
    if (member) members.add(user.userId);
    else members.delete(user.userId);
  }

  /**
   * `users` join (`memberJoined`, with a reply token) or leave (`memberLeft`, none) group or room
   * `chatId`: the fake's membership changes at once (the member profile API answers by it), and
   * the event LINE sends about it is returned. Source: #member-joined-event, #member-left-event.
   */
  memberEvent(chatId: string, type: "memberJoined" | "memberLeft", users: FakeLineUser[]): Json {
    const members = this.#groups.get(chatId);
    if (!members) throw new Error(`FakeLine: no group or room ${chatId}`);
    for (const user of users) {
      if (type === "memberJoined") members.add(user.userId);
      else members.delete(user.userId);
    }
    const list = { members: users.map((u) => ({ type: "user", userId: u.userId })) };
    return this.#event(
      chatId.startsWith("C") ? { groupId: chatId } : { roomId: chatId },
      type === "memberJoined" ? { type, joined: list } : { type, left: list },
      type === "memberJoined",
    );
  }

  /** Marks a chat as one the bot can no longer write to (the user blocked it, the bot left the group). */
  gone(chatId: string): void {
    this.#gone.add(chatId);
  }

  /** Stores bytes served by `GET /v2/bot/message/{messageId}/content` on the data host; returns the message id. */
  addContent(bytes: Buffer, type: string): string {
    const id = String(this.#nextId++);
    this.#contents.set(id, { bytes, type });
    return id;
  }

  /** The next `times` calls of `route` (e.g. `POST /v2/bot/message/push`) answer `status` (default 429 rate limit). */
  failNext(route: string, times = 1, status = 429, body?: Json): void {
    this.#failures.push({
      route,
      status,
      body: body ?? { message: "The API rate limit has been exceeded. Try again later." },
      times,
    });
  }

  /** Messages sent to `chatId` (a user, group or room id), in order. */
  messagesTo(chatId: string): FakeLineMessage[] {
    return this.sent.filter((m) => m.to === chatId);
  }

  /** A text message event from `place`, with a fresh reply token; `mention` adds a mention of the bot (`isSelf`). */
  textEvent(place: FakeLinePlace, text: string, extra: { mention?: boolean; quotedMessageId?: string } = {}): Json {
    const message: Json = { id: String(this.#nextId++), type: "text", text, quoteToken: randomUUID() };
    if (extra.mention) {
      const at = `@${this.botName}`;
      message.text = `${at} ${text}`;
      message.mention = {
        mentionees: [{ index: 0, length: at.length, type: "user", userId: this.botUserId, isSelf: true }],
      };
    }
    if (extra.quotedMessageId) message.quotedMessageId = extra.quotedMessageId;
    return this.#event(place, { type: "message", message }, true);
  }

  /** A message event of another kind (`image`, `audio`, `file`, `sticker` …) with `message`'s fields. */
  messageEvent(place: FakeLinePlace, message: Json): Json {
    // Text, image, video and sticker messages carry a quote token; audio, file and location ones do not (webhook.yml).
    const quotable = ["image", "video", "sticker"].includes(String(message.type));
    return this.#event(
      place,
      {
        type: "message",
        message: { id: String(this.#nextId++), ...(quotable ? { quoteToken: randomUUID() } : {}), ...message },
      },
      true,
    );
  }

  /** A postback event (a press on a postback action) carrying `data`. */
  postbackEvent(place: FakeLinePlace, data: string): Json {
    return this.#event(place, { type: "postback", postback: { data } }, true);
  }

  /**
   * An event without a message (`follow`, `unfollow`, `join`, `leave`); `follow` and `join` carry a
   * reply token. `join` and `leave` come from the group or room alone (no `userId`), as LINE sends them.
   */
  plainEvent(place: FakeLinePlace, type: "follow" | "unfollow" | "join" | "leave", extra: Json = {}): Json {
    const replies = type === "follow" || type === "join";
    const from = type === "join" || type === "leave" ? { groupId: place.groupId, roomId: place.roomId } : place;
    return this.#event(from, { type, ...extra }, replies);
  }

  /**
   * Posts `events` to {@link webhookUrl} as LINE does: JSON `{ destination, events }`, signed with
   * the channel secret (or with `signature` as given). `redelivery` marks the events as redelivered.
   * @returns the HTTP status the bot answered.
   */
  async deliver(events: Json[], options: { redelivery?: boolean; signature?: string } = {}): Promise<number> {
    const request = {
      destination: this.botUserId,
      events: events.map((e) => (options.redelivery ? { ...e, deliveryContext: { isRedelivery: true } } : e)),
    };
    // The fake sends only what LINE could send (webhook.yml): a test event of another shape is a test bug.
    const problems = checkLineWebhookBody(request);
    if (problems.length > 0) throw new Error(`FakeLine: a webhook LINE would not send:\n${problems.join("\n")}`);
    const body = JSON.stringify(request);
    const signature = options.signature ?? createHmac("sha256", this.secret).update(body).digest("base64");
    const response = await fetch(this.webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "x-line-signature": signature },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  /** Polls `check` (awaited) every 10 ms until it gives a truthy value. */
  async waitFor<T>(
    check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs = 30_000,
    what = "condition",
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`FakeLine: timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The spec violations recorded for LINE so far (forgotten, so the test is not failed for them). */
  takeSpecViolations(): SpecViolation[] {
    return takeSpecViolations("line");
  }

  async stop(): Promise<void> {
    for (const server of [this.api, this.data]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  #event(place: Partial<FakeLinePlace>, body: Json, replies: boolean): Json {
    const chatId = place.groupId ?? place.roomId ?? place.from?.userId;
    if (!chatId) throw new Error("FakeLine: an event needs a user, group or room");
    const user = place.from ? { userId: place.from.userId } : {};
    const source = place.groupId
      ? { type: "group", groupId: place.groupId, ...user }
      : place.roomId
        ? { type: "room", roomId: place.roomId, ...user }
        : { type: "user", ...user };
    const event: Json = {
      ...body,
      mode: "active",
      timestamp: this.now(),
      source,
      webhookEventId: `01${randomBytes(12).toString("hex").toUpperCase()}`,
      deliveryContext: { isRedelivery: false },
    };
    if (replies) {
      const replyToken = randomBytes(16).toString("hex");
      this.#tokens.set(replyToken, { chatId, issuedAt: this.now(), used: false });
      event.replyToken = replyToken;
    }
    return event;
  }

  async #handle(host: "api" | "data", req: HttpRequest, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    // A picture upload (the rich menu's) is binary; everything else LINE takes is JSON.
    const binary = bytes.length > 0 && !/^application\/json\b/i.test(String(req.headers["content-type"] ?? ""));
    const raw = binary ? "" : bytes.toString("utf8");
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      this.calls.push({ route: `${req.method} ${url.pathname}`, body: parsed, status, at: this.now() });
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
    };
    let parsed: unknown;
    if (raw !== "") {
      try {
        parsed = JSON.parse(raw);
      } catch {
        return send(400, { message: "The request body could not be parsed as JSON" });
      }
    }
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return send(401, {
        message: "Authentication failed. Confirm that the access token in the authorization header is valid.",
      });
    const check = checkLineRequest({
      host,
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      body: parsed,
      ...(binary ? { binary: true } : {}),
    });
    if (!check.ok) {
      recordSpecViolation({
        platform: "line",
        request: check.route,
        problems: check.problems,
        payload: parsed,
        at: Date.now(),
      });
      return send(check.status, check.body);
    }
    const failure = this.#failures.find((f) => f.route === check.route && f.times > 0);
    if (failure) {
      failure.times--;
      return send(failure.status, failure.body);
    }
    const body = (parsed ?? {}) as Json;
    switch (check.route) {
      case "GET /v2/bot/info":
        return send(200, {
          userId: this.botUserId,
          basicId: "@123abcde",
          displayName: this.botName,
          chatMode: "bot",
          markAsReadMode: "auto",
        });
      case "POST /v2/bot/message/reply": {
        const token = this.#tokens.get(String(body.replyToken));
        if (!token || token.used || this.now() - token.issuedAt > REPLY_TOKEN_TTL_MS)
          return send(400, { message: "Invalid reply token" });
        const audioProblem = await this.#fetchAudio(body.messages as Json[]);
        if (audioProblem) return send(400, { message: audioProblem });
        token.used = true;
        return send(200, { sentMessages: this.#record(token.chatId, "reply", body.messages as Json[]) });
      }
      case "POST /v2/bot/message/push": {
        const to = String(body.to);
        const key = [req.headers["x-line-retry-key"]].flat()[0];
        if (key && this.#retryKeys.has(key))
          return send(
            409,
            { message: "The retry key is already accepted" },
            { "x-line-accepted-request-id": this.#retryKeys.get(key)! },
          );
        if (!this.#users.has(to) && !this.#groups.has(to)) return send(400, { message: "Failed to send messages" });
        if (this.#gone.has(to)) return send(403, { message: "Failed to send messages" });
        if (this.options.pushQuota !== undefined && this.pushes >= this.options.pushQuota)
          return send(429, { message: "You have reached your monthly limit." });
        const audioProblem = await this.#fetchAudio(body.messages as Json[]);
        if (audioProblem) return send(400, { message: audioProblem });
        this.pushes++;
        const requestId = randomUUID();
        if (key) this.#retryKeys.set(key, requestId);
        return send(
          200,
          { sentMessages: this.#record(to, "push", body.messages as Json[]) },
          { "x-line-request-id": requestId },
        );
      }
      case "POST /v2/bot/chat/loading/start": {
        const chatId = String(body.chatId);
        if (!this.#users.has(chatId)) return send(400, { message: "The chatId is invalid" });
        const loadingSeconds = Number(body.loadingSeconds ?? 20);
        if (loadingSeconds % 5 !== 0) return send(400, { message: "loadingSeconds must be a multiple of 5" });
        this.loadings.push({ chatId, loadingSeconds, at: this.now() });
        return send(202, {});
      }
      case "GET /v2/bot/profile/{userId}": {
        const user = this.#users.get(url.pathname.split("/").at(-1)!);
        return user ? send(200, { ...user, language: "zh-TW" }) : send(404, { message: "Not found" });
      }
      case "GET /v2/bot/group/{groupId}/member/{userId}":
      case "GET /v2/bot/room/{roomId}/member/{userId}": {
        // 404 for a user who is not (or no longer) a member of that group or room, as LINE answers.
        const [, , , kind, chatId, , userId] = url.pathname.split("/");
        const user = this.#users.get(userId!);
        const member = (kind === "group") === chatId!.startsWith("C") && this.#groups.get(chatId!)?.has(userId!);
        return user && member ? send(200, user) : send(404, { message: "Not found" });
      }
      case "POST /v2/bot/richmenu": {
        const size = body.size as { width: number; height: number };
        // LINE's documented limits beyond the schema (#rich-menu-object, #size-object, #bounds-object).
        if (size.width < 800 || size.width > 2500 || size.height < 250 || size.width / size.height < 1.45)
          return send(400, { message: "size is invalid" });
        const areas = body.areas as { bounds: { x: number; y: number; width: number; height: number } }[];
        const outside = areas.findIndex(({ bounds: b }) => b.x + b.width > size.width || b.y + b.height > size.height);
        if (outside >= 0) return send(400, { message: `areas[${outside}].bounds is outside the rich menu` });
        const richMenuId = `richmenu-${randomBytes(16).toString("hex")}`;
        this.richMenus.set(richMenuId, { menu: body });
        return send(200, { richMenuId });
      }
      case "POST /v2/bot/richmenu/{richMenuId}/content": {
        const menu = this.richMenus.get(url.pathname.split("/")[4]!);
        if (!menu) return send(404, { message: "Not found" });
        if (menu.image) return send(400, { message: "An image has already been uploaded to the richmenu" });
        const type = String(req.headers["content-type"] ?? "");
        if (type !== "image/png" && type !== "image/jpeg")
          return send(415, { message: "The content type must be image/jpeg or image/png" });
        if (bytes.length > 1024 * 1024) return send(413, { message: "The image is too large (max 1 MB)" });
        // sharp only when a picture comes (loading it costs start-up time of every test using the fake).
        const { default: sharp } = await import("sharp");
        const meta = await sharp(bytes)
          .metadata()
          .catch(() => undefined);
        const size = menu.menu.size as { width: number; height: number };
        if (!meta || `image/${meta.format}` !== type || meta.width !== size.width || meta.height !== size.height)
          return send(400, { message: "The image does not match the rich menu's size or its content type" });
        menu.image = { type, bytes };
        return send(200, {});
      }
      case "POST /v2/bot/user/all/richmenu/{richMenuId}": {
        const id = url.pathname.split("/").at(-1)!;
        const menu = this.richMenus.get(id);
        if (!menu) return send(404, { message: "Not found" });
        if (!menu.image) return send(400, { message: "An image has not been uploaded to the richmenu" });
        this.defaultRichMenuId = id;
        return send(200, {});
      }
      case "GET /v2/bot/richmenu/list":
        return send(200, {
          richmenus: [...this.richMenus].map(([richMenuId, { menu }]) => ({ richMenuId, ...menu })),
        });
      case "DELETE /v2/bot/richmenu/{richMenuId}": {
        const id = url.pathname.split("/").at(-1)!;
        if (!this.richMenus.delete(id)) return send(404, { message: "Not found" });
        if (this.defaultRichMenuId === id) this.defaultRichMenuId = undefined;
        return send(200, {});
      }
      case "GET /v2/bot/message/{messageId}/content": {
        const content = this.#contents.get(url.pathname.split("/")[4]!);
        if (!content) return send(404, { message: "Not found" });
        this.calls.push({ route: check.route, body: undefined, status: 200, at: this.now() });
        res
          .writeHead(200, { "content-type": content.type, "content-length": String(content.bytes.length) })
          .end(content.bytes);
        return;
      }
      default:
        return send(200, {});
    }
  }

  /** Checks and fetches the audio messages of `messages`; the problem LINE would name, or undefined. */
  async #fetchAudio(messages: Json[]): Promise<string | undefined> {
    for (const [i, message] of messages.entries()) {
      if (message.type !== "audio") continue;
      const url = String(message.originalContentUrl);
      const duration = message.duration;
      if (!url.startsWith("https://") || url.length > 2000)
        return `messages[${i}].originalContentUrl must be an HTTPS URL of at most 2000 characters`;
      if (typeof duration !== "number" || !Number.isInteger(duration) || duration <= 0)
        return `messages[${i}].duration must be a positive integer (milliseconds)`;
      let response: Response;
      try {
        response = await fetch(this.options.rewriteUrl?.(url) ?? url, { redirect: "manual" });
      } catch {
        return `messages[${i}].originalContentUrl could not be fetched`;
      }
      const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
      const bytes = Buffer.from(await response.arrayBuffer());
      if (response.status !== 200) return `messages[${i}].originalContentUrl answered ${response.status}`;
      if (!["audio/mpeg", "audio/mp4", "audio/x-m4a"].includes(contentType))
        return `messages[${i}].originalContentUrl is not m4a or mp3 (${contentType})`;
      if (bytes.length === 0 || bytes.length > LINE_AUDIO_MAX_BYTES)
        return `messages[${i}].originalContentUrl is empty or over 200 MB`;
      this.audios.push({ url, contentType, bytes });
    }
    return undefined;
  }

  #record(to: string, via: "reply" | "push", messages: Json[]): { id: string; quoteToken: string }[] {
    return messages.map((message) => {
      const id = String(this.#nextId++);
      const template = message.template as Json | undefined;
      const text = String(message.text ?? template?.text ?? "");
      const actions = [
        ...((template?.actions as Json[] | undefined) ?? []),
        ...(((message.quickReply as Json | undefined)?.items as Json[] | undefined) ?? []).map((i) => i.action as Json),
      ];
      this.sent.push({
        to,
        via,
        id,
        message,
        text,
        postbacks: actions.filter((a) => a.type === "postback").map((a) => String(a.data)),
        at: this.now(),
      });
      return { id, quoteToken: randomUUID() };
    });
  }
}

/** A LINE id: `U` (user), `C` (group) or `R` (room) and 32 hex digits. */
export function lineId(kind: "U" | "C" | "R"): string {
  return kind + randomBytes(16).toString("hex");
}

/**
 * A LINE id that is the same at every start for the same `name`: `kind` and the first 32 hex
 * digits of the SHA-256 of `name` (for the fake users of `npm run fakes`, whose chats the bot keeps
 * across a restart of the fakes).
 */
export function stableLineId(kind: "U" | "C" | "R", name: string): string {
  return kind + createHash("sha256").update(name).digest("hex").slice(0, 32);
}
