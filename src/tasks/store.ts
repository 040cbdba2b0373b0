/**
 * Scheduled tasks in Redis: an instruction the assistant carries out at a time, once or on a
 * repeat, in the conversation where it was set, as its owner. Personal data like reminders
 * (keyed by platform + user, each task remembering its conversation), so `MAX_TASKS_PER_USER`
 * counts one person's tasks wherever they were set.
 *
 * Keys of one person, all under the hash tag `{<platform>:<userId>}` (one Redis Cluster slot):
 * - `task:{…}:items`: a hash, field = task id, value = the {@link Task} as JSON;
 * - `task:{…}:seq`: the last id given out (INCR), so ids are never reused and a job of a
 *   cancelled task can never run for a new one;
 * - `task:{…}:done:<occurrence>`: the marker of an occurrence that was answered (exactly once);
 * - `task:{…}:running:<id>`: the occurrence of the task being answered now (no overlap), with a TTL;
 * - `task:{…}:pressed:<id>:<nonce>`: the first press of a notice's resume button;
 * - `task:group:{<platform>:<chatId>}:owners`: who set tasks in a group ({@link groupOwnersKey}).
 */
import { z } from "zod";
import { personalRecords, type RecordOwner } from "../personal-records.js";
import type { RedisClient } from "../redis.js";
import { REPEATS } from "../reminders/store.js";
import { silentLogger, type Logger } from "../log.js";

/** Longest instruction, in characters (Unicode code points). */
export const MAX_INSTRUCTION = 1000;
/** Seconds an occurrence's done marker is kept (longer than any retry or late start). */
export const DONE_TTL_SECONDS = 8 * 24 * 3600;
/** Consecutive failed occurrences after which a task pauses and its owner is told (the 3). */
export const FAILURES_TO_PAUSE = 3;

/** Whose tasks: the platform and the user id (a tool context is one). */
export type TaskOwner = RecordOwner;

const StoredTask = z.object({
  id: z.number().int().positive(),
  /** What to do, as the owner asked it (the user turn of each occurrence). */
  instruction: z.string(),
  /** The first occurrence, ms since the Unix epoch. */
  at: z.number().int(),
  /** The next time it is due, ms since the Unix epoch; absent once a one-off ran or while paused. */
  next: z.number().int().optional(),
  repeat: z.enum(REPEATS).optional(),
  /** IANA time zone of the repeat pattern and of the times shown. */
  timezone: z.string(),
  /** Where it runs: the chat and Telegram topic it was set in, and what the platform needs there. */
  chatId: z.string(),
  topicId: z.string().optional(),
  chatKind: z.enum(["dm", "group"]),
  /** Discord guild of the channel (access: a whole server may be allowed). */
  guildId: z.string().optional(),
  /** The owner's display name (mention, speaker label). */
  userName: z.string(),
  createdAt: z.number().int(),
  /** Failed occurrences in a row (reset by a good one). */
  failures: z.number().int().nonnegative().default(0),
  /**
   * When set, the task does not run: paused by its owner, after {@link FAILURES_TO_PAUSE} failures
   * (`reason` says why), because the bot cannot write to its chat any more (`unreachable`),
   * because its owner `left` the group it runs in (issue 39), or by the bot's `operator` in the
   * console (then only the console resumes it; its owner may cancel it).
   */
  paused: z
    .object({
      at: z.number().int(),
      by: z.enum(["owner", "failures", "unreachable", "left", "operator"]),
      reason: z.string().optional(),
    })
    .optional(),
  /** The last occurrence: when it was due and how it went. */
  last: z.object({ dueAt: z.number().int(), ok: z.boolean(), error: z.string().optional() }).optional(),
});

/** One task as stored; see the field notes of the schema. Times are ms since the Unix epoch. */
export type Task = z.output<typeof StoredTask>;

const tasks = personalRecords("task", StoredTask, "scheduled task", "all");

/** The Redis keys of one person's tasks (see the module comment). */
export function taskKeys(owner: TaskOwner): {
  items: string;
  seq: string;
  done: (occurrence: string) => string;
  running: (id: number) => string;
  pressed: (id: number, nonce: string) => string;
} {
  const { tag, items, seq } = tasks.keys(owner);
  return {
    items,
    seq,
    done: (occurrence) => `task:${tag}:done:${occurrence}`,
    running: (id) => `task:${tag}:running:${id}`,
    pressed: (id, nonce) => `task:${tag}:pressed:${id}:${nonce}`,
  };
}

/** True while the task will still run (not paused, and a one-off that has not run yet). */
export function isActive(task: Task): boolean {
  return task.paused === undefined && task.next !== undefined;
}

/**
 * Counts the person's tasks (paused ones too; one-offs that ran are gone) and, when below `limit`,
 * stores a new one with the next id, in one script (parallel calls cannot pass the limit together).
 *
 * @returns the stored task, or `undefined` when the person already has `limit` tasks.
 */
export async function addTask(
  redis: RedisClient,
  owner: TaskOwner,
  fields: Omit<Task, "id" | "failures">,
  limit: number,
): Promise<Task | undefined> {
  const task = await tasks.add(redis, owner, { ...fields, failures: 0 }, limit);
  // Group admins list every task of their group (`/tasks`): the group knows whose tasks it may hold.
  if (task && task.chatKind === "group") await redis.sadd(groupOwnersKey(owner.platform, task.chatId), owner.userId);
  return task;
}

/**
 * The key of the set of user ids who set tasks in group `chatId` (`task:group:{<platform>:<chatId>}:owners`):
 * an index for the group's admins' `/tasks`; an owner stays listed after their tasks there end (the listing filters).
 */
export function groupOwnersKey(platform: TaskOwner["platform"], chatId: string): string {
  return `task:group:{${platform}:${chatId}}:owners`;
}

/** Every task set in group `chatId` on `platform` (any topic), whoever set it, by next time. @throws when Redis fails. */
export async function groupTasks(
  redis: RedisClient,
  platform: TaskOwner["platform"],
  chatId: string,
  log: Logger = silentLogger,
): Promise<{ owner: TaskOwner; task: Task }[]> {
  const owners = (await redis.smembers(groupOwnersKey(platform, chatId))).sort();
  const found: { owner: TaskOwner; task: Task }[] = [];
  for (const userId of owners) {
    const owner = { platform, userId };
    for (const task of await listTasks(redis, owner, log)) if (task.chatId === chatId) found.push({ owner, task });
  }
  return found.sort(
    (a, b) =>
      (a.task.paused ? 1 : 0) - (b.task.paused ? 1 : 0) ||
      (a.task.next ?? Infinity) - (b.task.next ?? Infinity) ||
      a.task.id - b.task.id,
  );
}

/** One task of the person, or undefined (a damaged record is logged and read as missing). */
export async function getTask(
  redis: RedisClient,
  owner: TaskOwner,
  id: number,
  log: Logger = silentLogger,
): Promise<Task | undefined> {
  return tasks.get(redis, owner, id, log);
}

/** The person's tasks, by next time (paused ones last), then id. */
export async function listTasks(redis: RedisClient, owner: TaskOwner, log: Logger = silentLogger): Promise<Task[]> {
  return (await tasks.all(redis, owner, log)).sort(
    (a, b) => (a.paused ? 1 : 0) - (b.paused ? 1 : 0) || (a.next ?? Infinity) - (b.next ?? Infinity) || a.id - b.id,
  );
}

/** Writes the task back only if it still exists (a concurrent cancel wins). @returns whether it was written. */
export async function updateTask(redis: RedisClient, owner: TaskOwner, task: Task): Promise<boolean> {
  return tasks.update(redis, owner, task);
}

/** Deletes a task. @returns it, or undefined when the person has no task with that id. */
export async function deleteTask(
  redis: RedisClient,
  owner: TaskOwner,
  id: number,
  log: Logger = silentLogger,
): Promise<Task | undefined> {
  return tasks.delete(redis, owner, id, log);
}

/** Whether the task was set in `conversation` (its chat and Telegram topic). */
export function isIn(task: Task, conversation: { chatId: string; topicId?: string | undefined }): boolean {
  return task.chatId === conversation.chatId && (task.topicId ?? "") === (conversation.topicId ?? "");
}
