/**
 * The approval store: pending approvals of dangerous tools, kept in Redis so any process can
 * decide, expire or resume them, and the exactly-once guard for running an approved tool.
 *
 * Keys (all under `prefix`, default `approval:{approval}:`; the one hash tag `{approval}` keeps
 * every key a script or `MULTI` below touches together in one Redis Cluster slot, since a button
 * carries only the approval's id and no conversation to tag it with; approvals are few, so one
 * slot carries them easily). Below, `approval:` stands for the prefix:
 * - `approval:<id>`: a hash, the record. Small fields the Lua scripts read (`status`, `platform`,
 *   `requesterId`, `requesterName`, `expiresAt`), the conversation (`chatId`, `topicId` for a
 *   Telegram topic) beside the JSON of the rest (`data`),
 *   the prompt reference (`prompt`) and the decision (`decidedAt`, `deciderId`). It lives
 *   `timeoutMs + graceMs` while pending and `closedTtlMs` after it left `pending`, so a decision
 *   job that runs late still finds the saved run; {@link ApprovalStore.finish} deletes it (a decided
 *   one leaves `approval:decided:<id>`, below).
 * - `approval:pending:<conversation>:<requesterId>`: the id of the pending approval of one requester
 *   in one conversation (`conversation` is `conversationKey`: `platform:chatId` or
 *   `platform:chatId/topicId`). Several people of one chat or topic may each have a prompt open;
 *   only the requester's own next message in that conversation supersedes theirs.
 * - `approval:open:<conversation>`: a set of the ids of the conversation's pending approvals (every
 *   requester's), so `/reset` can close them all ({@link ApprovalStore.closeForReset}); an id leaves
 *   it when its approval leaves `pending` or is finished, and the set lives as long as its newest member.
 * - `approval:prompt:<platform>:<chatId>:<messageId>`: the id of the approval a prompt message asks about.
 * - `approval:exec:<tool_use id>`: the claim and then the result of one approved tool call.
 * - `approval:decided:<id>`: what is left of a decided approval once {@link ApprovalStore.finish}
 *   deleted its record: a small hash of the fields the decide script reads (`status` — `approved`,
 *   `declined` or `superseded` —, `platform`, `requesterId`, `requesterName`, `expiresAt`), written by the
 *   same script that deletes the record and living until the prompt's own `expiresAt`. A prompt
 *   that could not be closed (LINE cannot edit a sent message; a Discord edit may fail) can still
 *   be pressed: the press is then answered as while the record existed (`already_decided`, saying
 *   how), not as expired. None is left for an expired approval, nor for one closed by `/reset` (a
 *   press on it is rightly told it expired).
 *
 * With {@link ApprovalStoreOptions.hints}, {@link ApprovalStore.create} also writes a **pending hint**
 * in the conversation's own hash slot, on the conversations' Redis:
 * `approval-pending:{<conversation>}:<requesterId>` (the approval's id, living as long as the
 * record while pending). The worker reads it with the conversation's history in one `MGET` when an
 * answer begins ({@link ApprovalStore.pendingHintKey}): no hint, no pending approval to supersede,
 * and no read of the `{approval}` slot. A hint outlives its approval's close (it is not deleted):
 * a message while it lasts reads the pending index, as every message did before.
 *
 * Every state change (decide, expire, supersede) is one Lua script, so two decisions racing from
 * two processes (a double click, a click and a reaction, a redelivered event) see one winner.
 */
import { dataLostAt } from "../redis-marker.js";
import { randomBytes } from "node:crypto";
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import {
  PausedRunSchema,
  PendingCallSchema,
  type ApprovalVerdict,
  type PendingCall,
  type PausedRun,
} from "../agent/contract.js";
import { LOCALES } from "../config.js";
import type { Locale } from "../i18n.js";
import { silentLogger, type Logger } from "../log.js";
import { SentRefSchema, type SentRef } from "../outbound.js";
import { resetGeneration } from "../history/store.js";
import {
  conversationKey,
  conversationOf,
  IncomingMessageSchema,
  type ConversationRef,
  type IncomingMessage,
  type Platform,
} from "../queue/incoming.js";
import { decodeRecord } from "../records.js";
import { ExecutionLedger, type ExecuteOnce } from "../toolbox/once.js";
import { conversationTag } from "../queue/keys.js";
import {
  DECIDED_VERDICTS,
  type ApprovalDecider,
  type DecidedVerdict,
  type DecisionReply,
  type DecisionRequest,
  type DecisionResult,
} from "./decider.js";

/** Where an approval stands: `pending`, or how it ended. Only `pending` can change, and only once. */
export type ApprovalStatus = "pending" | ApprovalVerdict;

/** Length of an approval id: 16 random bytes in base64url, 22 characters of `[A-Za-z0-9_-]`. */
export const APPROVAL_ID_LENGTH = 22;

/** The shape of an approval id (see {@link APPROVAL_ID_LENGTH}). */
export const APPROVAL_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/**
 * Who a pending approval belongs to: a conversation and the requester in it. An
 * {@link IncomingMessage} is one (its conversation and its sender).
 */
export interface RequesterRef extends ConversationRef {
  /** The requester's id (`IncomingMessage.userId`). */
  userId: string;
}

/** What {@link ApprovalStore.create} needs: the paused run and who must decide. */
export interface NewApproval {
  /** The message that started the run; its conversation (`platform`, `chatId`, `topicId`), `userId` and `userName` bind the approval. */
  message: IncomingMessage;
  /** The paused run, saved as it is and handed back to `resumeAgent`. */
  run: PausedRun;
  /** The dangerous call being asked about (the first of `run.pending`). */
  call: PendingCall;
  /** The action in plain words, as shown on the prompt, e.g. `刪除待辦 #3「買牛奶」`. */
  action: string;
  /** Locale of the bot's words on the prompt and its outcome. */
  locale: Locale;
  /**
   * Whether the prompt offers "always allow" (the tool accepts grants and grants are wired in).
   * Default false: a decision with `always` is then refused as `always_refused`.
   */
  alwaysAllow?: boolean;
  /**
   * The conversation's reset generation (`resetGeneration` of `src/history/store.ts`) when the run
   * began: once `/reset` changed it, the approval is closed instead of decided, and its run is
   * never resumed. Absent = not compared (a record saved before generations existed).
   */
  resets?: number;
}

/** A saved approval; it is the {@link ConversationRef} of the conversation it was asked in. */
export interface ApprovalRecord extends NewApproval, ConversationRef {
  /** The opaque id carried by the prompt's buttons. */
  id: string;
  status: ApprovalStatus;
  platform: Platform;
  chatId: string;
  /** The Telegram topic of the conversation, when it is one. */
  topicId?: string;
  requesterId: string;
  requesterName: string;
  /** When it was created, ms since the Unix epoch. */
  createdAt: number;
  /**
   * After this instant (ms since the Unix epoch) decisions are refused as `not_found`; until then,
   * a press on a decided approval is `already_decided`, also after its record was deleted.
   */
  expiresAt: number;
  /** The posted prompt, once {@link ApprovalStore.setPrompt} saved it. */
  prompt?: SentRef;
  /** When it left `pending`, ms since the Unix epoch. */
  decidedAt?: number;
  /** Who decided (the requester's id) for `approved` / `declined`. */
  deciderId?: string;
  /** Steps of the resumed run already done (see {@link ApprovalStore.markStep}), so a retried job does not repeat them. */
  steps: string[];
  /** True when the requester approved with "always allow" (a grant is to be recorded). */
  always: boolean;
}

/** Called once per approval, right after the first valid decision was recorded. */
export type DecisionCallback = (decision: {
  approvalId: string;
  verdict: Extract<ApprovalVerdict, "approved" | "declined">;
  /** The press's reply token (LINE), for the answer ({@link DecisionRequest.reply}). */
  reply?: DecisionReply;
}) => Promise<void> | void;

/** Options of an {@link ApprovalStore}. */
export interface ApprovalStoreOptions {
  /** How long the requester has to decide, in ms (`CONFIRM_TIMEOUT_SECONDS * 1000`). */
  timeoutMs: number;
  /**
   * Called after an `accepted` decision, e.g. to add a job to the `decisions` queue with the
   * approval id as job id (so a retry does not queue twice). When it throws, the decision is
   * undone (the approval is `pending` again, the requester may press again) and the error is rethrown.
   */
  onDecision?: DecisionCallback;
  /** Extra life of a pending record beyond `timeoutMs`, in ms, so a late expiry job still finds it. Default 10 minutes. */
  graceMs?: number;
  /** Life of a record after it left `pending`, in ms (the decision job must run within it). Default 24 hours. */
  closedTtlMs?: number;
  /**
   * Called after a decision found the approval's conversation reset since it was asked, and
   * closed it (as expired) instead: e.g. to run its expiry job now, so that a worker closes the
   * prompt. Its failure is logged, not thrown (the approval is closed either way).
   */
  onReset?: (approvalId: string) => Promise<void>;
  /** Life of an exactly-once claim and result, in ms. Default 24 hours. */
  executionTtlMs?: number;
  /**
   * How long {@link ApprovalStore.executeOnce} waits for another caller's result, in ms, before it
   * treats the claim as abandoned by a crash. Default 35 000 (the default tool timeout is 30 s).
   */
  executionWaitMs?: number;
  /** Key prefix, with a hash tag of its own (see the module comment). Default `approval:{approval}:`. */
  prefix?: string;
  /** How long an "always allow" grant lasts, in ms (`alwaysAllowMs(config)`), told in the presser's notice. Default none (not mentioned). */
  grantMs?: number;
  /** The clock, ms since the Unix epoch. Default `Date.now`. */
  now?: () => number;
  log?: Logger;
  /**
   * The conversations' Redis (the history's), where {@link ApprovalStore.create} writes each pending
   * approval's hint (see the module comment), so the worker's first read of an answer tells whether
   * its requester has one. Default none: no hints, {@link ApprovalStore.pendingHintKey} is undefined.
   */
  hints?: RedisClient;
}

/**
 * Decides the record KEYS[1]; when it is gone, answers from its decided marker KEYS[2] (see the
 * module comment; its status is never `pending`, so nothing is written then).
 */
const DECIDE = `
local fields = {'status', 'platform', 'requesterId', 'requesterName', 'expiresAt', 'alwaysAllow'}
local h = redis.call('HMGET', KEYS[1], unpack(fields))
if not h[1] then h = redis.call('HMGET', KEYS[2], unpack(fields)) end
if not h[1] then return {'not_found'} end
if h[2] ~= ARGV[2] then return {'not_found'} end
if tonumber(ARGV[1]) > tonumber(h[5]) then return {'not_found'} end
if h[1] == 'expired' then return {'not_found'} end
if h[1] ~= 'pending' then return {'already_decided', h[1]} end
if h[3] ~= ARGV[3] then return {'not_requester', h[4]} end
if ARGV[6] == '1' and h[6] ~= '1' then return {'always_refused'} end
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'decidedAt', ARGV[1], 'deciderId', ARGV[3])
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'always', '1') end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {'accepted'}
`;

/** Undo of an accepted decision whose callback failed: only if it is still exactly that decision. */
const UNDECIDE = `
local h = redis.call('HMGET', KEYS[1], 'status', 'decidedAt', 'deciderId')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] or h[3] ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending')
redis.call('HDEL', KEYS[1], 'decidedAt', 'deciderId', 'always')
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1
`;

/** pending → ARGV[1]; drops the pending index (KEYS[2]) when it points at this approval, and the id from the open set (KEYS[3]). */
const CLOSE = `
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'decidedAt', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
redis.call('SREM', KEYS[3], ARGV[4])
return 1
`;

/** Saves the prompt ref and its reverse index, with the record's remaining life. */
const SET_PROMPT = `
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
redis.call('HSET', KEYS[1], 'prompt', ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
return 1
`;

/**
 * Deletes the record, the prompt index (KEYS[5], may be absent), the pending index (KEYS[2]) when
 * it points at it, and the id from the open set (KEYS[3]); for a decided record (unless ARGV[3] is
 * '1': closed by a reset) leaves its decided marker KEYS[4] until the prompt's `expiresAt`, counted
 * from ARGV[2] (now, ms).
 */
const FINISH = `
local h = redis.call('HMGET', KEYS[1], 'status', 'platform', 'requesterId', 'requesterName', 'expiresAt')
if ARGV[3] ~= '1' and (h[1] == 'approved' or h[1] == 'declined' or h[1] == 'superseded') and h[2] and h[3] and h[4] and h[5] then
  local ttl = tonumber(h[5]) - tonumber(ARGV[2])
  if ttl > 0 then
    redis.call('HSET', KEYS[4], 'status', h[1], 'platform', h[2], 'requesterId', h[3], 'requesterName', h[4], 'expiresAt', h[5])
    redis.call('PEXPIRE', KEYS[4], ttl)
  end
end
redis.call('DEL', KEYS[1])
if KEYS[5] then redis.call('DEL', KEYS[5]) end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('SREM', KEYS[3], ARGV[1])
return 1
`;

const HashSchema = z.object({
  status: z.enum(["pending", "approved", "declined", "expired", "superseded"]),
  platform: z.string(),
  chatId: z.string(),
  topicId: z.string().optional(),
  requesterId: z.string(),
  requesterName: z.string(),
  createdAt: z.coerce.number(),
  expiresAt: z.coerce.number(),
  data: z.string(),
  prompt: z.string().optional(),
  decidedAt: z.coerce.number().optional(),
  deciderId: z.string().optional(),
  alwaysAllow: z.enum(["0", "1"]).optional(),
  always: z.literal("1").optional(),
  resets: z.coerce.number().int().nonnegative().optional(),
});

/** The JSON in a record's `data` field: the message, the paused run and what the prompt says. */
const DataSchema = z.object({
  message: IncomingMessageSchema,
  run: PausedRunSchema,
  call: PendingCallSchema,
  action: z.string(),
  locale: z.enum(LOCALES),
});

export { UNKNOWN_OUTCOME } from "../toolbox/once.js";

/** Redis-backed approvals; implements {@link ApprovalDecider} for the adapters. */
export class ApprovalStore implements ApprovalDecider {
  readonly #redis: RedisClient;
  readonly #timeoutMs: number;
  readonly #graceMs: number;
  readonly #closedTtlMs: number;
  readonly #executionTtlMs: number;
  readonly #executionWaitMs: number;
  readonly #prefix: string;
  readonly #now: () => number;
  readonly #log: Logger;
  readonly #grantMs: number | undefined;
  readonly #ledger: ExecutionLedger;
  #onDecision: DecisionCallback | undefined;
  readonly #onReset: ((approvalId: string) => Promise<void>) | undefined;
  readonly #hints: RedisClient | undefined;

  /**
   * @param redis - a shared ioredis connection (commands only).
   * @param options - see {@link ApprovalStoreOptions}; `timeoutMs` is required.
   */
  constructor(redis: RedisClient, options: ApprovalStoreOptions) {
    this.#redis = redis;
    this.#timeoutMs = options.timeoutMs;
    this.#graceMs = options.graceMs ?? 10 * 60_000;
    this.#closedTtlMs = options.closedTtlMs ?? 24 * 3600_000;
    this.#executionTtlMs = options.executionTtlMs ?? 24 * 3600_000;
    this.#executionWaitMs = options.executionWaitMs ?? 35_000;
    this.#prefix = options.prefix ?? "approval:{approval}:";
    this.#now = options.now ?? Date.now;
    this.#log = options.log ?? silentLogger;
    this.#onDecision = options.onDecision;
    this.#onReset = options.onReset;
    this.#grantMs = options.grantMs;
    this.#hints = options.hints;
    this.#ledger = new ExecutionLedger(redis, {
      prefix: `${this.#prefix}exec:`,
      ttlMs: this.#executionTtlMs,
      waitMs: this.#executionWaitMs,
      now: this.#now,
      log: this.#log,
    });
  }

  /** How long the requester has to decide, in ms. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Sets (or replaces) the callback run after an accepted decision; see {@link ApprovalStoreOptions.onDecision}. */
  set onDecision(callback: DecisionCallback | undefined) {
    this.#onDecision = callback;
  }

  /**
   * Saves a pending approval and marks it as the pending approval of its requester in its
   * conversation (replacing the index of an older one of the same requester there, which stays
   * decidable until it expires).
   *
   * @returns the new approval's id: 16 random bytes, base64url ({@link APPROVAL_ID_LENGTH} characters),
   *   carrying no data; short enough for Telegram's 64-byte `callback_data` and Discord's
   *   100-character `custom_id` with a prefix.
   * @throws when Redis is unreachable.
   */
  async create(approval: NewApproval): Promise<string> {
    const id = randomBytes(16).toString("base64url");
    const createdAt = this.#now();
    const { message } = approval;
    const ttlMs = this.#timeoutMs + this.#graceMs;
    // alwaysAllow is a hash field of its own (the decide script reads it), not part of `data`.
    const data = { message, run: approval.run, call: approval.call, action: approval.action, locale: approval.locale };
    // The hint first: a pending approval without its hint would not be superseded.
    const hint = this.pendingHintKey(message);
    if (hint) await this.#hints!.set(hint, id, "PX", ttlMs);
    await this.#redis
      .multi()
      .hset(this.#key(id), {
        status: "pending",
        platform: message.platform,
        chatId: message.chatId,
        ...(message.topicId ? { topicId: message.topicId } : {}),
        requesterId: message.userId,
        requesterName: message.userName,
        createdAt: String(createdAt),
        expiresAt: String(createdAt + this.#timeoutMs),
        alwaysAllow: approval.alwaysAllow === true ? "1" : "0",
        ...(approval.resets !== undefined ? { resets: String(approval.resets) } : {}),
        data: JSON.stringify(data),
      })
      .pexpire(this.#key(id), ttlMs)
      .set(this.#pendingKey(message), id, "PX", ttlMs)
      .sadd(this.#openKey(message), id)
      .pexpire(this.#openKey(message), ttlMs)
      .exec()
      .then(throwOnExecError);
    return id;
  }

  /**
   * Saves where the prompt was posted, so the outcome can be shown on it, and indexes the prompt
   * message so a reaction on it can be mapped back ({@link ApprovalStore.idForPrompt}).
   * Does nothing for an unknown id.
   */
  async setPrompt(id: string, ref: SentRef): Promise<void> {
    if (!APPROVAL_ID_PATTERN.test(id)) return;
    const platform = await this.#redis.hget(this.#key(id), "platform");
    if (!platform) return;
    // HSET on a missing key would create a record without a TTL; only touch an existing one.
    await this.#redis.eval(
      SET_PROMPT,
      2,
      this.#key(id),
      this.#promptKey(platform as Platform, ref),
      JSON.stringify(ref),
      id,
    );
  }

  /**
   * The approval whose prompt is the message `ref` on `platform` (for Discord reactions, whose
   * events carry the message, not the button's `custom_id`), while its record exists.
   */
  async idForPrompt(platform: Platform, ref: SentRef): Promise<string | undefined> {
    return (await this.#redis.get(this.#promptKey(platform, ref))) ?? undefined;
  }

  /** Records that a step of the resumed run (e.g. `history`) is done. Does nothing for an unknown id. */
  async markStep(id: string, step: string): Promise<void> {
    await this.#redis.eval(
      "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], '1') end return 1",
      1,
      this.#key(id),
      `step:${step}`,
    );
  }

  /** The record, or undefined when the id is unknown, finished or its TTL ran out. */
  async get(id: string): Promise<ApprovalRecord | undefined> {
    if (!APPROVAL_ID_PATTERN.test(id)) return undefined;
    const hash = await this.#redis.hgetall(this.#key(id));
    if (Object.keys(hash).length === 0) return undefined;
    const parsed = HashSchema.safeParse(hash);
    if (!parsed.success) {
      this.#log.error(
        { approvalId: id, issues: parsed.error.issues.map((i) => i.path.join(".")) },
        "unreadable approval record",
      );
      return undefined;
    }
    const h = parsed.data;
    const data = decodeRecord(DataSchema, h.data, "approval record", this.#log, { approvalId: id });
    if (!data) return undefined;
    return {
      ...data,
      id,
      status: h.status,
      platform: h.platform as Platform,
      chatId: h.chatId,
      ...(h.topicId ? { topicId: h.topicId } : {}),
      requesterId: h.requesterId,
      requesterName: h.requesterName,
      createdAt: h.createdAt,
      expiresAt: h.expiresAt,
      prompt: decodeRecord(SentRefSchema, h.prompt, "approval prompt", this.#log, { approvalId: id }),
      decidedAt: h.decidedAt,
      deciderId: h.deciderId,
      steps: Object.keys(hash)
        .filter((k) => k.startsWith("step:"))
        .map((k) => k.slice(5)),
      alwaysAllow: h.alwaysAllow === "1",
      always: h.always === "1",
      ...(h.resets !== undefined ? { resets: h.resets } : {}),
    };
  }

  /**
   * Whether the conversation of `record` was reset (`/reset`) since the approval was asked: its
   * reset generation is no longer the one the record noted. False for a record without one.
   * @throws when Redis is unreachable.
   */
  async resetSince(record: ConversationRef & { resets?: number | undefined }): Promise<boolean> {
    if (record.resets === undefined) return false;
    return (await resetGeneration(this.#redis, conversationOf(record))) !== record.resets;
  }

  /**
   * Decides an approval, atomically (one Lua script), in this order:
   * unknown id, another platform, or now > `expiresAt` or already expired → `not_found` (`lost`
   * when the record is not there at all and Redis lost its data since it could have been asked);
   * not pending any more → `already_decided` (with how it was decided, its `verdict`), whoever
   * pressed: someone else is told it was decided too, not who may decide it;
   * decider is not the requester → `not_requester` (with the requester's name); `always`
   * on a prompt that did not offer "always allow" (the tool refuses grants: a forged button) →
   * `always_refused`, nothing changes; else
   * the status becomes `approved`/`declined` (with `always` recorded, when asked) → `accepted`,
   * and `onDecision` is called. Only the first valid decision is ever `accepted`. `always`
   * implies approval; the grant itself is recorded by the worker that resumes the run.
   * Before all that, a pending approval whose conversation was reset since it was asked
   * ({@link resetSince}) is closed as expired (and `onReset` called): `not_found`, nothing runs.
   * Once {@link finish} deleted the record of a decided approval, the same checks run on what it
   * left (`approval:decided:<id>`, see the module comment) until the prompt's `expiresAt`: a press
   * then is still `already_decided`, not `not_found`.
   *
   * @throws when Redis is unreachable, or when `onDecision` throws (the decision is then undone).
   */
  async decide(request: DecisionRequest): Promise<DecisionResult> {
    if (!APPROVAL_ID_PATTERN.test(request.approvalId)) return { status: "not_found" };
    const now = this.#now();
    const always = request.always === true;
    const approve = always || request.approve;
    const verdict = approve ? "approved" : "declined";
    const key = this.#key(request.approvalId);
    if (await this.#closeIfReset(request.approvalId, request.platform)) return { status: "not_found" };
    const reply = (await this.#redis.eval(
      DECIDE,
      2,
      key,
      this.#decidedKey(request.approvalId),
      now,
      request.platform,
      request.deciderId,
      verdict,
      this.#closedTtlMs,
      always ? "1" : "0",
    )) as string[];
    const [status, name] = reply;
    if (status === "not_requester") return { status, requesterName: name ?? "" };
    if (status === "not_found" && (await this.#lostWithData(key, now))) return { status: "lost" };
    if (status === "already_decided")
      return DECIDED_VERDICTS.includes(name as DecidedVerdict)
        ? { status, verdict: name as DecidedVerdict }
        : { status };
    if (status === "not_found" || status === "always_refused") return { status };
    this.#log.info(
      { approvalId: request.approvalId, verdict, always },
      `approval ${verdict}${always ? " (always allow)" : ""}`,
    );
    if (this.#onDecision) {
      try {
        await this.#onDecision({
          approvalId: request.approvalId,
          verdict,
          ...(request.reply ? { reply: request.reply } : {}),
        });
      } catch (err) {
        const expiresAtMs = now + this.#timeoutMs + this.#graceMs;
        await this.#redis.eval(UNDECIDE, 1, key, verdict, now, request.deciderId, expiresAtMs);
        throw err;
      }
    }
    return {
      status: "accepted",
      approve,
      ...(always ? { always: { ...(this.#grantMs ? { grantMs: this.#grantMs } : {}) } } : {}),
    };
  }

  /**
   * True when the approval `key` names is not in Redis at all and Redis lost its data since it
   * could have been asked (`dataLostAt` of `src/redis-marker.ts`, within the time a record is
   * kept: the timeout, its grace and the closed record's TTL): the press is from before the loss.
   */
  async #lostWithData(key: string, now: number): Promise<boolean> {
    if ((await this.#redis.exists(key)) === 1) return false;
    const lostAt = await dataLostAt(this.#redis);
    return lostAt !== undefined && now - lostAt <= this.#timeoutMs + this.#graceMs + this.#closedTtlMs;
  }

  /**
   * Closes a pending approval as timed out (for the delayed expiry job; it does not compare times).
   *
   * @returns the record when this call made the transition; undefined when it was already decided,
   *   expired, superseded, finished or unknown.
   */
  async expire(id: string): Promise<ApprovalRecord | undefined> {
    if (!APPROVAL_ID_PATTERN.test(id)) return undefined;
    const requester = await this.#requesterOf(id);
    if (!requester) return undefined;
    return this.#close(id, requester, "expired");
  }

  /**
   * Closes the pending approval of `requester` in their conversation as not confirmed, because
   * they sent a new message there. Other people's approvals, and the requester's approvals in
   * other conversations (another Telegram topic of the same chat), stay open.
   *
   * @param requester - the conversation and `userId` of the new message (an {@link IncomingMessage} will do).
   * @param hint - the value of {@link pendingHintKey} when the caller read it (null: no hint, so nothing
   *   pending; nothing is read); absent: not read, the pending index is read.
   * @returns the record when this call made the transition; undefined when there is no pending approval of theirs.
   */
  async supersede(requester: RequesterRef, hint?: string | null): Promise<ApprovalRecord | undefined> {
    // No hint where hints are written: nothing pending (no read of the pending index).
    if (hint === null && this.#hints) return undefined;
    const id = await this.#redis.get(this.#pendingKey(requester));
    if (!id) return undefined;
    return this.#close(id, requester, "superseded");
  }

  /**
   * Closes every pending approval of `conversation` that was asked before its latest `/reset`
   * (its noted reset generation is not the current one), as expired, and calls `onReset` for each,
   * so a worker closes its prompt (`ApprovalFlow.closeReset`). Approvals asked after the reset,
   * and records without a generation, stay open. Safe to run on several processes at once: each
   * approval is closed by one of them.
   *
   * @returns the ids it closed.
   * @throws when Redis is unreachable.
   */
  async closeForReset(conversation: ConversationRef): Promise<string[]> {
    const closed: string[] = [];
    for (const id of await this.#redis.smembers(this.#openKey(conversation))) {
      if (APPROVAL_ID_PATTERN.test(id) && (await this.#closeIfReset(id, conversation.platform))) closed.push(id);
    }
    return closed;
  }

  /**
   * How many pending approvals of `conversation` (every requester's) a `/reset` of it now would
   * close ({@link closeForReset}): those in its open set still `pending` and with a noted reset
   * generation (a record saved before generations existed stays open through a reset, so it is
   * not counted). Read before the reset: once it is announced, the workers close them. Two reads
   * (the set, then the records' fields in one pipeline); an approval decided or asked between
   * this read and the reset may be counted wrongly by one.
   *
   * @param conversation - the chat, or a Telegram topic when the ref has a `topicId`.
   * @returns 0 or more.
   * @throws when Redis is unreachable.
   */
  async pendingBeforeReset(conversation: ConversationRef): Promise<number> {
    const ids = (await this.#redis.smembers(this.#openKey(conversation))).filter((id) => APPROVAL_ID_PATTERN.test(id));
    if (ids.length === 0) return 0;
    const pipeline = this.#redis.pipeline();
    for (const id of ids) pipeline.hmget(this.#key(id), "status", "resets");
    const results = (await pipeline.exec()) ?? [];
    let count = 0;
    for (const [err, fields] of results) {
      if (err) throw err;
      const [status, resets] = fields as (string | null)[];
      if (status === "pending" && resets !== null && resets !== undefined) count++;
    }
    return count;
  }

  /**
   * The key of `requester`'s pending hint in their conversation (see the module comment), on the
   * conversations' Redis; undefined when this store writes no hints.
   */
  pendingHintKey(requester: RequesterRef): string | undefined {
    return this.#hints ? `approval-pending:${conversationTag(requester)}:${requester.userId}` : undefined;
  }

  /** The id of the pending approval of `requester` in their conversation, if any. */
  async pendingId(requester: RequesterRef): Promise<string | undefined> {
    return (await this.#redis.get(this.#pendingKey(requester))) ?? undefined;
  }

  /**
   * Deletes the record, its prompt index, and its pending index when it still points at it (one
   * script). A decided record (`approved`, `declined`, `superseded`) leaves its decided marker in the same
   * script, until the prompt's `expiresAt` (see the module comment), so a later press on the
   * prompt is still answered `already_decided`. Safe to call twice.
   *
   * @param id - the approval's id; a malformed or unknown one does nothing.
   * @param options.reset - the approval was closed because its conversation was reset
   *   (`ApprovalFlow.closeReset`): no marker is left, whatever its status, so a later press is
   *   answered `not_found` ("expired or no longer exists"), as for the forgotten conversation.
   * @throws when Redis is unreachable.
   */
  async finish(id: string, options: { reset?: boolean } = {}): Promise<void> {
    if (!APPROVAL_ID_PATTERN.test(id)) return;
    const requester = await this.#requesterOf(id);
    if (!requester) return;
    const keys = [this.#key(id), this.#pendingKey(requester), this.#openKey(requester), this.#decidedKey(id)];
    const prompt = decodeRecord(SentRefSchema, requester.prompt, "approval prompt", this.#log, { approvalId: id });
    if (prompt) keys.push(this.#promptKey(requester.platform, prompt));
    await this.#redis.eval(FINISH, keys.length, ...keys, id, this.#now(), options.reset === true ? "1" : "0");
  }

  /**
   * Runs an approved tool call at most once per `tool_use` id, across retries, processes and
   * crashes: `ExecutionLedger.executeOnce` (`src/toolbox/once.ts`) on the keys
   * `approval:{approval}:exec:<tool_use id>`, with `executionTtlMs` and `executionWaitMs`.
   * Bound to the instance, so it can be passed as `executeOnce: store.executeOnce`.
   *
   * @throws when Redis is unreachable before the claim (nothing ran then).
   */
  get executeOnce(): ExecuteOnce {
    return this.#ledger.executeOnce;
  }

  /**
   * Closes the pending approval `id` as expired when its conversation was reset since it was
   * asked (two steps: the generation lives under the conversation's hash tag, the record under
   * `{approval}`; a reset between them is caught by the worker, which compares again).
   * @returns whether it is closed for that reason (now, or by an earlier call).
   */
  async #closeIfReset(id: string, platform: Platform): Promise<boolean> {
    const [status, recordPlatform, chatId, topicId, userId, resets] = await this.#redis.hmget(
      this.#key(id),
      "status",
      "platform",
      "chatId",
      "topicId",
      "requesterId",
      "resets",
    );
    if (
      resets === null ||
      recordPlatform !== platform ||
      !chatId ||
      !userId ||
      (status !== "pending" && status !== "expired")
    )
      return false;
    const requester: RequesterRef = { platform, chatId, ...(topicId ? { topicId } : {}), userId };
    if (!(await this.resetSince({ ...requester, resets: Number(resets) }))) return false;
    if (status === "pending" && !(await this.#close(id, requester, "expired", "its conversation was reset")))
      return false;
    await this.#onReset?.(id).catch((err: unknown) =>
      this.#log.warn({ err, approvalId: id }, "could not ask for the reset approval's prompt to be closed"),
    );
    return true;
  }

  async #close(
    id: string,
    requester: RequesterRef,
    to: "expired" | "superseded",
    why?: string,
  ): Promise<ApprovalRecord | undefined> {
    const changed = await this.#redis.eval(
      CLOSE,
      3,
      this.#key(id),
      this.#pendingKey(requester),
      this.#openKey(requester),
      to,
      this.#now(),
      this.#closedTtlMs,
      id,
    );
    if (changed !== 1) return undefined;
    this.#log.info({ approvalId: id }, `approval ${to}${why ? ` (${why})` : ""}`);
    return this.get(id);
  }

  #key(id: string): string {
    return `${this.#prefix}${id}`;
  }

  /** What a decided approval leaves when its record is deleted (see the module comment). */
  #decidedKey(id: string): string {
    return `${this.#prefix}decided:${id}`;
  }

  #promptKey(platform: Platform, ref: SentRef): string {
    return `${this.#prefix}prompt:${platform}:${ref.chatId}:${ref.messageId}`;
  }

  /** The set of the pending approvals of one conversation (every requester's). */
  #openKey(conversation: ConversationRef): string {
    return `${this.#prefix}open:${conversationKey(conversation)}`;
  }

  /** The index of the pending approval of one requester in one conversation. */
  #pendingKey(requester: RequesterRef): string {
    return `${this.#prefix}pending:${conversationKey(requester)}:${requester.userId}`;
  }

  /** The conversation, requester and prompt of a stored record; undefined when it is gone. */
  async #requesterOf(id: string): Promise<(RequesterRef & { prompt?: string }) | undefined> {
    const [platform, chatId, topicId, userId, prompt] = await this.#redis.hmget(
      this.#key(id),
      "platform",
      "chatId",
      "topicId",
      "requesterId",
      "prompt",
    );
    if (!platform || !chatId || !userId) return undefined;
    return {
      platform: platform as Platform,
      chatId,
      ...(topicId ? { topicId } : {}),
      userId,
      ...(prompt ? { prompt } : {}),
    };
  }
}

function throwOnExecError(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error("redis transaction was aborted");
  for (const [err] of results) if (err) throw err;
}
