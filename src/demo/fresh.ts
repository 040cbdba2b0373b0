/**
 * A fresh demo at every start (`npm run chat -- --demo`): what an earlier demo left in Redis is
 * deleted before the bot starts, so the examples it suggests ("delete todo 1") mean the same every
 * time and nothing piles up. That is the demo's conversation (history, settings, traces …), its
 * person's data (todos, reminders, scheduled tasks, memory, grants: the demo's conversation and
 * person share one id, so one hash tag), its own queues (a reminder set in an earlier demo would
 * still come due) and its pending approval. Nothing of the real chat is touched: its conversation,
 * person and queues have other names.
 */
import type { ApprovalStore } from "../approvals/store.js";
import { conversationKey } from "../queue/incoming.js";
import { scanKeys, type RedisClient } from "../redis.js";

/** Who the demo is and where its queues are. */
export interface DemoPlace {
  /** The demo's conversation (platform `console`) and its user: the same id. */
  chatId: string;
  userId: string;
  /** The BullMQ prefix of the demo's queues (its own). */
  prefix: string;
  /** Keys of the demo's conversation to keep (its chat lease, taken before). */
  keep?: readonly string[];
}

/**
 * Deletes what an earlier demo left (see the module comment): finishes its pending approval, then
 * deletes every key carrying its conversation's or person's hash tag (usage totals included) and
 * every key under its queues' prefix, one by one (so it works on a Redis Cluster too), but those in
 * `place.keep`. Call it after taking the demo's chat lease (so no other demo runs; keep the lease's
 * key) and before the bot starts.
 *
 * @returns how many keys were deleted.
 * @throws when Redis is unreachable.
 */
export async function clearDemo(
  redis: RedisClient,
  approvals: Pick<ApprovalStore, "pendingId" | "finish">,
  place: DemoPlace,
): Promise<number> {
  const conversation = { platform: "console" as const, chatId: place.chatId };
  const pending = await approvals.pendingId({ ...conversation, userId: place.userId });
  if (pending) await approvals.finish(pending);
  const person = `console:${place.userId}`;
  const patterns = new Set([
    `*{${conversationKey(conversation)}}*`,
    `*{${person}}*`,
    `*{u:${person}}*`,
    `*{c:${conversationKey(conversation)}}*`,
    `${place.prefix}:*`,
    `{${place.prefix}:*`,
  ]);
  let deleted = 0;
  for (const pattern of patterns)
    for (const key of await scanKeys(redis, pattern))
      if (!place.keep?.includes(key)) deleted += await redis.unlink(key);
  return deleted;
}
