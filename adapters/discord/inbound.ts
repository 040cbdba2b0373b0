/**
 * Deciding whether a Discord message is for the bot, and the text the model sees.
 *
 * In a DM every message is for the bot. In a guild channel or thread only a message that
 * mentions the bot (`<@id>`, the older nickname form `<@!id>`, or the bot's managed role
 * `<@&roleId>`) or replies to one of the bot's messages is.
 * Mention formats: https://discord.com/developers/docs/reference#message-formatting
 *
 * A forwarded message (`message_reference.type` 1 FORWARD) has empty `content`; its text and
 * attachments are in `message_snapshots`, which discord.js 14 exposes as `message.messageSnapshots`
 * (a Collection keyed by the forwarded message's id; each snapshot has `content`, `attachments`,
 * `embeds`, `mentions`, but no author). A forward is addressed like any other message: always in
 * a DM; in a guild only when the forwarding message itself mentions the bot or replies to it.
 * Source: https://discord.com/developers/docs/resources/message#message-reference-types and
 * #message-snapshot-object
 */
import { MessageFlags, MessageReferenceType, type Message } from "discord.js";
import { IMAGE_MEDIA_TYPES, bareMediaType } from "../../src/media/limits.js";
import { AUDIO_FILE_EXTENSIONS } from "../../src/media/voice.js";
import { cutFileName } from "../../src/cut.js";
import { plainLine } from "../../src/plain-text.js";
import type { ForwardedContent } from "../../src/prompts.js";
import { MAX_FILE_NAME_UNITS, type MediaRef } from "../../src/queue/incoming.js";

/** Whether a guild message addresses the bot (mention, managed-role mention, or reply to the bot). */
export function isAddressed(message: Message, botId: string): boolean {
  if (new RegExp(`<@!?${botId}>`).test(message.content)) return true;
  if (message.mentions.users.has(botId)) return true;
  const roleId = botRoleId(message, botId);
  if (roleId && (message.mentions.roles.has(roleId) || message.content.includes(`<@&${roleId}>`))) return true;
  return message.reference !== null && message.mentions.repliedUser?.id === botId;
}

/** The id of the bot's own managed role in the message's guild, if any. */
export function botRoleId(message: Message, botId: string): string | undefined {
  return message.guild?.roles.botRoleFor(botId)?.id;
}

/**
 * The text for the model: the bot's mentions (user and managed role) removed, other users'
 * mentions turned into `@name` so the model sees names rather than ids, whitespace trimmed.
 */
export function textForModel(message: Message, botId: string): string {
  let text = message.content
    .replace(new RegExp(`\\s*<@!?${botId}>(?=[,.!?;:，。！？；：])`, "g"), "")
    .replace(new RegExp(` ?<@!?${botId}> ?`, "g"), " ");
  const roleId = botRoleId(message, botId);
  if (roleId) text = text.replace(new RegExp(` ?<@&${roleId}> ?`, "g"), " ");
  text = text.replace(/<@!?(\d+)>/g, (whole, id: string) => {
    const member = message.mentions.members?.get(id);
    const user = message.mentions.users.get(id);
    const name = member?.displayName ?? user?.globalName ?? user?.username;
    return name ? `@${name}` : whole;
  });
  return text
    .trim()
    .replace(/^[,:，：]\s*/, "")
    .trim();
}

/**
 * The name shown for a person: server nickname, else global display name, else username, as one
 * plain line of at most 256 characters ({@link plainLine}: a name is chosen by its owner, and reaches
 * prompts, approval prompts, logs and `npm run access -- list`).
 */
export function personName(
  member: { displayName: string } | null | undefined,
  user: { id: string; globalName: string | null; username: string },
): string {
  return (
    plainLine(member?.displayName ?? user.globalName ?? user.username, 256) ||
    plainLine(user.username, 256) ||
    `Discord user ${user.id}`
  );
}

/** The name shown for the author of `message` ({@link personName}). */
export function authorName(message: Message): string {
  return personName(message.member, message.author);
}

/**
 * What a forwarded message carries (text with user mentions turned into `@name`, attachment
 * count), one entry per snapshot; `[]` for a message that is not a forward.
 */
export function forwardsOf(message: Message): ForwardedContent[] {
  if (message.reference?.type !== MessageReferenceType.Forward) return [];
  return [...message.messageSnapshots.values()].map((snapshot) => ({
    text: (snapshot.content ?? "").replace(/<@!?(\d+)>/g, (whole, id: string) => {
      const user = snapshot.mentions?.users.get(id);
      const name = user?.globalName ?? user?.username;
      return name ? `@${name}` : whole;
    }),
    attachments: snapshot.attachments?.size ?? 0,
  }));
}

/**
 * The message's own attachments as file references for the worker (`attachment.url` on Discord's
 * CDN, announced `size`, `content_type`, `filename`, pixel size): JPEG, PNG, GIF and WebP are
 * images; a voice message (message flag IS_VOICE_MESSAGE, or an attachment with a waveform) is
 * `voice` (with its `duration_secs`); `video/*` is video, `audio/*` audio (and, without a content
 * type, a name ending like an audio file: `.mp3`, `.m4a`, `.ogg`…); anything else a `file` (PDFs
 * and text files are read, the rest refused by the worker). A forward's attachments are not read (only mentioned).
 * Source: https://discord.com/developers/docs/resources/message#attachment-object
 */
export function attachmentsOf(message: Message): MediaRef[] {
  const voice = message.flags.has(MessageFlags.IsVoiceMessage);
  return [...message.attachments.values()].map((a): MediaRef => {
    const type = bareMediaType(a.contentType);
    const name = cutFileName(plainLine(a.name), MAX_FILE_NAME_UNITS);
    const ext = /\.([a-z0-9]{1,10})$/i.exec(a.name)?.[1]?.toLowerCase() ?? "";
    const kind =
      voice || a.waveform
        ? "voice"
        : (IMAGE_MEDIA_TYPES as readonly string[]).includes(type)
          ? "image"
          : type.startsWith("video/")
            ? "video"
            : type.startsWith("audio/") ||
                ((type === "" || type === "application/octet-stream") && AUDIO_FILE_EXTENSIONS.includes(ext))
              ? "audio"
              : "file";
    return {
      kind,
      url: a.url,
      size: a.size,
      ...(a.contentType ? { mimeType: a.contentType.slice(0, 255) } : {}),
      ...(name ? { name } : {}),
      ...(a.width ? { width: a.width } : {}),
      ...(a.height ? { height: a.height } : {}),
      ...(a.duration !== null && Number.isFinite(a.duration) && a.duration >= 0 ? { duration: a.duration } : {}),
    };
  });
}
