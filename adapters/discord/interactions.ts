/**
 * Discord interactions: the slash commands of the catalogue (`src/commands/catalog.ts`) and button
 * presses, each answered within Discord's 3 seconds with an ephemeral reply (deferred first when
 * the answer takes longer, https://discord.com/developers/docs/interactions/receiving-and-responding#responding-to-an-interaction).
 *
 * The reply bodies are as Discord documents them: discord.js builds every message body with one
 * serialiser (`MessagePayload.resolveBody`), which always adds `enforce_nonce` (false unless asked)
 * and `tts` (false). Both belong to Create Message
 * (https://discord.com/developers/docs/resources/message#create-message), but Discord defines
 * neither for an interaction callback's message data
 * (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-messages:
 * `tts` yes, `enforce_nonce` no) nor for editing the original response
 * (https://discord.com/developers/docs/interactions/receiving-and-responding#edit-original-interaction-response:
 * neither). discord.js has no option that leaves them out, but `reply()` and `editReply()` take a
 * `MessagePayload` whose body is already resolved and send that body as it is, so the undefined
 * fields are removed from it ({@link replyPayload}, {@link editReplyPayload}).
 * A button press is routed by the core (`AdapterContext.press`, `pressButton` of `src/buttons.ts`); here its answer is
 * rendered: the ephemeral notice (a press that could not be handled gets the adapter's usual
 * "try again"), and a reminder message closed to its outcome.
 */
import {
  MessageFlags,
  MessagePayload,
  PermissionFlagsBits,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type InteractionEditReplyOptions,
  type InteractionReplyOptions,
  type InteractionUpdateOptions,
  type RepliableInteraction,
} from "discord.js";
import type { AdapterContext } from "../../src/adapter.js";
import { sliceUnits } from "../../src/cut.js";
import { GATE_TEXT } from "../../src/access/gate.js";
import { buttonKind } from "../../src/buttons.js";
import { commandsFor, findCommand } from "../../src/commands/catalog.js";
import type { CommandReply } from "../../src/commands/command.js";
import type { Config } from "../../src/config.js";
import { clientLocale, localize, type Locale } from "../../src/i18n.js";
import type { Logger } from "../../src/log.js";
import type { Outbound } from "../../src/outbound.js";
import { personName } from "./inbound.js";
import { tryAgain } from "./messages.js";
import { plainContent } from "./plain.js";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "./split.js";

/** How long an interaction handler may compute before it defers the reply, in ms (Discord allows 3000). */
export const DEFER_AFTER_MS = 2000;

/** Most choices a slash-command option may have (Discord limit). */
const MAX_CHOICES = 25;

/** The interaction handlers of one client; see the module comment. */
export class DiscordInteractions {
  constructor(
    private readonly context: AdapterContext,
    private readonly outbound: Outbound,
    private readonly config: Config,
    private readonly log: Logger,
    /** The bot's `@name`, for command texts that show how to mention it. */
    private readonly mention: () => string | undefined,
  ) {}

  /** A slash command: run through the command runner (access policy first), answered ephemerally. */
  async onCommand(interaction: ChatInputCommandInteraction): Promise<void> {
    const { context } = this;
    const locale = this.localeOf(interaction.locale);
    const command = findCommand(interaction.commandName, "discord");
    const args = command?.option ? (interaction.options.getString(command.option.name) ?? "") : "";
    const inGuild = interaction.inGuild();
    await this.#answer(interaction, async () => {
      const reply = await context.commands.runReply({
        name: interaction.commandName,
        args,
        platform: "discord",
        chatId: interaction.channelId,
        chatKind: inGuild ? "group" : "dm",
        guildId: interaction.guildId ?? undefined,
        userId: interaction.user.id,
        userName: personName(
          interaction.member && "displayName" in interaction.member ? interaction.member : undefined,
          interaction.user,
        ),
        locale,
        mention: this.mention(),
        // Manage Messages in this channel (the member's resolved permissions the interaction carries).
        isGroupAdmin: async () => interaction.memberPermissions?.has(PermissionFlagsBits.ManageMessages) ?? false,
      });
      // An interaction must be answered where the policy is silent; the ephemeral note is seen by the asker only.
      if (reply !== undefined) return reply;
      const here = await context.commands.localeOf({ platform: "discord", chatId: interaction.channelId }, locale);
      return localize(here, inGuild ? GATE_TEXT.groupNotEnabled : GATE_TEXT.private);
    });
  }

  /**
   * A press on one of the bot's buttons (approval, reminder, `/permissions`, `/memory`): the core decides; the
   * notice (plain, shown as it is: {@link plainContent}) is the ephemeral reply, and a reminder closed by the press is edited to its outcome
   * without buttons. A press on a `/reminders` or `/tasks` list's button (an ephemeral reply) updates that
   * list in place instead, to the notice and the list as it is now (`ButtonAnswer.listing`; interaction
   * response type 7, `UPDATE_MESSAGE`,
   * https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-interaction-callback-type);
   * when the answer took longer than {@link DEFER_AFTER_MS}, the reply was deferred as a new ephemeral
   * message, which then shows them (the pressed list stays as it was).
   * Data that is none of the bot's buttons is left unanswered.
   */
  async onButton(interaction: ButtonInteraction): Promise<void> {
    if (buttonKind(interaction.customId) === "unknown") return;
    const locale = this.localeOf(interaction.locale);
    let closeText: string | undefined;
    await this.#answer(interaction, async () => {
      const answer = await this.context.press({
        data: interaction.customId,
        platform: "discord",
        chatId: interaction.channelId,
        chatKind: interaction.inGuild() ? "group" : "dm",
        userId: interaction.user.id,
        locale,
        // Manage Messages in this channel, as for the group-admin commands.
        isGroupAdmin: async () => interaction.memberPermissions?.has(PermissionFlagsBits.ManageMessages) ?? false,
      });
      closeText = answer.closeText;
      if (answer.failed)
        return tryAgain(
          await this.context.commands.localeOf({ platform: "discord", chatId: interaction.channelId }, locale),
        );
      // A `/reminders` or `/tasks` list's button: the pressed list, as it is now, with the notice on top.
      if (answer.listing)
        return {
          text: `${plainContent(answer.notice)}\n\n${answer.listing.text}`,
          buttons: answer.listing.buttons ?? [],
          update: true,
        };
      // A settings change: the listing as it is now (with its buttons) is the ephemeral reply. A
      // notice is plain text, with names and texts people chose ("only **Eve** can decide"): shown as it is.
      return answer.replaceWith ?? plainContent(answer.notice);
    });
    if (closeText && !interaction.message.flags.has(MessageFlags.Ephemeral)) {
      await this.outbound
        .closeReminder({ chatId: interaction.channelId, messageId: interaction.message.id }, closeText)
        .catch((err: unknown) => this.log.warn({ err }, "could not close the pressed message"));
    }
  }

  /**
   * The locale of a Discord client (`zh-TW`, `en-US`…) as one of the bot's; else `BOT_LOCALE`. The
   * conversation's `/settings` language wins over it (the command runner and the button router read it).
   */
  localeOf(discordLocale: string | undefined): Locale {
    return clientLocale(discordLocale) ?? this.config.BOT_LOCALE;
  }

  /**
   * Replies ephemerally with `compute()`'s text. If it takes longer than {@link DEFER_AFTER_MS},
   * the interaction is deferred first (so Discord's 3 s limit is met) and the reply edited in.
   * Unknown interaction (10062) and already acknowledged (40060) are logged, not thrown.
   */
  async #answer(
    interaction: RepliableInteraction,
    compute: () => Promise<string | (CommandReply & { update?: boolean })>,
  ): Promise<void> {
    const pending = compute().then((r) => (typeof r === "string" ? { text: r } : r));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), DEFER_AFTER_MS)));
    try {
      const first = await Promise.race([pending, late]);
      clearTimeout(timer);
      if (first === "late") {
        await interaction.deferReply({ flags: MessageFlags.Ephemeral });
        const reply = await pending;
        await interaction.editReply(
          editReplyPayload(interaction, {
            content: fit(reply.text),
            components: buttonRows(reply) as never,
            allowedMentions: { parse: [] },
          }),
        );
      } else if (first.update && interaction.isButton()) {
        // The pressed message (an ephemeral list) itself, edited: `UPDATE_MESSAGE`.
        await interaction.update(
          updatePayload(interaction, {
            content: fit(first.text),
            components: buttonRows(first) as never,
            allowedMentions: { parse: [] },
          }),
        );
      } else {
        await interaction.reply(
          replyPayload(interaction, {
            content: fit(first.text),
            components: buttonRows(first) as never,
            flags: MessageFlags.Ephemeral,
            allowedMentions: { parse: [] },
          }),
        );
      }
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 10062 || code === 40060)
        this.log.warn(
          { code, interaction: interaction.id },
          "interaction could not be answered (too late or already answered)",
        );
      else throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * The slash commands of the catalogue (`src/commands/catalog.ts`), as the body of Discord's bulk
 * overwrite (https://discord.com/developers/docs/interactions/application-commands): type 1
 * (chat input), usable in servers and DMs, one optional or required string option with at most
 * 25 choices; descriptions in English with a zh-TW localisation (at most 100 characters).
 */
export function slashCommands(
  context: AdapterContext,
): { name: string; description: string; [key: string]: unknown }[] {
  const common = { type: 1, contexts: [0, 1], integration_types: [0] };
  return commandsFor("discord").map((c) => ({
    ...common,
    name: c.name,
    description: c.description.en.slice(0, 100),
    description_localizations: { "zh-TW": c.description["zh-TW"].slice(0, 100) },
    ...(c.option
      ? {
          options: [
            {
              type: 3,
              name: c.option.name,
              description: c.option.description.en.slice(0, 100),
              description_localizations: { "zh-TW": c.option.description["zh-TW"].slice(0, 100) },
              required: c.option.required,
              ...choicesOf(c.option.choices?.(context.commands.services) ?? []),
            },
          ],
        }
      : {}),
  }));
}

function choicesOf(values: string[]): { choices?: { name: string; value: string }[] } {
  return values.length > 0 ? { choices: values.slice(0, MAX_CHOICES).map((v) => ({ name: v, value: v })) } : {};
}

/** Keeps an ephemeral reply within Discord's 2000 characters (the first chunk, marked as cut). */
function fit(text: string): string {
  if (text.length <= DISCORD_MESSAGE_LIMIT) return text;
  return `${splitMessage(text, DISCORD_MESSAGE_LIMIT - 2)[0]}\n…`;
}

/** A command reply's buttons as action rows of up to 5 danger-style buttons (Discord allows 5 rows of 5). */
function buttonRows(reply: CommandReply): Record<string, unknown>[] {
  const rows: { type: 1; components: Record<string, unknown>[] }[] = [];
  (reply.buttons ?? []).slice(0, 25).forEach((b, i) => {
    if (i % 5 === 0) rows.push({ type: 1, components: [] });
    // Settings buttons are secondary (grey); revoke and cancel buttons danger (red).
    rows.at(-1)!.components.push({
      type: 2,
      style: b.data.startsWith("st:") ? 2 : 4,
      label: sliceUnits(b.label, 80),
      custom_id: b.data,
    });
  });
  return rows;
}

/** The payload of `interaction.reply(options)` without `enforce_nonce` (see the module comment). */
export function replyPayload(interaction: RepliableInteraction, options: InteractionReplyOptions): MessagePayload {
  return without(MessagePayload.create(interaction, options), ["enforce_nonce"]);
}

/**
 * The payload of a button interaction's `update(options)` (response type 7, `UPDATE_MESSAGE`) without
 * `enforce_nonce` and `tts` (see the module comment).
 */
export function updatePayload(interaction: ButtonInteraction, options: InteractionUpdateOptions): MessagePayload {
  return without(MessagePayload.create(interaction, options), ["enforce_nonce", "tts"]);
}

/** The payload of `interaction.editReply(options)` without `enforce_nonce` and `tts` (see the module comment). */
export function editReplyPayload(
  interaction: RepliableInteraction,
  options: InteractionEditReplyOptions,
): MessagePayload {
  return without(MessagePayload.create(interaction, options), ["enforce_nonce", "tts"]);
}

function without(payload: MessagePayload, fields: string[]): MessagePayload {
  const body = payload.resolveBody().body as Record<string, unknown>;
  for (const field of fields) delete body[field];
  return payload;
}
