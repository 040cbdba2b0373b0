/**
 * The outbound half of an adapter: how a worker talks back to a platform. REST only, so a worker
 * needs no gateway connection and may run on another machine.
 */
import type { ApprovalVerdict } from "./agent/contract.js";
import type { Locale } from "./config.js";
import type { MediaSource } from "./media/source.js";
import type { SpeechFormat } from "./media/speech.js";
import { conversationOf, type ConversationRef, type IncomingMessage, type Platform } from "./queue/incoming.js";
import type { LiveSurface, LiveSurfaceOptions } from "./streaming.js";
import type { SentRef } from "./sent-ref.js";

/**
 * Where a message of the bot goes: the conversation, what kind of chat it is, and the user's
 * message it answers, when it answers one. {@link destinationOf} builds it for an answer; a notice
 * that answers no message (the DM "you are in" after a pairing) has no `replyTo`.
 */
export interface Destination {
  /** The chat, and the Telegram topic when it is one. */
  conversation: ConversationRef;
  /** `dm` for a private chat, `group` for anything shared (answers there reply to `replyTo`). */
  chatKind: "dm" | "group";
  /**
   * The platform message id of the user's message being answered: in groups the answer replies to
   * it; it also keys the answer's exactly-once ids (Discord `nonce`, Telegram `draft_id`).
   */
  replyTo?: string;
  /** What the platform needs beyond the chat (`IncomingMessage.reply`): Telegram `threadId`, Discord `guildId`, LINE `replyToken`. */
  reply?: { threadId?: string; guildId?: string; replyToken?: string; replyTokenAt?: number };
  /**
   * Identifies the answer when it replies to no message (a scheduled task's occurrence): keys its
   * exactly-once ids (Discord `nonce`) in place of `replyTo`.
   */
  key?: string;
  /**
   * In a group, the person the answer's first message (and an approval prompt) starts by
   * mentioning so that only they are notified — the owner of a scheduled task (Telegram: a
   * `tg://user?id=` link, Discord: `<@id>` with `allowed_mentions.users`). Not for a `chat:` sender.
   */
  mention?: { userId: string; userName: string };
}

/**
 * Where the answer to `message` goes: its conversation and chat kind, replying to it; a scheduled
 * task's occurrence (`message.scheduled`) replies to nothing, is keyed by its id and mentions its
 * owner in groups.
 */
export function destinationOf(message: IncomingMessage): Destination {
  if (message.scheduled) {
    return {
      conversation: conversationOf(message),
      chatKind: message.chatKind,
      key: message.messageId,
      reply: message.reply,
      ...(message.chatKind === "group" ? { mention: { userId: message.userId, userName: message.userName } } : {}),
    };
  }
  return {
    conversation: conversationOf(message),
    chatKind: message.chatKind,
    replyTo: message.messageId,
    reply: message.reply,
  };
}

/** A button of a notice ({@link Outbound.sendNotice}): its label and `callback_data` / `custom_id` (at most 64 bytes). */
export interface NoticeButton {
  label: string;
  data: string;
}

/** A message the bot sent (`src/sent-ref.ts`), re-exported for the adapters and the worker. */
export { SentRefSchema, type SentRef } from "./sent-ref.js";

/** What an approval prompt shows; the adapter renders it with buttons (and reactions on Discord). */
export interface ApprovalPrompt {
  /** Opaque random token carried by the buttons (`callback_data` ≤ 64 bytes, `custom_id` ≤ 100 characters). */
  approvalId: string;
  /** What will happen, in plain words of the bot's locale, e.g. `刪除待辦 #3「買牛奶」`. */
  action: string;
  /** Display name of the only person who may decide. */
  requesterName: string;
  /** When the approval expires, ms since the Unix epoch. */
  expiresAt: number;
  /**
   * True when the prompt offers a third choice, "always allow" (Telegram button `ap:<id>:a`,
   * Discord button, console `a`): approve and stop asking this requester about this tool in this
   * conversation for `ALWAYS_ALLOW_DAYS`. Absent for a tool that refuses grants (`alwaysAllow: false`).
   */
  alwaysAllow?: boolean;
  /** The language of the prompt (the conversation's `language` setting); default `BOT_LOCALE`. */
  locale?: Locale;
  /**
   * Given only to an outbound whose prompts stay as sent ({@link Outbound.promptsStayAsSent}):
   * the lead line (Markdown) of the answer that paused here, which would otherwise be lost since no
   * answer follows — an "always allow" grant just given, an approval the requester's new message
   * closed, a voice message's transcript. Shown before the prompt, in the same reply.
   */
  lead?: string;
}

/**
 * A reminder to post: `⏰ <text>` in the conversation where it was set, with done and snooze
 * buttons that carry `token` (`rm:d:<token>`, `rm:s:<token>`: Telegram `callback_data` ≤ 64 bytes,
 * Discord `custom_id` ≤ 100 characters, so `token` is at most 58 ASCII characters).
 */
export interface ReminderMessage {
  /** The chat and Telegram topic (Discord threads are chats). */
  conversation: ConversationRef;
  /** In a group the owner is mentioned with a real mention that notifies only them. */
  chatKind: "dm" | "group";
  /** The owner: platform user id and display name. A Telegram `chat:<id>` sender is not mentioned. */
  owner: { userId: string; userName: string };
  /** The whole text after the mention, plain (not Markdown), starting with ⏰. */
  text: string;
  /** Opaque, 1-58 characters of `A-Z a-z 0-9 _ - . %`. */
  token: string;
  /** The language of its buttons (the conversation's `language` setting); default `BOT_LOCALE`. */
  locale?: Locale;
}

/**
 * A voice reply to send ({@link Outbound.sendVoice}): spoken audio of the answer, in the format
 * the outbound asked for ({@link Outbound.voiceFormat}), with its duration read from the audio.
 */
export interface VoiceReply {
  /** The audio bytes (at most 25 MB). */
  audio: Buffer;
  /** Their format, as the speech endpoint was asked for it (`opus`: Ogg Opus). */
  format: SpeechFormat;
  /** Duration read from the audio's own headers, in seconds (fractional). */
  seconds: number;
  /** The language of any words around it (a caption, a note). */
  locale: Locale;
}

/**
 * The outbound side of one platform. Every method throws on a failure it could not recover from
 * (after the client library's own retries), translated into the core's classes of
 * `src/outbound-errors.ts` (rate limited with its wait, unavailable, chat unreachable, message
 * gone, refused); workers decide from those whether to retry the job.
 */
export interface Outbound {
  readonly platform: Platform;
  /**
   * Optional: the longest answer, in UTF-16 code units of `text`, that {@link sendAnswer} always
   * sends as exactly one message (e.g. Discord 2000, the split limit). The worker then skips
   * counting sent chunks for such answers (one Redis command less per message); when absent, every
   * sent chunk is counted.
   */
  readonly singleChunkUnits?: number;
  /**
   * Optional: true when the person reading is the operator (the terminal chat, `npm run chat`).
   * An apology then carries a one-line cause (a rejected API key, a wrong base URL, an unreachable
   * endpoint; never a key or token), taken from the error's `operatorCause()`.
   */
  readonly showsCauses?: boolean;
  /**
   * Optional: downloads the files of incoming messages (images, documents) from this platform's own
   * file hosts, for the worker's media step. Without it a message with files is answered with a
   * short "cannot read" note.
   */
  readonly media?: MediaSource;
  /**
   * Sends an answer to `to`: a reply to its `replyTo` message in groups, plain in DMs. Splits at the
   * platform's limit (Telegram 4096 UTF-16 units, Discord 2000) without cutting a code block,
   * tag or surrogate pair; chunks go out in order. `skip` chunks are not sent again (they went out
   * in an earlier attempt of the same job).
   *
   * @returns the sent messages, one per chunk actually sent now.
   */
  sendAnswer(
    to: Destination,
    text: string,
    options?: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void },
  ): Promise<SentRef[]>;
  /**
   * Optional: the platform calls of a streamed answer to `to` (see `src/streaming.ts`), from which
   * the core builds the live answer (`openLiveAnswer`): an editing surface (posts and edits
   * messages, or drafts where the chat shows them; its final chunks are exactly what
   * {@link sendAnswer} sends) or a printing surface (a terminal: what is printed stays). Without
   * it answers are not streamed. Never throws (nothing is sent yet). `options.stop` is the Stop
   * button to show on the live messages (see {@link LiveSurfaceOptions}).
   */
  liveSurface?(to: Destination, options?: LiveSurfaceOptions): LiveSurface;
  /**
   * Optional: the speech format this platform's voice messages take (Telegram and Discord: `opus`,
   * i.e. Ogg Opus; LINE: `mp3`). Given together with {@link sendVoice}.
   */
  readonly voiceFormat?: SpeechFormat;
  /**
   * Optional: sends `voice` to `to` as the platform's own voice message (Telegram `sendVoice`, a
   * Discord voice message, a LINE audio message; the console saves it and prints the path), in
   * groups as a reply to `replyTo`. Without it (or `voiceFormat`) answers are never spoken.
   * @returns the message sent.
   * @throws the core's outbound errors (`src/outbound-errors.ts`) when it could not be sent.
   */
  sendVoice?(to: Destination, voice: VoiceReply): Promise<SentRef>;
  /** Shows the typing indicator in the chat of `to` (it lasts about 5 s on both platforms). */
  sendTyping(to: Destination): Promise<void>;
  /** Posts an approval prompt in the chat of `to` (a reply to `replyTo`), with approve/decline buttons. */
  sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef>;
  /**
   * Edits a prompt to show its outcome and removes (Telegram) or disables (Discord) its buttons;
   * `locale` is the prompt's language (what labels stay on it); default `BOT_LOCALE`.
   */
  closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict, text: string, locale?: Locale): Promise<void>;
  /**
   * Optional: true when a sent approval prompt cannot be changed (LINE cannot edit a sent message),
   * so {@link closeApprovalPrompt} shows nothing in the chat. What the requester would otherwise
   * read only on the edited prompt then leads the next answer to them, as its first line: an
   * "always allow" grant given (the answer after the press) and an approval closed by their new
   * message (the answer to that message); see `ApprovalFlow.grantLead` and
   * `ApprovalFlow.supersedePending`. Absent: prompts are edited.
   */
  readonly promptsStayAsSent?: boolean;
  /**
   * Posts a reminder (see {@link ReminderMessage}) with done / snooze buttons, mentioning the owner
   * in groups so that only they are notified (Telegram: a `tg://user?id=` link, i.e. a
   * `text_mention`; Discord: `<@id>` with `allowed_mentions: { users: [id] }`).
   * @throws {ChatUnreachableError} when the bot can no longer write to the chat; other errors after
   *   the client's own retries.
   */
  sendReminder(reminder: ReminderMessage): Promise<SentRef>;
  /**
   * Edits a posted reminder (or a `/reminders` list) to `text` (plain) without buttons. A message
   * that is gone is not a failure.
   */
  closeReminder(message: SentRef, text: string): Promise<void>;
  /**
   * Optional: posts a plain-text notice with buttons in the chat of `to`, mentioning `to.mention`
   * in groups (a paused scheduled task's "resume" button to its owner). Without it the worker
   * sends the text alone with {@link sendAnswer}.
   * @throws {ChatUnreachableError} when the bot can no longer write to the chat; other errors after
   *   the client's own retries.
   */
  sendNotice?(to: Destination, text: string, buttons: NoticeButton[]): Promise<SentRef>;
  /**
   * Optional: whether `userId` is still a member of the group `place` (Telegram `getChatMember`:
   * status `creator`, `administrator`, `member`, or `restricted` with `is_member`; Discord
   * `GET /guilds/{guild.id}/members/{user.id}` of the channel's guild): `true`, `false` (left,
   * kicked, banned, unknown member), or `undefined` when it cannot be told now (an API error, no
   * guild). Used before each occurrence of a group task or reminder (issue 39). Never throws.
   */
  isMember?(place: { chatId: string; guildId?: string | undefined }, userId: string): Promise<boolean | undefined>;
  /**
   * Optional: registers `listener`, told when the platform moved a chat to a new id while this
   * outbound was sending to it (a Telegram group upgraded to a supergroup: the call went to the new
   * chat). The worker moves the conversation's data (`src/conversations/migrate.ts`).
   */
  onChatMigrated?(listener: (from: ConversationRef, to: ConversationRef) => void): void;
}
