/**
 * The Discord outbound half: answers, typing, approval prompts, over REST only
 * (`@discordjs/rest`, re-exported by discord.js), so a worker needs no gateway connection.
 *
 * Every send and edit carries `allowed_mentions: { parse: [], replied_user: false }`: text from
 * the model or a user can never ping @everyone, @here, a role or a user, and replies do not ping
 * the person replied to (the reply arrow already shows whom the bot answers).
 * Source: https://discord.com/developers/docs/resources/message#allowed-mentions-object
 *
 * Every answer chunk and approval prompt carries a `nonce` derived from the job (conversation,
 * the user's message id, chunk index and text; the approval id for a prompt) with
 * `enforce_nonce: true`: when a worker dies after Discord accepted a message but before the
 * reply came back, the replayed job sends the same nonce and Discord returns the message it
 * already created instead of posting it again ("If another message was created by the same
 * author with the same nonce, that message will be returned and no new message will be
 * created", https://discord.com/developers/docs/resources/message#create-message). Discord keeps
 * nonces for a few minutes only; a replay after that can still post twice.
 */
import { DiscordMedia } from "./media.js";
import { createHash } from "node:crypto";
import { MessageFlags, REST, Routes } from "discord.js";
import { oggOpusWaveform } from "../../src/media/waveform.js";
import type { Config } from "../../src/config.js";
import type { Locale } from "../../src/i18n.js";
import type { Logger } from "../../src/log.js";
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
import { ChatUnreachableError, MessageGoneError } from "../../src/outbound-errors.js";
import { discordError } from "./errors.js";
import { conversationKey } from "../../src/queue/incoming.js";
import { APPROVE_EMOJI, DECLINE_EMOJI, outcomeIcon, promptComponents, promptText } from "./approval.js";
import { reminderBody } from "./reminder.js";
import { honestLinks } from "./links.js";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "./split.js";
import { sliceUnits } from "../../src/cut.js";
import type { EditingSurface, LiveSurfaceOptions } from "../../src/streaming.js";
import { discordSurface } from "./live.js";
import { plainContent } from "./plain.js";

/** The `allowed_mentions` sent with every message and edit: nobody is pinged. */
export const NO_MENTIONS = { parse: [] as string[], replied_user: false };

/**
 * The mention of `to.mention` in a guild channel (a numeric user id): `<@id> ` before the content,
 * and `allowed_mentions` that ping that user only; otherwise no prefix and {@link NO_MENTIONS}.
 */
function mentionOf(to: Destination): { prefix: string; allowed: Record<string, unknown> } {
  const userId = to.mention?.userId;
  if (to.chatKind !== "group" || !userId || !/^\d+$/.test(userId)) return { prefix: "", allowed: NO_MENTIONS };
  return { prefix: `<@${userId}> `, allowed: { parse: [], users: [userId], replied_user: false } };
}

/** True when a REST call failed because its message or channel is gone or out of reach ("nothing left to do" when closing a prompt). */
function isGone(error: unknown): error is ChatUnreachableError | MessageGoneError {
  return error instanceof ChatUnreachableError || error instanceof MessageGoneError;
}

/** Longest `nonce` string Discord accepts on a message create, in characters. */
export const MAX_NONCE_LENGTH = 25;

/**
 * A message-create `nonce` for `parts` (kind, conversation key, ids, chunk index, text): the first
 * {@link MAX_NONCE_LENGTH} hex digits of their SHA-256, so the same job part always gets the same
 * nonce and different ones practically never collide. Never throws.
 */
export function messageNonce(...parts: string[]): string {
  return createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, MAX_NONCE_LENGTH);
}

/** Creates the REST client: `DISCORD_API_URL` (a base ending in `/api`, default Discord's) and the bot token. */
export function createRest(config: Config): REST {
  const rest = new REST(config.DISCORD_API_URL ? { api: config.DISCORD_API_URL } : {});
  if (!config.DISCORD_TOKEN) throw new Error("DISCORD_TOKEN is not set: Discord is off");
  return rest.setToken(config.DISCORD_TOKEN);
}

/**
 * The outbound half for Discord. Every REST failure (after `@discordjs/rest`'s own retries) is thrown
 * as the core's error (`discordError` of `errors.ts`: rate limited, unavailable, chat unreachable,
 * message gone, refused), naming the method and route, never the token.
 */
export class DiscordOutbound implements Outbound {
  readonly platform = "discord" as const;
  /** Text of up to 1900 UTF-16 units always goes out as one message (room for a fence the splitter may close). */
  readonly singleChunkUnits = 1900;
  /** Downloads attachments of incoming messages (Discord's CDN and the origin of `DISCORD_API_URL` only). */
  readonly media: DiscordMedia;
  readonly #rest: REST;
  readonly #config: Config;
  readonly #log: Logger;

  /** @param rest - a REST client with the bot token set (see {@link createRest}). */
  constructor(rest: REST, config: Config, log: Logger) {
    this.#rest = rest;
    this.#config = config;
    this.#log = log.child({ platform: "discord" });
    this.media = new DiscordMedia(config);
  }

  /**
   * Sends an answer, split at 2000 UTF-16 code units (see `split.ts`). In a guild channel the
   * first chunk replies to the user's message (`fail_if_not_exists: false`, so a deleted
   * message does not lose the answer); later chunks and DM answers are plain messages. Each
   * chunk carries its job-derived `nonce` with `enforce_nonce` (see the module comment), so a
   * replayed chunk is not posted twice.
   *
   * @throws an `OutboundError` when a chunk could not be sent (earlier chunks stay sent; `onSent`
   * was called for each of them, so a retry can `skip` them).
   * @throws {Error} when `text` is blank (Discord refuses empty messages, code 50006).
   */
  async sendAnswer(
    to: Destination,
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    // A masked link whose text shows another address shows its target (links.ts); a mention goes first.
    const chunks = splitMessage(mentionOf(to).prefix + honestLinks(text), DISCORD_MESSAGE_LIMIT);
    if (chunks.length === 0)
      throw new Error("Discord sendAnswer: the answer is empty (Discord refuses empty messages)");
    const refs: SentRef[] = [];
    for (let i = options.skip ?? 0; i < chunks.length; i++) {
      const ref = await this.#postChunk(to, chunks[i]!, i);
      refs.push(ref);
      await options.onSent?.(i, ref);
    }
    return refs;
  }

  /** Posts `content` as chunk `i` of an answer: its nonce, and in guild channels the first chunk replies to the user's message. */
  #postChunk(to: Destination, content: string, i: number): Promise<SentRef> {
    const body: Record<string, unknown> = {
      content,
      allowed_mentions: mentionOf(to).allowed,
      // The text is part of the nonce, so an apology after a failed answer is not taken for its first chunk.
      nonce: messageNonce("answer", conversationKey(to.conversation), to.replyTo ?? to.key ?? "", String(i), content),
      enforce_nonce: true,
      ...(i === 0 && to.chatKind === "group" ? this.#replyTo(to) : {}),
    };
    return this.#post("sendAnswer", to.conversation.chatId, body);
  }

  /**
   * The `message_reference` of a reply to `to.replyTo` (`fail_if_not_exists: false`: a deleted
   * message does not lose the reply), as body fields; none when `to` answers no message.
   */
  #replyTo(to: Destination): { message_reference?: Record<string, unknown> } {
    if (!to.replyTo) return {};
    const guildId = to.reply?.guildId;
    return {
      message_reference: {
        message_id: to.replyTo,
        channel_id: to.conversation.chatId,
        ...(guildId ? { guild_id: guildId } : {}),
        fail_if_not_exists: false,
      },
    };
  }

  /**
   * {@inheritDoc Outbound.liveSurface} The first piece is posted (a reply in guild channels), then
   * edited as text arrives (see `live.ts`); the final edit is today's split.
   */
  liveSurface(to: Destination, options: LiveSurfaceOptions = {}): EditingSurface<string> {
    return discordSurface(
      to,
      {
        post: (method, channelId, body) => this.#post(method, channelId, body),
        edit: async (method, ref, content, components) => {
          const route = Routes.channelMessage(ref.chatId, ref.messageId);
          await this.#call(method, route, () =>
            this.#rest.patch(route, {
              body: { content, allowed_mentions: NO_MENTIONS, ...(components ? { components } : {}) },
            }),
          );
        },
        isUnknownMessage: (error) => error instanceof MessageGoneError,
        remove: async (ref) => {
          const route = Routes.channelMessage(ref.chatId, ref.messageId);
          try {
            await this.#call("deleteLiveAnswer", route, () => this.#rest.delete(route));
          } catch (error) {
            if (isGone(error)) return;
            throw error;
          }
        },
        postAnswerChunk: (t, content, index) => this.#postChunk(t, content, index),
        liveBody: (t, conversation, index, content) => ({
          content,
          allowed_mentions: NO_MENTIONS,
          nonce: messageNonce("live", conversation, t.replyTo ?? "", String(index)),
          enforce_nonce: true,
          ...(index === 0 && t.chatKind === "group" ? this.#replyTo(t) : {}),
        }),
      },
      options,
    );
  }

  /** Triggers the typing indicator (`POST /channels/{id}/typing`; it lasts about 10 s or until the next message). */
  async sendTyping(to: Destination): Promise<void> {
    const route = Routes.channelTyping(to.conversation.chatId);
    await this.#call("sendTyping", route, () => this.#rest.post(route));
  }

  /**
   * Posts the approval prompt (a reply to the user's message) with 確認 / 取消 buttons, then adds
   * the ✅ and ❌ reactions. A failure to add the reactions (no Add Reactions permission) is logged
   * and the buttons still work.
   * @throws an `OutboundError` when the prompt itself could not be sent.
   */
  async sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    const locale = prompt.locale ?? this.#config.BOT_LOCALE;
    const ref = await this.#post("sendApprovalPrompt", to.conversation.chatId, {
      content: sliceUnits(mentionOf(to).prefix + promptText(prompt, locale), DISCORD_MESSAGE_LIMIT),
      components: promptComponents(prompt.approvalId, locale, undefined, prompt.alwaysAllow === true),
      allowed_mentions: mentionOf(to).allowed,
      nonce: messageNonce("prompt", conversationKey(to.conversation), to.replyTo ?? to.key ?? "", prompt.approvalId),
      enforce_nonce: true,
      ...this.#replyTo(to),
    });
    for (const emoji of [APPROVE_EMOJI, DECLINE_EMOJI]) {
      const route = Routes.channelMessageOwnReaction(ref.chatId, ref.messageId, encodeURIComponent(emoji));
      try {
        await this.#call("addReaction", route, () => this.#rest.put(route));
      } catch (error) {
        this.#log.warn(
          { err: error, chatId: ref.chatId },
          "could not add the approval reactions (Add Reactions permission?); the buttons still work",
        );
        break;
      }
    }
    return ref;
  }

  /**
   * Edits the prompt to `text` (plain, shown as it is: {@link plainContent}; prefixed with the
   * outcome's icon ✅ ❌ ⌛ ↩️ unless it already starts with it) with both buttons disabled, labelled
   * in `locale` (the prompt's), and removes the bot's own ✅/❌.
   * A prompt that is gone (Unknown Message 10008, Unknown Channel 10003, Missing Access 50001) is
   * logged, not an error.
   * @throws an `OutboundError` on any other failure of the edit.
   */
  async closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict, text: string, locale?: Locale): Promise<void> {
    const icon = outcomeIcon(outcome);
    // The outcome with the action: plain text, shown as it is.
    const plain = plainContent(text);
    const content = sliceUnits(plain.startsWith(icon) ? plain : `${icon} ${plain}`, DISCORD_MESSAGE_LIMIT);
    const route = Routes.channelMessage(prompt.chatId, prompt.messageId);
    try {
      await this.#call("closeApprovalPrompt", route, () =>
        this.#rest.patch(route, {
          body: {
            content,
            components: promptComponents("unused", locale ?? this.#config.BOT_LOCALE, outcome),
            allowed_mentions: NO_MENTIONS,
          },
        }),
      );
    } catch (error) {
      if (isGone(error)) {
        this.#log.info(
          { chatId: prompt.chatId, messageId: prompt.messageId, code: error.code },
          "approval prompt is gone; nothing to edit",
        );
        return;
      }
      throw error;
    }
    for (const emoji of [APPROVE_EMOJI, DECLINE_EMOJI]) {
      const r = Routes.channelMessageOwnReaction(prompt.chatId, prompt.messageId, encodeURIComponent(emoji));
      await this.#call("removeReaction", r, () => this.#rest.delete(r)).catch((err: unknown) =>
        this.#log.debug({ err }, "could not remove own reaction"),
      );
    }
  }

  /**
   * {@inheritDoc Outbound.sendReminder} With a nonce of the occurrence and `enforce_nonce`, so a
   * resend after a crash within Discord's nonce window returns the message already posted.
   * @throws {ChatUnreachableError} for 10003, 50001, 50007; another `OutboundError` otherwise.
   */
  async sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    return this.#post(
      "sendReminder",
      reminder.conversation.chatId,
      reminderBody(reminder, reminder.locale ?? this.#config.BOT_LOCALE),
    );
  }

  /**
   * {@inheritDoc Outbound.closeReminder} The text shown as it is ({@link plainContent}); removes the
   * buttons; a message or channel that is gone is logged.
   */
  async closeReminder(message: SentRef, text: string): Promise<void> {
    const route = Routes.channelMessage(message.chatId, message.messageId);
    try {
      await this.#call("closeReminder", route, () =>
        this.#rest.patch(route, {
          body: {
            content: sliceUnits(plainContent(text), DISCORD_MESSAGE_LIMIT),
            components: [],
            allowed_mentions: NO_MENTIONS,
          },
        }),
      );
    } catch (error) {
      if (isGone(error)) {
        this.#log.info(
          { chatId: message.chatId, messageId: message.messageId, code: error.code },
          "reminder message is gone; nothing to edit",
        );
        return;
      }
      throw error;
    }
  }

  /**
   * {@inheritDoc Outbound.sendNotice} The text shown as it is ({@link plainContent}, cut at 2000
   * characters), the buttons in action rows of at most 5, and a nonce of the text and the buttons'
   * data (`enforce_nonce`).
   */
  async sendNotice(to: Destination, text: string, buttons: NoticeButton[]): Promise<SentRef> {
    const rows: Record<string, unknown>[] = [];
    for (let i = 0; i < buttons.length && rows.length < 5; i += 5) {
      rows.push({
        type: 1,
        components: buttons
          .slice(i, i + 5)
          .map((b) => ({ type: 2, style: 2, label: sliceUnits(b.label, 80), custom_id: b.data })),
      });
    }
    const mention = mentionOf(to);
    return this.#post("sendNotice", to.conversation.chatId, {
      content: sliceUnits(mention.prefix + plainContent(text), DISCORD_MESSAGE_LIMIT),
      allowed_mentions: mention.allowed,
      ...(rows.length > 0 ? { components: rows } : {}),
      nonce: messageNonce("notice", conversationKey(to.conversation), text, ...buttons.map((b) => b.data)),
      enforce_nonce: true,
    });
  }

  /** Voice messages are Ogg Opus (what Discord's clients record and play as voice messages). */
  readonly voiceFormat = "opus" as const;

  /**
   * {@inheritDoc Outbound.sendVoice} A Discord voice message: `POST /channels/{id}/messages` as
   * multipart (`files[0]` = `voice-message.ogg`, `audio/ogg`) with the flag IS_VOICE_MESSAGE and
   * the attachment's `duration_secs` and `waveform` (`oggOpusWaveform`), and nothing else (a voice
   * message takes no content); in guild channels a reply to the user's message. Its nonce keys it
   * to the answer, so a replayed request does not post it twice.
   * Source: https://discord.com/developers/docs/resources/message#create-message (voice messages:
   * the flag, one audio attachment, `duration_secs` and `waveform`).
   * @throws {Error} when the audio cannot be decoded for its waveform; the core's outbound errors.
   */
  async sendVoice(to: Destination, voice: VoiceReply): Promise<SentRef> {
    const waveform = await oggOpusWaveform(voice.audio);
    if (!waveform) throw new Error("Discord sendVoice: the audio could not be decoded for its waveform");
    const route = Routes.channelMessages(to.conversation.chatId);
    const body = {
      flags: MessageFlags.IsVoiceMessage,
      attachments: [
        {
          id: "0",
          filename: "voice-message.ogg",
          duration_secs: Math.round(voice.seconds * 100) / 100,
          waveform,
        },
      ],
      allowed_mentions: NO_MENTIONS,
      nonce: messageNonce(
        "voice",
        conversationKey(to.conversation),
        to.replyTo ?? to.key ?? "",
        String(voice.audio.length),
      ),
      enforce_nonce: true,
      ...(to.chatKind === "group" ? this.#replyTo(to) : {}),
    };
    const message = (await this.#call("sendVoice", route, () =>
      this.#rest.post(route, {
        body,
        files: [{ key: "files[0]", name: "voice-message.ogg", data: voice.audio, contentType: "audio/ogg" }],
      }),
    )) as { id: string; channel_id: string };
    return { chatId: message.channel_id, messageId: message.id };
  }

  async #post(method: string, channelId: string, body: Record<string, unknown>): Promise<SentRef> {
    const route = Routes.channelMessages(channelId);
    const message = (await this.#call(method, route, () => this.#rest.post(route, { body }))) as {
      id: string;
      channel_id: string;
    };
    return { chatId: message.channel_id, messageId: message.id };
  }

  /**
   * See {@link Outbound.isMember}: `GET /guilds/{guild.id}/members/{user.id}`; `10007 Unknown
   * Member` (left, kicked or banned) and `10013 Unknown User` are `false`; a DM channel (no guild)
   * and any other error are `undefined`.
   */
  async isMember(
    place: { chatId: string; guildId?: string | undefined },
    userId: string,
  ): Promise<boolean | undefined> {
    if (!place.guildId) return undefined;
    try {
      await this.#rest.get(Routes.guildMember(place.guildId, userId));
      return true;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 10007 || code === 10013) return false;
      this.#log.warn(
        { error: (error as Error).message },
        "discord: could not fetch a guild member; membership unknown",
      );
      return undefined;
    }
  }

  async #call<T>(method: string, route: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw discordError(error, method, route);
    }
  }
}
