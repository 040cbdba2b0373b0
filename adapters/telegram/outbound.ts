/**
 * The Telegram outbound half: answers, typing and approval prompts over the Bot API (REST only),
 * usable in a worker-only process.
 */
import { TelegramMedia } from "./media.js";
import { InputFile, type Api } from "grammy";
import type { InlineKeyboardMarkup, Message } from "grammy/types";
import type { Config } from "../../src/config.js";
import { redact, type Logger } from "../../src/log.js";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type {
  ApprovalPrompt,
  Destination,
  NoticeButton,
  Outbound,
  ReminderMessage,
  SentRef,
  VoiceReply,
} from "../../src/outbound.js";
import type { ConversationRef } from "../../src/queue/incoming.js";
import { approvalKeyboard, approvalOutcomeHtml, approvalPromptHtml } from "./approval.js";
import { chatMigrations, isEntityError, isHarmless } from "./api.js";
import { escapeHtml } from "./html.js";
import { translated } from "./errors.js";
import { reminderHtml, reminderKeyboard } from "./reminder.js";
import { TELEGRAM_TEXT_LIMIT, planChunks, visibleLength, type TelegramChunk } from "./split.js";
import type { EditingSurface, LiveSurfaceOptions } from "../../src/streaming.js";
import { telegramSurface } from "./live.js";
import { placement, telegramPlace, type TelegramDestination } from "./place.js";

/**
 * An inline mention of a user as Telegram HTML (`<a href="tg://user?id=…">name</a>`, which the Bot
 * API turns into a `text_mention` notifying only them) and a space, or "" when `mention` is absent.
 * Source: https://core.telegram.org/bots/api#formatting-options ("inline mention of a user").
 */
export function mentionHtml(mention: TelegramDestination["mention"]): string {
  return mention ? `<a href="tg://user?id=${mention.userId}">${escapeHtml(mention.userName)}</a> ` : "";
}

/**
 * The Telegram {@link Outbound}. Failures that remain after grammY's retries are thrown as the core's
 * errors (`telegramError` of `errors.ts`: rate limited, unavailable, chat unreachable, message gone, refused).
 */
export class TelegramOutbound implements Outbound {
  readonly platform = "telegram" as const;
  /**
   * Markdown of up to 2000 UTF-16 units always goes out as one message: its visible text stays
   * under 4096 even where rendering grows it (renumbered lists, table cells padded in <pre>).
   */
  readonly singleChunkUnits = 2000;

  /** Downloads the files of incoming messages (`getFile` + the Bot API's file endpoint). */
  readonly media: TelegramMedia;

  /**
   * @param api - a grammy Api with auto-retry installed (see `createApi`).
   */
  readonly #migrationListeners: ((from: ConversationRef, to: ConversationRef) => void)[] = [];

  constructor(
    readonly api: Api,
    private readonly config: Config,
    private readonly log: Logger,
  ) {
    this.media = new TelegramMedia(api, config);
    api.config.use(
      chatMigrations((from, to) => {
        this.log.warn({ from, to }, "telegram: the group was upgraded to a supergroup; sending to its new chat id");
        for (const listener of this.#migrationListeners)
          listener({ platform: "telegram", chatId: from }, { platform: "telegram", chatId: to });
      }),
    );
  }

  /** {@inheritDoc Outbound.onChatMigrated} Told by the `chatMigrations` transformer of this outbound's api. */
  onChatMigrated(listener: (from: ConversationRef, to: ConversationRef) => void): void {
    this.#migrationListeners.push(listener);
  }

  /**
   * Sends Markdown as Telegram HTML, split into messages of at most 4096 UTF-16 units of visible
   * text (see `planChunks`), in order. A chunk whose HTML Telegram rejects ("can't parse entities")
   * is sent again as plain text.
   *
   * @param options.skip - chunks already sent by an earlier attempt; they are not sent again.
   * @param options.onSent - awaited after each chunk with its index and reference.
   * @param options.keyboard - inline buttons shown under the last message (e.g. `/reminders` cancel buttons).
   * @returns the messages sent now; empty when the text has nothing visible.
   * @throws the core's errors (`translated`) when a chunk cannot be sent; the chunks before it stay sent.
   */
  async sendMarkdown(
    to: TelegramDestination,
    markdown: string,
    options: {
      skip?: number;
      onSent?: (index: number, ref: SentRef) => Promise<void> | void;
      keyboard?: InlineKeyboardMarkup;
    } = {},
  ): Promise<SentRef[]> {
    // A mention goes in front of the first chunk, within its limit.
    const mention = mentionHtml(to.mention);
    const chunks = planChunks(markdown, TELEGRAM_TEXT_LIMIT - visibleLength(mention));
    if (mention && chunks[0])
      chunks[0] = { html: mention + chunks[0].html, plain: `${to.mention!.userName} ${chunks[0].plain}` };
    if (chunks.length === 0)
      this.log.warn({ chatId: to.chatId }, "telegram: an answer with no visible text was not sent");
    const refs: SentRef[] = [];
    for (const [index, chunk] of chunks.entries()) {
      if (index < (options.skip ?? 0)) continue;
      const last = index === chunks.length - 1;
      const ref = await translated("sendAnswer", () =>
        this.sendChunk(to, chunk, index, last ? options.keyboard : undefined),
      );
      refs.push(ref);
      await options.onSent?.(index, ref);
    }
    return refs;
  }

  /**
   * Sends one chunk of an answer as HTML; when Telegram rejects the HTML ("can't parse entities"),
   * sends its plain text instead. Replies to `to.replyTo` (groups) in `to.threadId` (topics).
   *
   * @param keyboard - inline buttons under the message, kept on the plain-text fallback.
   */
  async sendChunk(
    to: TelegramDestination,
    chunk: TelegramChunk,
    index: number,
    keyboard?: InlineKeyboardMarkup,
  ): Promise<SentRef> {
    const common = { ...placement(to), ...(keyboard ? { reply_markup: keyboard } : {}) };
    let message: Message.TextMessage;
    try {
      message = await this.api.sendMessage(to.chatId, chunk.html, {
        ...common,
        parse_mode: "HTML",
        link_preview_options: { is_disabled: true },
      });
    } catch (error) {
      if (!isEntityError(error)) throw error;
      this.log.warn(
        { chatId: to.chatId, chunk: index, error: (error as Error).message },
        "telegram rejected the HTML; sending the chunk as plain text",
      );
      message = await this.api.sendMessage(to.chatId, chunk.plain, {
        ...common,
        link_preview_options: { is_disabled: true },
      });
    }
    return { chatId: String(message.chat.id), messageId: String(message.message_id) };
  }

  /**
   * {@inheritDoc Outbound.liveSurface} Private chats: drafts (`sendMessageDraft`, Bot API 9.3), then
   * the formatted answer as normal messages; groups: a reply edited as text arrives (see `live.ts`).
   */
  liveSurface(to: Destination, options: LiveSurfaceOptions = {}): EditingSurface<TelegramChunk> {
    return telegramSurface(
      this.api,
      to,
      telegramPlace(to),
      (dest, chunk, index) => this.sendChunk(dest, chunk, index),
      this.log,
      options,
    );
  }

  /** {@inheritDoc Outbound.sendAnswer} Lengths are UTF-16 code units of the visible text. */
  sendAnswer(
    to: Destination,
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    return this.sendMarkdown(telegramPlace(to), text, options);
  }

  /** Voice messages are Ogg Opus (https://core.telegram.org/bots/api#sendvoice: "the audio must be in an .OGG file encoded with OPUS"). */
  readonly voiceFormat = "opus" as const;

  /**
   * {@inheritDoc Outbound.sendVoice} Bot API `sendVoice`, uploaded as `multipart/form-data` (grammY's
   * `InputFile`, named `voice.ogg`) with its whole `duration` in seconds (at least 1), placed as an
   * answer is (a reply in groups, its topic).
   */
  async sendVoice(to: Destination, voice: VoiceReply): Promise<SentRef> {
    const place = telegramPlace(to);
    const message = await translated("sendVoice", () =>
      this.api.sendVoice(place.chatId, new InputFile(voice.audio, "voice.ogg"), {
        ...placement(place),
        duration: Math.max(1, Math.round(voice.seconds)),
      }),
    );
    return { chatId: String(message.chat.id), messageId: String(message.message_id) };
  }

  /** Bot API `sendChatAction` with `typing` (shown for about 5 s, or until the next message). */
  async sendTyping(to: Destination): Promise<void> {
    await translated("sendTyping", () =>
      this.api.sendChatAction(
        to.conversation.chatId,
        "typing",
        to.reply?.threadId ? { message_thread_id: Number(to.reply.threadId) } : {},
      ),
    );
  }

  /**
   * Posts the approval prompt with 確認 / 取消 buttons (`callback_data` `ap:<id>:y|n`, ≤ 64 bytes),
   * and 一律允許 (`ap:<id>:a`) when `prompt.alwaysAllow`.
   * @throws {Error} when the approval id does not fit the callback data; grammy errors on send failures.
   */
  async sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    const dest = telegramPlace(to);
    const keyboard = approvalKeyboard(
      prompt.approvalId,
      prompt.locale ?? this.config.BOT_LOCALE,
      prompt.alwaysAllow === true,
    );
    const message = await translated("sendApprovalPrompt", () =>
      this.api.sendMessage(dest.chatId, mentionHtml(dest.mention) + approvalPromptHtml(prompt, this.config), {
        parse_mode: "HTML",
        reply_markup: keyboard,
        ...placement(dest),
      }),
    );
    return { chatId: String(message.chat.id), messageId: String(message.message_id) };
  }

  /**
   * Edits the prompt to `text` with an outcome mark and no keyboard (`editMessageText` without
   * `reply_markup` removes it). "Message is not modified" and a deleted prompt are not failures.
   */
  async closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict, text: string): Promise<void> {
    await translated("closeApprovalPrompt", async () => {
      try {
        await this.api.editMessageText(prompt.chatId, Number(prompt.messageId), approvalOutcomeHtml(outcome, text), {
          parse_mode: "HTML",
        });
      } catch (error) {
        if (!isHarmless(error)) throw error;
        this.log.debug({ prompt, error: (error as Error).message }, "telegram: approval prompt edit was not needed");
      }
    });
  }

  /**
   * {@inheritDoc Outbound.sendReminder} Sent as HTML with `message_thread_id` of the topic.
   * @throws {ChatUnreachableError} for 403 and "chat not found" (see `isChatGone` of `errors.ts`).
   */
  async sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    const { chatId, topicId } = reminder.conversation;
    const message = await translated("sendReminder", () =>
      this.api.sendMessage(chatId, reminderHtml(reminder), {
        parse_mode: "HTML",
        reply_markup: reminderKeyboard(reminder.token, reminder.locale ?? this.config.BOT_LOCALE),
        link_preview_options: { is_disabled: true },
        ...(topicId ? { message_thread_id: Number(topicId) } : {}),
      }),
    );
    return { chatId: String(message.chat.id), messageId: String(message.message_id) };
  }

  /** {@inheritDoc Outbound.closeReminder} `editMessageText` without `reply_markup` removes the keyboard. */
  async closeReminder(message: SentRef, text: string): Promise<void> {
    await translated("closeReminder", async () => {
      try {
        await this.api.editMessageText(message.chatId, Number(message.messageId), escapeHtml(text), {
          parse_mode: "HTML",
        });
      } catch (error) {
        if (!isHarmless(error)) throw error;
        this.log.debug({ message, error: (error as Error).message }, "telegram: reminder edit was not needed");
      }
    });
  }

  /** {@inheritDoc Outbound.sendNotice} HTML (the text escaped), one button per row, in the topic of `to`. */
  async sendNotice(to: Destination, text: string, buttons: NoticeButton[]): Promise<SentRef> {
    const dest = telegramPlace(to);
    const message = await translated("sendNotice", () =>
      this.api.sendMessage(dest.chatId, mentionHtml(dest.mention) + escapeHtml(text), {
        parse_mode: "HTML",
        ...(buttons.length > 0
          ? { reply_markup: { inline_keyboard: buttons.map((b) => [{ text: b.label, callback_data: b.data }]) } }
          : {}),
        link_preview_options: { is_disabled: true },
        ...placement(dest),
      }),
    );
    return { chatId: String(message.chat.id), messageId: String(message.message_id) };
  }

  /** See {@link Outbound.isMember}; a request made on behalf of the group itself (`chat:<id>`) is always a member. */
  async isMember(place: { chatId: string }, userId: string): Promise<boolean | undefined> {
    if (userId.startsWith("chat:")) return true;
    try {
      const member = await this.api.getChatMember(place.chatId, Number(userId));
      if (member.status === "restricted") return member.is_member;
      return member.status === "creator" || member.status === "administrator" || member.status === "member";
    } catch (error) {
      this.log.warn({ error: redact((error as Error).message) }, "telegram: getChatMember failed; membership unknown");
      return undefined;
    }
  }

  /** Removes the keyboard of a prompt at once (after an accepted press). Never throws. */
  async removeKeyboard(prompt: SentRef): Promise<void> {
    try {
      await this.api.editMessageReplyMarkup(prompt.chatId, Number(prompt.messageId), { reply_markup: undefined });
    } catch (error) {
      if (!isHarmless(error))
        this.log.warn({ prompt, error: (error as Error).message }, "telegram: could not remove the approval keyboard");
    }
  }
}
