/**
 * Discord gateway events: messages (DMs always; guild channels and threads when the bot is
 * mentioned or replied to, see `inbound.ts`; the bot itself, other bots, webhooks and system
 * messages are ignored; a forwarded message's text is the question, marked as someone else's
 * words) become jobs; a ✅/❌ reaction on an approval prompt decides it.
 *
 * Reactions are read from the raw gateway event MESSAGE_REACTION_ADD, not from discord.js's
 * `messageReactionAdd`: discord.js drops a reaction whose DM channel it has not cached (the event
 * carries no channel type), which is every DM after the adapter restarted. The channel and
 * message are fetched (cache, else `GET /channels/{id}` and `GET …/messages/{id}`).
 *
 * A reaction on a prompt that was decided already (its edit failed, so it still shows its buttons
 * and reactions) is told how it was decided, as a press on its button is told ephemerally; so is
 * the requester's reaction on a prompt that expired (or is otherwise gone) without its edit: it
 * expired. A reaction has no interaction to answer, so the notice is a reply to the prompt, in a
 * guild channel after a mention that notifies only the person who reacted, and at most one per
 * prompt (see {@link DiscordMessages.onReaction}).
 */
import { Routes, type Client, type GatewayMessageReactionAddDispatchData, type Message } from "discord.js";
import type { AdapterContext } from "../../src/adapter.js";
import { EnqueueError, TRY_AGAIN_LATER } from "../../src/adapter.js";
import { decisionNotice, type DecisionResult } from "../../src/approvals/decider.js";
import { CLOSED_APPROVAL_ID, parseApprovalButton } from "../../src/buttons.js";
import type { Config } from "../../src/config.js";
import { localize, type Locale } from "../../src/i18n.js";
import type { Logger } from "../../src/log.js";
import { forwardedText } from "../../src/prompts.js";
import {
  IncomingMessageSchema,
  isBlankText,
  MAX_INCOMING_TEXT,
  type IncomingMessage,
} from "../../src/queue/incoming.js";
import { reactionDecision } from "./approval.js";
import { attachmentsOf, authorName, forwardsOf, isAddressed, textForModel } from "./inbound.js";
import { plainContent } from "./plain.js";

/** Most prompts remembered as told "already decided" or "expired" ({@link DiscordMessages.onReaction}); past it the memory starts over. */
const TOLD_MAX = 10_000;

/** The message and reaction handlers of one client; see the module comment. */
export class DiscordMessages {
  #warnedContentIntent = false;
  /** Prompts (message ids) whose "already decided" or "expired" notice was replied to a reaction: one reply per prompt. */
  readonly #told = new Set<string>();

  constructor(
    private readonly client: Client,
    private readonly context: AdapterContext,
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  /**
   * A ✅/❌ on one of the bot's approval prompts decides it, in guilds and DMs alike, whether or
   * not discord.js has the channel or message cached (raw MESSAGE_REACTION_ADD, see the module comment).
   * Someone else's reaction on an open prompt in a guild is taken away. When anyone reacts on a
   * prompt that was decided already, or its requester on one that expired or is gone (`not_found`,
   * `lost`: its edit failed, so it still shows its reactions; the requester is the author of the
   * message it replies to, or the one its first words mention, and the only other person in a DM),
   * the prompt is replied to with what a press is told (`decisionNotice`, in the conversation's
   * language), once per prompt in this process: reacting again says nothing more, so a channel is
   * not filled with notices. Never throws (failures are logged).
   */
  async onReaction(data: GatewayMessageReactionAddDispatchData): Promise<void> {
    const { client } = this;
    if (!client.user || data.user_id === client.user.id) return;
    const approve = reactionDecision(data.emoji.name);
    if (approve === undefined) return;
    // Discord names the reacted message's author; when it is someone else there is nothing to fetch.
    if (data.message_author_id !== undefined && data.message_author_id !== client.user.id) return;
    let message: Message;
    try {
      const channel = await client.channels.fetch(data.channel_id);
      if (!channel?.isTextBased()) return;
      message = await channel.messages.fetch(data.message_id);
    } catch (err) {
      this.log.warn(
        { err, chatId: data.channel_id, messageId: data.message_id },
        "a ✅/❌ reaction on a message that could not be fetched; ignored",
      );
      return;
    }
    if (message.author?.id !== client.user.id) return;
    const approvalId = approvalIdOf(message);
    if (!approvalId || approvalId === CLOSED_APPROVAL_ID) return;
    let result: DecisionResult;
    try {
      result = await this.context.decide({
        approvalId,
        platform: "discord",
        deciderId: data.user_id,
        approve,
      });
    } catch (err) {
      this.log.error({ err }, "approval decision by reaction failed");
      await this.#reply(message, tryAgain(await this.#localeOf(message.channelId)));
      return;
    }
    this.log.info(
      { via: "reaction", deciderId: data.user_id, status: result.status },
      `approval reaction: ${result.status}`,
    );
    const inGuild = data.guild_id !== undefined;
    if (
      result.status === "already_decided" ||
      ((result.status === "not_found" || result.status === "lost") &&
        (!inGuild || requesterOf(message) === data.user_id))
    ) {
      await this.#tellOnce(message, data.user_id, inGuild, result);
      return;
    }
    if (result.status === "not_requester" && data.guild_id) {
      // Someone else's ✅/❌ changes nothing; take it away so the prompt does not look decided (not possible in DMs).
      const route = Routes.channelMessageUserReaction(
        data.channel_id,
        data.message_id,
        encodeURIComponent(data.emoji.name!),
        data.user_id,
      );
      await client.rest
        .delete(route)
        .catch((err: unknown) => this.log.debug({ err }, "could not remove a reaction (Manage Messages permission?)"));
    }
  }

  async onMessage(message: Message): Promise<void> {
    const { client, context } = this;
    if (!client.user) return;
    const botId = client.user.id;
    if (message.author.id === botId || message.author.bot || message.webhookId || message.system) return;
    const dm = !message.inGuild();
    const addressed = dm || isAddressed(message, botId);
    // A channel whose replies are set to `all` (`/settings`) takes every text message.
    if (
      !addressed &&
      (message.content.trim() === "" ||
        !(await context.repliesToAll({ platform: "discord", chatId: message.channelId, chatKind: "group" })))
    )
      return;
    // The language of a notice in this channel, read only when one is sent (not for every message).
    const localeHere = () => this.#localeOf(message.channelId);

    // A forward's text is the question, marked as someone else's words (see src/prompts.ts).
    const forwards = forwardsOf(message);
    const own = textForModel(message, botId);
    const text = forwards.some((f) => f.text.trim() !== "") ? forwardedText(forwards, own) : own;
    const media = attachmentsOf(message);
    // Whitespace and invisible characters alone (zero-width spaces…) are no question either.
    if (isBlankText(text) && media.length === 0) {
      const nothing = forwards.length === 0 && message.content === "" && message.embeds.length === 0;
      if (!dm && nothing && !this.#warnedContentIntent) {
        this.#warnedContentIntent = true;
        this.log.warn(
          "a message mentioning the bot arrived with empty content: the Message Content intent is " +
            "not in effect. Enable it in the Discord Developer Portal → your application → Bot → " +
            "Privileged Gateway Intents → Message Content Intent, then restart the bot.",
        );
      }
      const locale = await localeHere();
      const hint = forwards.some((f) => f.attachments > 0)
        ? localize(locale, {
            "zh-TW": "轉傳訊息裡的附件我讀不到：請直接把檔案傳給我，或用文字告訴我你需要什麼。",
            en: "I can't read the attachments of a forwarded message: send me the file itself, or tell me in words what you need.",
          })
        : localize(locale, {
            "zh-TW": "請在訊息裡寫下你的問題，例如「明天臺北會下雨嗎？」",
            en: 'Please write your question in the message, e.g. "Will it rain in Taipei tomorrow?"',
          });
      await this.#reply(message, hint);
      return;
    }
    if (text.length > MAX_INCOMING_TEXT) {
      await this.#reply(
        message,
        localize(
          await localeHere(),
          {
            "zh-TW": "訊息太長了（上限 {max} 字），請縮短後再試一次。",
            en: "That message is too long (limit {max} characters); please shorten it.",
          },
          { max: MAX_INCOMING_TEXT },
        ),
      );
      return;
    }
    const parsed = IncomingMessageSchema.safeParse({
      platform: "discord",
      chatId: message.channelId,
      chatKind: dm ? "dm" : "group",
      userId: message.author.id,
      userName: authorName(message),
      text,
      ...(media.length > 0 ? { media } : {}),
      messageId: message.id,
      sentAt: message.createdTimestamp,
      reply: dm ? {} : { guildId: message.guildId },
      ...(forwards.length > 0 ? { forwarded: true } : {}),
    });
    if (!parsed.success) {
      // Should not happen (the checks above cover the schema); never leave the person unanswered.
      this.log.error(
        { issues: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`) },
        "a message could not be normalised",
      );
      await this.#reply(message, tryAgain(await localeHere()));
      return;
    }
    const incoming: IncomingMessage = parsed.data;
    try {
      await context.enqueue(incoming);
    } catch (err) {
      this.log.error(
        { err, chatId: incoming.chatId },
        err instanceof EnqueueError ? "could not queue a message" : "unexpected error while queueing a message",
      );
      await this.#reply(message, tryAgain(await localeHere()));
    }
  }

  /**
   * Replies to `prompt` with what a press is told of `result` (how it was decided, or that it
   * expired; see {@link onReaction}), in a guild after a mention of `userId` that notifies only
   * them; nothing when this prompt was replied to so before. A failed reply is logged.
   */
  async #tellOnce(prompt: Message, userId: string, inGuild: boolean, result: DecisionResult): Promise<void> {
    if (this.#told.has(prompt.id)) return;
    if (this.#told.size >= TOLD_MAX) this.#told.clear();
    this.#told.add(prompt.id);
    const notice = plainContent(decisionNotice(result, await this.#localeOf(prompt.channelId)));
    try {
      await prompt.reply({
        content: inGuild ? `<@${userId}> ${notice}` : notice,
        allowedMentions: { users: inGuild ? [userId] : [], repliedUser: false },
      });
    } catch (err) {
      this.log.warn(
        { err, chatId: prompt.channelId },
        "could not tell a reaction that its approval was decided or expired",
      );
    }
  }

  /** The language of the bot's words in channel `channelId` (its `/settings` language, else `BOT_LOCALE`). */
  #localeOf(channelId: string): Promise<Locale> {
    return this.context.commands.localeOf({ platform: "discord", chatId: channelId }, this.config.BOT_LOCALE);
  }

  async #reply(message: Message, text: string): Promise<void> {
    try {
      await message.reply({ content: text, allowedMentions: { parse: [], repliedUser: false } });
    } catch (err) {
      this.log.error({ err, chatId: message.channelId }, "could not send a reply");
    }
  }
}

/**
 * The requester of a prompt in a guild channel: the author of the message it replies to (an
 * answer's prompt), else the user its first words mention (a scheduled task's, `<@id> ⚠️ …`);
 * undefined when neither is known (the message replied to was deleted).
 */
function requesterOf(prompt: Message): string | undefined {
  return prompt.mentions.repliedUser?.id ?? /^<@!?(\d{17,20})> /.exec(prompt.content)?.[1];
}

/** The first approval button's id on a bot message, if it is a prompt. */
function approvalIdOf(message: Message): string | undefined {
  for (const row of message.components) {
    const json = row.toJSON() as { components?: { custom_id?: string }[] };
    for (const c of json.components ?? []) {
      const parsed = c.custom_id ? parseApprovalButton(c.custom_id) : undefined;
      if (parsed) return parsed.approvalId;
    }
  }
  return undefined;
}

/** The short "try again" answer when a message could not be queued or a decision not recorded. */
export function tryAgain(locale: Locale): string {
  return localize(locale, TRY_AGAIN_LATER);
}
