/**
 * The LINE outbound half: answers, the loading animation, approval prompts and reminders over the
 * Messaging API (REST only), usable in a worker-only process.
 *
 * Answers go out with the message's reply token first (free, single use, valid about a minute:
 * https://developers.line.biz/en/reference/messaging-api/#send-reply-message), at most 5 message
 * objects per call; what does not fit that call, an answer whose token has expired (older than
 * {@link REPLY_TOKEN_FRESH_MS}; near `LINE_PUSH_MONTHLY_LIMIT`, older than {@link REPLY_TOKEN_STRETCH_MS},
 * which a log line says) or was refused, and messages that answer nothing (reminders) are
 * push messages (https://developers.line.biz/en/reference/messaging-api/#send-push-message), which
 * count against the channel's monthly quota: each is counted (`bot_pushed_messages_total`, and
 * `onPushed` for `/usage`). A push carries an `X-Line-Retry-Key` derived from the answer and its
 * place, so a job retried after a lost response does not post it twice (LINE answers 409).
 * LINE cannot edit a sent message: no `openStream` (the worker shows the loading animation with
 * {@link LineOutbound.sendTyping} and sends the whole answer once), and closing a prompt or a
 * reminder changes nothing in the chat.
 */
import { LINE_ID_PATTERNS } from "./inbound.js";
import { createHash } from "node:crypto";
import type { messagingApi } from "@line/bot-sdk";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type { Config } from "../../src/config.js";
import { redact, type Logger } from "../../src/log.js";
import { metrics } from "../../src/metrics.js";
import type {
  ApprovalPrompt,
  Destination,
  NoticeButton,
  Outbound,
  ReminderMessage,
  SentRef,
  VoiceReply,
} from "../../src/outbound.js";
import { PlatformRefusedError } from "../../src/outbound-errors.js";
import type { RedisClient } from "../../src/redis.js";
import { UsageStore } from "../../src/usage/store.js";
import { isInvalidReplyToken, isRetryKeyAccepted, lineCall, type LineClients } from "./api.js";
import { LineMedia } from "./media.js";
import { LINE_VOICE_FORMAT, storeVoice, voiceUrl } from "./voice.js";
import { localize, type Locale } from "../../src/i18n.js";
import { markdownLiteral, markdownToPlain } from "../../src/plain-text.js";
import { VOICE_FAILED } from "../../src/worker/voice-reply.js";
import {
  answerChunks,
  approvalMessages,
  LINE_MESSAGES_PER_CALL,
  plainChunks,
  reminderMessages,
  textMessage,
  withQuickReply,
} from "./messages.js";

/** A reply token older than this (ms since its event) is not tried: LINE allows about a minute. */
export const REPLY_TOKEN_FRESH_MS = 50_000;
/**
 * Near the monthly push quota ({@link PUSH_QUOTA_NEAR} of `LINE_PUSH_MONTHLY_LIMIT`), a reply token
 * up to this old (ms since its event) is still tried before pushing: LINE only promises a minute,
 * but a refused reply costs nothing (400, no message counted) while a push counts against the quota.
 */
export const REPLY_TOKEN_STRETCH_MS = 300_000;
/** The share of `LINE_PUSH_MONTHLY_LIMIT` from which the quota is "near" (warnings, stretched reply tokens). */
export const PUSH_QUOTA_NEAR = 0.8;
/** How long a month's push count read from Redis is trusted before reading it again, ms. */
const PUSH_COUNT_FRESH_MS = 60_000;
/** Seconds of one loading animation (a multiple of 5, at most 60). */
export const LOADING_SECONDS = 20;
/** Least time between two loading animations in one chat, ms: the worker asks every few seconds. */
export const LOADING_RENEW_MS = 15_000;

/** Options of {@link LineOutbound}. */
export interface LineOutboundOptions {
  /** The clock, ms (tests); default `Date.now`. */
  now?: () => number;
  /**
   * Told after each accepted push request in place of the count in Redis ({@link LineOutbound.attach});
   * awaited, its failure logged. Returns the pushes counted this month so far, when known.
   */
  onPushed?: () => Promise<number | undefined>;
  /** Reads this month's push requests so far in place of the count in Redis (tests); default {@link UsageStore.pushesThisMonth}. */
  pushesThisMonth?: () => Promise<number>;
}

/** How long the ids of the bot's sent messages are kept (a quote of one addresses the bot), seconds. */
const SENT_TTL_SECONDS = 7 * 86_400;

/** The key recording that the bot sent message `messageId` in `chatId`. */
export function sentKey(chatId: string, messageId: string): string {
  return `line:sent:{${chatId}}:${messageId}`;
}

/** Whether `messageId` in `chatId` is one the bot sent in the last 7 days (recorded by an attached {@link LineOutbound}). */
export async function isOwnMessage(redis: RedisClient, chatId: string, messageId: string): Promise<boolean> {
  return (await redis.exists(sentKey(chatId, messageId))) === 1;
}

/** A reply/push target: the chat, and the reply token when the answer may still use it. */
interface Target {
  chatId: string;
  replyToken?: string;
  /** When the reply token's event happened, ms (its age decides whether it is tried). */
  replyTokenAt?: number;
  /** Keys the push retry keys: the answer (conversation, message answered) and what it is. */
  key: string;
}

/** See the module comment. */
export class LineOutbound implements Outbound {
  readonly platform = "line" as const;
  /** A sent message cannot be edited on LINE: what a closed prompt would show leads the next answer (see {@link Outbound.promptsStayAsSent}). */
  readonly promptsStayAsSent = true;
  /** Downloads the files of incoming messages (the content API on the data host). */
  readonly media: LineMedia;
  /** Reply tokens this process has used (single use), with when; pruned after two minutes. */
  readonly #usedTokens = new Map<string, number>();
  /** When each chat's loading animation was last started. */
  readonly #loading = new Map<string, number>();
  readonly #now: () => number;
  #redis: RedisClient | undefined;
  #usage: UsageStore | undefined;
  /**
   * Audio messages of voice replies waiting for their text answer, by the answer's target key, with
   * when they were made (this outbound's clock, ms): {@link sendVoice} holds one, the next
   * {@link sendAnswer} to the same place sends it first, in the same reply call.
   */
  readonly #voices = new Map<string, { message: messagingApi.AudioMessage; locale: Locale; at: number }>();
  /** This month's push requests as last known (after a push, or read), and when (this outbound's clock, ms). */
  #pushes: { count: number; at: number } | undefined;

  constructor(
    readonly clients: LineClients,
    private readonly config: Config,
    private readonly log: Logger,
    private readonly options: LineOutboundOptions = {},
  ) {
    this.#now = options.now ?? Date.now;
    this.media = new LineMedia(clients);
  }

  /**
   * Gives this outbound a Redis connection: the ids of sent messages are recorded there (a quote
   * of one addresses the bot in a group) and push requests are counted per month (`/usage`,
   * `LINE_PUSH_MONTHLY_LIMIT`). Without it neither is.
   */
  attach(redis: RedisClient): void {
    this.#redis = redis;
    this.#usage = new UsageStore(redis, this.config.TIMEZONE);
  }

  /** Records the bot's sent messages (failures logged: only quoting them is affected). */
  async #remember(refs: SentRef[]): Promise<void> {
    const redis = this.#redis;
    if (!redis || refs.length === 0) return;
    try {
      const pipeline = redis.pipeline();
      for (const ref of refs) pipeline.set(sentKey(ref.chatId, ref.messageId), "1", "EX", SENT_TTL_SECONDS);
      await pipeline.exec();
    } catch (error) {
      this.log.warn({ err: error }, "line: could not record sent messages");
    }
  }

  /**
   * {@inheritDoc Outbound.sendAnswer} Chunks of at most 5,000 characters, at most 5 per call; the
   * first call uses the reply token while it is fresh and unused. The name of `to.mention` leads the
   * answer as it is (not read as Markdown).
   */
  async sendAnswer(
    to: Destination,
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    return this.#sendChunks(
      to,
      answerChunks(to.mention ? `${markdownLiteral(to.mention.userName)} ${text}` : text),
      options,
    );
  }

  /** Sends plain `chunks` as {@link sendAnswer} sends an answer's (with a pending voice reply first). */
  async #sendChunks(
    to: Destination,
    chunks: string[],
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    if (chunks.length === 0)
      this.log.warn({ chatId: to.conversation.chatId }, "line: an answer with no visible text was not sent");
    const skip = options.skip ?? 0;
    const messages: messagingApi.Message[] = chunks.slice(skip).map(textMessage);
    const target = this.#target(to, "answer");
    const voice = this.#voices.get(target.key);
    this.#voices.delete(target.key);
    if (!voice) {
      const refs = await this.send(target, messages, skip);
      for (const [i, ref] of refs.entries()) await options.onSent?.(skip + i, ref);
      return refs;
    }
    // The voice first, then the text, in one reply call when they fit (at most 5 messages).
    let refs: SentRef[];
    try {
      refs = (await this.send(target, [voice.message, ...messages], skip)).slice(1);
    } catch (error) {
      // LINE refusing the audio message (it could not fetch it) must not cost the text answer:
      // the text goes alone, with the voice failure's short line as a message after it.
      if (!(error instanceof PlatformRefusedError) || error.status !== 400) throw error;
      this.log.warn(
        { chatId: target.chatId, error: redact(String(error)) },
        "line: the audio message of a voice reply was refused; the text answer goes alone",
      );
      const line = textMessage(localize(voice.locale, VOICE_FAILED));
      refs = (await this.send(target, [...messages, line], skip)).slice(0, messages.length);
    }
    for (const [i, ref] of refs.entries()) await options.onSent?.(skip + i, ref);
    return refs;
  }

  /**
   * Voice replies need `LINE_PUBLIC_URL` (LINE fetches the audio from it): `mp3`, which LINE plays
   * (m4a or mp3: https://developers.line.biz/en/reference/messaging-api/#audio-message); undefined without it.
   */
  get voiceFormat(): typeof LINE_VOICE_FORMAT | undefined {
    return this.config.LINE_PUBLIC_URL ? LINE_VOICE_FORMAT : undefined;
  }

  /**
   * {@inheritDoc Outbound.sendVoice} Stores the audio in Redis for an hour (`voice.ts`), served by the
   * LINE webhook server at `LINE_PUBLIC_URL`, and makes an audio message of it (`duration` in whole
   * ms, at least 1). The message is held for the text answer that follows ({@link sendAnswer} to the
   * same `to`), so both go out in one reply call; held messages older than two minutes are dropped.
   * Should LINE refuse the audio message (400: it could not fetch it), the text goes alone, followed
   * by the voice failure's short line (`VOICE_FAILED`).
   * @returns a reference to the held message (`messageId` `voice:<id>`; LINE's id comes with the answer).
   * @throws {PlatformRefusedError} without `LINE_PUBLIC_URL` or Redis, or for audio that is not mp3,
   *   empty or over 25 MB; Redis errors.
   */
  async sendVoice(to: Destination, voice: VoiceReply): Promise<SentRef> {
    const publicUrl = this.config.LINE_PUBLIC_URL;
    const redis = this.#redis;
    if (!publicUrl || !redis || voice.format !== LINE_VOICE_FORMAT)
      throw new PlatformRefusedError(
        "line",
        "sendVoice",
        "line: voice replies need LINE_PUBLIC_URL, Redis and mp3 audio",
      );
    let id: string;
    try {
      id = await storeVoice(redis, voice.audio);
    } catch (error) {
      if (error instanceof RangeError) throw new PlatformRefusedError("line", "sendVoice", error.message);
      throw error;
    }
    const now = this.#now();
    for (const [key, held] of this.#voices) if (now - held.at > 120_000) this.#voices.delete(key);
    const message: messagingApi.AudioMessage = {
      type: "audio",
      originalContentUrl: voiceUrl(publicUrl, this.config.LINE_WEBHOOK_PATH, id),
      duration: Math.max(1, Math.round(voice.seconds * 1000)),
    };
    this.#voices.set(this.#target(to, "answer").key, { message, locale: voice.locale, at: now });
    return { chatId: to.conversation.chatId, messageId: `voice:${id}` };
  }

  /**
   * Sends `messages` to `target`: the reply token for the first call (at most 5 messages) when it
   * may be used, push for the rest.
   * @param first - index of the first message within the whole answer (keys the retry keys).
   * @returns one reference per message, in order.
   * @throws the core's errors (`api.ts`), e.g. {@link ChatUnreachableError} when the user blocked the bot.
   */
  async send(target: Target, messages: messagingApi.Message[], first = 0): Promise<SentRef[]> {
    const refs: SentRef[] = [];
    for (let start = 0; start < messages.length; start += LINE_MESSAGES_PER_CALL) {
      const batch = messages.slice(start, start + LINE_MESSAGES_PER_CALL);
      const token = start === 0 ? await this.#takeToken(target) : undefined;
      if (token) {
        try {
          const sent = await lineCall("replyMessage", () =>
            this.clients.api.replyMessage({ replyToken: token, messages: batch }),
          );
          const now = sent.sentMessages.map((m) => ({ chatId: target.chatId, messageId: m.id }));
          await this.#remember(now);
          refs.push(...now);
          continue;
        } catch (error) {
          if (!isInvalidReplyToken(error)) throw error;
          this.log.info(
            { chatId: target.chatId },
            "line: the reply token was refused (used or expired); pushing instead",
          );
        }
      } else if (start === 0 && target.replyToken) {
        const near = await this.#nearQuota();
        if (near)
          this.log.warn(
            { chatId: target.chatId, ...near, tokenAgeMs: this.#now() - (target.replyTokenAt ?? 0) },
            "line: the monthly push quota is nearly used up (LINE_PUSH_MONTHLY_LIMIT), but this answer's reply token is too old or used; pushing",
          );
      }
      refs.push(...(await this.#push(target, batch, first + start)));
    }
    return refs;
  }

  async #push(target: Target, batch: messagingApi.Message[], index: number): Promise<SentRef[]> {
    const retryKey = uuidOf(`${target.key}|${index}|${JSON.stringify(batch)}`);
    let sent: messagingApi.PushMessageResponse;
    try {
      sent = await lineCall("pushMessage", () =>
        this.clients.api.pushMessage({ to: target.chatId, messages: batch }, retryKey),
      );
    } catch (error) {
      if (!isRetryKeyAccepted(error)) throw error;
      // Sent by an earlier attempt whose answer was lost: LINE does not send it again.
      this.log.info({ chatId: target.chatId }, "line: push already accepted earlier (same retry key); not sent again");
      return batch.map((_m, i) => ({ chatId: target.chatId, messageId: `${retryKey}:${i}` }));
    }
    metrics.pushed("line");
    const count = await (this.options.onPushed ?? (async () => this.#usage?.recordPush("line")))().catch(
      (error: unknown) => {
        this.log.warn({ err: error }, "line: could not count a push message");
        return undefined;
      },
    );
    if (count !== undefined) this.#pushes = { count, at: this.#now() };
    const limit = this.config.LINE_PUSH_MONTHLY_LIMIT;
    if (limit !== undefined && count !== undefined && count >= Math.floor(limit * PUSH_QUOTA_NEAR))
      this.log.warn(
        { pushes: count, limit },
        "line: the monthly push quota is nearly used up (LINE_PUSH_MONTHLY_LIMIT); " +
          `reply tokens up to ${REPLY_TOKEN_STRETCH_MS / 60_000} minutes old are tried before pushing`,
      );
    const refs = sent.sentMessages.map((m) => ({ chatId: target.chatId, messageId: m.id }));
    await this.#remember(refs);
    return refs;
  }

  /**
   * The reply token of `target` when it is not used yet and fresh (younger than
   * {@link REPLY_TOKEN_FRESH_MS}) — or, near the monthly push quota ({@link nearQuota}), younger than
   * {@link REPLY_TOKEN_STRETCH_MS}, which a log line says — then marked used; else undefined.
   */
  async #takeToken(target: Target): Promise<string | undefined> {
    const token = target.replyToken;
    if (!token || this.#usedTokens.has(token)) return undefined;
    const now = this.#now();
    const age = now - (target.replyTokenAt ?? -Infinity);
    if (!(age < REPLY_TOKEN_FRESH_MS)) {
      if (!(age < REPLY_TOKEN_STRETCH_MS)) return undefined;
      const near = await this.#nearQuota();
      if (!near) return undefined;
      this.log.warn(
        { chatId: target.chatId, ...near, tokenAgeMs: age },
        "line: the monthly push quota is nearly used up (LINE_PUSH_MONTHLY_LIMIT); trying the reply token although it is older than 50 s, rather than pushing",
      );
    }
    for (const [used, at] of this.#usedTokens) if (now - at > 120_000) this.#usedTokens.delete(used);
    this.#usedTokens.set(token, now);
    return token;
  }

  #target(to: Destination, what: string): Target {
    const { replyToken, replyTokenAt } = to.reply ?? {};
    return {
      chatId: to.conversation.chatId,
      ...(replyToken && replyTokenAt !== undefined ? { replyToken, replyTokenAt } : {}),
      key: `${to.conversation.chatId}|${to.replyTo ?? to.key ?? ""}|${what}`,
    };
  }

  /**
   * The month's push requests and `LINE_PUSH_MONTHLY_LIMIT` when the count is at least
   * {@link PUSH_QUOTA_NEAR} of the limit; undefined when it is not, or no limit is set, or the count
   * cannot be read (logged). The count is the one the last push returned, or read from Redis
   * (`UsageStore.pushesThisMonth`, trusted for a minute).
   */
  async #nearQuota(): Promise<{ pushes: number; limit: number } | undefined> {
    const limit = this.config.LINE_PUSH_MONTHLY_LIMIT;
    if (limit === undefined) return undefined;
    const now = this.#now();
    if (!this.#pushes || now - this.#pushes.at > PUSH_COUNT_FRESH_MS) {
      const usage = this.#usage;
      const read = this.options.pushesThisMonth ?? (usage ? () => usage.pushesThisMonth("line") : undefined);
      if (!read) return undefined;
      try {
        this.#pushes = { count: await read(), at: now };
      } catch (error) {
        this.log.warn({ err: error }, "line: could not read this month's push count");
        return undefined;
      }
    }
    const pushes = this.#pushes.count;
    return pushes >= Math.floor(limit * PUSH_QUOTA_NEAR) ? { pushes, limit } : undefined;
  }

  /**
   * The loading animation (`POST /v2/bot/chat/loading/start`, {@link LOADING_SECONDS} s) in a
   * one-to-one chat, at most once per {@link LOADING_RENEW_MS}; LINE has none for groups, so
   * nothing is shown there. It ends by itself when the answer arrives.
   * Source: https://developers.line.biz/en/reference/messaging-api/#display-a-loading-indicator
   */
  async sendTyping(to: Destination): Promise<void> {
    const chatId = to.conversation.chatId;
    if (to.chatKind !== "dm" || !chatId.startsWith("U")) return;
    const now = this.#now();
    if (now - (this.#loading.get(chatId) ?? -Infinity) < LOADING_RENEW_MS) return;
    this.#loading.set(chatId, now);
    if (this.#loading.size > 10_000) this.#loading.clear();
    await lineCall(
      "showLoadingAnimation",
      () => this.clients.api.showLoadingAnimation({ chatId, loadingSeconds: LOADING_SECONDS }),
      { retries: 0 },
    );
  }

  /** {@inheritDoc Outbound.sendApprovalPrompt} A buttons template with postback actions (`messages.ts`). */
  async sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    const messages = approvalMessages(prompt, prompt.locale ?? this.config.BOT_LOCALE, this.config.TIMEZONE);
    const refs = await this.send(this.#target(to, `approval:${prompt.approvalId}`), messages);
    return refs.at(-1)!;
  }

  /**
   * LINE cannot edit a sent message ({@link promptsStayAsSent}): the prompt stays as it is, buttons
   * and all, and the answer that follows says what happened — after an "always allow" press it
   * starts with the grant's line, and the answer to a new message that closed the approval starts
   * with a line saying so (both from the core, in the same reply). A press on it afterwards is
   * answered by the core: until the prompt's own expiry, how it was decided ("already confirmed",
   * "already cancelled", closed by a new message); after that, or once `/reset` closed it,
   * "expired or no longer exists".
   */
  async closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict): Promise<void> {
    this.log.debug({ prompt, outcome }, "line: a sent approval prompt cannot be edited; left as it is");
  }

  /** {@inheritDoc Outbound.sendReminder} A push (a reminder answers no message), with done / snooze postbacks. */
  async sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    const messages = reminderMessages(reminder, reminder.locale ?? this.config.BOT_LOCALE);
    const refs = await this.send({ chatId: reminder.conversation.chatId, key: `reminder:${reminder.token}` }, messages);
    return refs.at(-1)!;
  }

  /** LINE cannot edit a sent message: a closed reminder stays as it is. */
  async closeReminder(message: SentRef): Promise<void> {
    this.log.debug({ message }, "line: a sent reminder cannot be edited; left as it is");
  }

  /**
   * See {@link Outbound.isMember}: the group member profile `GET /v2/bot/group/{groupId}/member/{userId}`
   * (a multi-person chat's: `GET /v2/bot/room/{roomId}/member/{userId}`). 200 is `true`; 404 (LINE's
   * answer for a user who is not, or no longer, a member) is `false`; a one-to-one chat and any
   * other failure (5xx after retries, a timeout) are `undefined`. Never throws.
   * Source: https://developers.line.biz/en/reference/messaging-api/#get-group-member-profile
   * (`getGroupMemberProfile` in `test/fixtures/specs/line-messaging-api/messaging-api.yml`).
   */
  async isMember(place: { chatId: string }, userId: string): Promise<boolean | undefined> {
    const { chatId } = place;
    const group = LINE_ID_PATTERNS.group.test(chatId);
    if ((!group && !LINE_ID_PATTERNS.room.test(chatId)) || !LINE_ID_PATTERNS.user.test(userId)) return undefined;
    // The SDK puts ids into the path as they are: encoded here too, as defence in depth.
    const [where, person] = [encodeURIComponent(chatId), encodeURIComponent(userId)];
    try {
      if (group) await lineCall("getGroupMemberProfile", () => this.clients.api.getGroupMemberProfile(where, person));
      else await lineCall("getRoomMemberProfile", () => this.clients.api.getRoomMemberProfile(where, person));
      return true;
    } catch (error) {
      if (error instanceof PlatformRefusedError && error.status === 404) return false;
      this.log.warn({ chatId, error: redact(String(error)) }, "line: member profile not readable; membership unknown");
      return undefined;
    }
  }

  /** {@inheritDoc Outbound.sendNotice} A text message (the text as it is) with quick reply postback buttons. */
  async sendNotice(to: Destination, text: string, buttons: NoticeButton[]): Promise<SentRef> {
    const shown = to.chatKind === "group" && to.mention ? `${to.mention.userName} ${text}` : text;
    const refs = await this.send(this.#target(to, "notice"), [withQuickReply(shown, buttons)]);
    const ref = refs[0];
    if (!ref) throw new PlatformRefusedError("line", "sendNotice", "line: the notice was not sent");
    return ref;
  }

  /**
   * Sends a command's reply (Markdown, as text) to the chat of an incoming event, with its reply
   * token when it still may be used, and its buttons as quick reply buttons. With `plain`, `text` is
   * plain already (a button's notice, an adapter's own hint or welcome with people's names) and is
   * sent as it is, never read as Markdown.
   * @throws the core's outbound errors when LINE refused it.
   */
  async sendReply(
    to: Destination,
    text: string,
    buttons: NoticeButton[] = [],
    options: { plain?: boolean } = {},
  ): Promise<SentRef[]> {
    const plain = options.plain ? text : markdownToPlain(text);
    if (buttons.length === 0) return this.#sendChunks(to, plainChunks(plain));
    return this.send(this.#target(to, "reply"), [withQuickReply(plain, buttons)]);
  }
}

/** A UUID (version-4 layout) made from `text`'s SHA-256: the same answer part gets the same `X-Line-Retry-Key`. */
export function uuidOf(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
