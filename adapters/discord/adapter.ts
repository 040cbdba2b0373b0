/**
 * The Discord adapter's lifecycle (discord.js v14): the gateway client (intents, shards), start-up
 * until every guild is ready, the slash-command registration, health, stop. What happens to each
 * event is `messages.ts` (messages, approval reactions) and `interactions.ts` (slash commands,
 * buttons); the outbound half (`outbound.ts`) is REST only.
 *
 * Slash commands are registered at start-up by the process that runs shard 0
 * (`PUT /applications/{app}/guilds/{guild}/commands` with `DISCORD_GUILD_ID`, else global
 * `PUT /applications/{app}/commands`).
 */
import { once } from "node:events";
import {
  Client,
  Events,
  GatewayDispatchEvents,
  GatewayIntentBits,
  Partials,
  Routes,
  type GatewayMessageReactionAddDispatchData,
} from "discord.js";
import type { Adapter, AdapterContext } from "../../src/adapter.js";
import type { Config } from "../../src/config.js";
import type { Logger } from "../../src/log.js";
import type { Outbound } from "../../src/outbound.js";
import { GatewayWatch, type GatewayWatchOptions } from "./gateway.js";
import { DiscordInteractions, slashCommands } from "./interactions.js";
import { DiscordMessages } from "./messages.js";
import { createRest, DiscordOutbound } from "./outbound.js";

/** Gateway intents the bot needs (Message Content is privileged: enable it in the Developer Portal). */
export const DISCORD_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
  GatewayIntentBits.GuildMessageReactions,
  GatewayIntentBits.DirectMessageReactions,
];

/** Options of the adapter beyond the configuration. */
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
export function shardOptions(config: Pick<Config, "DISCORD_SHARD_COUNT" | "DISCORD_SHARDS">): {
  shards: number[] | "auto";
  shardCount?: number;
} {
  const count = config.DISCORD_SHARD_COUNT;
  if (count === undefined) return { shards: "auto" };
  return { shards: config.DISCORD_SHARDS ?? Array.from({ length: count }, (_, id) => id), shardCount: count };
}

/** The discord.js-based adapter (see the module comment); `createAdapter` of `index.ts` makes one. */
export class DiscordAdapter implements Adapter {
  readonly platform = "discord" as const;
  readonly outbound: Outbound;
  readonly #config: Config;
  readonly #log: Logger;
  #client: Client | undefined;

  #gateway: GatewayWatch | undefined;
  readonly #options: DiscordAdapterOptions;
  /** Aborted by {@link stop}: ends a start-up in progress. */
  readonly #starting = new AbortController();

  /** @throws {Error} when `DISCORD_TOKEN` is not set (from the outbound half's REST client). */
  constructor(config: Config, log: Logger, options: DiscordAdapterOptions = {}) {
    this.#options = options;
    this.#config = config;
    this.#log = log.child({ platform: "discord" });
    this.outbound = new DiscordOutbound(createRest(config), config, log);
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
    const client = new Client({
      intents: DISCORD_INTENTS,
      partials: [Partials.Channel, Partials.Message, Partials.Reaction, Partials.User],
      rest: this.#config.DISCORD_API_URL ? { api: this.#config.DISCORD_API_URL } : {},
      allowedMentions: { parse: [], repliedUser: false },
      failIfNotExists: false,
      ...shardOptions(this.#config),
    });
    this.#client = client;
    const messages = new DiscordMessages(client, context, this.#config, this.#log);
    const interactions = new DiscordInteractions(context, this.outbound, this.#config, this.#log, () =>
      client.user ? `@${client.user.username}` : undefined,
    );
    client.on(
      Events.MessageCreate,
      (m) => void messages.onMessage(m).catch((err: unknown) => this.#log.error({ err }, "message handler failed")),
    );
    client.on(Events.InteractionCreate, (i) => {
      const run = i.isChatInputCommand()
        ? interactions.onCommand(i)
        : i.isButton()
          ? interactions.onButton(i)
          : Promise.resolve();
      void run.catch((err: unknown) => this.#log.error({ err }, "interaction handler failed"));
    });
    client.ws.on(
      GatewayDispatchEvents.MessageReactionAdd,
      (data: GatewayMessageReactionAddDispatchData) =>
        void messages.onReaction(data).catch((err: unknown) => this.#log.error({ err }, "reaction handler failed")),
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
          "Discord refused the gateway intents (close code 4014): enable the Message Content intent " +
            "in the Discord Developer Portal → your application → Bot → Privileged Gateway Intents → " +
            "Message Content Intent, then restart.",
          { cause: error },
        );
      }
      throw error;
    }
    const shards = client.options.shards as number[];
    this.#log.info(
      { user: client.user?.tag, guilds: client.guilds.cache.size, shards, shardCount: client.options.shardCount },
      "discord connected",
    );
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
    this.#gateway?.stopping();
    try {
      await client.destroy();
    } catch (err) {
      this.#log.warn({ err }, "discord client destroy failed");
    }
  }

  async #registerCommands(client: Client, context: AdapterContext): Promise<void> {
    const appId = client.application?.id ?? client.user?.id;
    if (!appId) return;
    const body = slashCommands(context);
    const guildId = this.#config.DISCORD_GUILD_ID;
    const route = guildId ? Routes.applicationGuildCommands(appId, guildId) : Routes.applicationCommands(appId);
    try {
      await client.rest.put(route, { body });
      this.#log.info(
        { scope: guildId ? `guild ${guildId}` : "global", commands: body.map((c) => c.name) },
        "slash commands registered",
      );
    } catch (err) {
      this.#log.error(
        { err, scope: guildId ? `guild ${guildId}` : "global" },
        guildId
          ? "could not register slash commands in DISCORD_GUILD_ID: is the bot in that server (invited with the applications.commands scope)?"
          : "could not register global slash commands",
      );
    }
  }
}
