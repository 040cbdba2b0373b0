/**
 * Helpers of the reminder scenarios (`reminders-*.test.ts`): a scripted model that calls any tool
 * the user names (`call set_reminder {"text":"…","at":"…"}`), local ISO times, the reminders
 * queue as the bot sees it, and the tool results the model received.
 */
import { getNextMillis, Queue } from "bullmq";
import { bullPrefix } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { DateTime } from "luxon";
import {
  occurrenceJobId,
  REMINDERS_QUEUE,
  schedulerId,
  schedulerIds,
  type ReminderJobData,
} from "../../src/reminders/schedule.js";
import type { Reminder, ReminderOwner } from "../../src/reminders/store.js";
import type { FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { toolUse } from "../fakes/anthropic.js";
import { bringForward } from "../helpers/jobs.js";
import { lastUserTyped, scriptedModel } from "./scripted-model.js";

/** The time zone of the test configuration (`TIMEZONE` default). */
export const ZONE = "Asia/Taipei";

/**
 * The scripted model plus one rule: a last user text containing `call <tool> <json>` is answered
 * with that tool_use; everything else as {@link scriptedModel} does (tool results come back as
 * `tool_name: <result>` lines).
 */
export function remindersModel(request: FakeRequest): FakeMessageReply {
  const m = /call ([a-z_]+)(?:\s+(\{.*\}))?\s*$/s.exec(lastUserTyped(request) ?? "");
  if (m) return toolUse(m[1]!, JSON.parse(m[2] ?? "{}"));
  return scriptedModel(request);
}

/** `ms` as a wall-clock ISO date-time in {@link ZONE} without an offset, e.g. `2026-12-01T08:00:12`. */
export function localIso(ms: number): string {
  return DateTime.fromMillis(ms, { zone: ZONE }).toFormat("yyyy-LL-dd'T'HH:mm:ss");
}

/** A whole second about `seconds` from now, ms since the Unix epoch. */
export function secondsAhead(seconds: number): number {
  return Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000;
}

/**
 * The `reminders` queue of the e2e stack (prefix `e2e`) on the test's own connection, for reading job schedulers;
 * close it after use (the connection stays open).
 */
export function remindersQueue(redis: RedisClient): Queue<ReminderJobData> {
  return new Queue<ReminderJobData>(REMINDERS_QUEUE, {
    connection: redis,
    prefix: bullPrefix(redis, REMINDERS_QUEUE, "e2e"),
  });
}

/**
 * Makes the delayed job of `reminder`'s occurrence at `at` (ms since the Unix epoch) due now, through
 * a queue of its own that is closed afterwards ({@link bringForward}, default 300 ms ahead).
 */
export async function bringReminderForward(
  redis: RedisClient,
  owner: ReminderOwner,
  reminder: Pick<Reminder, "id" | "repeat">,
  at: number,
): Promise<void> {
  const queue = remindersQueue(redis);
  try {
    await bringForward(queue, reminderJobId(owner, reminder, at));
  } finally {
    await queue.close();
  }
}

/** The next run (ms) of the job scheduler of reminder `id`, or undefined when it has none. */
export async function schedulerNext(
  queue: Queue<ReminderJobData>,
  platform: "telegram" | "discord",
  userId: string,
  id: number,
): Promise<number | undefined> {
  return (await queue.getJobScheduler(schedulerId({ platform, userId }, id)))?.next ?? undefined;
}

/**
 * The first `count` occurrences (ms, in order) of reminder `id`'s job schedulers as stored in
 * Redis, each scheduler's from its next run on, as BullMQ itself computes them (`getNextMillis`
 * of the stored pattern and `tz`), merged: what the reminder will fire on, month after month.
 */
export async function scheduledOccurrences(
  queue: Queue<ReminderJobData>,
  platform: "telegram" | "discord",
  userId: string,
  id: number,
  count: number,
): Promise<number[]> {
  const all: number[] = [];
  for (const schedulerKey of schedulerIds({ platform, userId }, id)) {
    const scheduler = await queue.getJobScheduler(schedulerKey);
    if (!scheduler?.next || !scheduler.pattern) continue;
    for (let at: number | undefined = scheduler.next, n = 0; at !== undefined && n < count; n++) {
      all.push(at);
      at = getNextMillis(at, { pattern: scheduler.pattern, tz: scheduler.tz ?? undefined });
    }
  }
  return all.sort((a, b) => a - b).slice(0, count);
}

/** The job id a job scheduler gives its run at `at` (ms), as BullMQ names it (`repeat:<scheduler id>:<ms>`). */
export function schedulerJobId(schedulerKey: string, at: number): string {
  return `repeat:${schedulerKey}:${at}`;
}

/** The job id of reminder `reminder`'s occurrence at `at` (ms): a one-off's own, or the one its job scheduler adds. */
export function reminderJobId(owner: ReminderOwner, reminder: Pick<Reminder, "id" | "repeat">, at: number): string {
  return reminder.repeat
    ? schedulerJobId(schedulerId(owner, reminder.id), at)
    : occurrenceJobId(owner, reminder.id, at);
}

/** Resolves after `ms` ms: only for bounded "nothing else happens" windows. */
export function quiet(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every 50 ms until it resolves truthy; fails naming `what` after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await quiet(50);
  }
}
