/**
 * The bodies of our interaction replies, as Discord documents them.
 *
 * discord.js builds every message body with one serialiser (`MessagePayload.resolveBody`), which
 * always adds `enforce_nonce` (false unless asked) and `tts` (false). Both belong to Create Message
 * (https://discord.com/developers/docs/resources/message#create-message), but Discord defines
 * neither for an interaction callback's message data
 * (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-messages:
 * `tts` yes, `enforce_nonce` no) nor for editing the original response
 * (https://discord.com/developers/docs/interactions/receiving-and-responding#edit-original-interaction-response:
 * neither). discord.js has no option that leaves them out, but `reply()` and `editReply()` take a
 * {@link MessagePayload} whose body is already resolved and send that body as it is, so the
 * undefined fields are removed from it here.
 */
import { MessagePayload, type InteractionEditReplyOptions, type InteractionReplyOptions, type RepliableInteraction } from "discord.js";

/** The payload of `interaction.reply(options)` without `enforce_nonce` (see the module comment). */
export function replyPayload(interaction: RepliableInteraction, options: InteractionReplyOptions): MessagePayload {
  return without(MessagePayload.create(interaction, options), ["enforce_nonce"]);
}

/** The payload of `interaction.editReply(options)` without `enforce_nonce` and `tts` (see the module comment). */
export function editReplyPayload(interaction: RepliableInteraction, options: InteractionEditReplyOptions): MessagePayload {
  return without(MessagePayload.create(interaction, options), ["enforce_nonce", "tts"]);
}

function without(payload: MessagePayload, fields: string[]): MessagePayload {
  const body = payload.resolveBody().body as Record<string, unknown>;
  for (const field of fields) delete body[field];
  return payload;
}
