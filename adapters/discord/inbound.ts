/**
 * Deciding whether a Discord message is for the bot, and the text the model sees.
 *
 * In a DM every message is for the bot. In a guild channel or thread only a message that
 * mentions the bot (`<@id>`, the older nickname form `<@!id>`, or the bot's managed role
 * `<@&roleId>`) or replies to one of the bot's messages is.
 * Mention formats: https://discord.com/developers/docs/reference#message-formatting
 */
import type { Message } from "discord.js";

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
  return text.trim().replace(/^[,:，：]\s*/, "").trim();
}

/** The name shown for the author: server nickname, else global display name, else username. */
export function authorName(message: Message): string {
  return message.member?.displayName ?? message.author.globalName ?? message.author.username;
}
