/**
 * The Discord adapter (discord.js v14): gateway events in, jobs out; instant slash commands;
 * approval buttons and reactions. The outbound half ({@link createOutbound}) is REST only.
 *
 * - Messages: DMs always; guild channels and threads when the bot is mentioned or replied to
 *   (see `inbound.ts`). The bot itself, other bots, webhooks and system messages are ignored.
 *   A forwarded message's text (`message_snapshots`) is the question, marked for the model as
 *   forwarded content from someone else; its attachments are only noted.
 * - Slash commands `/help`, `/tools [tag]`, `/reset`, registered at start-up
 *   (`PUT /applications/{app}/guilds/{guild}/commands` with `DISCORD_GUILD_ID`, else global
 *   `PUT /applications/{app}/commands`). Each is answered within Discord's 3 seconds
 *   (https://discord.com/developers/docs/interactions/receiving-and-responding#responding-to-an-interaction).
 * - Approvals: the prompt's buttons (`ap:<id>:y|n`) and ✅/❌ reactions by the requester.
 *   Reactions are read from the raw gateway event MESSAGE_REACTION_ADD, not from discord.js's
 *   `messageReactionAdd`: discord.js drops a reaction whose DM channel it has not cached (the
 *   event carries no channel type), which is every DM after the adapter restarted. The channel
 *   and message are fetched (cache, else `GET /channels/{id}` and `GET …/messages/{id}`).
 */
import { once } from "node:events";
import {
  Client,
  Events,
  GatewayDispatchEvents,
  GatewayIntentBits,
  MessageFlags,
  Partials,
  PermissionFlagsBits,
  Routes,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
  type GatewayMessageReactionAddDispatchData,
  type Message,
  type RepliableInteraction,
} from "discord.js";
import type { Adapter, AdapterContext } from "../../src/adapter.js";
import { EnqueueError } from "../../src/adapter.js";
import { decisionNotice, type DecisionResult } from "../../src/approvals/decision.js";
import type { Config } from "../../src/config.js";
import { localize, type Locale } from "../../src/i18n.js";
import type { Logger } from "../../src/log.js";
import type { Outbound } from "../../src/outbound.js";
import { IncomingMessageSchema, MAX_INCOMING_TEXT, type IncomingMessage } from "../../src/queue/incoming.js";
import { CLOSED_ID, parseApprovalCustomId, reactionDecision } from "./approval.js";
import { GatewayWatch, type GatewayWatchOptions } from "./gateway.js";
import { attachmentsOf, authorName, forwardsOf, isAddressed, personName, textForModel } from "./inbound.js";
import { editReplyPayload, replyPayload } from "./interaction.js";
import { forwardedText } from "../../src/prompts.js";
import { createRest, DiscordOutbound, NO_MENTIONS } from "./outbound.js";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "./split.js";
import { GATE_TEXT } from "../../src/access/gate.js";
import { commandsFor, findCommand } from "../../src/commands/catalog.js";
import { ReminderActions } from "../../src/reminders/actions.js";
import type { CommandReply } from "../../src/commands/command.js";
import { isPermissionButton } from "../../src/commands/permissions.js";

export { DiscordOutbound } from "./outbound.js";
export { splitMessage, DISCORD_MESSAGE_LIMIT } from "./split.js";

/** Gateway intents the bot needs (Message Content is privileged: enable it in the Developer Portal). */
export const DISCORD_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
  GatewayIntentBits.GuildMessageReactions,
  GatewayIntentBits.DirectMessageReactions,
];

/** How long an interaction handler may compute before it defers the reply, in ms (Discord allows 3000). */
export const DEFER_AFTER_MS = 2000;

/** Most choices a slash-command option may have (Discord limit). */
const MAX_CHOICES = 25;

/**
 * Creates the REST-only outbound half (for worker-only processes too).
 * @throws {Error} when `DISCORD_TOKEN` is not set.
 */
export function createOutbound(config: Config, log: Logger): Outbound {
  return new DiscordOutbound(createRest(config), config, log);
}

/**
 * Creates the Discord adapter. Nothing connects until {@link Adapter.start}.
 * @throws {Error} when `DISCORD_TOKEN` is not set.
 */
export function createAdapter(config: Config, log: Logger, options: DiscordAdapterOptions = {}): Adapter {
  return new DiscordAdapter(config, log, options);
}

/** Options of {@link createAdapter} beyond the configuration. */
export interface DiscordAdapterOptions {
  /** The health threshold of a reconnecting gateway (ms); see {@link GatewayWatchOptions}. */
  gateway?: GatewayWatchOptions;
}

/**
 * The discord.js client's `shards` and `shardCount` from `DISCORD_SHARD_COUNT` and `DISCORD_SHARDS`:
 * without a count, `"auto"` (discord.js runs as many shards as `GET /gateway/bot` recommends, all in
 * this process); with one, the listed shard ids of that count (default every one). Discord routes a
 * guild's events to shard `(guild_id >> 22) % shard_count` and DMs to shard 0
 * (https://discord.com/developers/docs/topics/gateway#sharding).
 */
export function shardOptions(config: Pick<Config, "DISCORD_SHARD_COUNT" | "DISCORD_SHARDS">): { shards: number[] | "auto"; shardCount?: number } {
  const count = config.DISCORD_SHARD_COUNT;
  if (count === undefined) return { shards: "auto" };
  return { shards: config.DISCORD_SHARDS ?? Array.from({ length: count }, (_, id) => id), shardCount: count };
}

/** The discord.js-based adapter; see the module comment. */
export class DiscordAdapter implements Adapter {
  readonly platform = "discord" as const;
  readonly outbound: Outbound;
  readonly #config: Config;
  readonly #log: Logger;
  #client: Client | undefined;
  #context: AdapterContext | undefined;
  #warnedContentIntent = false;

  #gateway: GatewayWatch | undefined;
  readonly #options: DiscordAdapterOptions;
  /** Aborted by {@link stop}: ends a start-up in progress. */
  readonly #starting = new AbortController();

  /** @throws {Error} when `DISCORD_TOKEN` is not set (from the outbound half's REST client). */
  constructor(config: Config, log: Logger, options: DiscordAdapterOptions = {}) {
    this.#options = options;
    this.#config = config;
    this.#log = log.child({ platform: "discord" });
    this.outbound = createOutbound(config, log);
  }

  /** The discord.js client once started (tests and diagnostics). */
  get client(): Client | undefined {
    return this.#client;
  }

  /**
   * Logs in through the gateway (address from `GET /gateway/bot` on `DISCORD_API_URL`), waits for
   * the client to be ready (READY and every guild's GUILD_CREATE), then registers the slash commands.
   * @throws the login error (e.g. an invalid token: discord.js `TokenInvalid`) after destroying the
   * client; for close code 4014 an Error that says how to enable the Message Content intent.
   */
  async start(context: AdapterContext): Promise<void> {
    this.#context = context;
    const client = new Client({
      intents: DISCORD_INTENTS,
      partials: [Partials.Channel, Partials.Message, Partials.Reaction, Partials.User],
      rest: this.#config.DISCORD_API_URL ? { api: this.#config.DISCORD_API_URL } : {},
      allowedMentions: { parse: [], repliedUser: false },
      failIfNotExists: false,
      ...shardOptions(this.#config),
    });
    this.#client = client;
    client.on(Events.MessageCreate, (m) => void this.#onMessage(m).catch((err: unknown) => this.#log.error({ err }, "message handler failed")));
    client.on(Events.InteractionCreate, (i) => {
      const run = i.isChatInputCommand() ? this.#onCommand(i) : i.isButton() ? this.#onButton(i) : Promise.resolve();
      void run.catch((err: unknown) => this.#log.error({ err }, "interaction handler failed"));
    });
    client.ws.on(GatewayDispatchEvents.MessageReactionAdd, (data: GatewayMessageReactionAddDispatchData) =>
      void this.#onReaction(data).catch((err: unknown) => this.#log.error({ err }, "reaction handler failed")),
    );
    client.on(Events.Error, (err) => this.#log.error({ err }, "discord client error"));
    client.on(Events.Warn, (msg) => this.#log.warn(msg));
    let started = false;
    // After start-up, a gateway that closes for good stops the bot (before, start-up fails with it).
    this.#gateway = new GatewayWatch(
      client,
      this.#log,
      (error) => {
        if (!started) return;
        if (context.fatal) context.fatal(error);
        else this.#log.error(error.message);
      },
      this.#options.gateway,
    );

    const ready = once(client, Events.ClientReady, { signal: this.#starting.signal });
    ready.catch(() => {}); // awaited below; a late error after a failed login must not go unhandled
    const aborted = new Promise<never>((_resolve, reject) => {
      const fail = () => reject(new Error("discord: start-up was stopped"));
      if (this.#starting.signal.aborted) fail();
      else this.#starting.signal.addEventListener("abort", fail, { once: true });
    });
    aborted.catch(() => {});
    try {
      // stop() during start-up destroys the client and aborts: start-up ends at once.
      await Promise.race([client.login(this.#config.DISCORD_TOKEN).then(() => ready), aborted]);
      started = true;
    } catch (error) {
      await client.destroy().catch(() => {});
      this.#client = undefined;
      if (error instanceof Error && /disallowed intents/i.test(error.message)) {
        throw new Error(
          "Discord refused the gateway intents (close code 4014): enable the Message Content intent in the Discord Developer Portal → your application → Bot → Privileged Gateway Intents → Message Content Intent, then restart.",
          { cause: error },
        );
      }
      throw error;
    }
    const shards = client.options.shards as number[];
    this.#log.info({ user: client.user?.tag, guilds: client.guilds.cache.size, shards, shardCount: client.options.shardCount }, "discord connected");
    // One process registers the slash commands: the one running shard 0 (which also receives the DMs).
    if (shards.includes(0)) await this.#registerCommands(client, context);
    else this.#log.info({ shards }, "slash commands are registered by the process that runs shard 0");
  }

  /**
   * True while the gateway is ready: no shard closed for good, none reconnecting for longer than
   * `unhealthyAfterMs` (see {@link GatewayWatch}); used by `/health`.
   */
  isConnected(): boolean {
    return this.#client !== undefined && this.#gateway?.healthy() === true;
  }

  /** Disconnects from the gateway; aborts a pending start-up. Never throws. */
  async stop(): Promise<void> {
    this.#starting.abort();
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    try {
      await client.destroy();
    } catch (err) {
      this.#log.warn({ err }, "discord client destroy failed");
    }
  }

  // ---- slash commands -------------------------------------------------------------------

  async #registerCommands(client: Client, context: AdapterContext): Promise<void> {
    const appId = client.application?.id ?? client.user?.id;
    if (!appId) return;
    const body = slashCommands(context);
    const guildId = this.#config.DISCORD_GUILD_ID;
    const route = guildId ? Routes.applicationGuildCommands(appId, guildId) : Routes.applicationCommands(appId);
    try {
      await client.rest.put(route, { body });
      this.#log.info({ scope: guildId ? `guild ${guildId}` : "global", commands: body.map((c) => c.name) }, "slash commands registered");
    } catch (err) {
      this.#log.error(
        { err, scope: guildId ? `guild ${guildId}` : "global" },
        guildId
          ? "could not register slash commands in DISCORD_GUILD_ID: is the bot in that server (invited with the applications.commands scope)?"
          : "could not register global slash commands",
      );
    }
  }

  async #onCommand(interaction: ChatInputCommandInteraction): Promise<void> {
    const context = this.#context!;
    const locale = this.#localeOf(interaction.locale);
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
        userName: personName(interaction.member && "displayName" in interaction.member ? interaction.member : undefined, interaction.user),
        locale,
        mention: this.#client?.user ? `@${this.#client.user.username}` : undefined,
        // Manage Messages in this channel (the member's resolved permissions the interaction carries).
        isGroupAdmin: async () => interaction.memberPermissions?.has(PermissionFlagsBits.ManageMessages) ?? false,
      });
      // An interaction must be answered where the policy is silent; the ephemeral note is seen by the asker only.
      return reply ?? localize(locale, inGuild ? GATE_TEXT.groupNotEnabled : GATE_TEXT.private);
    });
  }

  /**
   * Replies ephemerally with `compute()`'s text. If it takes longer than {@link DEFER_AFTER_MS},
   * the interaction is deferred first (so Discord's 3 s limit is met) and the reply edited in.
   * Unknown interaction (10062) and already acknowledged (40060) are logged, not thrown.
   */
  async #answer(interaction: RepliableInteraction, compute: () => Promise<string | CommandReply>): Promise<void> {
    const pending = compute().then((r) => (typeof r === "string" ? { text: r } : r));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), DEFER_AFTER_MS)));
    try {
      const first = await Promise.race([pending, late]);
      clearTimeout(timer);
      if (first === "late") {
        await interaction.deferReply({ flags: MessageFlags.Ephemeral });
        const reply = await pending;
        await interaction.editReply(editReplyPayload(interaction, { content: fit(reply.text), components: buttonRows(reply) as never, allowedMentions: { parse: [] } }));
      } else {
        await interaction.reply(replyPayload(interaction, { content: fit(first.text), components: buttonRows(first) as never, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } }));
      }
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 10062 || code === 40060) this.#log.warn({ code, interaction: interaction.id }, "interaction could not be answered (too late or already answered)");
      else throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  #localeOf(discordLocale: string | undefined): Locale {
    if (discordLocale?.startsWith("zh")) return "zh-TW";
    if (discordLocale?.startsWith("en")) return "en";
    return this.#config.BOT_LOCALE;
  }

  // ---- approvals --------------------------------------------------------------------------

  // ---- reminders --------------------------------------------------------------------------

  /** A reminder button (done, snooze, a `/reminders` cancel): an ephemeral notice; a closed reminder is edited to its outcome without buttons. */
  async #onReminderButton(interaction: ButtonInteraction): Promise<void> {
    const locale = this.#localeOf(interaction.locale);
    let closeText: string | undefined;
    await this.#answer(interaction, async () => {
      try {
        const reminders = this.#context?.reminders;
        if (!reminders) return localize(locale, { "zh-TW": "這個提醒已經結束或取消了。", en: "This reminder has ended or was cancelled." });
        const answer = await reminders.press({ data: interaction.customId, platform: "discord", userId: interaction.user.id });
        closeText = answer.closeText;
        return answer.notice;
      } catch (err) {
        this.#log.error({ err }, "reminder button failed");
        return tryAgain(locale);
      }
    });
    if (closeText && !interaction.message.flags.has(MessageFlags.Ephemeral)) {
      await this.outbound.closeReminder({ chatId: interaction.channelId, messageId: interaction.message.id }, closeText).catch((err: unknown) => this.#log.warn({ err }, "could not close the reminder message"));
    }
  }

  /** A `/permissions` revoke button: the presser's own grant in this channel is revoked; an ephemeral notice says so. */
  async #onPermissionButton(interaction: ButtonInteraction): Promise<void> {
    const locale = this.#localeOf(interaction.locale);
    await this.#answer(interaction, async () => {
      const answer = await this.#context!.commands.pressPermission({ data: interaction.customId, platform: "discord", chatId: interaction.channelId, userId: interaction.user.id, locale });
      return answer.notice;
    });
  }

  async #onButton(interaction: ButtonInteraction): Promise<void> {
    if (ReminderActions.owns(interaction.customId)) return this.#onReminderButton(interaction);
    if (isPermissionButton(interaction.customId)) return this.#onPermissionButton(interaction);
    const parsed = parseApprovalCustomId(interaction.customId);
    if (!parsed) return;
    const locale = this.#localeOf(interaction.locale);
    await this.#answer(interaction, async () => {
      if (parsed.approvalId === CLOSED_ID) return decisionNotice({ status: "not_found" }, locale);
      try {
        const result = await this.#context!.approvals.decide({ approvalId: parsed.approvalId, platform: "discord", deciderId: interaction.user.id, approve: parsed.approve, ...(parsed.always ? { always: true } : {}) });
        this.#logDecision("button", interaction.user.id, result);
        return decisionNotice(result, locale);
      } catch (err) {
        this.#log.error({ err }, "approval decision failed");
        return tryAgain(locale);
      }
    });
  }

  /**
   * A ✅/❌ on one of the bot's approval prompts decides it, in guilds and DMs alike, whether or
   * not discord.js has the channel or message cached (raw MESSAGE_REACTION_ADD, see the module comment).
   */
  async #onReaction(data: GatewayMessageReactionAddDispatchData): Promise<void> {
    const client = this.#client;
    if (!client?.user || data.user_id === client.user.id) return;
    const approve = reactionDecision(data.emoji.name);
    if (approve === undefined) return;
    // Discord names the reacted message's author; when it is someone else there is nothing to fetch.
    if (data.message_author_id !== undefined && data.message_author_id !== client.user.id) return;
    let message: Message;
    try {
      const channel = await client.channels.fetch(data.channel_id);
      if (!channel?.isTextBased()) return;
      message = await channel.messages.fetch(data.message_id);
    } catch (err) {
      this.#log.warn({ err, chatId: data.channel_id, messageId: data.message_id }, "a ✅/❌ reaction on a message that could not be fetched; ignored");
      return;
    }
    if (message.author?.id !== client.user.id) return;
    const approvalId = approvalIdOf(message);
    if (!approvalId || approvalId === CLOSED_ID) return;
    let result: DecisionResult;
    try {
      result = await this.#context!.approvals.decide({ approvalId, platform: "discord", deciderId: data.user_id, approve });
    } catch (err) {
      this.#log.error({ err }, "approval decision by reaction failed");
      await this.#reply(message, tryAgain(this.#config.BOT_LOCALE));
      return;
    }
    this.#logDecision("reaction", data.user_id, result);
    if (result.status === "not_requester" && data.guild_id) {
      // Someone else's ✅/❌ changes nothing; take it away so the prompt does not look decided (not possible in DMs).
      const route = Routes.channelMessageUserReaction(data.channel_id, data.message_id, encodeURIComponent(data.emoji.name!), data.user_id);
      await client.rest.delete(route).catch((err: unknown) => this.#log.debug({ err }, "could not remove a reaction (Manage Messages permission?)"));
    }
  }

  #logDecision(via: string, deciderId: string, result: DecisionResult): void {
    this.#log.info({ via, deciderId, status: result.status }, `approval ${via}: ${result.status}`);
  }

  // ---- messages ---------------------------------------------------------------------------

  async #onMessage(message: Message): Promise<void> {
    const client = this.#client;
    const context = this.#context;
    if (!client?.user || !context) return;
    const botId = client.user.id;
    if (message.author.id === botId || message.author.bot || message.webhookId || message.system) return;
    const dm = !message.inGuild();
    if (!dm && !isAddressed(message, botId)) return;
    const locale = this.#config.BOT_LOCALE;

    // A forward's text is the question, marked as someone else's words (see src/prompts.ts).
    const forwards = forwardsOf(message);
    const own = textForModel(message, botId);
    const text = forwards.some((f) => f.text.trim() !== "") ? forwardedText(forwards, own) : own;
    const media = attachmentsOf(message);
    if (!text && media.length === 0) {
      const nothing = forwards.length === 0 && message.content === "" && message.embeds.length === 0;
      if (!dm && nothing && !this.#warnedContentIntent) {
        this.#warnedContentIntent = true;
        this.#log.warn(
          "a message mentioning the bot arrived with empty content: the Message Content intent is not in effect. Enable it in the Discord Developer Portal → your application → Bot → Privileged Gateway Intents → Message Content Intent, then restart the bot.",
        );
      }
      const hint =
        forwards.some((f) => f.attachments > 0)
          ? localize(locale, { "zh-TW": "轉傳訊息裡的附件我讀不到：請直接把檔案傳給我，或用文字告訴我你需要什麼。", en: "I can't read the attachments of a forwarded message: send me the file itself, or tell me in words what you need." })
          : localize(locale, { "zh-TW": "請在訊息裡寫下你的問題，例如「明天臺北會下雨嗎？」", en: "Please write your question in the message, e.g. \"Will it rain in Taipei tomorrow?\"" });
      await this.#reply(message, hint);
      return;
    }
    if (text.length > MAX_INCOMING_TEXT) {
      await this.#reply(message, localize(locale, { "zh-TW": "訊息太長了（上限 {max} 字），請縮短後再試一次。", en: "That message is too long (limit {max} characters); please shorten it." }, { max: MAX_INCOMING_TEXT }));
      return;
    }
    const parsed = IncomingMessageSchema.safeParse({
      platform: "discord",
      chatId: message.channelId,
      chatKind: dm ? "dm" : "group",
      userId: message.author.id,
      userName: authorName(message),
      text,
      ...(media.length > 0 ? { media } : {}),
      messageId: message.id,
      sentAt: message.createdTimestamp,
      reply: dm ? {} : { guildId: message.guildId },
    });
    if (!parsed.success) {
      // Should not happen (the checks above cover the schema); never leave the person unanswered.
      this.#log.error({ issues: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`) }, "a message could not be normalised");
      await this.#reply(message, tryAgain(locale));
      return;
    }
    const incoming: IncomingMessage = parsed.data;
    try {
      await context.enqueue(incoming);
    } catch (err) {
      this.#log.error({ err, chatId: incoming.chatId }, err instanceof EnqueueError ? "could not queue a message" : "unexpected error while queueing a message");
      await this.#reply(message, tryAgain(locale));
    }
  }

  async #reply(message: Message, text: string): Promise<void> {
    try {
      await message.reply({ content: text, allowedMentions: { parse: [], repliedUser: false } });
    } catch (err) {
      this.#log.error({ err, chatId: message.channelId }, "could not send a reply");
    }
  }
}

/**
 * The slash commands of the catalogue (`src/commands/catalog.ts`), as the body of Discord's bulk
 * overwrite (https://discord.com/developers/docs/interactions/application-commands): type 1
 * (chat input), usable in servers and DMs, one optional or required string option with at most
 * 25 choices; descriptions in English with a zh-TW localisation (at most 100 characters).
 */
export function slashCommands(context: AdapterContext): { name: string; description: string; [key: string]: unknown }[] {
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

/** The first approval button's id on a bot message, if it is a prompt. */
function approvalIdOf(message: Message): string | undefined {
  for (const row of message.components) {
    const json = row.toJSON() as { components?: { custom_id?: string }[] };
    for (const c of json.components ?? []) {
      const parsed = c.custom_id ? parseApprovalCustomId(c.custom_id) : undefined;
      if (parsed) return parsed.approvalId;
    }
  }
  return undefined;
}

/** Keeps an ephemeral reply within Discord's 2000 characters (the first chunk, marked as cut). */
function fit(text: string): string {
  if (text.length <= DISCORD_MESSAGE_LIMIT) return text;
  return `${splitMessage(text, DISCORD_MESSAGE_LIMIT - 2)[0]}\n…`;
}

/** The short "try again" answer when a message could not be queued or a decision not recorded. */
export function tryAgain(locale: Locale): string {
  return localize(locale, { "zh-TW": "抱歉，我現在暫時無法處理，請稍後再試一次。", en: "Sorry, I can't handle that right now. Please try again in a moment." });
}


export { NO_MENTIONS };

/** A command reply's buttons as action rows of up to 5 danger-style buttons (Discord allows 5 rows of 5). */
function buttonRows(reply: CommandReply): Record<string, unknown>[] {
  const rows: { type: 1; components: Record<string, unknown>[] }[] = [];
  (reply.buttons ?? []).slice(0, 25).forEach((b, i) => {
    if (i % 5 === 0) rows.push({ type: 1, components: [] });
    rows.at(-1)!.components.push({ type: 2, style: 4, label: b.label, custom_id: b.data });
  });
  return rows;
}
