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
 * What is being written needs no Redis command of its own for a chat message (issue 37: the worker
 * path's cost per message): the message being answered is the head of its conversation's inbox,
 * which the producer wrote and the worker's finish script pops after delivery, and its answer is
 * finished once the history holds the run's tag (appended before anything is delivered). Its stop
 * id is derived from the conversation and the message id ({@link stopIdOf}), so the adapter finds
 * it from the head. A resumed approval's answer (a decision: not in the inbox) is written down in
 * the conversation's `answering` record instead ({@link AnswerStops.begin}: one `SET … EX`) and
 * deleted when it ends (one compare-and-delete). Every worker process listens on
 * {@link STOP_CHANNEL} with one subscriber connection, and only the one running that answer acts; a
 * request for an answer that has not begun yet (its message still waits for a worker) is kept a
 * while ({@link EARLY_STOP_MS}) and stops it as it begins. An adapter reads the head, its history
 * tag and the record to tell who may stop and whether anything is being written ({@link requestStop}),
 * so a press after the answer finished is answered as such and changes nothing.
 */
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Logger } from "../log.js";
import { conversationKey, type ConversationRef } from "../queue/incoming.js";
import { conversationKeys, conversationTag } from "../queue/keys.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";

/** The Redis pub/sub channel of stop requests (JSON of {@link StopNotice}). */
export const STOP_CHANNEL = "answer-stops";

/** Button data prefix of the live answer's Stop button: `sp:<stop id>`. */
export const STOP_BUTTON_PREFIX = "sp:";

/** Stop ids: 12 URL-safe base64 characters (9 random bytes), so `sp:<id>` fits Telegram's 64-byte `callback_data`. */
const STOP_ID = /^[A-Za-z0-9_-]{12}$/;

/**
 * The key of the resumed approval's answer (a decision) a conversation is writing now: a JSON
 * {@link AnsweringRecord}, written when the answer begins and deleted when it ends (expires after
 * the answer's deadline should a worker die). A chat message's answer writes none: its message is
 * the head of the conversation's inbox ({@link stopIdOf}).
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

/**
 * The stop id of the answer to a chat message (the head of its conversation's inbox): 12 URL-safe
 * base64 characters of the SHA-256 of the conversation and the message id, so the worker writes
 * nothing for it and an adapter finds it from the inbox's head. Another message's answer has
 * another id, so a press on an older answer's button never stops a newer one; the attempts at one
 * answer (a retry edits the same streamed message) share it.
 */
export function stopIdOf(conversation: ConversationRef, messageId: string): string {
  return createHash("sha256")
    .update(`${conversationKey(conversation)}\n${messageId}`)
    .digest()
    .subarray(0, 9)
    .toString("base64url");
}

/** How long a worker keeps a stop request for an answer it is not writing (yet), in ms: it stops that answer if it begins meanwhile. */
export const EARLY_STOP_MS = 120_000;

/** Most early stop requests a worker keeps (see {@link EARLY_STOP_MS}); the oldest go first. */
const EARLY_STOPS_KEPT = 1000;

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

/** How an answer is found by a stop request ({@link AnswerStops.begin}). */
export type AnswerPlace =
  /** A chat message's answer: its message is the head of the conversation's inbox (nothing is written). */
  | { inbox: true }
  /** Any other answer (a resumed approval's): the `answering` record, kept `ttlSeconds` at most. */
  | { ttlSeconds: number };

/**
 * The worker's side of Stop: registers the answers it is writing and aborts one when its stop
 * request arrives on {@link STOP_CHANNEL} (one subscriber connection per worker process, a
 * duplicate of `redis`). `redis` is where the conversations' keys live (the worker's `store`).
 */
export class AnswerStops {
  readonly #redis: RedisClient;
  readonly #log: Logger;
  readonly #running = new Map<string, { controller: AbortController; answer: RunningAnswer }>();
  /** Stop requests for answers not written here (yet), by `conversation|stop id`: who pressed and until when (ms) they count. */
  readonly #early = new Map<string, { by: string; until: number }>();
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
   * Registers an answer of `conversation` to `userId`'s message `messageId`, so a press finds it:
   * for a chat message (`{ inbox: true }`) nothing is written (its message heads the inbox; its stop
   * id is {@link stopIdOf}); otherwise the conversation's record is written (`SET … EX ttlSeconds`).
   * When a stop request for it arrived before it began ({@link EARLY_STOP_MS}), it is stopped at once.
   * @throws when Redis is unreachable (the answer fails like any Redis failure).
   */
  async begin(
    conversation: ConversationRef,
    asker: { userId: string; messageId: string },
    place: AnswerPlace,
  ): Promise<RunningAnswer> {
    const inbox = "inbox" in place;
    const id = inbox ? stopIdOf(conversation, asker.messageId) : randomBytes(9).toString("base64url");
    const key = answeringKey(conversation);
    const local = `${conversationKey(conversation)}|${id}`;
    const controller = new AbortController();
    let ended = false;
    const answer: RunningAnswer = {
      id,
      signal: controller.signal,
      end: async () => {
        if (ended) return;
        ended = true;
        if (this.#running.get(local)?.answer === answer) this.#running.delete(local);
        if (inbox) return;
        await (this.#redis as RedisWithStopScript)
          .endAnswering(key, id)
          .catch((err: unknown) => this.#log.warn({ err }, "could not clear the answer's stop record"));
      },
    };
    this.#running.set(local, { controller, answer });
    const early = this.#early.get(local);
    if (early) {
      this.#early.delete(local);
      if (early.until > Date.now()) {
        this.#log.info(
          { chat: conversationKey(conversation), by: early.by },
          "stopped before it began; stopping the answer",
        );
        controller.abort(new AnswerStoppedError(early.by));
      }
    }
    if (!inbox) {
      const record: AnsweringRecord = { id, userId: asker.userId, messageId: asker.messageId.slice(0, 256) };
      await this.#redis.set(key, JSON.stringify(record), "EX", Math.max(1, Math.ceil(place.ttlSeconds)));
    }
    return answer;
  }

  /** Answers being written in this process. */
  get size(): number {
    return this.#running.size;
  }

  /** Stop requests kept for answers not written here (yet): see {@link EARLY_STOP_MS}. */
  get early(): number {
    return this.#early.size;
  }

  /** Stops listening (closes the subscriber connection; not `redis`). Never throws. */
  async close(): Promise<void> {
    await this.#subscriber.quit().catch(() => this.#subscriber.disconnect());
  }

  #arrived(payload: string): void {
    const notice: StopNotice | undefined = decodeRecord(StopNoticeSchema, payload, "stop request", this.#log);
    if (!notice) return;
    const local = `${notice.chat}|${notice.id}`;
    const entry = this.#running.get(local);
    if (!entry) {
      // Not written here: another worker's, or one whose message still waits for a worker (kept a while).
      if (this.#early.size >= EARLY_STOPS_KEPT) this.#early.delete(this.#early.keys().next().value!);
      this.#early.set(local, { by: notice.by, until: Date.now() + EARLY_STOP_MS });
      return;
    }
    if (entry.controller.signal.aborted) return;
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

/** What {@link requestStop} reads of an inbox's head: who asked and which message. */
const HeadSchema = z.object({ userId: z.string().min(1).max(128), messageId: z.string().min(1).max(128) });

/**
 * KEYS: the conversation's history. ARGV: [1] the start of a run's tag line, `#{"id":<JSON of the
 * message id>`. Returns 1 when the history holds a run tagged with that id (its answer is stored:
 * computed, whether delivered yet or not), else 0.
 */
const ANSWERED_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local at = 1
while true do
  local s, e = string.find(v, ARGV[1], at, true)
  if not s then return 0 end
  local after = string.sub(v, e + 1, e + 1)
  if (s == 1 or string.sub(v, s - 1, s - 1) == '\\n') and (after == ',' or after == '}') then return 1 end
  at = e + 1
end
`;

type RedisWithStopLookup = RedisClient & { answeredInHistory(history: string, tagStart: string): Promise<number> };

/** The answer a stop request is about ({@link requestStop}). */
interface Candidate {
  id: string;
  userId: string;
}

/**
 * The answers being written in a conversation, as an adapter can tell: a resumed approval's (its
 * `answering` record) and the chat message at the head of the inbox unless its answer is already
 * stored in the history. One round trip (`GET` and `LINDEX`), and a script reading the history
 * (`EVALSHA` + `GET`) when the inbox has a head.
 */
async function answersBeingWritten(
  redis: RedisClient,
  conversation: ConversationRef,
  log: Logger,
): Promise<Candidate[]> {
  const keys = conversationKeys(conversation);
  const [recordRaw, headRaw] = await Promise.all([redis.get(answeringKey(conversation)), redis.lindex(keys.inbox, 0)]);
  const found: Candidate[] = [];
  const record = decodeRecord(AnsweringRecordSchema, recordRaw, "answering record", log);
  if (record) found.push({ id: record.id, userId: record.userId });
  const head = decodeRecord(HeadSchema, headRaw, "inbox head", log);
  if (head) {
    if (!("answeredInHistory" in redis))
      redis.defineCommand("answeredInHistory", { numberOfKeys: 1, lua: ANSWERED_SCRIPT });
    const answered = await (redis as RedisWithStopLookup).answeredInHistory(
      keys.history,
      `#{"id":${JSON.stringify(head.messageId)}`,
    );
    if (answered !== 1) found.push({ id: stopIdOf(conversation, head.messageId), userId: head.userId });
  }
  return found;
}

/**
 * Asks the worker writing the conversation's answer to stop it: finds what is being written (the
 * inbox's head whose answer is not stored yet, or a resumed approval's record: one round trip, and
 * one script reading the history when the inbox has a head), checks the presser (the asker, a bot
 * admin or — in a group — one of its admins), and publishes the request on {@link STOP_CHANNEL}.
 * No queue. `/stop` (no `id`) stops a resumed approval's answer first, else the head's.
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
  const candidates = await answersBeingWritten(redis, request, log);
  const target = request.id ? candidates.find((c) => c.id === request.id) : candidates[0];
  if (!target) return request.id ? "finished" : "nothing";
  const allowed =
    target.userId === request.userId || request.admin === true || (await request.isGroupAdmin?.().catch(() => false));
  if (!allowed) return "not_allowed";
  const notice: StopNotice = { chat: conversationKey(request), id: target.id, by: request.userId, at: now };
  await redis.publish(STOP_CHANNEL, JSON.stringify(notice));
  return "stopping";
}
