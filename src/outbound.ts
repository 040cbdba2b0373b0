/**
 * The outbound half of an adapter: how a worker talks back to a platform. REST only, so a worker
 * needs no gateway connection and may run on another machine.
 */
import type { MediaSource } from "./media/source.js";
import type { ConversationRef, IncomingMessage, Platform } from "./queue/incoming.js";
import type { AnswerStream, StreamOptions } from "./streaming.js";

/** A message the bot sent, as the platform identifies it. */
export interface SentRef {
  chatId: string;
  messageId: string;
}

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
}

/** How an approval ended, as shown on the edited prompt. */
export type ApprovalOutcome = "approved" | "declined" | "expired" | "superseded";

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
}

/**
 * Thrown by an outbound when the platform says the bot can no longer write to the chat (Telegram
 * 403 blocked/kicked or 400 chat not found; Discord 50001 Missing Access, 10003 Unknown Channel,
 * 50007 Cannot send messages to this user). Retrying cannot help.
 */
export class ChatUnreachableError extends Error {
  constructor(
    readonly platform: Platform,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChatUnreachableError";
  }
}

/**
 * The outbound side of one platform. Every method throws on a failure it could not recover from
 * (after the client library's own retries); workers decide whether to retry the job.
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
   * Sends an answer to `to`: a reply to the user's message in groups, plain in DMs. Splits at the
   * platform's limit (Telegram 4096 UTF-16 units, Discord 2000) without cutting a code block,
   * tag or surrogate pair; chunks go out in order. `skip` chunks are not sent again (they went out
   * in an earlier attempt of the same job).
   *
   * @returns the sent messages, one per chunk actually sent now.
   */
  sendAnswer(to: IncomingMessage, text: string, options?: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void }): Promise<SentRef[]>;
  /**
   * Optional: opens a streamed answer to `to` (see `src/streaming.ts`): the platform decides drafts
   * or posted-and-edited messages, throttles to `options.intervalMs` per message, and `finish`
   * ends with exactly what {@link sendAnswer} would have sent. Never throws (nothing is sent yet).
   */
  openStream?(to: IncomingMessage, options: StreamOptions): AnswerStream;
  /** Shows the typing indicator in the chat of `to` (it lasts about 5 s on both platforms). */
  sendTyping(to: IncomingMessage): Promise<void>;
  /** Posts an approval prompt in the chat of `to`, with approve/decline buttons. */
  sendApprovalPrompt(to: IncomingMessage, prompt: ApprovalPrompt): Promise<SentRef>;
  /** Edits a prompt to show its outcome and removes (Telegram) or disables (Discord) its buttons. */
  closeApprovalPrompt(prompt: SentRef, outcome: ApprovalOutcome, text: string): Promise<void>;
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
}
