/**
 * The Telegram adapter (grammy): inbound by long polling (`bot.start`, kept alive by `polling.ts`)
 * or, with `TELEGRAM_WEBHOOK_URL`, by webhook (`webhook.ts`: `webhookCallback` on a node:http
 * server checking the `X-Telegram-Bot-Api-Secret-Token` header); outbound through {@link TelegramOutbound}.
 * Docs: https://grammy.dev/guide/deployment-types and https://core.telegram.org/bots/api#setwebhook.
 */
import type { Server } from "node:http";
import { Bot, type Context, type Transformer } from "grammy";
import type { Adapter, AdapterContext } from "../../src/adapter.js";
import { AdapterFatalError, EnqueueError } from "../../src/adapter.js";
import { decisionNotice } from "../../src/approvals/decision.js";
import { isPermissionButton } from "../../src/commands/permissions.js";
import { ReminderActions, type PressAnswer } from "../../src/reminders/actions.js";
import type { Config } from "../../src/config.js";
import { localize } from "../../src/i18n.js";
import { redact, type Logger } from "../../src/log.js";
import { MAX_INCOMING_TEXT } from "../../src/queue/incoming.js";
import { supportedMedia } from "../../src/media/refusal.js";
import { botToken, clientOptions, createApi, installRetry, isHarmless, START_TIMEOUT_MS } from "./api.js";
import { parseCallbackData } from "./approval.js";
import { botCommands } from "./commands.js";
import { PollingLease, type LeaseOptions } from "./lease.js";
import { isUnauthorized, POLLING_DEFAULTS, PollingMonitor, type PollingOptions } from "./polling.js";
import { startWebhookServer } from "./webhook.js";
import { classifyMessage, type IncomingMessageBase } from "./inbound.js";
import { replyPlace, TelegramOutbound } from "./outbound.js";
import { escapeHtml } from "./html.js";

/** The outbound class, for callers that need its Telegram-only extras (`sendMarkdown`, `removeKeyboard`). */
export { TelegramOutbound } from "./outbound.js";

/** Update types the bot asks for; edits and everything else are never delivered. */
export const ALLOWED_UPDATES = ["message", "callback_query"] as const;

/**
 * The outbound half alone (REST only, no polling), for worker-only processes.
 * @throws {Error} when `TELEGRAM_BOT_TOKEN` is not set.
 */
export function createOutbound(config: Config, log: Logger): TelegramOutbound {
  return new TelegramOutbound(createApi(config), config, log.child({ platform: "telegram" }));
}

/**
 * The Telegram adapter. `start` resolves once polling runs (or the webhook is set and its HTTP
 * server listens on `TELEGRAM_WEBHOOK_PORT`).
 * @throws {Error} when `TELEGRAM_BOT_TOKEN` is not set.
 */
export function createAdapter(config: Config, log: Logger, options: TelegramAdapterOptions = {}): Adapter {
  return new TelegramAdapter(config, log.child({ platform: "telegram" }), options);
}

/** Options of {@link createAdapter} beyond the configuration. */
export interface TelegramAdapterOptions {
  /** Retry delays and the health threshold of long polling (ms). */
  polling?: PollingOptions;
  /** Timings of the polling lease (ms); see `lease.ts`. */
  lease?: LeaseOptions;
}

/** See {@link createAdapter}. */
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
    bot.catch((err) => log.error({ updateId: err.ctx.update.update_id, error: redact(String((err.error as Error)?.stack ?? err.error)) }, "telegram: update handling failed"));
    bot.on("message", (ctx) => this.#onMessage(ctx, context));
    bot.on("callback_query:data", (ctx) => this.#onCallback(ctx, context));
    await withTimeout(bot.init(grammySignal(signal)), START_TIMEOUT_MS, signal, () => {
      const root = config.TELEGRAM_API_ROOT ?? "https://api.telegram.org";
      return new Error(`telegram: the Bot API at ${root} did not answer getMe within ${START_TIMEOUT_MS / 1000} s (no network, a proxy needed, or a wrong TELEGRAM_API_ROOT?)`);
    });
    await this.#registerCommands(signal);
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
      await bot.api.setWebhook(url.href, { secret_token: config.TELEGRAM_WEBHOOK_SECRET, allowed_updates: [...ALLOWED_UPDATES] }, grammySignal(signal));
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
        log.info({ bot: bot.botInfo.username, retryEveryMs: this.#lease.options.retryEveryMs }, "telegram: another adapter is polling this bot; waiting to take over its polling lease");
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
            this.log.info({ bot: this.bot.botInfo.username, fence: lease.fence }, "telegram: took over the polling lease; long polling started");
          } catch (error) {
            if (isUnauthorized(error)) return this.#reportTokenRejected(error, context);
            this.log.error({ error: redact(String(error)) }, "telegram: could not start polling after taking the lease; handing it back");
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
    this.log.warn("telegram: the polling lease was lost (this process was paused, or Redis was unreachable for longer than the lease); stopped polling, waiting to take it again");
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
    if (this.#lease && !this.bot.isRunning()) return this.#lease.reachable(this.#options.polling?.unhealthyAfterMs ?? POLLING_DEFAULTS.unhealthyAfterMs);
    return this.bot.isRunning() && this.bot.isInited() && this.#monitor.healthy();
  }

  /**
   * Stops polling (or closes the webhook server; the webhook itself stays set); aborts a start-up
   * still in progress. Never throws.
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
      this.log.error({ error: redact(String(error)) }, "telegram: start-up failed after setWebhook, and deleteWebhook failed too: call deleteWebhook by hand before polling this bot");
    }
  }

  /**
   * `setMyCommands` for the default language (`BOT_LOCALE`) and for `zh` and `en` clients. Failures
   * are logged, not fatal, except a 401 (rethrown: the token was rejected).
   */
  async #registerCommands(signal: AbortSignal): Promise<void> {
    const calls = [
      this.bot.api.setMyCommands(botCommands(this.config.BOT_LOCALE), undefined, grammySignal(signal)),
      this.bot.api.setMyCommands(botCommands("zh-TW"), { language_code: "zh" }, grammySignal(signal)),
      this.bot.api.setMyCommands(botCommands("en"), { language_code: "en" }, grammySignal(signal)),
    ];
    for (const result of await Promise.allSettled(calls)) {
      if (result.status === "rejected" && isUnauthorized(result.reason)) throw result.reason;
      if (result.status === "rejected" && !signal.aborted) this.log.warn({ error: redact(String(result.reason)) }, "telegram: setMyCommands failed");
    }
  }

  async #reply(to: IncomingMessageBase, markdown: string): Promise<void> {
    await this.outbound.sendMarkdown(replyPlace(to), markdown);
  }

  async #onMessage(ctx: Context, context: AdapterContext): Promise<void> {
    const locale = this.config.BOT_LOCALE;
    const decision = classifyMessage(ctx.message!, ctx.me);
    switch (decision.kind) {
      case "ignore":
        this.log.debug({ chatId: ctx.chat?.id, reason: decision.reason }, "telegram: message ignored");
        return;
      case "hint":
        await this.#reply(
          decision.message,
          decision.reason === "media"
            ? `${localize(locale, { "zh-TW": "這種訊息我還看不懂。", en: "I can't read this kind of message yet." })}\n${supportedMedia(locale, this.config.MAX_IMAGES_PER_MESSAGE)}`
            : decision.reason === "too_long"
              ? localize(locale, { "zh-TW": "訊息太長了（上限 {max} 字），請縮短一點。", en: "That message is too long (at most {max} characters). Please shorten it." }, { max: MAX_INCOMING_TEXT })
              : localize(locale, { "zh-TW": "有什麼需要幫忙的嗎？請把問題寫在同一則訊息裡。", en: "How can I help? Write your question in the same message." }),
        );
        return;
      case "command":
        return this.#command(decision, context);
      case "album_item":
        // Recorded for its album (the captioned item that mentions the bot is queued with it); never answered alone.
        await context.albums?.add(decision.message, false).catch((error: unknown) => this.log.warn({ chatId: decision.message.chatId, error: redact(String(error)) }, "telegram: could not record an album item"));
        return;
      case "enqueue":
        try {
          // Of an album, only the first item that addresses the bot is queued; the worker gathers the rest.
          if (decision.message.mediaGroupId && context.albums && !(await context.albums.add(decision.message, true))) return;
          await context.enqueue(decision.message);
        } catch (error) {
          this.log.error(
            { chatId: decision.message.chatId, error: redact(String(error)), enqueueError: error instanceof EnqueueError },
            "telegram: could not queue a message",
          );
          await this.#reply(decision.message, localize(locale, { "zh-TW": "抱歉，我現在有點忙不過來，請稍後再試一次。", en: "Sorry, I could not take your message right now. Please try again in a moment." }));
        }
    }
  }

  async #command(decision: Extract<ReturnType<typeof classifyMessage>, { kind: "command" }>, context: AdapterContext): Promise<void> {
    const to = decision.message;
    const chatId = Number(to.chatId);
    const reply = await context.commands.runReply({
      name: decision.command,
      args: decision.args,
      platform: "telegram",
      chatId: to.chatId,
      chatKind: to.chatKind,
      topicId: to.topicId,
      userId: to.userId,
      userName: to.userName,
      locale: this.config.BOT_LOCALE,
      mention: `@${this.bot.botInfo.username}`,
      isGroupAdmin: () => this.#isGroupAdmin(this.bot.api, { id: chatId, type: "supergroup" }, to.userId),
    });
    if (reply === undefined) return;
    if (reply.buttons?.length) await this.#sendWithButtons(to, reply.text, reply.buttons);
    else await this.#reply(to, reply.text);
  }

  /** Sends a command's reply (Markdown) with one inline button per row (e.g. `/reminders` cancel buttons). */
  async #sendWithButtons(to: IncomingMessageBase, markdown: string, buttons: { label: string; data: string }[]): Promise<void> {
    const dest = replyPlace(to);
    await this.bot.api.sendMessage(to.chatId, escapeHtml(markdown), {
      parse_mode: "HTML",
      reply_markup: { inline_keyboard: buttons.map((b) => [{ text: b.label, callback_data: b.data }]) },
      ...(dest.replyTo ? { reply_parameters: { message_id: Number(dest.replyTo), allow_sending_without_reply: true } } : {}),
      ...(dest.threadId ? { message_thread_id: Number(dest.threadId) } : {}),
    });
  }

  /**
   * A press on a reminder's done / snooze button or a `/reminders` cancel button: answered with a
   * toast; a closed reminder is edited to its outcome without buttons; a cancelled entry's button
   * leaves the list.
   */
  async #onReminderButton(ctx: Context, context: AdapterContext): Promise<void> {
    const query = ctx.callbackQuery!;
    const locale = this.config.BOT_LOCALE;
    const data = query.data ?? "";
    let answer: PressAnswer = { notice: localize(locale, { "zh-TW": "這個提醒已經結束或取消了。", en: "This reminder has ended or was cancelled." }) };
    let handled = false;
    try {
      if (context.reminders) {
        answer = await context.reminders.press({ data, platform: "telegram", userId: String(query.from.id) });
        handled = true;
      }
    } catch (error) {
      this.log.error({ error: redact(String(error)) }, "telegram: reminder button failed");
      answer = { notice: localize(locale, { "zh-TW": "暫時無法處理，請稍後再按一次。", en: "Could not do that right now; please press again in a moment." }) };
    }
    try {
      await ctx.answerCallbackQuery({ text: answer.notice });
    } catch (error) {
      if (!isHarmless(error)) throw error;
    }
    const message = query.message;
    if (!message || !handled) return;
    const ref = { chatId: String(message.chat.id), messageId: String(message.message_id) };
    if (answer.closeText) {
      await this.outbound.closeReminder(ref, answer.closeText).catch((error: unknown) => this.log.warn({ error: redact(String(error)) }, "telegram: could not close the reminder message"));
    } else if (data.startsWith("rm:c:") && answer.cancelled) {
      const rows = (message.reply_markup?.inline_keyboard ?? []).map((row) => row.filter((b) => !("callback_data" in b) || b.callback_data !== data)).filter((row) => row.length > 0);
      await this.bot.api
        .editMessageReplyMarkup(ref.chatId, Number(ref.messageId), { reply_markup: { inline_keyboard: rows } })
        .catch((error: unknown) => this.log.debug({ error: redact(String(error)) }, "telegram: could not update the /reminders buttons"));
    }
  }

  /**
   * A press on a `/permissions` revoke button: the presser's own grant in the list's conversation
   * (the chat, and the topic of the pressed message) is revoked; a toast says so; the button leaves the list.
   */
  async #onPermissionButton(ctx: Context, context: AdapterContext): Promise<void> {
    const query = ctx.callbackQuery!;
    const data = query.data ?? "";
    const message = query.message;
    const topic = message && "is_topic_message" in message && message.is_topic_message && message.message_thread_id !== undefined ? String(message.message_thread_id) : undefined;
    const answer = await context.commands.pressPermission({
      data,
      platform: "telegram",
      chatId: String(message?.chat.id ?? query.from.id),
      ...(topic ? { topicId: topic } : {}),
      userId: String(query.from.id),
      locale: this.config.BOT_LOCALE,
    });
    try {
      await ctx.answerCallbackQuery({ text: answer.notice });
    } catch (error) {
      if (!isHarmless(error)) throw error;
    }
    if (!answer.revoked || !message) return;
    const rows = (message.reply_markup?.inline_keyboard ?? []).map((row) => row.filter((b) => !("callback_data" in b) || b.callback_data !== data)).filter((row) => row.length > 0);
    await this.bot.api
      .editMessageReplyMarkup(message.chat.id, message.message_id, { reply_markup: { inline_keyboard: rows } })
      .catch((error: unknown) => this.log.debug({ error: redact(String(error)) }, "telegram: could not update the /permissions buttons"));
  }

  async #onCallback(ctx: Context, context: AdapterContext): Promise<void> {
    const query = ctx.callbackQuery!;
    if (ReminderActions.owns(query.data ?? "")) return this.#onReminderButton(ctx, context);
    if (isPermissionButton(query.data ?? "")) return this.#onPermissionButton(ctx, context);
    const locale = this.config.BOT_LOCALE;
    const parsed = parseCallbackData(query.data ?? "");
    let notice: string;
    let accepted = false;
    if (!parsed) {
      notice = decisionNotice({ status: "not_found" }, locale);
    } else {
      try {
        const request = { approvalId: parsed.approvalId, platform: "telegram" as const, deciderId: String(query.from.id), approve: parsed.approve, ...(parsed.always ? { always: true } : {}) };
        let result = await context.approvals.decide(request);
        if (result.status === "not_requester" && query.message && (await this.#isGroupAdmin(ctx.api, query.message.chat, String(query.from.id)))) {
          // A request made anonymously on behalf of the group (userId `chat:<group id>`) may be decided
          // by any administrator of that group; for anyone else's request this changes nothing.
          result = await context.approvals.decide({ ...request, deciderId: `chat:${query.message.chat.id}` });
        }
        notice = decisionNotice(result, locale);
        accepted = result.status === "accepted";
      } catch (error) {
        this.log.error({ error: redact(String(error)) }, "telegram: approval decision failed");
        notice = localize(locale, { "zh-TW": "暫時無法處理，請稍後再按一次。", en: "Could not record that right now; please press again in a moment." });
      }
    }
    try {
      await ctx.answerCallbackQuery({ text: notice });
    } catch (error) {
      if (!isHarmless(error)) throw error;
    }
    const message = query.message;
    if (accepted && message) await this.outbound.removeKeyboard({ chatId: String(message.chat.id), messageId: String(message.message_id) });
  }

  /**
   * Whether `userId` administers the group `chat` (Bot API `getChatMember` status `creator` or
   * `administrator`, https://core.telegram.org/bots/api#getchatmember); false for a private chat,
   * an anonymous sender (`chat:<id>`) and on any error.
   */
  async #isGroupAdmin(api: Context["api"], chat: { id: number; type: string }, userId: string): Promise<boolean> {
    if (chat.type === "private" || chat.id > 0 || !/^\d+$/.test(userId)) return false;
    try {
      const member = await api.getChatMember(chat.id, Number(userId));
      return member.status === "creator" || member.status === "administrator";
    } catch (error) {
      this.log.debug({ error: redact(String(error)) }, "telegram: getChatMember failed");
      return false;
    }
  }
}

/** Longest wait for grammy's offset-confirming `getUpdates` in {@link TelegramAdapter.stop}, in ms. */
const STOP_CONFIRM_MS = 3000;

/** The error for a Bot API 401: the token in `TELEGRAM_BOT_TOKEN` was rejected (never includes it). */
function tokenRejected(error: unknown): AdapterFatalError {
  return new AdapterFatalError(
    "telegram",
    "TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API (401 Unauthorized): copy the current token from @BotFather (it changes when the token is revoked) and restart.",
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
