/**
 * The Telegram adapter's lifecycle: start-up (`getMe`, `setMyCommands`), then long polling
 * (`bot.start`, kept alive by `polling.ts`, one poller per bot through the lease of `lease.ts`)
 * or, with `TELEGRAM_WEBHOOK_URL`, a webhook (`webhook.ts`: `webhookCallback` on a node:http server
 * checking the `X-Telegram-Bot-Api-Secret-Token` header); health; stop and abandon. What happens
 * to each update is `updates.ts`; the outbound half is `outbound.ts`.
 * Docs: https://grammy.dev/guide/deployment-types and https://core.telegram.org/bots/api#setwebhook.
 */
import type { Server } from "node:http";
import { Bot, type Transformer } from "grammy";
import type { Adapter, AdapterContext } from "../../src/adapter.js";
import { AdapterFatalError } from "../../src/adapter.js";
import type { Config } from "../../src/config.js";
import { redact, type Logger } from "../../src/log.js";
import { botToken, clientOptions, installRetry, START_TIMEOUT_MS } from "./api.js";
import { PollingLease, type LeaseOptions } from "./lease.js";
import { isUnauthorized, POLLING_DEFAULTS, PollingMonitor, type PollingOptions } from "./polling.js";
import { TelegramOutbound } from "./outbound.js";
import { TelegramUpdates } from "./updates.js";
import { startWebhookServer } from "./webhook.js";

/** Update types the bot asks for; edits and everything else are never delivered. */
export const ALLOWED_UPDATES = ["message", "callback_query"] as const;

/** Options of the adapter beyond the configuration. */
export interface TelegramAdapterOptions {
  /** Retry delays and the health threshold of long polling (ms). */
  polling?: PollingOptions;
  /** Timings of the polling lease (ms); see `lease.ts`. */
  lease?: LeaseOptions;
}

/** The Telegram adapter; `createAdapter` of `index.ts` makes one. */
export class TelegramAdapter implements Adapter {
  readonly platform = "telegram" as const;
  /** The outbound half, sharing the bot's API client. */
  readonly outbound: TelegramOutbound;
  /** The grammy bot (for tests and diagnostics). */
  readonly bot: Bot;
  #server: Server | undefined;
  #polling: Promise<void> | undefined;
  #webhookSet = false;
  readonly #monitor: PollingMonitor;
  /** Aborted by {@link stop}: ends a start-up in progress. */
  readonly #starting = new AbortController();
  readonly #options: TelegramAdapterOptions;
  /** The polling lease (long polling with a Redis in the context); see `lease.ts`. */
  #lease: PollingLease | undefined;
  /** The lease's renewal timer while polling, or the waiting adapter's retry timer. */
  #leaseTimer: NodeJS.Timeout | undefined;
  /** Set while a lost lease is being handed back (polling stopping). */
  #losing: Promise<void> | undefined;
  #stopped = false;
  #context: AdapterContext | undefined;
  /** Messages, commands and button presses (`updates.ts`). */
  readonly #updates: TelegramUpdates;

  /** @param options - polling retry and health timings (tests shorten them); see {@link PollingOptions}. */
  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    options: TelegramAdapterOptions = {},
  ) {
    this.bot = new Bot(botToken(config), { client: clientOptions(config) });
    this.#options = options;
    this.#monitor = new PollingMonitor(log, options.polling);
    // Innermost: every getUpdates that reaches Telegram is preceded by the lease's fencing check.
    this.bot.api.config.use(this.#leaseGate);
    // Inside auto-retry, so getUpdates failures reach the monitor at once (auto-retry waits 3 s, 6 s… on a 5xx).
    this.bot.api.config.use(this.#monitor.transformer);
    installRetry(this.bot.api);
    this.outbound = new TelegramOutbound(this.bot.api, config, log);
    this.#updates = new TelegramUpdates(this.bot, this.outbound, config, log);
  }

  /**
   * Registers the handlers, calls `getMe` and `setMyCommands`, then starts long polling
   * (`deleteWebhook` + `getUpdates`) or, with `TELEGRAM_WEBHOOK_URL`, listens on
   * `TELEGRAM_WEBHOOK_PORT` and calls `setWebhook` with `secret_token`. Resolves once updates flow.
   * While polling, a 409, 429, 5xx or network error is retried with a growing delay
   * ({@link PollingMonitor}); a 401 ends polling and is reported through `context.fatal`.
   * {@link stop} during start-up aborts the calls in flight.
   * @throws {AdapterFatalError} when the Bot API rejects the token (401); an Error when the Bot API
   *   does not answer `getMe` within {@link START_TIMEOUT_MS} or start-up was aborted by
   *   {@link stop}; the listen error when the webhook port is taken.
   */
  async start(context: AdapterContext): Promise<void> {
    try {
      await this.#start(context);
    } catch (error) {
      if (isUnauthorized(error)) throw tokenRejected(error);
      if (this.#starting.signal.aborted) throw new Error("telegram: start-up was stopped", { cause: error });
      throw error;
    }
  }

  async #start(context: AdapterContext): Promise<void> {
    const { bot, config, log } = this;
    const signal = this.#starting.signal;
    this.#context = context;
    this.#updates.install(context);
    await withTimeout(bot.init(grammySignal(signal)), START_TIMEOUT_MS, signal, () => {
      const root = config.TELEGRAM_API_ROOT ?? "https://api.telegram.org";
      return new Error(
        `telegram: the Bot API at ${root} did not answer getMe within ${START_TIMEOUT_MS / 1000} s (no network, a proxy needed, or a wrong TELEGRAM_API_ROOT?)`,
      );
    });
    await this.#updates.registerCommands(signal);
    signal.throwIfAborted();

    if (config.TELEGRAM_WEBHOOK_URL) {
      const url = new URL(config.TELEGRAM_WEBHOOK_URL);
      const server = await startWebhookServer(bot, {
        path: url.pathname,
        secret: config.TELEGRAM_WEBHOOK_SECRET ?? "",
        port: config.TELEGRAM_WEBHOOK_PORT,
        host: config.HTTP_HOST,
        log,
      });
      this.#server = server;
      // Listening before setWebhook: a port in use fails here, before Telegram is told anything.
      await bot.api.setWebhook(
        url.href,
        { secret_token: config.TELEGRAM_WEBHOOK_SECRET, allowed_updates: [...ALLOWED_UPDATES] },
        grammySignal(signal),
      );
      this.#webhookSet = true;
      log.info({ port: config.TELEGRAM_WEBHOOK_PORT, bot: bot.botInfo.username }, "telegram: webhook set, listening");
      return;
    }

    if (context.redis) {
      const lease = new PollingLease(context.redis, bot.botInfo.id, this.#options.lease);
      this.#lease = lease;
      const ours = await lease.tryAcquire();
      // stop() ran while Redis answered: its release found no tenure yet, so hand this one back here.
      if (signal.aborted) {
        if (ours) await lease.release();
        signal.throwIfAborted();
      }
      if (!ours) {
        log.info(
          { bot: bot.botInfo.username, retryEveryMs: this.#lease.options.retryEveryMs },
          "telegram: another adapter is polling this bot; waiting to take over its polling lease",
        );
        this.#waitForLease(context);
        return;
      }
    }
    await this.#startPolling(context);
    signal.throwIfAborted();
    log.info({ bot: bot.botInfo.username, fence: this.#lease?.fence }, "telegram: long polling started");
  }

  /** Starts grammy's long polling; resolves once it runs, then renews the lease (if any) while it does. */
  async #startPolling(context: AdapterContext): Promise<void> {
    const { bot, log } = this;
    await new Promise<void>((resolve, reject) => {
      let started = false;
      this.#polling = bot
        .start({
          allowed_updates: [...ALLOWED_UPDATES],
          onStart: () => {
            started = true;
            resolve();
          },
        })
        .catch((error: unknown) => {
          if (!started) return reject(error instanceof Error ? error : new Error(String(error)));
          if (isUnauthorized(error)) return this.#reportTokenRejected(error, context);
          // The monitor retries everything else; this is a bug (e.g. in grammy) rather than the network.
          log.error({ error: redact(String(error)) }, "telegram: polling stopped with an error");
        });
    });
    const lease = this.#lease;
    // stop() ran while polling started: it cleared the timer already, and releases the lease once polling ends.
    if (!lease || this.#stopped) return;
    this.#leaseTimer = setInterval(() => {
      void lease.confirm().then((ours) => {
        if (!ours) this.#leaseLost(context);
      });
    }, lease.options.renewEveryMs);
  }

  /** The token was rejected (401) after start-up: `context.fatal` (the core logs it and stops the bot), or without a core one fatal line here. */
  #reportTokenRejected(error: unknown, context: AdapterContext): void {
    const fatal = tokenRejected(error);
    if (context.fatal) context.fatal(fatal);
    else this.log.fatal(fatal.message);
  }

  /** A waiting adapter: tries to take the lease every `retryEveryMs`, and starts polling once it has it. */
  #waitForLease(context: AdapterContext): void {
    const lease = this.#lease!;
    let trying = false;
    this.#leaseTimer = setInterval(() => {
      if (trying || this.#stopped) return;
      trying = true;
      void lease
        .tryAcquire()
        .then(async (ours) => {
          if (!ours) return;
          if (this.#stopped) {
            // stop() ran while Redis answered: its release found no tenure yet, so hand this one back here.
            await lease.release();
            return;
          }
          clearInterval(this.#leaseTimer);
          try {
            await this.#startPolling(context);
            this.log.info(
              { bot: this.bot.botInfo.username, fence: lease.fence },
              "telegram: took over the polling lease; long polling started",
            );
          } catch (error) {
            if (isUnauthorized(error)) return this.#reportTokenRejected(error, context);
            this.log.error(
              { error: redact(String(error)) },
              "telegram: could not start polling after taking the lease; handing it back",
            );
            await lease.release();
            if (!this.#stopped) this.#waitForLease(context);
          }
        })
        .catch(() => undefined) // Redis unreachable: try again at the next tick
        .finally(() => (trying = false));
    }, lease.options.retryEveryMs);
  }

  /** The lease is no longer ours (another adapter took it while this one was paused, or Redis was gone too long): stop polling and wait. */
  #leaseLost(context: AdapterContext): void {
    if (this.#losing || this.#stopped) return;
    clearInterval(this.#leaseTimer);
    this.log.warn(
      "telegram: the polling lease was lost (this process was paused, or Redis was unreachable " +
        "for longer than the lease); stopped polling, waiting to take it again",
    );
    this.#losing = (async () => {
      if (this.bot.isRunning()) await Promise.race([this.bot.stop(), delay(STOP_CONFIRM_MS)]).catch(() => undefined);
      await this.#polling?.catch(() => undefined);
    })().finally(() => {
      this.#losing = undefined;
      if (!this.#stopped) this.#waitForLease(context);
    });
  }

  /**
   * The fencing check: a `getUpdates` of the polling loop goes to Telegram only after the lease's
   * tenure was confirmed in Redis; when it was lost, no call is made and polling stops. grammy's
   * offset-confirming call in `bot.stop()` (no signal) goes out only while the lease is surely
   * still ours, and is answered with no updates otherwise.
   */
  readonly #leaseGate: Transformer = async (prev, method, payload, grammySignal) => {
    const lease = this.#lease;
    if (method !== "getUpdates" || !lease) return prev(method, payload, grammySignal);
    if (grammySignal === undefined) {
      if (lease.held()) return prev(method, payload, grammySignal);
      return { ok: true, result: [] } as unknown as Awaited<ReturnType<typeof prev>>;
    }
    if (await lease.confirm()) return prev(method, payload, grammySignal);
    const signal = grammySignal as unknown as AbortSignal;
    this.#leaseLost(this.#context!);
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    throw new Error("telegram: the polling lease was lost");
  };

  /**
   * True while updates can arrive: the webhook was set and its server listens, or the polling loop
   * runs and is neither failing nor stuck for longer than `unhealthyAfterMs` ({@link PollingMonitor}).
   */
  isConnected(): boolean {
    if (this.config.TELEGRAM_WEBHOOK_URL) return this.#webhookSet && this.#server?.listening === true;
    // A waiting adapter (another one holds the polling lease) is healthy while it can watch the lease.
    if (this.#lease && !this.bot.isRunning())
      return this.#lease.reachable(this.#options.polling?.unhealthyAfterMs ?? POLLING_DEFAULTS.unhealthyAfterMs);
    return this.bot.isRunning() && this.bot.isInited() && this.#monitor.healthy();
  }

  /**
   * Stops polling (or closes the webhook server; the webhook itself stays set); aborts a start-up
   * still in progress; then waits for the updates still being handled detached (a command such as
   * `/compact`, and what its conversation sent after it: `updates.ts`). Never throws.
   */
  async stop(): Promise<void> {
    this.#starting.abort();
    this.#stopped = true;
    clearInterval(this.#leaseTimer);
    try {
      await this.#losing;
      // bot.stop() confirms the offset with one more getUpdates, which cannot be aborted: bound it.
      if (this.bot.isRunning()) await Promise.race([this.bot.stop(), delay(STOP_CONFIRM_MS)]);
      await this.#polling?.catch(() => undefined);
      // After the offset is confirmed: the next adapter does not get this one's updates again.
      await this.#lease?.release();
      if (this.#server) {
        const server = this.#server;
        this.#server = undefined;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    } catch (error) {
      this.log.warn({ error: redact(String(error)) }, "telegram: error while stopping");
    }
    // After the lease is released: another adapter may poll meanwhile; no new update reaches this one.
    await this.#updates.settled();
  }

  /**
   * Start-up of the process failed after this adapter set its webhook: `deleteWebhook` (pending
   * updates kept), so the bot is not left with a webhook no process serves, which would also make
   * every polling adapter of this bot get 409 from `getUpdates`. Failures are logged.
   */
  async abandon(): Promise<void> {
    if (!this.#webhookSet) return;
    try {
      await this.bot.api.deleteWebhook({ drop_pending_updates: false });
      this.#webhookSet = false;
      this.log.info("telegram: start-up failed after setWebhook; webhook deleted again");
    } catch (error) {
      this.log.error(
        { error: redact(String(error)) },
        "telegram: start-up failed after setWebhook, and deleteWebhook failed too: call deleteWebhook by hand before polling this bot",
      );
    }
  }
}

/** Longest wait for grammy's offset-confirming `getUpdates` in {@link TelegramAdapter.stop}, in ms. */
const STOP_CONFIRM_MS = 3000;

/** The error for a Bot API 401: the token in `TELEGRAM_BOT_TOKEN` was rejected (never includes it). */
function tokenRejected(error: unknown): AdapterFatalError {
  return new AdapterFatalError(
    "telegram",
    "TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API (401 Unauthorized): copy the " +
      "current token from @BotFather (it changes when the token is revoked) and restart.",
    { cause: error },
  );
}

/** grammy (node build) types its signals with the `abort-controller` shim; Node's own AbortSignal is what it uses at run time. */
function grammySignal(signal: AbortSignal): Parameters<Bot["init"]>[0] {
  return signal as unknown as Parameters<Bot["init"]>[0];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Resolves like `promise`, or rejects with `error()` after `ms` milliseconds, or as soon as `signal` aborts. */
function withTimeout<T>(promise: Promise<T>, ms: number, signal: AbortSignal, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(error()), ms);
    onAbort = () => reject(new Error("aborted"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([promise, timeout]).finally(() => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort!);
  });
}
