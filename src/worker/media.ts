/**
 * The worker's media step, between taking a message and running the agent loop: gathers a
 * Telegram album (`src/media/album.ts`), downloads and converts the message's files through the
 * platform's outbound (`Outbound.media`), and gives the loop the content blocks — or the short
 * refusal to send instead of calling the model. A message without files costs nothing here (no
 * Redis command, no download).
 *
 * Images and documents reach the model only in the run that received them: everything stored
 * (the history, a run's checkpoint, a run paused for an approval) holds their placeholders
 * instead ({@link MessageMedia.strip}), so Redis never holds file data.
 */
import type { ContentBlockParam, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { RedisClient } from "../redis.js";
import type { AgentOutcome } from "../agent/contract.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { AlbumStore } from "../media/album.js";
import { MediaError } from "../media/errors.js";
import { prepareMedia } from "../media/prepare.js";
import { mediaRefusal } from "../media/refusal.js";
import type { Outbound } from "../outbound.js";
import type { IncomingMessage } from "../queue/incoming.js";

/** What the media step found. */
export interface MessageMedia {
  /** The message to answer: as it came, or for an album with every item's files and captions. */
  message: IncomingMessage;
  /** Content blocks for the user turn, before its text; undefined for a message without files. */
  blocks?: ContentBlockParam[];
  /** The answer to send instead of calling the model, when a file cannot be read. */
  refusal?: string;
  /** `messages` with this run's file blocks replaced by their text placeholders (a new list; the same list when there are none). */
  strip(messages: MessageParam[]): MessageParam[];
  /** `outcome` with {@link strip} applied to the paused run's messages (for saving an approval). */
  stripOutcome<T extends AgentOutcome>(outcome: T): T;
}

const none = (message: IncomingMessage): MessageMedia => ({ message, strip: (m) => m, stripOutcome: <T extends AgentOutcome>(o: T): T => o });

/**
 * Reads the files of `message`.
 *
 * @param options.resuming - true when the run resumes from a checkpoint: its saved messages already
 *   hold the files' placeholders and the loop ignores new content blocks, so nothing is downloaded
 *   or converted (a file that can no longer be downloaded must not refuse a run that already changed
 *   data). An album is still gathered — the first attempt recorded what it took, so this costs two
 *   Redis commands and no wait — so that the returned message keeps the album's text (the run's trace
 *   shows it).
 * @throws the signal's reason when the answer's deadline passed; Redis errors (transient: the job retries).
 */
export async function readMedia(parts: { config: Config; redis: RedisClient; log: Logger }, message: IncomingMessage, outbound: Outbound, signal: AbortSignal, options: { resuming?: boolean } = {}): Promise<MessageMedia> {
  if (!message.media && !message.mediaGroupId) return none(message);
  const full = await new AlbumStore(parts.redis).collect(message, { signal });
  const refs = full.media ?? [];
  if (refs.length === 0 || options.resuming) return none(full);
  const maxImages = parts.config.MAX_IMAGES_PER_MESSAGE;
  try {
    const prepared = await prepareMedia(refs, outbound.media, { maxImages, signal });
    parts.log.info({ files: prepared.placeholders }, "files read for the model");
    const placeholderOf = new Map<ContentBlockParam, string>(prepared.blocks.map((b, i) => [b, prepared.placeholders[i]!]));
    const strip = (messages: MessageParam[]): MessageParam[] =>
      messages.map((m) =>
        m.role === "user" && Array.isArray(m.content) && m.content.some((b) => placeholderOf.has(b))
          ? { ...m, content: m.content.map((b) => (placeholderOf.has(b) ? { type: "text" as const, text: placeholderOf.get(b)! } : b)) }
          : m,
      );
    return {
      message: full,
      blocks: prepared.blocks,
      strip,
      stripOutcome: <T extends AgentOutcome>(outcome: T): T => (outcome.kind === "approval" ? { ...outcome, run: { ...outcome.run, messages: strip(outcome.run.messages) } } : outcome),
    };
  } catch (error) {
    if (!(error instanceof MediaError)) throw error;
    parts.log.warn({ problem: error.problem, what: error.what, reason: error.message }, "a file of the message cannot be read; answering without the model");
    return { ...none(full), refusal: mediaRefusal(error, parts.config.BOT_LOCALE, maxImages) };
  }
}
