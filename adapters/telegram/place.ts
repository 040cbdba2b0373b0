/**
 * Where a Telegram message goes (`TelegramDestination`, from the core's `Destination` or an
 * incoming message) and the send options that place it there: shared by the outbound
 * (`outbound.ts`) and the live answer's surface (`live.ts`), which do not import each other for it.
 */
import type { Destination } from "../../src/outbound.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";

/** Where a message goes: the chat, and optionally the message to reply to and the forum topic. */
export interface TelegramDestination {
  chatId: string;
  /** Reply to this message (groups), with `allow_sending_without_reply`. */
  replyTo?: string;
  /** Forum topic (`message_thread_id`). */
  threadId?: string;
  /** A user to mention at the start of the first message (groups; a numeric user id), see `mentionHtml` of `outbound.ts`. */
  mention?: { userId: string; userName: string };
}

/** Where the adapter's own reply to an incoming message goes (a command's answer, a hint): as {@link telegramPlace} of an answer to it. */
export function replyPlace(
  to: Pick<IncomingMessage, "chatId" | "chatKind" | "messageId" | "reply">,
): TelegramDestination {
  return {
    chatId: to.chatId,
    replyTo: to.chatKind === "group" ? to.messageId : undefined,
    threadId: to.reply?.threadId,
  };
}

/** Where a message to `to` goes on Telegram: a reply to `replyTo` in groups, plain in private chats; the topic when there is one. */
export function telegramPlace(to: Destination): TelegramDestination {
  const mention =
    to.chatKind === "group" && to.mention && /^\d+$/.test(to.mention.userId) ? { mention: to.mention } : {};
  return {
    chatId: to.conversation.chatId,
    replyTo: to.chatKind === "group" ? to.replyTo : undefined,
    threadId: to.reply?.threadId,
    ...mention,
  };
}

/**
 * The send options that place a message at `to`: `reply_parameters` (with
 * `allow_sending_without_reply`, so a deleted message does not lose the answer) when it replies,
 * `message_thread_id` in a topic; empty otherwise.
 */
export function placement(to: TelegramDestination): {
  reply_parameters?: { message_id: number; allow_sending_without_reply: true };
  message_thread_id?: number;
} {
  return {
    ...(to.replyTo
      ? { reply_parameters: { message_id: Number(to.replyTo), allow_sending_without_reply: true as const } }
      : {}),
    ...(to.threadId ? { message_thread_id: Number(to.threadId) } : {}),
  };
}
