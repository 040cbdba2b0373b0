/**
 * The LINE adapter: start-up (`GET /v2/bot/info` checks the channel access token), the webhook
 * server (`webhook.ts`), and what happens to each event (`inbound.ts` decides): a message is
 * queued, answered as a command or with a hint; a postback is a button press routed by the core
 * (`AdapterContext.press`, `pressButton` of `src/buttons.ts`); follow / join / memberJoined are
 * greeted with the reply token; unfollow / leave / memberLeft end reminders and tasks
 * (`chat-end.ts`); a file in a group waits for its sender's next mention (`held-media.ts`). A
 * redelivered event (`deliveryContext.isRedelivery`, the same `webhookEventId`) is handled once:
 * each event id is recorded in Redis for a day (and a message's job id is its message id).
 * The outbound half is `outbound.ts`.
 */
import type { Server } from "node:http";
import type { webhook } from "@line/bot-sdk";
import {
  AdapterFatalError,
  EnqueueError,
  TRY_AGAIN_LATER,
  type Adapter,
  type AdapterContext,
} from "../../src/adapter.js";
import { ChatOrder } from "../../src/chat-order.js";
import type { Config } from "../../src/config.js";
import { localize, type Locale } from "../../src/i18n.js";
import { redact, type Logger } from "../../src/log.js";
import { supportedMedia } from "../../src/media/refusal.js";
import type { Destination, NoticeButton } from "../../src/outbound.js";
import { PlatformRefusedError } from "../../src/outbound-errors.js";
import { markdownLiteral, plainLine } from "../../src/plain-text.js";
import {
  IncomingMessageSchema,
  MAX_INCOMING_TEXT,
  MAX_MEDIA_REFS,
  type IncomingMessage,
} from "../../src/queue/incoming.js";
import { lineCall, type LineClients } from "./api.js";
import { endChat, recordMember } from "./chat-end.js";
import { holdMedia, takeHeldMedia } from "./held-media.js";
import { chatOf, classifyEvent, malformedIdOf, malformedShapeOf, UNKNOWN_NAME, type LineBase } from "./inbound.js";
import { isOwnMessage, LineOutbound } from "./outbound.js";
import { startLineWebhook } from "./webhook.js";

/** How long a handled event id is remembered (redeliveries come within this), seconds. */
const EVENT_TTL_SECONDS = 24 * 3600;
/** How long a display name is kept before asking LINE again, ms. */
const NAME_TTL_MS = 3600_000;

/** The LINE adapter; `createAdapter` of `index.ts` makes one. */
export class LineAdapter implements Adapter {
  readonly platform = "line" as const;
  readonly outbound: LineOutbound;
  #server: Server | undefined;
  #context: AdapterContext | undefined;
  #botName = "";
  readonly #names = new Map<string, { name: string; at: number }>();
  /** Each chat's events being handled, in order (the next request's events of that chat wait for them); awaited by {@link stop}. */
  readonly #order = new ChatOrder();
  #stopped = false;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    readonly clients: LineClients,
    outbound?: LineOutbound,
  ) {
    this.outbound = outbound ?? new LineOutbound(clients, config, log);
  }

  /**
   * Checks the channel access token (`GET /v2/bot/info`) and starts the webhook server on
   * `LINE_WEBHOOK_PORT` (`LINE_WEBHOOK_PATH`). Resolves once it listens.
   * @throws {AdapterFatalError} when LINE rejects the token (401); the listen error when the port is taken;
   *   an Error when LINE cannot be reached.
   */
  async start(context: AdapterContext): Promise<void> {
    this.#context = context;
    if (context.redis) this.outbound.attach(context.redis);
    try {
      const info = await lineCall("getBotInfo", () => this.clients.api.getBotInfo(), { retries: 1 });
      this.#botName = plainLine(info.displayName, 64);
    } catch (error) {
      if (error instanceof PlatformRefusedError && error.status === 401)
        throw new AdapterFatalError(
          "line",
          "LINE_CHANNEL_ACCESS_TOKEN was rejected by LINE (401): issue a new channel access token " +
            "in the LINE Developers console (Messaging API tab) and restart.",
          { cause: error },
        );
      throw error;
    }
    if (this.#stopped) throw new Error("line: start-up was stopped");
    this.#server = await startLineWebhook({
      path: this.config.LINE_WEBHOOK_PATH,
      secret: this.config.LINE_CHANNEL_SECRET ?? "",
      port: this.config.LINE_WEBHOOK_PORT,
      host: this.config.HTTP_HOST,
      log: this.log,
      ...(context.redis ? { redis: context.redis } : {}),
      onEvents: (events) =>
        void this.#handleAll(events).catch((error: unknown) =>
          this.log.error({ error: redact(String((error as Error)?.stack ?? error)) }, "line: event handling failed"),
        ),
    });
    this.log.info(
      { port: this.config.LINE_WEBHOOK_PORT, path: this.config.LINE_WEBHOOK_PATH, bot: this.#botName },
      "line: webhook server listening",
    );
  }

  /** True while the webhook server listens. */
  isConnected(): boolean {
    return this.#server?.listening === true;
  }

  /** Closes the webhook server and waits for the events being handled. Never throws. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const server = this.#server;
    this.#server = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await this.#order.idle();
  }

  /**
   * The events of one request, each chat's in order and after that chat's events of earlier
   * requests (LINE may post one chat's events in separate requests a moment apart: a file and the
   * mention that follows it must be handled in that order). Different chats run side by side.
   */
  #handleAll(events: webhook.Event[]): Promise<void> {
    const byChat = new Map<string, webhook.Event[]>();
    for (const event of events) {
      // An event without the fields its type has (a `message` event with no `message`) is skipped: one line, no content.
      const missing = malformedShapeOf(event);
      if (missing) {
        this.log.warn(
          { type: String((event as { type?: unknown }).type).slice(0, 40), field: missing },
          "line: malformed event skipped",
        );
        continue;
      }
      // Ids go into API paths: a malformed one (`../../etc/passwd`) is dropped here, before any call.
      const malformed = malformedIdOf(event);
      if (malformed) {
        this.log.warn(
          { type: String(event.type).slice(0, 40), field: malformed.field, preview: malformed.preview },
          "line: event with a malformed id dropped",
        );
        continue;
      }
      const chat = chatOf(event.source)?.chatId ?? "";
      byChat.set(chat, [...(byChat.get(chat) ?? []), event]);
    }
    return Promise.all([...byChat].map(([chat, list]) => this.#order.run(chat, () => this.#handleInOrder(list)))).then(
      () => undefined,
    );
  }

  async #handleInOrder(events: webhook.Event[]): Promise<void> {
    for (const event of events) {
      if (await this.#seen(event)) {
        this.log.info(
          { eventId: event.webhookEventId, redelivery: event.deliveryContext?.isRedelivery === true },
          "line: event already handled; ignored",
        );
        continue;
      }
      await this.#handle(event);
    }
  }

  /** Records the event's id; true when it was recorded before (a redelivery). Without Redis, false. */
  async #seen(event: webhook.Event): Promise<boolean> {
    const redis = this.#context?.redis;
    if (!redis || !event.webhookEventId) return false;
    try {
      return (await redis.set(`line:event:{${event.webhookEventId}}`, "1", "EX", EVENT_TTL_SECONDS, "NX")) === null;
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "line: could not record an event id");
      return false;
    }
  }

  async #handle(event: webhook.Event): Promise<void> {
    const context = this.#context!;
    const quoted = await this.#quotesOwn(event);
    const decision = classifyEvent(event, () => quoted);
    switch (decision.kind) {
      case "ignore":
        this.log.debug({ type: event.type, reason: decision.reason }, "line: event ignored");
        return;
      case "unfollow":
      case "leave": {
        // Like a chat a send finds unreachable: its reminders and scheduled tasks end.
        const ended = context.redis ? await endChat(context.redis, decision, this.log) : undefined;
        this.log.info(
          { chatId: decision.chatId, event: decision.kind, ...ended },
          "line: the bot can no longer write to this chat (unfollowed, or it left the group); its reminders and tasks ended",
        );
        return;
      }
      case "memberLeft": {
        const ended = context.redis
          ? await endChat(context.redis, { ...decision, people: decision.userIds }, this.log)
          : undefined;
        for (const userId of decision.userIds) this.#names.delete(`${decision.chatId}|${userId}`);
        this.log.info(
          { chatId: decision.chatId, members: decision.userIds.length, ...ended },
          "line: members left the group; their reminders and tasks in it ended",
        );
        return;
      }
      case "memberJoined":
        return this.#welcome(decision.message, decision.userIds);
      case "follow":
      case "join": {
        const locale = await this.#localeOf(decision.message);
        await this.#reply(
          decision.message,
          decision.kind === "follow"
            ? localize(
                locale,
                {
                  "zh-TW": "你好！我是 {name}。直接傳訊息給我就可以了，輸入 /help 看看我能做什麼。",
                  en: "Hi! I'm {name}. Just send me a message; type /help to see what I can do.",
                },
                { name: this.#botName },
              )
            : localize(
                locale,
                {
                  "zh-TW": "大家好！在群組裡要找我，請提到我（@{name}）或輸入 /help。",
                  en: "Hello everyone! In this group, mention me (@{name}) or type /help.",
                },
                { name: this.#botName },
              ),
        );
        return;
      }
      case "postback":
        return this.#press(decision.data, await this.#named(decision.message));
      case "hint": {
        const locale = await this.#localeOf(decision.message);
        await this.#reply(
          decision.message,
          decision.reason === "media"
            ? `${localize(locale, UNREADABLE)}\n${supportedMedia(locale, this.config.MAX_IMAGES_PER_MESSAGE)}`
            : decision.reason === "sticker"
              ? localize(locale, {
                  "zh-TW": "謝謝你的貼圖 😊 有什麼需要幫忙的嗎？",
                  en: "Thanks for the sticker 😊 How can I help?",
                })
              : decision.reason === "too_long"
                ? localize(
                    locale,
                    {
                      "zh-TW": "訊息太長了（上限 {max} 字），請縮短一點。",
                      en: "That message is too long (at most {max} characters). Please shorten it.",
                    },
                    { max: MAX_INCOMING_TEXT },
                  )
                : localize(locale, {
                    "zh-TW": "有什麼需要幫忙的嗎？請把問題寫在同一則訊息裡。",
                    en: "How can I help? Write your question in the same message.",
                  }),
        );
        return;
      }
      case "command":
        return this.#command(decision.command, decision.args, await this.#named(decision.message));
      case "unaddressed":
        if (!(await context.repliesToAll(decision.message))) {
          this.log.debug({ chatId: decision.message.chatId, reason: "not addressed" }, "line: message ignored");
          return;
        }
        return this.#enqueue(await this.#named(decision.message));
      case "enqueue":
        return this.#enqueue(await this.#named(await this.#withHeldMedia(decision.message, event)));
      case "groupMedia":
        if (await context.repliesToAll(decision.message)) return this.#enqueue(await this.#named(decision.message));
        return this.#hold(decision.message);
    }
  }

  /**
   * Greets people who joined a group or multi-person chat the bot is in (`memberJoined`), with the
   * event's free reply token: their names (at most 3 looked up; more are "and N more") and how to
   * address the bot there. Failures are logged.
   */
  async #welcome(at: LineBase, userIds: string[]): Promise<void> {
    const locale = await this.#localeOf(at);
    const names: string[] = [];
    for (const userId of userIds.slice(0, 3)) {
      const named = await this.#named({ ...at, userId });
      if (named.userName !== UNKNOWN_NAME) names.push(named.userName);
    }
    const more = userIds.length - names.length;
    const who =
      names.length === 0
        ? localize(locale, { "zh-TW": "新朋友", en: "newcomers" })
        : more > 0
          ? localize(
              locale,
              { "zh-TW": "{names} 等 {count} 位", en: "{names} and {more} more" },
              { names: names.join(locale === "zh-TW" ? "、" : ", "), count: userIds.length, more },
            )
          : names.join(locale === "zh-TW" ? "、" : ", ");
    await this.#reply(
      at,
      localize(
        locale,
        {
          "zh-TW": "歡迎 {who} 加入！要找我，請提到我（@{name}）或輸入 /help。",
          en: "Welcome, {who}! To ask me something here, mention me (@{name}) or type /help.",
        },
        { who, name: this.#botName },
      ),
      [],
      true, // people's names, as they are
    );
  }

  /** The language of the bot's words in `at`'s chat (its `/settings` language, else `BOT_LOCALE`): read only when some are sent. */
  #localeOf(at: LineBase): Promise<Locale> {
    return this.#context!.commands.localeOf(at, this.config.BOT_LOCALE);
  }

  /** Whether a text message quotes one of the bot's messages (`quotedMessageId`, looked up in Redis). */
  async #quotesOwn(event: webhook.Event): Promise<boolean> {
    const redis = this.#context?.redis;
    if (event.type !== "message" || event.message.type !== "text" || !event.message.quotedMessageId || !redis)
      return false;
    const chat = chatOf(event.source);
    if (!chat) return false;
    try {
      return await isOwnMessage(redis, chat.chatId, event.message.quotedMessageId);
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "line: could not look up a quoted message");
      return false;
    }
  }

  /**
   * Holds the files of a group message for its sender's next message that addresses the bot
   * (`held-media.ts`). A failure is logged: the files are then not carried.
   */
  async #hold(message: IncomingMessage): Promise<void> {
    const redis = this.#context?.redis;
    if (!redis) {
      this.log.debug({ chatId: message.chatId }, "line: a file in a group was ignored (no Redis to hold it)");
      return;
    }
    try {
      await holdMedia(redis, message);
      this.log.debug(
        { chatId: message.chatId, kinds: message.media?.map((m) => m.kind) },
        "line: a file in a group is held for its sender's next mention of the bot",
      );
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "line: could not hold a file sent in a group");
    }
  }

  /**
   * A group message that addresses the bot, with the files its sender posted there just before
   * (and those of the message it quotes), held by {@link #hold}. In a one-to-one chat, or when
   * nothing is held (or Redis fails: logged), the message as it is.
   */
  async #withHeldMedia(message: IncomingMessage, event: webhook.Event): Promise<IncomingMessage> {
    const redis = this.#context?.redis;
    if (message.chatKind !== "group" || !redis) return message;
    const quoted =
      event.type === "message" && event.message.type === "text" ? event.message.quotedMessageId : undefined;
    try {
      const held = await takeHeldMedia(redis, message.chatId, message.userId, quoted);
      if (held.length === 0) return message;
      const media = [...(message.media ?? []), ...held].slice(0, MAX_MEDIA_REFS);
      this.log.debug(
        { chatId: message.chatId, files: held.length },
        "line: held files join the message that addresses the bot",
      );
      return IncomingMessageSchema.parse({ ...message, media });
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "line: could not take the files held for a message");
      return message;
    }
  }

  /** Records a group member who used the bot (for {@link endChat}); failures logged. */
  async #member(at: LineBase): Promise<void> {
    const redis = this.#context?.redis;
    if (at.chatKind !== "group" || !redis || at.userId === at.chatId) return;
    await recordMember(redis, at.chatId, at.userId).catch((error: unknown) =>
      this.log.warn({ error: redact(String(error)) }, "line: could not record a group member"),
    );
  }

  async #enqueue(message: IncomingMessage): Promise<void> {
    await this.#member(message);
    try {
      await this.#context!.enqueue(message);
    } catch (error) {
      this.log.error(
        { chatId: message.chatId, error: redact(String(error)), enqueueError: error instanceof EnqueueError },
        "line: could not queue a message",
      );
      await this.#reply(message, localize(await this.#localeOf(message), TRY_AGAIN_LATER));
    }
  }

  async #command(name: string, args: string, to: LineBase): Promise<void> {
    await this.#member(to);
    const reply = await this.#context!.commands.runReply({
      name,
      args,
      platform: "line",
      chatId: to.chatId,
      chatKind: to.chatKind,
      userId: to.userId,
      userName: to.userName,
      locale: this.config.BOT_LOCALE,
      mention: `@${this.#botName}`,
      isGroupAdmin: () => this.#isMember(to.chatId, to.userId),
    });
    if (reply === undefined) return;
    await this.#reply(to, reply.text, reply.buttons);
  }

  /**
   * A postback (a press on one of the bot's buttons): the core decides (`pressButton`); its notice
   * is the reply (LINE has no toast). An accepted approval needs none: the chat shows the press
   * (`displayText`) and the worker's answer follows, with this press's reply token while it is
   * valid (the message's own token was spent on the prompt), else as a push; after "always allow"
   * that answer starts with the grant's line (the tool always allowed, for how long, how to revoke),
   * so the notice costs no reply token of its own. The pressed message cannot be changed on LINE: a
   * press on a `/reminders` or `/tasks` list's button (quick-reply buttons, gone once one is pressed)
   * is answered with the notice and the list as it is now, with the buttons of what is left in it.
   */
  async #press(data: string, at: LineBase): Promise<void> {
    const context = this.#context!;
    const answer = await context.press({
      data,
      platform: "line",
      chatId: at.chatId,
      userId: at.userId,
      locale: this.config.BOT_LOCALE,
      chatKind: at.chatKind,
      isGroupAdmin: () => this.#isMember(at.chatId, at.userId),
      // An accepted approval is answered by the worker: with this press's reply token while it is valid.
      ...(at.reply?.replyToken && at.reply.replyTokenAt !== undefined
        ? { reply: { replyToken: at.reply.replyToken, replyTokenAt: at.reply.replyTokenAt } }
        : {}),
    });
    if (answer.replaceWith) return this.#reply(at, answer.replaceWith.text, answer.replaceWith.buttons);
    // A `/reminders` or `/tasks` list's button: the notice, then the list as it is now with its buttons
    // (the pressed list cannot be edited, and its quick-reply buttons went with the press).
    if (answer.listing)
      return this.#reply(at, `${markdownLiteral(answer.notice)}\n\n${answer.listing.text}`, answer.listing.buttons);
    if (answer.removeButtons) return;
    // A notice and a closed reminder's text are plain: a name or a reminder's text shows as it is.
    const text = answer.closeText ?? answer.notice;
    if (text) await this.#reply(at, text, [], true);
  }

  /**
   * LINE groups and multi-person chats have no administrators a bot can see: every member may do
   * what a group administrator may elsewhere (`/reset`, `/settings` …). True when `userId` is a
   * member of the group or room now ({@link LineOutbound.isMember}: its member profile can be read);
   * false otherwise, and when that cannot be told.
   */
  async #isMember(chatId: string, userId: string): Promise<boolean> {
    return (await this.outbound.isMember({ chatId }, userId)) === true;
  }

  /** `message` with the sender's display name (profile API, cached for an hour; {@link UNKNOWN_NAME} when unreadable). */
  async #named<T extends LineBase>(message: T): Promise<T> {
    const key = `${message.chatId}|${message.userId}`;
    const cached = this.#names.get(key);
    if (cached && Date.now() - cached.at < NAME_TTL_MS) return { ...message, userName: cached.name };
    let name = UNKNOWN_NAME;
    try {
      const { chatId, userId } = message;
      const profile = chatId.startsWith("C")
        ? await lineCall(
            "getGroupMemberProfile",
            () => this.clients.api.getGroupMemberProfile(encodeURIComponent(chatId), encodeURIComponent(userId)),
            {
              retries: 0,
            },
          )
        : chatId.startsWith("R")
          ? await lineCall(
              "getRoomMemberProfile",
              () => this.clients.api.getRoomMemberProfile(encodeURIComponent(chatId), encodeURIComponent(userId)),
              {
                retries: 0,
              },
            )
          : await lineCall("getProfile", () => this.clients.api.getProfile(encodeURIComponent(userId)), { retries: 0 });
      name = plainLine(profile.displayName, 256) || UNKNOWN_NAME;
      if (this.#names.size > 10_000) this.#names.clear();
      this.#names.set(key, { name, at: Date.now() });
    } catch (error) {
      this.log.debug({ error: redact(String(error)) }, "line: profile not readable");
    }
    return { ...message, userName: name };
  }

  /**
   * Answers the event's chat (with its reply token while it is valid): `text` is Markdown (a
   * command's reply, a listing), or with `plain` shown as it is (a notice, the adapter's own words
   * with people's names). Failures are logged.
   */
  async #reply(to: LineBase, text: string, buttons: NoticeButton[] = [], plain = false): Promise<void> {
    const destination: Destination = {
      conversation: { platform: "line", chatId: to.chatId },
      chatKind: to.chatKind,
      replyTo: to.messageId,
      reply: to.reply,
    };
    try {
      await this.outbound.sendReply(destination, text, buttons, { plain });
    } catch (error) {
      this.log.warn({ chatId: to.chatId, error: redact(String(error)) }, "line: could not answer");
    }
  }
}

/** The first line of the answer to a message of a kind the bot cannot read (a location, a video …). */
const UNREADABLE = { "zh-TW": "這種訊息我還看不懂。", en: "I can't read this kind of message yet." };
