/**
 * What ends when the bot can no longer write to a LINE chat: the user unfollowed (blocked) it, or
 * the bot left (was removed from) a group or multi-person chat. Its reminders and scheduled tasks
 * in that chat are deleted, as the worker does when a send finds the chat unreachable; their
 * queued jobs then find nothing when due and end (a repeat's job scheduler is removed then).
 *
 * Reminders and tasks are kept per person, so the members of a group who used the bot there are
 * recorded ({@link recordMember}) to know whose lists to look at when the bot leaves it.
 * A member who leaves a group (`memberLeft`) ends only their own reminders and tasks there: they
 * can no longer read the group, and a task must not read it for them (issue 39).
 * Sources: https://developers.line.biz/en/reference/messaging-api/#unfollow-event, #leave-event and
 * #member-left-event.
 */
import type { Logger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { deleteReminder, listReminders } from "../../src/reminders/store.js";
import { deleteTask, listTasks } from "../../src/tasks/store.js";

/** How long a group's recorded members are kept after the last one was recorded, seconds. */
const MEMBERS_TTL_SECONDS = 400 * 86_400;

/** The set of people who used the bot in group or room `chatId`. */
export function membersKey(chatId: string): string {
  return `line:members:{${chatId}}`;
}

/** Records that `userId` used the bot in group or room `chatId`. @throws when Redis fails. */
export async function recordMember(redis: RedisClient, chatId: string, userId: string): Promise<void> {
  await redis.multi().sadd(membersKey(chatId), userId).expire(membersKey(chatId), MEMBERS_TTL_SECONDS).exec();
}

/**
 * Deletes the reminders and scheduled tasks set in `chatId` (a user's one-to-one chat, a group or
 * a room): the chat's own user's for a one-to-one chat, every recorded member's for a group — or,
 * with `chat.people`, only those people's (members who left the group: `memberLeft`), who are then
 * no longer recorded as its members.
 * @returns how many of each were deleted.
 * @throws when Redis fails.
 */
export async function endChat(
  redis: RedisClient,
  chat: { chatId: string; chatKind: "dm" | "group"; people?: string[] },
  log: Logger,
): Promise<{ reminders: number; tasks: number }> {
  const people =
    chat.chatKind === "dm" ? [chat.chatId] : (chat.people ?? (await redis.smembers(membersKey(chat.chatId))));
  let reminders = 0;
  let tasks = 0;
  for (const userId of people) {
    const owner = { platform: "line" as const, userId };
    for (const reminder of await listReminders(redis, owner, Date.now(), log))
      if (reminder.chatId === chat.chatId && (await deleteReminder(redis, owner, reminder.id, log))) reminders++;
    for (const task of await listTasks(redis, owner, log))
      if (task.chatId === chat.chatId && (await deleteTask(redis, owner, task.id, log))) tasks++;
  }
  if (chat.chatKind === "group" && chat.people) {
    if (chat.people.length > 0) await redis.srem(membersKey(chat.chatId), ...chat.people);
  } else if (chat.chatKind === "group") await redis.del(membersKey(chat.chatId));
  return { reminders, tasks };
}
