/**
 * Reminders in Redis: personal data, keyed by platform + user like todos (a person's reminders
 * follow them; each one remembers the conversation it was set in, where it will be posted).
 *
 * Keys of one person, all under the hash tag `{<platform>:<userId>}` (one Redis Cluster slot):
 * - `reminder:{…}:items`: a hash, field = reminder id, value = the {@link Reminder} as JSON;
 * - `reminder:{…}:seq`: the last id given out (INCR), so ids are never reused and a job of a
 *   cancelled reminder can never fire for a new one;
 * - `reminder:{…}:sent:<occurrence>`: the delivered marker of one occurrence (exactly once);
 * - `reminder:{…}:pressed:<id>:<occurrence>`: the first press of done/snooze on a posted reminder.
 */
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import { personalRecords, type RecordOwner } from "../personal-records.js";
import type { RedisClient } from "../redis.js";

/** Most active reminders one person may have (the limit). */
export const MAX_ACTIVE_REMINDERS = 50;
/** Longest reminder text, in characters (Unicode code points). */
export const MAX_REMINDER_TEXT = 500;
/** Seconds a delivered marker or a press marker is kept (longer than any retry or snooze). */
export const MARKER_TTL_SECONDS = 8 * 24 * 3600;
/** Days a fired one-off reminder is kept after it was posted, so its buttons still work. */
export const FIRED_KEEP_MS = 3 * 24 * 3600 * 1000;

/** How a reminder repeats. */
export const REPEATS = ["daily", "weekdays", "weekly", "monthly"] as const;
/** One of {@link REPEATS}. */
export type Repeat = (typeof REPEATS)[number];

/** Whose reminders: the platform and the user id (a tool context is one). */
export type ReminderOwner = RecordOwner;

const StoredReminder = z.object({
  id: z.number().int().positive(),
  text: z.string(),
  /** The first occurrence, ms since the Unix epoch. */
  at: z.number().int(),
  /** The next time it is due, ms since the Unix epoch; absent once a one-off was posted. */
  next: z.number().int().optional(),
  repeat: z.enum(REPEATS).optional(),
  /** IANA time zone of the repeat pattern and of the times shown. */
  timezone: z.string(),
  /** A todo of the same person this reminder is about: done completes it, completing it ends the reminder. */
  todoId: z.number().int().positive().optional(),
  /** Where it is posted: the chat and Telegram topic it was set in. */
  chatId: z.string(),
  topicId: z.string().optional(),
  chatKind: z.enum(["dm", "group"]),
  /** The Discord server of a server channel, so delivery can check a server-wide `discord:<guildId>` access grant. */
  guildId: z.string().optional(),
  /** The owner's display name (for the mention). */
  userName: z.string(),
  createdAt: z.number().int(),
  /** When a one-off reminder was posted (it stays until done, snooze or {@link FIRED_KEEP_MS}). */
  firedAt: z.number().int().optional(),
  /**
   * Set when a reminder stopped: a group reminder whose owner `left` the group (issue 39), or one the
   * bot's `operator` paused in the console; not posted while set. Admins may cancel it; the console
   * may resume it.
   */
  paused: z.object({ at: z.number().int(), by: z.enum(["left", "operator"]) }).optional(),
});

/** One reminder as stored; see the field notes of the schema. Times are ms since the Unix epoch. */
export type Reminder = z.output<typeof StoredReminder>;

const reminders = personalRecords("reminder", StoredReminder, "reminder", "active");

/** The Redis keys of one person's reminders (see the module comment). */
export function reminderKeys(owner: ReminderOwner): {
  items: string;
  seq: string;
  sent: (occurrence: string) => string;
  pressed: (id: number, occurrence: string) => string;
} {
  const { tag, items, seq } = reminders.keys(owner);
  return {
    items,
    seq,
    sent: (occurrence) => `reminder:${tag}:sent:${occurrence}`,
    pressed: (id, occurrence) => `reminder:${tag}:pressed:${id}:${occurrence}`,
  };
}

/** True while the reminder will still be posted (a one-off that fired is not active). */
export function isActive(reminder: Reminder): boolean {
  return reminder.next !== undefined;
}

/**
 * Counts the person's active reminders and, when below `limit`, stores a new one with the next id,
 * in one script (parallel calls cannot pass the limit together).
 *
 * @returns the stored reminder, or `undefined` when the person already has `limit` active ones.
 */
export async function addReminder(
  redis: RedisClient,
  owner: ReminderOwner,
  fields: Omit<Reminder, "id">,
  limit = MAX_ACTIVE_REMINDERS,
): Promise<Reminder | undefined> {
  const reminder = await reminders.add(redis, owner, fields, limit);
  // Group admins list every reminder of their group (`/reminders`): the group knows whose reminders it may hold.
  if (reminder && reminder.chatKind === "group")
    await redis.sadd(groupReminderOwnersKey(owner.platform, reminder.chatId), owner.userId);
  return reminder;
}

/**
 * The key of the set of user ids who set reminders in group `chatId`
 * (`reminder:group:{<platform>:<chatId>}:owners`): an index for the group admins' `/reminders`.
 */
export function groupReminderOwnersKey(platform: ReminderOwner["platform"], chatId: string): string {
  return `reminder:group:{${platform}:${chatId}}:owners`;
}

/** Every reminder of group `chatId` (any topic, anyone's) still pending or paused, by next time. @throws when Redis fails. */
export async function groupReminders(
  redis: RedisClient,
  platform: ReminderOwner["platform"],
  chatId: string,
): Promise<{ owner: ReminderOwner; reminder: Reminder }[]> {
  const found: { owner: ReminderOwner; reminder: Reminder }[] = [];
  for (const userId of (await redis.smembers(groupReminderOwnersKey(platform, chatId))).sort()) {
    const owner = { platform, userId };
    for (const reminder of await listReminders(redis, owner))
      if (reminder.chatId === chatId && (isActive(reminder) || reminder.paused)) found.push({ owner, reminder });
  }
  return found.sort((a, b) => (a.reminder.next ?? Infinity) - (b.reminder.next ?? Infinity));
}

/** One reminder of the person, or undefined (a damaged record is logged and read as missing). */
export async function getReminder(
  redis: RedisClient,
  owner: ReminderOwner,
  id: number,
  log: Logger = silentLogger,
): Promise<Reminder | undefined> {
  return reminders.get(redis, owner, id, log);
}

/**
 * The person's reminders sorted by next time (fired one-offs last). Fired one-offs older than
 * {@link FIRED_KEEP_MS} are deleted on the way.
 */
export async function listReminders(
  redis: RedisClient,
  owner: ReminderOwner,
  now = Date.now(),
  log: Logger = silentLogger,
): Promise<Reminder[]> {
  const all = await reminders.all(redis, owner, log);
  const stale = all.filter((r) => !isActive(r) && !r.paused && (r.firedAt ?? 0) + FIRED_KEEP_MS < now);
  await reminders.deleteIds(
    redis,
    owner,
    stale.map((r) => r.id),
  );
  return all
    .filter((r) => !stale.includes(r))
    .sort((a, b) => (a.next ?? Infinity) - (b.next ?? Infinity) || a.id - b.id);
}

/** Writes the reminder back only if it still exists (a concurrent cancel wins). @returns whether it was written. */
export async function updateReminder(redis: RedisClient, owner: ReminderOwner, reminder: Reminder): Promise<boolean> {
  return reminders.update(redis, owner, reminder);
}

/** Deletes a reminder. @returns it, or undefined when the person has no reminder with that id. */
export async function deleteReminder(
  redis: RedisClient,
  owner: ReminderOwner,
  id: number,
  log: Logger = silentLogger,
): Promise<Reminder | undefined> {
  return reminders.delete(redis, owner, id, log);
}

/**
 * Deletes every reminder of the person tied to `todoId` (the todo was completed or deleted).
 * Their queued jobs find nothing when due and end; a repeat's job scheduler is removed then.
 *
 * @returns the deleted reminders.
 */
export async function deleteRemindersOfTodo(
  redis: RedisClient,
  owner: ReminderOwner,
  todoId: number,
): Promise<Reminder[]> {
  const tied = (await listReminders(redis, owner)).filter((r) => r.todoId === todoId);
  const deleted: Reminder[] = [];
  for (const r of tied) {
    const gone = await deleteReminder(redis, owner, r.id);
    if (gone) deleted.push(gone);
  }
  return deleted;
}
