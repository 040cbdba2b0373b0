/**
 * What the Telegram adapter does with each update, however it arrives (long polling or webhook:
 * `adapter.ts`): a message is ignored, hinted at, run as a command, recorded as an album item,
 * or queued (`inbound.ts` decides which); a button press is routed by the core (`context.press`, `pressButton` of
 * `src/buttons.ts`) and its answer rendered here — a toast, the keyboard removed, a reminder
 * closed, a button dropped, a pressed `/reminders` or `/tasks` list shown as it is now.
 *
 * Order: grammY's long polling hands over one update at a time and fetches the next ones only
 * when the handler returns, so a handler that waits holds every chat. Each conversation (a chat,
 * or one topic of it) therefore has a chain ({@link ChatOrder}): a command runs detached on its
 * conversation's chain (it may wait long: `/compact` waits up to 90 s for a worker's summary); a
 * message or button press of a conversation with nothing in flight is handled and awaited as
 * before (grammY confirms the update once the message is queued), and one of a conversation with
 * something in flight waits behind it, detached. So what one person sends in a conversation is
 * handled in the order sent, and other conversations never wait. Stop (`/stop`, the Stop button)
 * is handled at once, outside the chains: it must not wait behind a `/compact` of its chat.
 * {@link TelegramUpdates.settled} waits for the detached work (the adapter's `stop`).
 *
 * Bot API sources: https://core.telegram.org/bots/api#answercallbackquery,
 * https://core.telegram.org/bots/api#editmessagereplymarkup, https://core.telegram.org/bots/api#editmessagetext,
 * https://core.telegram.org/bots/api#getchatmember,
 * https://core.telegram.org/bots/api#setmycommands.
 */
import type { Bot, Context } from "grammy";
import type { Message } from "grammy/types";
import type { AdapterContext } from "../../src/adapter.js";
import { EnqueueError, TRY_AGAIN_LATER } from "../../src/adapter.js";
import { ChatOrder } from "../../src/chat-order.js";
import type { Config } from "../../src/config.js";
import { clientLocale, localize, type Locale } from "../../src/i18n.js";
import { redact, type Logger } from "../../src/log.js";
import { supportedMedia } from "../../src/media/refusal.js";
import {
  conversationKey,
  MAX_INCOMING_TEXT,
  type ConversationRef,
  type IncomingMessage,
} from "../../src/queue/incoming.js";
import { STOP_BUTTON_PREFIX } from "../../src/stop/stops.js";
import { isEntityError, isHarmless } from "./api.js";
import { botCommands } from "./commands.js";
import { markdownToTelegramHtml } from "./html.js";
import { classifyMessage, type InboundDecision, type IncomingMessageBase } from "./inbound.js";
import { isUnauthorized } from "./polling.js";
import type { TelegramOutbound } from "./outbound.js";
import { replyPlace } from "./place.js";
import { htmlToPlain, planChunks, TELEGRAM_TEXT_LIMIT } from "./split.js";

/** The handlers of one bot's updates; see the module comment. */
export class TelegramUpdates {
  /** Each conversation's updates being handled, in order; see the module comment. */
  readonly #order = new ChatOrder();

  constructor(
    private readonly bot: Bot,
    private readonly outbound: TelegramOutbound,
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  /** Registers the message and button handlers on the bot, answering through `context`. */
  install(context: AdapterContext): void {
    this.bot.catch((err) => this.#failed(err.ctx.update.update_id, err.error));
    this.bot.on("message", (ctx) => this.#onMessage(ctx, context));
    this.bot.on("callback_query:data", (ctx) => this.#onButton(ctx, context));
  }

  /**
   * Resolves once the updates being handled detached (commands, and what waits behind them) have
   * been handled, also those detached while it waits. Never rejects: failures were logged.
   */
  settled(): Promise<void> {
    return this.#order.idle();
  }

  #failed(updateId: number, error: unknown): void {
    this.log.error(
      { updateId, error: redact(String((error as Error)?.stack ?? error)) },
      "telegram: update handling failed",
    );
  }

  /**
   * Runs `task` on the chain of conversation `key`: awaited when nothing of that conversation is
   * in flight (as every update was before there were chains), else detached behind what is — and
   * detached in any case with `detach` (a command). A detached failure is logged as `bot.catch`
   * logs an awaited one.
   */
  #inOrder(ctx: Context, key: string, task: () => Promise<void>, detach = false): Promise<void> {
    if (!detach && !this.#order.busy(key)) return this.#order.run(key, task);
    void this.#order.run(key, task).catch((error: unknown) => this.#failed(ctx.update.update_id, error));
    return Promise.resolve();
  }

  /**
   * `setMyCommands` for the default language (`BOT_LOCALE`) and for `zh` and `en` clients. Failures
   * are logged, not fatal, except a 401 (rethrown: the token was rejected).
   */
  async registerCommands(signal: AbortSignal): Promise<void> {
    const abort = signal as unknown as Parameters<Bot["init"]>[0];
    const calls = [
      this.bot.api.setMyCommands(botCommands(this.config.BOT_LOCALE), undefined, abort),
      this.bot.api.setMyCommands(botCommands("zh-TW"), { language_code: "zh" }, abort),
      this.bot.api.setMyCommands(botCommands("en"), { language_code: "en" }, abort),
    ];
    for (const result of await Promise.allSettled(calls)) {
      if (result.status === "rejected" && isUnauthorized(result.reason)) throw result.reason;
      if (result.status === "rejected" && !signal.aborted)
        this.log.warn({ error: redact(String(result.reason)) }, "telegram: setMyCommands failed");
    }
  }

  async #reply(to: IncomingMessageBase, markdown: string): Promise<void> {
    await this.outbound.sendMarkdown(replyPlace(to), markdown);
  }

  /** The language of a notice to `to`'s conversation (its `/settings` language, else `BOT_LOCALE`): read only when one is sent. */
  #localeOf(to: ConversationRef, context: AdapterContext): Promise<Locale> {
    return context.commands.localeOf(to, this.config.BOT_LOCALE);
  }

  /** A message: handled in its conversation's order (a command detached), `/stop` at once; see the module comment. */
  async #onMessage(ctx: Context, context: AdapterContext): Promise<void> {
    const message = ctx.message!;
    const key = orderKey(message.chat.id, message);
    const moved = migrationOf(message);
    if (moved) {
      // A group upgraded to a supergroup: its conversation moves to the new chat id (idempotent; the other service message or a worker's 400 may do it first).
      return this.#inOrder(ctx, key, async () => {
        this.log.info(moved, "telegram: a group was upgraded to a supergroup");
        await context.migrateConversation?.(
          { platform: "telegram", chatId: moved.from },
          { platform: "telegram", chatId: moved.to },
        );
      });
    }
    const decision = classifyMessage(message, ctx.me);
    if (decision.kind === "ignore") {
      this.log.debug({ chatId: ctx.chat?.id, reason: decision.reason }, "telegram: message ignored");
      return;
    }
    // Stop must act while the answer it stops is being written, also behind a `/compact` of its chat.
    if (decision.kind === "command" && decision.command === STOP_COMMAND) return this.#command(decision, context);
    return this.#inOrder(ctx, key, () => this.#handleMessage(decision, context), decision.kind === "command");
  }

  /** What a message was classified as is done: a hint, a command, an album item recorded, or the message queued. */
  async #handleMessage(decision: Exclude<InboundDecision, { kind: "ignore" }>, context: AdapterContext): Promise<void> {
    switch (decision.kind) {
      case "unaddressed":
        // A group whose replies are set to `all` (`/settings`) takes every text message.
        if (!(await context.repliesToAll(decision.message))) {
          this.log.debug({ chatId: decision.message.chatId, reason: "not addressed" }, "telegram: message ignored");
          return;
        }
        return this.#enqueue(decision.message, context);
      case "hint": {
        const locale = await this.#localeOf(decision.message, context);
        await this.#reply(
          decision.message,
          decision.reason === "media"
            ? `${localize(locale, UNREADABLE)}\n${supportedMedia(locale, this.config.MAX_IMAGES_PER_MESSAGE)}`
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
        return this.#command(decision, context);
      case "album_item":
        // Recorded for its album (the captioned item that mentions the bot is queued with it); never answered alone.
        await context.albums
          ?.add(decision.message, false)
          .catch((error: unknown) =>
            this.log.warn(
              { chatId: decision.message.chatId, error: redact(String(error)) },
              "telegram: could not record an album item",
            ),
          );
        return;
      case "enqueue":
        return this.#enqueue(decision.message, context);
    }
  }

  /** Queues a message (of an album, only the first item that addresses the bot: the worker gathers the rest); a failure is answered with "try again". */
  async #enqueue(message: IncomingMessage, context: AdapterContext): Promise<void> {
    try {
      if (message.mediaGroupId && context.albums && !(await context.albums.add(message, true))) return;
      await context.enqueue(message);
    } catch (error) {
      this.log.error(
        { chatId: message.chatId, error: redact(String(error)), enqueueError: error instanceof EnqueueError },
        "telegram: could not queue a message",
      );
      await this.#reply(message, localize(await this.#localeOf(message, context), TRY_AGAIN_LATER));
    }
  }

  async #command(
    decision: Extract<ReturnType<typeof classifyMessage>, { kind: "command" }>,
    context: AdapterContext,
  ): Promise<void> {
    const to = decision.message;
    const chatId = Number(to.chatId);
    const reply = await context.commands.runReply({
      name: decision.command,
      args: decision.args,
      platform: "telegram",
      chatId: to.chatId,
      chatKind: to.chatKind,
      topicId: to.topicId,
      userId: to.userId,
      userName: to.userName,
      locale: this.config.BOT_LOCALE,
      clientLocale: clientLocale(to.locale),
      mention: `@${this.bot.botInfo.username}`,
      isGroupAdmin: () => this.#isGroupAdmin({ id: chatId, type: "supergroup" }, to.userId),
      readsAllGroupMessages: () => this.#readsAllGroupMessages(),
    });
    if (reply === undefined) return;
    if (reply.buttons?.length) await this.#sendWithButtons(to, reply.text, reply.buttons, context);
    else await this.#reply(to, reply.text);
  }

  /**
   * Sends a command's reply with one inline button per row (e.g. `/reminders` cancel buttons): the
   * Markdown split and sent as an ordinary answer (`sendMarkdown`: messages of at most 4096 UTF-16
   * units), the buttons under the last message, at most {@link MAX_KEYBOARD_BUTTONS} of them (the
   * rest dropped, logged). When sending fails (after grammY's retries) the failure is logged and the
   * user gets a short "could not send this, try again" instead of nothing; a failure of that notice
   * too is thrown (logged by `bot.catch`).
   */
  async #sendWithButtons(
    to: IncomingMessageBase,
    markdown: string,
    buttons: { label: string; data: string }[],
    context: AdapterContext,
  ): Promise<void> {
    if (buttons.length > MAX_KEYBOARD_BUTTONS)
      this.log.warn(
        { chatId: to.chatId, buttons: buttons.length, kept: MAX_KEYBOARD_BUTTONS },
        "telegram: a reply had more buttons than a keyboard takes; the rest were dropped",
      );
    const keyboard = {
      inline_keyboard: buttons.slice(0, MAX_KEYBOARD_BUTTONS).map((b) => [{ text: b.label, callback_data: b.data }]),
    };
    try {
      await this.outbound.sendMarkdown(replyPlace(to), markdown, { keyboard });
    } catch (error) {
      this.log.error({ chatId: to.chatId, error: redact(String(error)) }, "telegram: could not send a command's reply");
      await this.#reply(to, localize(await this.#localeOf(to, context), NOT_SENT));
    }
  }

  /**
   * A press on one of the bot's buttons: handled in the pressed message's conversation's order, a
   * Stop button at once; see the module comment.
   */
  #onButton(ctx: Context, context: AdapterContext): Promise<void> {
    const query = ctx.callbackQuery!;
    // Stop must act while the answer it stops is being written, also behind a `/compact` of its chat.
    if ((query.data ?? "").startsWith(STOP_BUTTON_PREFIX)) return this.#press(ctx, context);
    const key = orderKey(query.message?.chat.id ?? query.from.id, query.message);
    return this.#inOrder(ctx, key, () => this.#press(ctx, context));
  }

  /**
   * A press on one of the bot's buttons (approval, reminder, Stop, `/permissions`, `/memory`): the core decides
   * (`pressButton`); here its answer is rendered: the toast, then the pressed message's keyboard
   * removed, the message closed to a text, or the pressed button dropped from the list. The
   * pressed message's conversation is its chat and, in a topic, its thread.
   */
  async #press(ctx: Context, context: AdapterContext): Promise<void> {
    const query = ctx.callbackQuery!;
    const data = query.data ?? "";
    const message = query.message;
    const topic = message ? topicOf(message) : undefined;
    const answer = await context.press({
      data,
      platform: "telegram",
      chatId: String(message?.chat.id ?? query.from.id),
      ...(topic ? { topicId: topic } : {}),
      userId: String(query.from.id),
      locale: this.config.BOT_LOCALE,
      ...(message
        ? {
            chatKind: message.chat.type === "private" ? ("dm" as const) : ("group" as const),
            isGroupAdmin: () => this.#isGroupAdmin(message.chat, String(query.from.id)),
          }
        : {}),
      readsAllGroupMessages: () => this.#readsAllGroupMessages(),
    });
    try {
      await ctx.answerCallbackQuery({ text: answer.notice });
    } catch (error) {
      if (!isHarmless(error)) throw error;
    }
    if (!message) return;
    const ref = { chatId: String(message.chat.id), messageId: String(message.message_id) };
    if (answer.removeButtons) {
      await this.outbound.removeKeyboard(ref);
    } else if (answer.replaceWith) {
      const { text, buttons = [] } = answer.replaceWith;
      await this.bot.api
        .editMessageText(ref.chatId, Number(ref.messageId), markdownToTelegramHtml(text), {
          parse_mode: "HTML",
          reply_markup: { inline_keyboard: buttons.map((b) => [{ text: b.label, callback_data: b.data }]) },
        })
        .catch((error: unknown) =>
          this.log.debug({ error: redact(String(error)) }, "telegram: could not show the settings after a press"),
        );
    } else if (answer.closeText) {
      await this.outbound
        .closeReminder(ref, answer.closeText)
        .catch((error: unknown) =>
          this.log.warn({ error: redact(String(error)) }, "telegram: could not close the pressed message"),
        );
    } else if (answer.listing) {
      await this.#showList(ref, message, answer.listing);
    } else if (answer.dropButton) {
      const rows = (message.reply_markup?.inline_keyboard ?? [])
        .map((row) => row.filter((b) => !("callback_data" in b) || b.callback_data !== data))
        .filter((row) => row.length > 0);
      await this.bot.api
        .editMessageReplyMarkup(ref.chatId, Number(ref.messageId), { reply_markup: { inline_keyboard: rows } })
        .catch((error: unknown) =>
          this.log.debug({ error: redact(String(error)) }, "telegram: could not drop the pressed button"),
        );
    }
  }

  /**
   * Shows a pressed `/reminders` or `/tasks` list as it is now (`ButtonAnswer.listing`). When the
   * pressed message is the whole list (its text has the list's first line, or the list is now
   * empty) and the list still fits one message (4096 UTF-16 units of visible text, `planChunks`),
   * the message is edited to it with its buttons (Bot API `editMessageText` with `reply_markup`;
   * plain text when Telegram rejects the HTML). A list split over several messages (the pressed one
   * is its last part, under which the buttons are), or one that has grown past one message, keeps
   * its text: only its buttons are replaced (`editMessageReplyMarkup`), so the cancelled item's
   * buttons go and a paused task's Pause becomes Resume; `/reminders` or `/tasks` again shows the
   * current text. Failures ("message is not modified", a message too old to edit) are logged, never thrown.
   */
  async #showList(
    ref: { chatId: string; messageId: string },
    pressed: { text?: string },
    listing: { text: string; buttons?: { label: string; data: string }[] },
  ): Promise<void> {
    const buttons = listing.buttons ?? [];
    const keyboard = {
      inline_keyboard: buttons.slice(0, MAX_KEYBOARD_BUTTONS).map((b) => [{ text: b.label, callback_data: b.data }]),
    };
    const chunks = planChunks(listing.text, TELEGRAM_TEXT_LIMIT);
    const firstLine = htmlToPlain(chunks[0]?.html ?? "").split("\n")[0] ?? "";
    const whole = chunks.length === 1 && (buttons.length === 0 || (pressed.text ?? "").startsWith(firstLine));
    const { api } = this.bot;
    try {
      if (!whole) {
        await api.editMessageReplyMarkup(ref.chatId, Number(ref.messageId), { reply_markup: keyboard });
        return;
      }
      try {
        await api.editMessageText(ref.chatId, Number(ref.messageId), chunks[0]!.html, {
          parse_mode: "HTML",
          reply_markup: keyboard,
          link_preview_options: { is_disabled: true },
        });
      } catch (error) {
        if (!isEntityError(error)) throw error;
        await api.editMessageText(ref.chatId, Number(ref.messageId), chunks[0]!.plain, {
          reply_markup: keyboard,
          link_preview_options: { is_disabled: true },
        });
      }
    } catch (error) {
      this.log.debug({ error: redact(String(error)) }, "telegram: could not show the pressed list as it is now");
    }
  }

  /**
   * Whether the bot receives a group's messages that do not address it: `getMe`'s
   * `can_read_all_group_messages` (false while BotFather's privacy mode is on), asked now (the
   * operator may have changed it since start-up). False when `getMe` fails.
   */
  async #readsAllGroupMessages(): Promise<boolean> {
    try {
      return (await this.bot.api.getMe()).can_read_all_group_messages;
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "telegram: getMe failed");
      return false;
    }
  }

  /**
   * Whether `userId` administers the group `chat` (Bot API `getChatMember` status `creator` or
   * `administrator`); false for a private chat, an anonymous sender (`chat:<id>`) and on any error.
   */
  async #isGroupAdmin(chat: { id: number; type: string }, userId: string): Promise<boolean> {
    if (chat.type === "private" || chat.id > 0 || !/^\d+$/.test(userId)) return false;
    try {
      const member = await this.bot.api.getChatMember(chat.id, Number(userId));
      return member.status === "creator" || member.status === "administrator";
    } catch (error) {
      this.log.debug({ error: redact(String(error)) }, "telegram: getChatMember failed");
      return false;
    }
  }
}

/**
 * The move a service message reports, when it is one: `migrate_to_chat_id` (sent in the old
 * group) or `migrate_from_chat_id` (sent in the new supergroup), as old and new chat id
 * (https://core.telegram.org/bots/api#message).
 */
export function migrationOf(message: {
  chat: { id: number };
  migrate_to_chat_id?: number;
  migrate_from_chat_id?: number;
}): { from: string; to: string } | undefined {
  if (message.migrate_to_chat_id !== undefined)
    return { from: String(message.chat.id), to: String(message.migrate_to_chat_id) };
  if (message.migrate_from_chat_id !== undefined)
    return { from: String(message.migrate_from_chat_id), to: String(message.chat.id) };
  return undefined;
}

/** The command that is handled at once, outside its conversation's order (see the module comment). */
const STOP_COMMAND = "stop";

/**
 * The topic of a message that belongs to one (`is_topic_message`: a forum topic, or a topic of a
 * private chat), as `inbound.ts` tells a conversation; undefined otherwise (also for a message
 * Telegram no longer shows the bot, whose fields are gone).
 */
function topicOf(message: object): string | undefined {
  const { is_topic_message: inTopic, message_thread_id: thread } = message as Partial<Message>;
  return inTopic && thread !== undefined ? String(thread) : undefined;
}

/** The key that orders a conversation's updates: its {@link conversationKey}. */
function orderKey(chatId: number, message: object | undefined): string {
  const topic = message ? topicOf(message) : undefined;
  return conversationKey({ platform: "telegram", chatId: String(chatId), ...(topic ? { topicId: topic } : {}) });
}

/**
 * Most buttons on one inline keyboard. The Bot API spec states no limit; Telegram refuses a larger
 * keyboard with `400: Bad Request: reply markup is too long` (100 buttons is its known ceiling).
 */
export const MAX_KEYBOARD_BUTTONS = 100;

/** The short answer when a command's reply could not be sent (see `#sendWithButtons`). */
const NOT_SENT = {
  "zh-TW": "抱歉，這個回覆沒能送出，請稍後再試一次。",
  en: "Sorry, I could not send this reply. Please try again in a moment.",
};

/** The first line of the answer to a message of a kind the bot cannot read (a sticker, a location …). */
const UNREADABLE = { "zh-TW": "這種訊息我還看不懂。", en: "I can't read this kind of message yet." };
