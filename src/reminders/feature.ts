/**
 * The reminders feature: `/reminders` (the asker's reminders here, with cancel buttons), the
 * buttons of a posted reminder (`rm:d:…` done, `rm:s:…` snooze), of `/reminders` (`rm:cl:…` and,
 * in a group's list for its admins, `rm:cg:…` cancel: the pressed list is shown as it is now) and of
 * a paused reminder's notice (`rm:c:…` cancel), the `reminders` queue whose due occurrences a worker posts (`delivery.ts`), and the
 * reminders of a conversation, which move with it (each record names the chat it is posted in).
 * The tools (`set_reminder`, `list_reminders`, `cancel_reminder`) are files of `tools/`.
 */
import { moveRecordsOfChat } from "../conversations/keys.js";
import { defineFeature, PRESS_AGAIN } from "../feature.js";
import { localize } from "../i18n.js";
import { closeQueue, openQueue } from "../queue/jobs.js";
import { ReminderActions } from "./actions.js";
import { reminderDelivery } from "./delivery.js";
import { REMINDERS_QUEUE, ReminderScheduler, type ReminderJobData } from "./schedule.js";

/** The reminders feature (see the module comment). */
export const remindersFeature = defineFeature<ReminderActions>({
  name: "reminders",
  start({ config, log, redis, prefix }) {
    // The adapters' own `reminders` queue: snoozes and cancels add and remove jobs.
    const queue = openQueue<ReminderJobData>(REMINDERS_QUEUE, redis, prefix);
    return {
      state: new ReminderActions({ config, redis, scheduler: new ReminderScheduler(queue), log }),
      close: () => closeQueue(queue),
    };
  },
  commands: [
    {
      name: "reminders",
      description: {
        "zh-TW": "列出你在這裡的提醒（可按按鈕取消）",
        en: "Your reminders here, with cancel buttons",
      },
      access: "everyone",
      run: (inv, _services, reminders) => reminders.listing(inv),
    },
  ],
  buttons: {
    prefixes: ["rm:"],
    async press(press, locale, reminders, { log }) {
      try {
        const answer = await reminders.press({
          data: press.data,
          locale,
          platform: press.platform,
          userId: press.userId,
          // A group's admins may cancel any reminder of the group there (issue 39).
          ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
          // A list's button (`rm:cl:`, `rm:cg:`) answers with the list as it is now.
          place: { chatId: press.chatId, topicId: press.topicId },
        });
        return {
          kind: "reminders",
          notice: answer.notice,
          ...(answer.closeText ? { closeText: answer.closeText } : {}),
          ...(answer.listing
            ? { listing: answer.listing }
            : press.data.startsWith("rm:c:") && answer.cancelled
              ? { dropButton: true }
              : {}),
        };
      } catch (error) {
        log.error({ err: error, platform: press.platform }, "reminder button failed");
        return { kind: "reminders", notice: localize(locale, PRESS_AGAIN), failed: true };
      }
    },
  },
  queues: [
    {
      name: REMINDERS_QUEUE,
      processor: ({ answer, bullRedis, prefix }) =>
        reminderDelivery({
          config: answer.config,
          log: answer.log,
          redis: bullRedis,
          prefix,
          outbounds: answer.outbounds,
          settings: answer.settings,
        }),
    },
  ],
  conversation: {
    stores: [
      {
        // Per person (`reminder:{<platform>:<userId>}:items`), each record naming the chat it is posted in.
        name: "reminders",
        move: (redis, from, to) => moveRecordsOfChat(redis, `reminder:{${from.platform}:*}:items`, from, to),
      },
    ],
  },
});
