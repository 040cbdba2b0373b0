/**
 * Delivering one answer: the chunks through the platform's outbound (counting sent chunks when the
 * answer may need more than one message), the apology when a message cannot be answered, and the
 * typing indicator while the answer is being composed.
 */
import type { RedisClient } from "../redis.js";
import type { Locale } from "../config.js";
import { localize } from "../i18n.js";
import type { Logger } from "../log.js";
import { metrics } from "../metrics.js";
import type { Destination, Outbound } from "../outbound.js";
import type { AnswerStream } from "../streaming.js";
import type { IncomingMessage } from "../queue/incoming.js";
import { retryAfterMs } from "./errors.js";

/** Seconds a message's sent-chunk count is kept (long enough for every retry). */
export const PROGRESS_TTL_SECONDS = 24 * 3600;

/**
 * How long past its deadline a computed answer may still wait out a platform's 429, in ms. The
 * answer exists and is in the history: delivering it a little late is friendlier than dropping it,
 * but the wait holds one of the worker's `WORKER_CONCURRENCY` slots, so it is bounded. A wait that
 * would end later drops the answer (see `pipeline.ts`, *fail*). One call of the platform's client
 * may overshoot it by the client's own wait (Telegram's auto-retry: one `retry_after` of at most
 * 60 s, `RETRY_OPTIONS`).
 */
export const LATE_DELIVERY_MS = 60_000;

/**
 * Apology sent when a message cannot be answered and the error has no `userMessage(locale)` of its
 * own (`ModelUnavailableError` has one).
 */
const APOLOGY = {
  "zh-TW": "抱歉，我現在無法回答，請稍後再試一次。",
  en: "Sorry, I can't answer right now. Please try again in a moment.",
};

/**
 * The answer took longer than `ANSWER_DEADLINE_SECONDS`: its model call and tools were aborted.
 * Not retried (a retry would take as long again); the user gets {@link AnswerDeadlineError.userMessage}.
 */
export class AnswerDeadlineError extends Error {
  /** Never retried. */
  readonly retryable = false;
  /** @param seconds - the deadline that passed (`ANSWER_DEADLINE_SECONDS`). */
  constructor(readonly seconds: number) {
    super(`the answer took longer than ANSWER_DEADLINE_SECONDS (${seconds} s) and was stopped`);
    this.name = "AnswerDeadlineError";
  }
  /** A short apology in `locale`. */
  userMessage(locale: Locale): string {
    return localize(locale, {
      "zh-TW": "抱歉，這次回答花了太久時間，我先停下來了。請再問一次，或把問題說得簡單一點。",
      en: "Sorry, this answer was taking too long, so I stopped. Please ask again, or make the question simpler.",
    });
  }
}

/** What {@link deliverAnswer} reports. */
export interface Delivery {
  /** Whether a sent-chunk count may have been written (the finish script then deletes it). */
  counted: boolean;
  /** Chunks of the answer that went out, in this attempt and earlier ones. */
  sent: number;
  /** Why the rest could not be sent (the outbound's error); absent when the whole answer went out. */
  error?: unknown;
}

/**
 * Sends `text` to `to` as the answer to `message` (through `progress.stream` when the answer was streamed:
 * its messages are edited to the final chunks), skipping the first `skip` chunks (sent by an earlier
 * attempt). When the answer is longer than the outbound's `singleChunkUnits` (UTF-16 units), each
 * sent chunk is counted under `sentKey` (for {@link PROGRESS_TTL_SECONDS}), so a retry sends only
 * the rest.
 *
 * A platform rate limit (`RateLimitedError`, with the wait the platform asked for) is always
 * waited out and the rest of the answer sent again, for as long as the wait ends before
 * `deadlineAt` + {@link LATE_DELIVERY_MS}: the client libraries' own retries give up after a few
 * attempts, but a computed answer is not lost to a flood that ends soon after its deadline.
 *
 * @param progress.deadlineAt - the answer's deadline, ms since the Unix epoch.
 * @param progress.timed - false when the answer's first chunk is not the first text the user sees
 *   for `message` (a run resumed after an approval: the prompt came first); default true.
 * @returns how many chunks went out, and the outbound's `error` when the rest could not be sent
 *   (earlier chunks stay sent and counted), including the 429 when waiting it out would end past
 *   the deadline + {@link LATE_DELIVERY_MS}. Never throws for a failed send; a failed count (Redis) is returned as its `error` too.
 */
export async function deliverAnswer(
  outbound: Outbound,
  message: IncomingMessage,
  to: Destination,
  text: string,
  progress: {
    redis: RedisClient;
    sentKey: string;
    skip: number;
    deadlineAt: number;
    log: Logger;
    stream?: AnswerStream;
    timed?: boolean;
  },
): Promise<Delivery> {
  const multi = text.length > (outbound.singleChunkUnits ?? 0);
  const counted = multi || progress.skip > 0;
  let sent = progress.skip;
  for (;;) {
    try {
      const options = {
        skip: sent,
        onSent: async (index: number) => {
          sent = index + 1;
          if (index === 0 && progress.timed !== false) metrics.firstVisibleText(message);
          if (multi) await progress.redis.set(progress.sentKey, index + 1, "EX", PROGRESS_TTL_SECONDS);
        },
      };
      if (progress.stream) await progress.stream.finish(text, options);
      else await outbound.sendAnswer(to, text, options);
      return { counted, sent };
    } catch (error) {
      const wait = retryAfterMs(error);
      if (wait === undefined || Date.now() + wait >= progress.deadlineAt + LATE_DELIVERY_MS)
        return { counted, sent, error };
      progress.log.warn(
        { retryAfterMs: wait, sent },
        "the platform is rate limiting this chat; waiting out its retry_after before sending the rest",
      );
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/**
 * Tells the user at `to` that their message could not be answered: the error's own
 * `userMessage(locale)` when it has one, else `fallback`, else a generic apology in `locale`. When
 * the outbound's reader is the operator (`showsCauses`, the terminal chat) and the error has an
 * `operatorCause()`, that one line follows. Never throws (a failed apology is logged).
 */
export async function sendApology(
  outbound: Outbound,
  to: Destination,
  error: unknown,
  locale: Locale,
  log: Logger,
  fallback?: string,
): Promise<void> {
  const { userMessage, operatorCause } = (error ?? {}) as { userMessage?: unknown; operatorCause?: unknown };
  let apology =
    typeof userMessage === "function"
      ? String(userMessage.call(error, locale))
      : (fallback ?? localize(locale, APOLOGY));
  if (outbound.showsCauses && typeof operatorCause === "function")
    apology += `\n(${String(operatorCause.call(error))})`;
  await outbound.sendAnswer(to, apology).catch((e: unknown) => {
    log.error({ err: e }, "the apology could not be sent either");
  });
}

/** The typing indicator of one message: sent at start and every `everyMs` until stopped. */
export class Typing {
  #timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly outbound: Outbound,
    private readonly to: Destination,
    private readonly everyMs: number,
    private readonly log: Logger,
  ) {}
  /** Sends the indicator now and every `everyMs` ms. */
  start(): void {
    const send = () =>
      void this.outbound
        .sendTyping(this.to)
        .catch((err: unknown) => this.log.debug({ err }, "typing indicator failed"));
    send();
    this.#timer = setInterval(send, this.everyMs);
    this.#timer.unref();
  }
  /** Stops refreshing the indicator (it fades on its own within about 5 s). */
  stop(): void {
    clearInterval(this.#timer);
  }
}
