/**
 * Delivering reminders: the processor of the `reminders` queue (a worker runs it as the reminders
 * feature's queue, `feature.ts`) posts each due occurrence through the platform's outbound, exactly once.
 *
 * Exactly once per occurrence: every occurrence is one job (its own id), which BullMQ gives to one
 * worker at a time, also with several worker processes; after the send, the occurrence's delivered
 * marker (`reminder:{…}:sent:<job id>`) is written, and a job that finds it ends without sending
 * (a retry after a failure past the send, a stalled job taken over). A worker killed between the
 * send and the marker leaves a stalled job that another worker runs again: on Discord the message's
 * nonce (`enforce_nonce`) returns the message already posted instead of a second one; on Telegram,
 * which has no such key, that window (one Redis write) is the only one where a repeat can happen,
 * the same bound as the answers' sent-chunk count.
 *
 * An occurrence due while no worker ran waits in Redis and goes out when a worker starts, saying
 * how late it is. A chat the bot can no longer write to ends the reminder (and its repeats) with a
 * log line, and so does lost access, checked at every occurrence with the gate's own rule
 * (`hasAccess`): a DM reminder whose owner was revoked, a group reminder whose group was disabled
 * (an admin's reminders are always posted, as admins are always served).
 */
import { UnrecoverableError, type Job } from "bullmq";
import type { RedisClient } from "../redis.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { Outbound } from "../outbound.js";
import { hasAccess } from "../access/check.js";
import { AccessStore } from "../access/store.js";
import { ChatUnreachableError } from "../outbound-errors.js";
import type { Platform } from "../queue/incoming.js";
import { buttonToken, reminderText } from "./format.js";
import { closeQueue, logJobFailure, openQueue } from "../queue/jobs.js";
import { REMINDERS_QUEUE, ReminderScheduler, attachReminderScheduler, type ReminderJobData } from "./schedule.js";
import {
  MARKER_TTL_SECONDS,
  deleteReminder,
  getReminder,
  reminderKeys,
  updateReminder,
  type Reminder,
} from "./store.js";
import { localize } from "../i18n.js";
import type { SettingsStore } from "../settings/store.js";
import { conversationLocale } from "../worker/pipeline.js";

/** What reminder delivery needs. */
export interface ReminderDeliveryDeps {
  config: Config;
  log: Logger;
  /** The worker's connection (`maxRetriesPerRequest: null`); the tools' scheduler is attached to it. */
  redis: RedisClient;
  /** BullMQ key prefix (default BullMQ's `bull`). */
  prefix?: string;
  /** The outbound side of every platform this worker posts on. */
  outbounds: Partial<Record<Platform, Outbound>>;
  /** The conversations' settings (the settings feature), for the language of what is posted; without it `BOT_LOCALE`. */
  settings?: SettingsStore | undefined;
}

/** Reminder delivery in one worker process: the processor of the `reminders` queue (run by the worker, `src/reminders/feature.ts`). */
export interface ReminderDelivery {
  /** The scheduler the tools use (also attached to `deps.redis`). */
  readonly scheduler: ReminderScheduler;
  /** Posts one due occurrence (a job of the `reminders` queue). */
  process(job: Job<ReminderJobData>): Promise<DeliveryOutcome>;
  /** Logs a job that failed (an error once it failed for good). */
  failed(job: Job<ReminderJobData> | undefined, err: Error): void;
  /** Closes the scheduler's queue (not the connection). Never throws. */
  close(): Promise<void>;
}

/** What one job did (the job's return value, for tests and the log). */
export type DeliveryOutcome = "sent" | "already" | "gone" | "unreachable" | "revoked" | "paused";

/**
 * The due time of a reminder's (or a scheduled task's) job: its data's `dueAt`, else the `<ms>` at the end of a
 * scheduler job's id `repeat:<id>:<ms>`, else when it was added.
 */
export function dueTimeOf(
  job: Pick<Job<{ dueAt?: number | undefined }>, "data" | "id" | "timestamp" | "delay">,
): number {
  if (job.data.dueAt !== undefined) return job.data.dueAt;
  const m = /:(\d{10,})$/.exec(job.id ?? "");
  return m ? Number(m[1]) : job.timestamp + (job.delay ?? 0);
}

/**
 * Reminder delivery in one worker process: the `reminders` queue's scheduler (attached to
 * `deps.redis` for the tools) and the processor of its jobs.
 */
export function reminderDelivery(deps: ReminderDeliveryDeps): ReminderDelivery {
  const { config, log, redis, outbounds } = deps;
  const queue = openQueue<ReminderJobData>(REMINDERS_QUEUE, redis, deps.prefix);
  const scheduler = new ReminderScheduler(queue);
  attachReminderScheduler(redis, scheduler);
  const access = new AccessStore(redis, log);

  async function deliver(job: Job<ReminderJobData>): Promise<DeliveryOutcome> {
    const { platform, userId, reminderId } = job.data;
    const owner = { platform, userId };
    const dueAt = dueTimeOf(job);
    const rlog = log.child({ reminder: `${platform}:${userId}#${reminderId}`, job: job.id });
    const reminder = await getReminder(redis, owner, reminderId);
    if (reminder?.paused) {
      if (job.repeatJobKey) await scheduler.removeScheduler(owner, reminderId);
      rlog.info({ by: reminder.paused.by }, "reminder is paused; nothing to post");
      return "paused";
    }
    if (!reminder) {
      // Cancelled (or its todo completed): a repeat's scheduler is removed here if the cancel could not.
      if (job.repeatJobKey) await scheduler.removeScheduler(owner, reminderId);
      rlog.debug("reminder no longer exists; nothing to post");
      return "gone";
    }
    const keys = reminderKeys(owner);
    const marker = keys.sent(job.id ?? String(dueAt));
    if ((await redis.exists(marker)) === 1) {
      rlog.info("occurrence already posted; not again");
      return "already";
    }
    const outbound = outbounds[platform];
    if (!outbound) throw new UnrecoverableError(`this worker has no ${platform} outbound`);
    const subject = {
      platform,
      userId,
      chatId: reminder.chatId,
      chatKind: reminder.chatKind,
      ...(reminder.guildId ? { guildId: reminder.guildId } : {}),
    };
    if (!(await hasAccess(config, access, subject))) {
      // The owner was revoked (a DM) or the group disabled: nothing more is posted there.
      await deleteReminder(redis, owner, reminderId);
      if (reminder.repeat) await scheduler.removeScheduler(owner, reminderId);
      const why = reminder.chatKind === "dm" ? "its owner no longer has access" : "its group is no longer enabled";
      rlog.warn({ chatId: reminder.chatId, chatKind: reminder.chatKind }, `reminder ended: ${why}`);
      return "revoked";
    }
    const now = Date.now();
    if (
      reminder.chatKind === "group" &&
      outbound.isMember &&
      (await outbound.isMember({ chatId: reminder.chatId, guildId: reminder.guildId }, userId)) === false
    ) {
      await pauseForLeaver(outbound, owner, reminder, marker, rlog);
      return "paused";
    }
    const conversation = reminder.topicId
      ? { platform, chatId: reminder.chatId, topicId: reminder.topicId }
      : { platform, chatId: reminder.chatId };
    const locale = await conversationLocale({ config, settings: deps.settings }, conversation, rlog);
    let sent;
    try {
      sent = await outbound.sendReminder({
        conversation,
        chatKind: reminder.chatKind,
        owner: { userId, userName: reminder.userName },
        text: reminderText(reminder, dueAt, now - dueAt, locale),
        token: buttonToken(owner, reminderId, dueAt),
        locale,
      });
    } catch (error) {
      if (!(error instanceof ChatUnreachableError)) throw error;
      await deleteReminder(redis, owner, reminderId);
      if (reminder.repeat) await scheduler.removeScheduler(owner, reminderId);
      rlog.warn(
        { chatId: reminder.chatId, err: { message: error.message } },
        "reminder ended: the bot can no longer write to its chat (blocked, removed, or the chat is gone)",
      );
      return "unreachable";
    }
    await redis.set(marker, JSON.stringify(sent), "EX", MARKER_TTL_SECONDS);
    const next = reminder.repeat ? await scheduler.nextRun(owner, reminderId) : undefined;
    const after = reminder.repeat
      ? { ...reminder, next: next ?? reminder.next }
      : { ...reminder, next: undefined, firedAt: now };
    await updateReminder(redis, owner, after);
    rlog.info({ chatId: sent.chatId, messageId: sent.messageId, lateMs: now - dueAt }, "reminder posted");
    return "sent";
  }

  /**
   * A group reminder whose owner is no longer a member of the group (issue 39): paused for good
   * (never posted again there), its schedule removed, and the group's admins told once, in the
   * group, with a cancel button only they (or bot admins) may press.
   */
  async function pauseForLeaver(
    outbound: Outbound,
    owner: { platform: Platform; userId: string },
    reminder: Reminder,
    marker: string,
    rlog: Logger,
  ): Promise<void> {
    await updateReminder(redis, owner, { ...reminder, next: undefined, paused: { at: Date.now(), by: "left" } });
    await scheduler.unschedule(owner, reminder);
    await redis.set(marker, "left", "EX", MARKER_TTL_SECONDS);
    rlog.warn("the owner of a group reminder is no longer a member of the group; paused and the admins told");
    const conversation = reminder.topicId
      ? { platform: owner.platform, chatId: reminder.chatId, topicId: reminder.topicId }
      : { platform: owner.platform, chatId: reminder.chatId };
    const locale = await conversationLocale({ config, settings: deps.settings }, conversation, rlog);
    const text = localize(
      locale,
      {
        "zh-TW":
          "⏸️ 給群組管理員：{name} 已不在這個群組，他設定的提醒 #{id}（{text}）已暫停，不會再發出。管理員可以用 /reminders 查看，或按「取消」刪除它。",
        en:
          "⏸️ For the group's admins: {name} is no longer in this group, so their reminder #{id} ({text}) is " +
          "paused and will not be posted. Admins can see it with /reminders, or press Cancel to delete it.",
      },
      { name: reminder.userName, id: reminder.id, text: reminder.text },
    );
    const to = {
      conversation,
      chatKind: reminder.chatKind,
      reply: {
        ...(reminder.topicId ? { threadId: reminder.topicId } : {}),
        ...(reminder.guildId ? { guildId: reminder.guildId } : {}),
      },
    };
    const cancel = {
      label: localize(locale, { "zh-TW": "❌ 取消 #{id}", en: "❌ Cancel #{id}" }, { id: reminder.id }),
      data: `rm:c:${buttonToken(owner, reminder.id)}`,
    };
    try {
      if (outbound.sendNotice) await outbound.sendNotice(to, text, [cancel]);
      else await outbound.sendAnswer(to, text);
    } catch (err) {
      rlog.error({ err }, "could not tell the group's admins that a reminder was paused");
    }
  }

  return {
    scheduler,
    process: deliver,
    failed(job, err) {
      if (!job) return;
      logJobFailure(log, job, err, {
        final: "reminder could not be posted; giving up on this occurrence",
        retry: "reminder not posted yet; will retry",
      });
    },
    close: () => closeQueue(queue),
  };
}
