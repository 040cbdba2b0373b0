/**
 * A conversation's inbox that holds messages while no chat job drains it ("stalled"): its job was
 * removed (Bull Board, `redis-cli`), lost, or never added (the producer's add kept failing, the
 * replacement of a job that failed for good could not be added). Nothing in the per-message path
 * notices: a message that enters a non-empty inbox counts on the job that inbox already has, so
 * every later message of the conversation only queues behind.
 *
 * What notices it is the path of a message that queues behind others, where the enqueue script
 * already reads the inbox's head (`src/queue/producer.ts`): each entry carries when it was queued
 * (`queuedAt`), and a head queued longer than {@link STALLED_INBOX_MS} ago gets the conversation
 * an `unblock` chat job. That job answers nothing while any other job of the conversation is
 * alive ({@link otherLiveChatJob}): a job that is merely slow — a long answer, a backlog of
 * waiting jobs, retries — keeps its inbox, and no message is answered twice.
 */
import type { Queue } from "bullmq";
import type { ConversationRef } from "./incoming.js";
import type { RedisClient } from "../redis.js";
import { chatJobId } from "./keys.js";

/**
 * How long ago (ms) the inbox's head must have been queued for a message queued behind it to have
 * the conversation checked for a stalled inbox: 5 minutes. Longer than the producer's own retries
 * of a job's add (about 2 minutes: `READD_DELAYS_MS` of `producer.ts`), so a job still being added
 * is never taken for a missing one; the check is only asked for, the job's liveness decides
 * ({@link otherLiveChatJob}). Compares the clocks of the adapter processes that queued the head and
 * the message, which must agree (NTP) to well within this.
 */
export const STALLED_INBOX_MS = 5 * 60_000;

/**
 * How long (ms) a chat job that failed counts as alive for {@link otherLiveChatJob}: a minute. A
 * chat job that fails for good is replaced by a new one (the worker's `failed` handler, `recover`,
 * 5 s later), added by its worker a few milliseconds after the failure; until then the
 * conversation has no job in BullMQ's lists and must not be taken up by another.
 */
export const FAILED_RECENTLY_MS = 60_000;

/**
 * KEYS: the chats queue's `wait`, `paused`, `active`, `prioritized`, `delayed`, `waiting-children`
 * and `failed` keys. ARGV: [1] the start of the conversation's job ids (`chatJobId` with an empty
 * message id), [2] the id of the job asking (never counted), [3] the key prefix of the queue's
 * jobs, [4] platform, [5] chat id, [6] topic id or "", [7] ms since the Unix epoch from which a
 * failed job counts. Returns the id of a job of the conversation that waits, runs, is delayed
 * (a retry's backoff, a replacement) or failed since ARGV[7], or false.
 *
 * Every chat job's id starts with ARGV[1] (`chatJobId` of the message that entered the empty
 * inbox, and of a replacement, handover or unblock job); as ids do not name a Telegram topic and a
 * chat id may continue another's, a job is the conversation's when its data (the message it was
 * added for) names the same platform, chat and topic; data Redis cannot decode counts too (the
 * safe side). One script: BullMQ moves a job between these lists in scripts of its own, so no job
 * is missed in between. Reads every list whole: only on the rare path of a stalled inbox.
 */
const OTHER_LIVE_SCRIPT = `
local function ours(id)
  if id == ARGV[2] or string.sub(id, 1, #ARGV[1]) ~= ARGV[1] then return false end
  local data = redis.call('HGET', ARGV[3] .. id, 'data')
  if not data then return false end
  local ok, m = pcall(cjson.decode, data)
  if not ok or type(m) ~= 'table' then return true end
  local topic = m.topicId
  if type(topic) ~= 'string' then topic = '' end
  return m.platform == ARGV[4] and m.chatId == ARGV[5] and topic == ARGV[6]
end
for i = 1, 3 do
  for _, id in ipairs(redis.call('LRANGE', KEYS[i], 0, -1)) do if ours(id) then return id end end
end
for i = 4, 6 do
  for _, id in ipairs(redis.call('ZRANGE', KEYS[i], 0, -1)) do if ours(id) then return id end end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[7], ARGV[7], '+inf')) do if ours(id) then return id end end
return false
`;

/**
 * The id of a chat job of `conversation`, other than `exceptJobId`, that is alive: waiting,
 * running, delayed (a retry's backoff, a replacement's delay), prioritized, waiting for children,
 * or failed less than {@link FAILED_RECENTLY_MS} before `now` (its replacement may be on its way).
 * One script on the queue's Redis (`redis`, the connection of `queue`), which reads the queue's
 * lists whole: for the rare path of a stalled inbox, never per message.
 *
 * @param queue - the `chats` queue (its keys).
 * @param now - ms since the Unix epoch (the failed jobs' times are their workers' clocks).
 * @returns the job's id, or undefined when the conversation has no other live job.
 * @throws when Redis is unreachable.
 */
export async function otherLiveChatJob(
  redis: RedisClient,
  queue: Pick<Queue, "toKey">,
  conversation: ConversationRef,
  exceptJobId: string,
  now: number,
): Promise<string | undefined> {
  const keys = ["wait", "paused", "active", "prioritized", "delayed", "waiting-children", "failed"].map((k) =>
    queue.toKey(k),
  );
  // EVAL, not a command defined on the connection: the rare path needs no script of its own there.
  const found = (await redis.eval(
    OTHER_LIVE_SCRIPT,
    keys.length,
    ...keys,
    chatJobId(conversation, ""),
    exceptJobId,
    queue.toKey(""),
    conversation.platform,
    conversation.chatId,
    conversation.topicId ?? "",
    String(Math.floor(now - FAILED_RECENTLY_MS)),
  )) as string | null;
  return found ?? undefined;
}
