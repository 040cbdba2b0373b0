/**
 * Stop (issue 42): the person who asked (or a group admin) ends an answer while it is being
 * written, with `/stop` or the live answer's Stop button. The press travels on a control path that
 * never waits behind the conversation's queue:
 *
 * ```
 * adapter (any process)                 Redis                          worker running the answer
 * press / `/stop` ──GET answering:{c}──> who asked, its stop id
 *                  ──PUBLISH answer-stops {c, id, by}──────────────> its AbortController aborts
 *                                                                    (model stream, read-only tools)
 * ```
 *
 * The worker writes the conversation's `answering` record when an answer begins ({@link AnswerStops.begin}:
 * one `SET … EX`) and deletes it when the answer ends (one compare-and-delete); every worker process
 * listens on {@link STOP_CHANNEL} with one subscriber connection, and only the one running that
 * answer acts. An adapter reads the record to tell who may stop and whether anything is running
 * ({@link requestStop}), so a press after the answer finished is answered as such and changes nothing.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Logger } from "../log.js";
import { conversationKey, type ConversationRef } from "../queue/incoming.js";
import { conversationTag } from "../queue/keys.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";

/** The Redis pub/sub channel of stop requests (JSON of {@link StopNotice}). */
export const STOP_CHANNEL = "answer-stops";

/** Button data prefix of the live answer's Stop button: `sp:<stop id>`. */
export const STOP_BUTTON_PREFIX = "sp:";

/** Stop ids: 12 URL-safe base64 characters (9 random bytes), so `sp:<id>` fits Telegram's 64-byte `callback_data`. */
const STOP_ID = /^[A-Za-z0-9_-]{12}$/;

/**
 * The key of the answer a conversation is writing now: a JSON {@link AnsweringRecord}, written when
 * the answer begins and deleted when it ends (expires after the answer's deadline should a worker die).
 */
export function answeringKey(conversation: ConversationRef): string {
  return `answering:${conversationTag(conversation)}`;
}

/** What {@link answeringKey} holds. */
export const AnsweringRecordSchema = z.object({
  /** The answer's stop id (random; on its Stop button). */
  id: z.string().regex(STOP_ID),
  /** Who asked (`IncomingMessage.userId`): they may stop it. */
  userId: z.string().min(1).max(128),
  /** The message being answered (for logs). */
  messageId: z.string().min(1).max(256),
});

/** See {@link AnsweringRecordSchema}. */
export type AnsweringRecord = z.output<typeof AnsweringRecordSchema>;

/** A stop request on {@link STOP_CHANNEL}. */
const StopNoticeSchema = z.object({
  /** `conversationKey` of the conversation. */
  chat: z.string().min(1).max(300),
  /** The answer's stop id. */
  id: z.string().regex(STOP_ID),
  /** Who pressed (`userId`). */
  by: z.string().min(1).max(128),
  /** When the press was taken, ms since the Unix epoch (the worker logs the delay). */
  at: z.number().int().nonnegative(),
});

type StopNotice = z.output<typeof StopNoticeSchema>;

/** The button data of an answer's Stop button. */
export function stopButtonData(id: string): string {
  return `${STOP_BUTTON_PREFIX}${id}`;
}

/** True when `data` is a Stop button's. */
export function isStopButton(data: string): boolean {
  return data.startsWith(STOP_BUTTON_PREFIX);
}

/** The stop id of Stop button data, or undefined when it is not one. */
export function parseStopButton(data: string): string | undefined {
  if (!isStopButton(data)) return undefined;
  const id = data.slice(STOP_BUTTON_PREFIX.length);
  return STOP_ID.test(id) ? id : undefined;
}

/** The reason an answer's signal aborts with when the person stopped it. */
export class AnswerStoppedError extends Error {
  constructor(
    /** Who pressed Stop. */
    readonly by: string,
  ) {
    super("the answer was stopped");
    this.name = "AnswerStoppedError";
  }
}

/** One answer being written, as {@link AnswerStops.begin} registered it. */
export interface RunningAnswer {
  /** Its stop id (the Stop button's data is {@link stopButtonData} of it). */
  readonly id: string;
  /** Aborts (reason {@link AnswerStoppedError}) when the person stops the answer. */
  readonly signal: AbortSignal;
  /** Called once when the stop arrives (before the run notices it): e.g. the live answer's "stopping" line. */
  onStop?: () => void;
  /**
   * Deletes the conversation's record (when it is still this answer's) and forgets the answer; a
   * second call does nothing. Never throws.
   */
  end(): Promise<void>;
}

/**
 * KEYS: the answering key. ARGV: [1] the stop id. Deletes the record only when it is still this
 * answer's (a later answer of the conversation may have written its own).
 */
const END_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v and string.find(v, ARGV[1], 1, true) then return redis.call('DEL', KEYS[1]) end
return 0
`;

type RedisWithStopScript = RedisClient & { endAnswering(key: string, id: string): Promise<number> };

/**
 * The worker's side of Stop: registers the answers it is writing and aborts one when its stop
 * request arrives on {@link STOP_CHANNEL} (one subscriber connection per worker process, a
 * duplicate of `redis`).
 */
export class AnswerStops {
  readonly #redis: RedisClient;
  readonly #log: Logger;
  readonly #running = new Map<string, { controller: AbortController; answer: RunningAnswer }>();
  readonly #subscriber: RedisClient;
  readonly #ready: Promise<void>;

  /** Subscribes at once; {@link ready} resolves when subscribed. */
  constructor(redis: RedisClient, log: Logger) {
    // EVALSHA of the script (ioredis sends the body once, on NOSCRIPT).
    if (!("endAnswering" in redis)) redis.defineCommand("endAnswering", { numberOfKeys: 1, lua: END_SCRIPT });
    this.#redis = redis;
    this.#log = log;
    this.#subscriber = redis.duplicate();
    this.#subscriber.on("error", () => {}); // connection problems are logged once by connectRedis
    this.#subscriber.on("message", (channel: string, payload: string) => {
      if (channel === STOP_CHANNEL) this.#arrived(payload);
    });
    this.#ready = this.#subscriber.subscribe(STOP_CHANNEL).then(
      () => undefined,
      (err: unknown) => log.warn({ err }, "could not listen for stop requests; Stop will not reach this worker"),
    );
  }

  /** Resolves once the worker listens for stop requests (never rejects). */
  ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * Registers an answer of `conversation` to `userId`'s message `messageId`: writes the
   * conversation's record (`SET … EX ttlSeconds`) so a press finds it.
   * @throws when Redis is unreachable (the answer fails like any Redis failure).
   */
  async begin(
    conversation: ConversationRef,
    asker: { userId: string; messageId: string },
    ttlSeconds: number,
  ): Promise<RunningAnswer> {
    const id = randomBytes(9).toString("base64url");
    const key = answeringKey(conversation);
    const local = `${conversationKey(conversation)}|${id}`;
    const controller = new AbortController();
    const record: AnsweringRecord = { id, userId: asker.userId, messageId: asker.messageId.slice(0, 256) };
    let ended = false;
    const answer: RunningAnswer = {
      id,
      signal: controller.signal,
      end: async () => {
        if (ended) return;
        ended = true;
        this.#running.delete(local);
        await (this.#redis as RedisWithStopScript)
          .endAnswering(key, id)
          .catch((err: unknown) => this.#log.warn({ err }, "could not clear the answer's stop record"));
      },
    };
    this.#running.set(local, { controller, answer });
    await this.#redis.set(key, JSON.stringify(record), "EX", Math.max(1, Math.ceil(ttlSeconds)));
    return answer;
  }

  /** Answers being written in this process. */
  get size(): number {
    return this.#running.size;
  }

  /** Stops listening (closes the subscriber connection; not `redis`). Never throws. */
  async close(): Promise<void> {
    await this.#subscriber.quit().catch(() => this.#subscriber.disconnect());
  }

  #arrived(payload: string): void {
    const notice: StopNotice | undefined = decodeRecord(StopNoticeSchema, payload, "stop request", this.#log);
    if (!notice) return;
    const entry = this.#running.get(`${notice.chat}|${notice.id}`);
    if (!entry || entry.controller.signal.aborted) return;
    this.#log.info(
      { chat: notice.chat, by: notice.by, delayMs: Math.max(0, Date.now() - notice.at) },
      "stop request received; stopping the answer",
    );
    try {
      entry.answer.onStop?.();
    } catch (err) {
      this.#log.warn({ err }, "the answer's stop callback failed");
    }
    entry.controller.abort(new AnswerStoppedError(notice.by));
  }
}

/** How a stop request ended ({@link requestStop}). */
export type StopOutcome =
  /** Sent to the worker writing the answer. */
  | "stopping"
  /** No answer is being written in the conversation (`/stop`). */
  | "nothing"
  /** The pressed answer is no longer being written (a Stop button pressed after the end). */
  | "finished"
  /** The presser neither asked nor administers the group. */
  | "not_allowed";

/** A stop request, as an adapter or the `/stop` command saw it. */
export interface StopRequest extends ConversationRef {
  /** Who pressed or sent `/stop`. */
  userId: string;
  /** The pressed Stop button's stop id; absent for `/stop` (the answer being written now, whichever). */
  id?: string;
  /** True for a bot admin (`ADMIN_USERS`): may stop any answer. */
  admin?: boolean;
  /** Whether the presser administers the group (asked only when someone other than the asker stops). */
  isGroupAdmin?: () => Promise<boolean>;
}

/**
 * Asks the worker writing the conversation's answer to stop it: reads the conversation's record
 * (one `GET`), checks the presser (the asker, a bot admin or — in a group — one of its admins), and
 * publishes the request on {@link STOP_CHANNEL}. Two Redis commands; no queue.
 *
 * @param now - the press time, ms since the Unix epoch (default now).
 * @throws when Redis is unreachable (the caller answers "try again").
 */
export async function requestStop(
  redis: RedisClient,
  request: StopRequest,
  log: Logger,
  now = Date.now(),
): Promise<StopOutcome> {
  const record = decodeRecord(AnsweringRecordSchema, await redis.get(answeringKey(request)), "answering record", log);
  if (!record) return request.id ? "finished" : "nothing";
  if (request.id && record.id !== request.id) return "finished";
  const allowed =
    record.userId === request.userId || request.admin === true || (await request.isGroupAdmin?.().catch(() => false));
  if (!allowed) return "not_allowed";
  const notice: StopNotice = { chat: conversationKey(request), id: record.id, by: request.userId, at: now };
  await redis.publish(STOP_CHANNEL, JSON.stringify(notice));
  return "stopping";
}
