/**
 * The chats waiting for an answer, as the adapter process that queued their messages remembers
 * them: what survives a Redis that lost its data (issue 38 item 3, "re-announce to waiting chats
 * where possible"). Redis held the messages; once it is wiped, only the process that queued them
 * knows whom to tell.
 *
 * - A message the access gate queued is remembered by its conversation (the latest message, to
 *   reply to). A chat is waiting exactly while its inbox exists (`src/queue/producer.ts`: the inbox
 *   is deleted when the chat's job has answered its last message).
 * - While any chat is remembered, a sweep every {@link WAITING_SWEEP_MS} (one pipelined round trip:
 *   `EXISTS` of each remembered inbox, the conversation's language the first time, then the
 *   deployment marker) forgets the chats whose inbox is gone: they were answered. A sweep trusts a
 *   missing inbox only when the marker read after it is the one this process saw; otherwise the
 *   data may be lost, and it asks the watch to check the marker at once ({@link DataLossWatch.verify}),
 *   which also catches a loss without a reconnection (`FLUSHALL`).
 * - When the watch sees the data lost, {@link WaitingChats.announce} tells each remembered chat
 *   whose inbox is gone, once, in the conversation's language (`/settings`, read while the chat
 *   waited; else `BOT_LOCALE`), that the bot lost its state and asks them to send the message
 *   again ({@link LOST_STATE_TEXT}). A chat whose inbox exists again was written after the loss (a
 *   new message on the empty Redis) and is being answered: it stays remembered. The marker is also
 *   read right after each message is queued: a message queued when the marker was already gone
 *   (after a `FLUSHALL`, before a sweep saw it) was answered on the new data and is not told.
 *
 * Limits (docs/operations.md): what a process forgets on a restart is not announced; a chat
 * answered in the last sweep interval before the loss may be told too (the text says "may");
 * a message taken by a worker whose run goes on may still be answered after the notice.
 */
import type { Logger } from "./log.js";
import { localize, type Locale, type Localized } from "./i18n.js";
import { conversationKey, conversationOf, type ConversationRef, type IncomingMessage } from "./queue/incoming.js";
import { conversationKeys } from "./queue/keys.js";
import { readMarker, type DataLossWatch } from "./redis-marker.js";
import type { RedisClient } from "./redis.js";

/** How often (ms) the remembered chats are checked while any is remembered: 5 s. */
export const WAITING_SWEEP_MS = 5000;

/** Chats remembered at most; past it the oldest is forgotten (its message is then not announced). */
export const WAITING_MAX_CHATS = 10_000;

/** What a waiting chat is told when the bot lost its state. */
export const LOST_STATE_TEXT: Localized = {
  "zh-TW": "抱歉，機器人的資料遺失了（資料庫重新啟動後是空的），你剛才傳的訊息可能不會得到回覆。請再傳一次。",
  en: "Sorry, the bot lost its state (its database came back empty), so your last message may not be answered. Please send it again.",
};

/** Options of {@link WaitingChats}. */
export interface WaitingChatsOptions {
  /** The adapter process's producer connection (the one the gate queues with). */
  redis: RedisClient;
  /** The data-loss watch of that connection (its marker id, and {@link DataLossWatch.verify}). */
  watch: DataLossWatch;
  /** Sends `text` in reply to `message` (the adapter's outbound). Throws when it cannot. */
  send: (message: IncomingMessage, text: string) => Promise<void>;
  /** The language set in a conversation (`/settings`), or undefined. Throws when Redis fails. */
  languageOf: (conversation: ConversationRef) => Promise<Locale | undefined>;
  /** The language when none is known: `BOT_LOCALE`. */
  defaultLocale: Locale;
  log: Logger;
  /** Ms between sweeps; default {@link WAITING_SWEEP_MS} (tests: less). */
  sweepMs?: number;
  /** Chats remembered at most; default {@link WAITING_MAX_CHATS}. */
  maxChats?: number;
}

interface Waiting {
  message: IncomingMessage;
  /** Changes with each message remembered, so a sweep does not forget a chat that got a new message meanwhile. */
  seq: number;
  language?: Locale | undefined;
  /** True once the language was read (set or not). */
  languageRead: boolean;
  /**
   * Whether the deployment marker read after this message was queued was the one this process
   * saw: true (queued before any loss not yet seen), false (queued after a loss: Redis was already
   * empty, the message is on the new data and is answered normally; it is never told), undefined
   * (not read yet, or the read failed: told when its inbox is gone, better told than left waiting).
   */
  beforeLoss?: boolean | undefined;
}

/** The chats waiting for an answer, in this process's memory; see the module comment. */
export class WaitingChats {
  readonly #options: WaitingChatsOptions;
  readonly #waiting = new Map<string, Waiting>();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;
  #stopped = false;

  constructor(options: WaitingChatsOptions) {
    this.#options = options;
  }

  /** Chats remembered now. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Remembers that `message` was queued (the access gate admitted it): its chat waits for an answer. */
  add(message: IncomingMessage): void {
    if (this.#stopped) return;
    const key = conversationKey(message);
    const before = this.#waiting.get(key);
    this.#waiting.delete(key); // re-inserted last: the map stays ordered oldest first
    const entry: Waiting = {
      message,
      seq: ++this.#seq,
      language: before?.language,
      languageRead: before?.languageRead ?? false,
    };
    this.#waiting.set(key, entry);
    void this.#confirm(entry);
    const max = this.#options.maxChats ?? WAITING_MAX_CHATS;
    while (this.#waiting.size > max) this.#waiting.delete(this.#waiting.keys().next().value!);
    this.#timer ??= setInterval(() => void this.sweep(), this.#options.sweepMs ?? WAITING_SWEEP_MS);
    this.#timer.unref?.();
  }

  /**
   * Reads the marker once right after a message was queued: whether it was queued before or after
   * a loss (see {@link Waiting.beforeLoss}); asks the watch to check when the marker differs.
   */
  async #confirm(entry: Waiting): Promise<void> {
    const { redis, watch } = this.#options;
    try {
      const mine = watch.markerId();
      const seen = await readMarker(redis);
      if (mine === undefined) return;
      entry.beforeLoss = seen?.id === mine;
      if (!entry.beforeLoss) await watch.verify();
    } catch {
      // unknown: left undefined
    }
  }

  /**
   * One sweep (see the module comment): forgets the chats whose inbox is gone while the marker is
   * the one seen (or the watch never saw one: no loss can be seen then); asks the watch to check when it is not. Never rejects (a failure is logged at
   * debug level and the next sweep tries again). Concurrent calls share one sweep.
   */
  sweep(): Promise<void> {
    return (this.#sweeping ??= this.#sweep().finally(() => (this.#sweeping = undefined)));
  }

  async #sweep(): Promise<void> {
    const { redis, watch, log } = this.#options;
    const snapshot = [...this.#waiting.entries()];
    if (snapshot.length === 0) {
      this.#stopTimer();
      return;
    }
    try {
      // One tick: ioredis auto-pipelining sends these in one write; the marker is read last.
      const exists = snapshot.map(([, w]) => redis.exists(conversationKeys(w.message).inbox));
      const languages = snapshot.map(([, w]) =>
        w.languageRead ? Promise.resolve(w.language) : this.#options.languageOf(conversationOf(w.message)),
      );
      const marker = readMarker(redis);
      const [present, langs, seen] = await Promise.all([Promise.all(exists), Promise.all(languages), marker]);
      snapshot.forEach(([key, w], i) => {
        const now = this.#waiting.get(key);
        if (now?.seq === w.seq && !now.languageRead) {
          now.language = langs[i];
          now.languageRead = true;
        }
      });
      const mine = watch.markerId();
      if (mine !== undefined && seen?.id !== mine) {
        // The data may be lost: the watch decides (and calls announce through its onLoss).
        await watch.verify();
        return;
      }
      snapshot.forEach(([key, w], i) => {
        w.beforeLoss ??= true; // queued before this read of an intact marker
        if (present[i] === 0 && this.#waiting.get(key)?.seq === w.seq) this.#waiting.delete(key);
      });
    } catch (err) {
      log.debug({ err }, "could not check the chats waiting for an answer");
    }
    if (this.#waiting.size === 0) this.#stopTimer();
  }

  /**
   * Redis lost its data (the watch's `onLoss`): tells each remembered chat whose inbox is gone,
   * once, that the bot lost its state and asks them to send their message again; forgets them.
   * When the inboxes cannot be read, every remembered chat is told (better told than left waiting).
   * Never rejects: a send that fails is logged.
   * @returns how many chats were told.
   */
  async announce(): Promise<number> {
    const { redis, log, send, defaultLocale } = this.#options;
    await this.#sweeping?.catch(() => undefined);
    const snapshot = [...this.#waiting.entries()];
    const present = await Promise.all(
      snapshot.map(([, w]) => redis.exists(conversationKeys(w.message).inbox).catch(() => 0)),
    );
    const gone = snapshot.filter(([key, w], i) => present[i] === 0 && this.#waiting.get(key)?.seq === w.seq);
    for (const [key] of gone) this.#waiting.delete(key);
    // A message queued after the loss (the marker was already gone when it was queued) was on the
    // new data and answered normally: it is not told.
    const lost = gone.filter(([, w]) => w.beforeLoss !== false);
    let told = 0;
    await Promise.all(
      lost.map(async ([, w]) => {
        try {
          await send(w.message, localize(w.language ?? defaultLocale, LOST_STATE_TEXT));
          told += 1;
        } catch (err) {
          log.warn(
            { err, platform: w.message.platform, chat: w.message.chatId },
            "could not tell a waiting chat that Redis lost its message",
          );
        }
      }),
    );
    if (lost.length > 0)
      log.warn(
        { told, waiting: lost.length },
        "told the chats waiting for an answer that their messages were lost with Redis's data",
      );
    if (this.#waiting.size === 0) this.#stopTimer();
    return told;
  }

  /** Stops sweeping and forgets every chat (the process stops). */
  stop(): void {
    this.#stopped = true;
    this.#stopTimer();
    this.#waiting.clear();
  }

  #stopTimer(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
