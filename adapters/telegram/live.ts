/**
 * Streamed answers on Telegram (the platform calls of a live answer, an `EditingSurface` of `src/streaming.ts`):
 * - private chats show the growing text as a draft, Bot API 9.3 `sendMessageDraft`
 *   (https://core.telegram.org/bots/api#sendmessagedraft: private chats only, `draft_id`
 *   non-zero, 0-4096 characters; "changes to drafts with the same identifier are animated"), and
 *   the finished answer is then sent as normal formatted messages;
 * - groups get the first piece as a message (a reply, as answers are), then `editMessageText`.
 * Live text is sent without `parse_mode` (plain: never rejected); the final chunks are today's
 * HTML with today's plain-text fallback (`planChunks`, `TelegramOutbound.sendChunk`).
 * With `options.stop`, every live message carries the Stop button (an inline keyboard); the final
 * edits leave `reply_markup` out, which removes it. A draft cannot carry a button (the Bot API has
 * no stop of its own for drafts either): in private chats `/stop` stops the answer.
 *
 * grammY's `@grammyjs/stream` plugin was not used: it sends a draft per piece without our
 * per-message interval, sends the final message itself as plain text with entities (not our
 * HTML chunks with their fallback and exactly-once counting) and knows no groups or status lines.
 */
import type { Api } from "grammy";
import type { Logger } from "../../src/log.js";
import type { Destination, SentRef } from "../../src/outbound.js";
import type { EditingSurface, LiveSurfaceOptions } from "../../src/streaming.js";
import { isEntityError, isNotModified, isUneditable } from "./api.js";
import { translated } from "./errors.js";
import { placement, type TelegramDestination } from "./place.js";
import { TELEGRAM_TEXT_LIMIT, htmlToPlain, planChunks, type TelegramChunk } from "./split.js";

/** How the final chunks are sent, shared with the non-streamed path (`TelegramOutbound.sendChunk`). */
export type SendChunk = (to: TelegramDestination, chunk: TelegramChunk, index: number) => Promise<SentRef>;

/**
 * The `draft_id` of an answer's draft piece: non-zero, derived from the user's message id so a
 * retried job animates the same draft. `piece` counts the drafts of one answer past 4096 units.
 */
export function draftId(messageId: string, piece: number): number {
  return (Number(messageId) % 1_000_000_000) * 16 + (piece % 16) + 1;
}

/**
 * The Telegram {@link EditingSurface} of an answer to `to`. Its platform calls throw the core's errors
 * (`telegramError`), as every call of the Telegram outbound does.
 */
export function telegramSurface(
  api: Api,
  to: Destination,
  dest: TelegramDestination,
  sendChunk: SendChunk,
  log: Logger,
  options: LiveSurfaceOptions = {},
): EditingSurface<TelegramChunk> {
  const surface = rawSurface(api, to, dest, sendChunk, log, options);
  const { draft } = surface;
  return {
    ...surface,
    ...(draft ? { draft: (text: string, piece: number) => translated("streamAnswer", () => draft(text, piece)) } : {}),
    post: (text, index) => translated("streamAnswer", () => surface.post(text, index)),
    edit: (ref, text, shown) => translated("streamAnswer", () => surface.edit(ref, text, shown)),
    remove: (ref) => translated("streamAnswer", () => surface.remove(ref)),
    postFinal: (chunk, index) => translated("sendAnswer", () => surface.postFinal(chunk, index)),
    editFinal: (ref, chunk, index, shown) =>
      translated("sendAnswer", () => surface.editFinal(ref, chunk, index, shown)),
  };
}

/** The surface's platform calls as grammY makes them (errors untranslated: the checks below read them). */
function rawSurface(
  api: Api,
  to: Destination,
  dest: TelegramDestination,
  sendChunk: SendChunk,
  log: Logger,
  options: LiveSurfaceOptions,
): EditingSurface<TelegramChunk> {
  const stop = options.stop
    ? { reply_markup: { inline_keyboard: [[{ text: options.stop.label, callback_data: options.stop.data }]] } }
    : {};
  const common = { ...placement(dest), link_preview_options: { is_disabled: true } };
  // Live edits keep the Stop button; final edits (HTML) leave reply_markup out, which removes it.
  const edit = async (ref: SentRef, text: string, shown: string | undefined, parseMode?: "HTML", live = false) => {
    try {
      await api.editMessageText(ref.chatId, Number(ref.messageId), text, {
        link_preview_options: { is_disabled: true },
        ...(parseMode ? { parse_mode: parseMode } : {}),
        ...(live ? stop : {}),
      });
    } catch (error) {
      // Only a message posted by an earlier attempt (content unknown) may turn out unchanged.
      if (shown === undefined && isNotModified(error)) return;
      throw error;
    }
  };
  const remove = async (ref: SentRef) => {
    try {
      await api.deleteMessage(ref.chatId, Number(ref.messageId));
    } catch (error) {
      log.debug(
        { ref, error: (error as Error).message },
        "telegram: a live answer message could not be deleted (already gone?)",
      );
    }
  };
  return {
    kind: "editing",
    limit: TELEGRAM_TEXT_LIMIT,
    ...(to.chatKind === "dm"
      ? {
          draft: async (text: string, piece: number) => {
            await api.sendMessageDraft(
              Number(dest.chatId),
              draftId(to.replyTo ?? "0", piece),
              text,
              dest.threadId ? { message_thread_id: Number(dest.threadId) } : {},
            );
          },
        }
      : {}),
    async post(text) {
      const message = await api.sendMessage(dest.chatId, text, { ...common, ...stop });
      return { chatId: String(message.chat.id), messageId: String(message.message_id) };
    },
    edit: (ref, text, shown) => edit(ref, text, shown, undefined, true),
    remove,
    finalChunks: (text) => planChunks(text),
    plainOf: (chunk) => (/<[a-zA-Z/]/.test(chunk.html) ? undefined : htmlToPlain(chunk.html)),
    postFinal: (chunk, index) => sendChunk(dest, chunk, index),
    async editFinal(ref, chunk, index, shown) {
      try {
        try {
          await edit(ref, chunk.html, shown, "HTML");
        } catch (error) {
          if (!isEntityError(error)) throw error;
          log.warn(
            { chatId: ref.chatId, chunk: index, error: (error as Error).message },
            "telegram rejected the HTML; editing the chunk to plain text",
          );
          if (chunk.plain !== shown) await edit(ref, chunk.plain, shown);
        }
      } catch (error) {
        if (!isUneditable(error)) throw error;
        // Deleted in the chat meanwhile (or no longer editable): the chunk is posted anew, then the old message is deleted if it is still there.
        log.info(
          { ref, chunk: index, error: (error as Error).message },
          "telegram: a live answer message cannot be edited; posting its final chunk anew",
        );
        const anew = await sendChunk(dest, chunk, index);
        await remove(ref);
        return anew;
      }
    },
  };
}
