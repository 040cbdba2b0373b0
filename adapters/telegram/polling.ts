/**
 * Long polling that never gives up on its own: a grammy API transformer
 * (https://grammy.dev/advanced/transformers) around `getUpdates` of `bot.start()`'s loop.
 *
 * grammy 1.46's simple long polling rethrows a `409 Conflict` (another poller with the same token,
 * or a webhook set meanwhile) and a `401 Unauthorized`, which ends `bot.start()` for good, and
 * retries every other failure every 3 s without telling anyone. {@link PollingMonitor} makes the
 * call itself retry a 409, a 429, a 5xx or a network error with a growing delay (capped, about 30 s
 * by default), logs one warning when such an episode begins and one info line when polling works
 * again, and lets only a 401 through to grammy (which then ends polling: the token was rejected).
 * It also keeps what `/health` needs: whether polling is in a failure episode, since when, and when
 * the last `getUpdates` call settled (a loop stuck in an update handler stops calling it).
 *
 * Bot API: https://core.telegram.org/bots/api#getupdates ("409 Conflict" when a webhook is set or
 * another `getUpdates` request is running for the same bot).
 */
import { HttpError, type Transformer } from "grammy";
import type { ApiError } from "grammy/types";
import { redact, type Logger } from "../../src/log.js";

/** Timings of the polling retry and its health verdict, in ms (tests shorten them). */
export interface PollingOptions {
  /** Delay before the first retry of a failed `getUpdates`; doubled after every further failure. Default 1000. */
  initialBackoffMs?: number;
  /** Longest delay between two retries. Default 30 000. */
  maxBackoffMs?: number;
  /**
   * How long polling may fail (one episode) or go without a `getUpdates` call (a stuck loop) before
   * {@link PollingMonitor.healthy} says false. Default 60 000: a 409 while the old container of a
   * rolling deploy still polls for a few seconds stays healthy; a second poller that stays does not.
   */
  unhealthyAfterMs?: number;
  /**
   * How long the Bot API must hold a retried `getUpdates` (a long poll waiting for updates) before
   * polling counts as working again. Default 3000: a conflicting poller's 409 or a 5xx comes back
   * sooner, so two pollers taking turns stay one episode instead of a warning a second.
   */
  recoveredAfterMs?: number;
}

/** Defaults of {@link PollingOptions}. */
export const POLLING_DEFAULTS: Required<PollingOptions> = {
  initialBackoffMs: 1000,
  maxBackoffMs: 30_000,
  unhealthyAfterMs: 60_000,
  recoveredAfterMs: 3000,
};

/** Watches and retries `getUpdates`; install {@link PollingMonitor.transformer} on the bot's API. */
export class PollingMonitor {
  readonly #options: Required<PollingOptions>;
  readonly #log: Logger;
  #failingSince: number | undefined;
  #failures = 0;
  #inFlight = false;
  #lastSettledAt = Date.now();

  /** @param log - the adapter's logger (episode warnings and recovery lines go there). */
  constructor(log: Logger, options: PollingOptions = {}) {
    this.#log = log;
    this.#options = { ...POLLING_DEFAULTS, ...options };
  }

  /** Since when (ms since the epoch) `getUpdates` has been failing, or undefined when it works. */
  get failingSince(): number | undefined {
    return this.#failingSince;
  }

  /**
   * True unless polling has been failing for longer than `unhealthyAfterMs`, or no `getUpdates`
   * call has been in flight for that long (the loop is stuck in a handler). Whether the loop runs
   * at all is the adapter's part of the check.
   * @param now - ms since the epoch.
   */
  healthy(now = Date.now()): boolean {
    const limit = this.#options.unhealthyAfterMs;
    if (this.#failingSince !== undefined && now - this.#failingSince > limit) return false;
    return this.#inFlight || now - this.#lastSettledAt <= limit;
  }

  /**
   * The transformer. It acts only on `getUpdates` calls that carry an abort signal (those of the
   * polling loop; grammy's final offset-confirming call in `bot.stop()` has none and passes
   * through). It returns the first successful answer, or a 401 answer (grammy rethrows it and
   * polling ends); it throws only when the signal aborts (the bot is stopping).
   */
  readonly transformer: Transformer = async (prev, method, payload, grammySignal) => {
    if (method !== "getUpdates" || grammySignal === undefined) return prev(method, payload, grammySignal);
    // grammy (node build) types its signals with the `abort-controller` shim; at run time it is Node's.
    const signal = grammySignal as unknown as AbortSignal;
    for (let attempt = 0; ; attempt++) {
      let failure: { reason: string; retryAfterMs?: number; conflict?: boolean };
      let recovery: NodeJS.Timeout | undefined;
      this.#inFlight = true;
      try {
        // A retry that the Bot API holds (a long poll) for `recoveredAfterMs` works again: a 409 or
        // a 5xx comes back at once, and the held call may wait up to the poll timeout for updates.
        if (attempt > 0) recovery = setTimeout(() => this.#recovered(), this.#options.recoveredAfterMs);
        const response = await prev(method, payload, grammySignal);
        if (response.ok || response.error_code === 401) {
          if (response.ok) this.#recovered();
          return response;
        }
        failure = describeFailure(response);
      } catch (error) {
        if (signal.aborted) throw error;
        failure = { reason: describeThrown(error) };
      } finally {
        clearTimeout(recovery);
        this.#inFlight = false;
        this.#lastSettledAt = Date.now();
      }
      this.#failed(failure.reason, failure.conflict === true);
      const backoff = Math.min(this.#options.maxBackoffMs, this.#options.initialBackoffMs * 2 ** Math.min(attempt, 30));
      await pause(Math.max(backoff, failure.retryAfterMs ?? 0), signal);
    }
  };

  #failed(reason: string, conflict: boolean): void {
    this.#failures += 1;
    if (this.#failingSince !== undefined) {
      this.#log.debug({ reason, failures: this.#failures }, "telegram: getUpdates failed again; retrying");
      return;
    }
    this.#failingSince = Date.now();
    const hint = conflict
      ? "another process is polling with this TELEGRAM_BOT_TOKEN (an old deployment, someone running npm start?) or a webhook was set; "
      : "";
    this.#log.warn(
      { reason, maxBackoffSeconds: this.#options.maxBackoffMs / 1000 },
      `telegram: getUpdates failed (${reason}): ${hint}no updates arrive until it works again; retrying with a growing delay`,
    );
  }

  #recovered(): void {
    if (this.#failingSince === undefined) return;
    const seconds = Math.round((Date.now() - this.#failingSince) / 100) / 10;
    this.#log.info(
      { failedCalls: this.#failures, seconds },
      `telegram: polling works again after ${seconds} s (${this.#failures} failed getUpdates calls)`,
    );
    this.#failingSince = undefined;
    this.#failures = 0;
  }
}

/** True when `error` is the Bot API's 401: the token was rejected (or revoked). */
export function isUnauthorized(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { error_code?: unknown }).error_code === 401;
}

function describeFailure(response: ApiError): { reason: string; retryAfterMs?: number; conflict: boolean } {
  const retryAfter = response.parameters?.retry_after;
  return {
    reason: redact(`${response.error_code} ${response.description}`),
    retryAfterMs: typeof retryAfter === "number" ? retryAfter * 1000 : undefined,
    conflict: response.error_code === 409,
  };
}

function describeThrown(error: unknown): string {
  if (error instanceof HttpError) {
    const inner =
      error.error instanceof Error
        ? error.error.cause instanceof Error
          ? error.error.cause.message
          : error.error.message
        : String(error.error);
    return redact(`network error: ${inner}`);
  }
  return redact(error instanceof Error ? error.message : String(error));
}

/** Waits `ms`, or rejects as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("polling stopped"));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error("polling stopped"));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
