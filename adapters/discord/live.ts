/**
 * Streamed answers on Discord (the platform calls of a live answer, an `EditingSurface`, see `src/streaming.ts`): the
 * first piece is posted (a reply in guild channels, as answers are) and then edited
 * (`PATCH /channels/{id}/messages/{id}`) as text arrives; pieces past 2000 characters continue in
 * new messages; the final edit is today's split (`splitMessage`). Discord renders the Markdown of
 * live text as it does the final text, so live and final chunks are the same kind of text; the
 * live view's own lines (a tool's status line with its input, the transcript's lead) are written
 * as Markdown literals (`markdown: true` of the surface), so they show as they are.
 * A 429 on an edit is waited out by `@discordjs/rest` (its `retry_after`), the existing path.
 *
 * Live posts carry a `nonce` of the answer and piece with `enforce_nonce`, so a worker that dies
 * right after Discord created the message gets the same message back when its job is retried.
 */
import type { Destination, SentRef } from "../../src/outbound.js";
import { conversationKey } from "../../src/queue/incoming.js";
import type { EditingSurface, LiveSurfaceOptions } from "../../src/streaming.js";
import { honestLinks } from "./links.js";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "./split.js";

/** The REST calls a live answer needs, provided by `DiscordOutbound`. */
export interface DiscordLiveCalls {
  /** Posts a message body in `channelId`. */
  post(method: string, channelId: string, body: Record<string, unknown>): Promise<SentRef>;
  /**
   * Edits a message's `content` (no one is pinged), and its `components` when given (`[]` removes
   * them). @throws an `OutboundError` when Discord refuses it.
   */
  edit(method: string, ref: SentRef, content: string, components?: unknown[]): Promise<void>;
  /** True when `error` (thrown by {@link edit}) says the message no longer exists (Unknown Message, code 10008). */
  isUnknownMessage(error: unknown): boolean;
  /** Deletes a message; one already gone is not a failure. */
  remove(ref: SentRef): Promise<void>;
  /** Posts `content` as final chunk `index` exactly as a non-streamed answer posts it. */
  postAnswerChunk(to: Destination, content: string, index: number): Promise<SentRef>;
  /** The message-create body fields every live post carries (`allowed_mentions`, `nonce`…). */
  liveBody(to: Destination, conversation: string, index: number, content: string): Record<string, unknown>;
}

/**
 * The Discord {@link EditingSurface} of an answer to `to`. With `options.stop`, every live message
 * carries the Stop button (an action row with one button, style Secondary); the final edit sets
 * `components: []`, which removes it.
 */
export function discordSurface(
  to: Destination,
  calls: DiscordLiveCalls,
  options: LiveSurfaceOptions = {},
): EditingSurface<string> {
  const conversation = conversationKey(to.conversation);
  // https://discord.com/developers/docs/components/reference#action-row , #button (type 2, style 2 Secondary)
  const components = options.stop
    ? [{ type: 1, components: [{ type: 2, style: 2, label: options.stop.label, custom_id: options.stop.data }] }]
    : undefined;
  return {
    kind: "editing",
    limit: DISCORD_MESSAGE_LIMIT,
    // Discord renders the live text's Markdown: the status lines' tool inputs are written as literals.
    markdown: true,
    // Live text shows masked links as the final text does (links.ts; never longer, so within the limit).
    post: (text, index) =>
      calls.post("streamAnswer", to.conversation.chatId, {
        ...calls.liveBody(to, conversation, index, honestLinks(text)),
        ...(components ? { components } : {}),
      }),
    edit: (ref, text) => calls.edit("streamAnswer", ref, honestLinks(text), components),
    remove: (ref) => calls.remove(ref),
    finalChunks(text) {
      const chunks = splitMessage(honestLinks(text), DISCORD_MESSAGE_LIMIT);
      if (chunks.length === 0)
        throw new Error("Discord streamAnswer: the answer is empty (Discord refuses empty messages)");
      return chunks;
    },
    plainOf: (chunk) => chunk,
    postFinal: (chunk, index) => calls.postAnswerChunk(to, chunk, index),
    async editFinal(ref, chunk, index) {
      try {
        await calls.edit("finishAnswer", ref, chunk, components ? [] : undefined);
      } catch (error) {
        // Deleted in the chat meanwhile: the chunk is posted anew, as a non-streamed answer posts it.
        if (!calls.isUnknownMessage(error)) throw error;
        return calls.postAnswerChunk(to, chunk, index);
      }
    },
  };
}
