/**
 * Watches the Discord gateway connection of a discord.js client, for `/health` and the log.
 *
 * discord.js reconnects and resumes by itself (RECONNECT op 7, an invalid session op 9, a dropped
 * socket). It gives up on a shard only for the close codes it cannot recover from (4004
 * authentication failed, 4010 invalid shard, 4011 sharding required, 4012 invalid API version,
 * 4013 invalid intents, 4014 disallowed intents: https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes)
 * and then emits `shardDisconnect`. {@link GatewayWatch} hands that on as an {@link AdapterFatalError}
 * (the adapter reports it, so the process exits and its supervisor restarts it), and counts a shard that stays away longer than
 * `unhealthyAfterMs` (network down, resume failing again and again) as not connected.
 */
import { Events, type Client } from "discord.js";
import { AdapterFatalError } from "../../src/adapter.js";
import type { Logger } from "../../src/log.js";

/** Timings of {@link GatewayWatch}, in ms. */
export interface GatewayWatchOptions {
  /** How long a shard may be reconnecting or resuming before the adapter counts as not connected. Default 60 000. */
  unhealthyAfterMs?: number;
}

/** Names of the gateway close codes discord.js does not recover from. */
const FATAL_CLOSE_CODES: Record<number, string> = {
  4004: "Authentication failed",
  4010: "Invalid shard",
  4011: "Sharding required",
  4012: "Invalid API version",
  4013: "Invalid intent(s)",
  4014: "Disallowed intent(s)",
};

/** See the module comment. Create one per client, after the client and before `login`. */
export class GatewayWatch {
  readonly #unhealthyAfterMs: number;
  /** Shards that are reconnecting, with the time (ms since the epoch) they went away. */
  readonly #away = new Map<number, number>();
  /** The close code of a shard discord.js gave up on, once that happened. */
  #closed: number | undefined;
  /** Set by {@link GatewayWatch.stopping}: the client is being destroyed on purpose. */
  #stopping = false;

  /**
   * @param log - reconnect and recovery lines go there.
   * @param onClosed - called once when a shard closed for good, with the error to report.
   */
  constructor(
    readonly client: Client,
    log: Logger,
    onClosed: (error: AdapterFatalError) => void,
    options: GatewayWatchOptions = {},
  ) {
    this.#unhealthyAfterMs = options.unhealthyAfterMs ?? 60_000;
    client.on(Events.ShardReconnecting, (shardId) => {
      // discord.js reports its own close (`client.destroy()`, code 1000) as reconnecting too.
      if (this.#stopping) return;
      if (!this.#away.has(shardId)) {
        this.#away.set(shardId, Date.now());
        log.warn({ shardId }, "discord: gateway connection lost; discord.js is reconnecting");
      }
    });
    const back = (shardId: number) => {
      const since = this.#away.get(shardId);
      if (since === undefined) return;
      this.#away.delete(shardId);
      log.info(
        { shardId, seconds: Math.round((Date.now() - since) / 100) / 10 },
        "discord: gateway connection is back",
      );
    };
    client.on(Events.ShardResume, (shardId) => back(shardId));
    client.on(Events.ShardReady, (shardId) => back(shardId));
    client.on(Events.ShardDisconnect, (event) => {
      if (this.#closed !== undefined || this.#stopping) return;
      this.#closed = event.code;
      onClosed(fatalError(event.code));
    });
  }

  /** Marks the client as being stopped on purpose: its shards closing from now on are not logged or reported. */
  stopping(): void {
    this.#stopping = true;
  }

  /**
   * True when the client is ready, no shard was closed for good, and no shard has been reconnecting
   * for longer than `unhealthyAfterMs`.
   * @param now - ms since the epoch.
   */
  healthy(now = Date.now()): boolean {
    if (this.#closed !== undefined || !this.client.isReady()) return false;
    for (const since of this.#away.values()) if (now - since > this.#unhealthyAfterMs) return false;
    return true;
  }
}

/** The error for a gateway close code discord.js gives up on; names DISCORD_TOKEN for 4004. */
export function fatalError(code: number): AdapterFatalError {
  const name = FATAL_CLOSE_CODES[code] ?? "unknown";
  if (code === 4004) {
    return new AdapterFatalError(
      "discord",
      `DISCORD_TOKEN was rejected by the Discord gateway (close code 4004 ${name}): the token ` +
        `was reset or revoked; copy the current one from the Developer Portal and restart.`,
    );
  }
  if (code === 4014) {
    return new AdapterFatalError(
      "discord",
      "Discord refused the gateway intents (close code 4014): enable the Message Content intent " +
        "in the Discord Developer Portal → your application → Bot → Privileged Gateway Intents → " +
        "Message Content Intent, then restart.",
    );
  }
  return new AdapterFatalError(
    "discord",
    `the Discord gateway closed the connection with code ${code} (${name}) and it cannot be resumed; no Discord message arrives until a restart.`,
  );
}
