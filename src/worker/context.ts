/**
 * The per-call tool context of a message: who asked, where, in which locale and time zone.
 * Built the same way for a new run and for a run resumed after an approval.
 */
import type { RedisClient } from "../redis.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { IncomingMessage } from "../queue/incoming.js";
import type { ToolContext } from "../toolbox/tool.js";

/**
 * The tool context for `message`: its platform, chat and sender, the bot's locale and
 * `TIMEZONE`, the shared Redis connection, and `signal` (a fresh one when not given).
 */
export function toolContextFor(message: IncomingMessage, parts: { config: Config; redis: RedisClient; log: Logger; signal?: AbortSignal }): ToolContext {
  return {
    platform: message.platform,
    chatId: message.chatId,
    chatKind: message.chatKind,
    ...((message.topicId ?? message.reply?.threadId) ? { topicId: message.topicId ?? message.reply.threadId } : {}),
    userId: message.userId,
    userName: message.userName,
    locale: parts.config.BOT_LOCALE,
    timezone: parts.config.TIMEZONE,
    signal: parts.signal ?? new AbortController().signal,
    log: parts.log,
    redis: parts.redis,
    config: parts.config,
  };
}
