/**
 * The reminders feature: the buttons of a posted reminder (`rm:d:…` done, `rm:s:…` snooze) and of
 * `/reminders` (`rm:c:…` cancel), and the reminders of a conversation, which move with it (each
 * record names the chat it is posted in).
 */
import type { Feature } from "../feature.js";
import { PRESS_AGAIN } from "../feature.js";
import { localize } from "../i18n.js";
import { moveRecordsOfChat } from "../conversations/keys.js";

/** The reminders feature (see the module comment). */
export const remindersFeature: Feature = {
  name: "reminders",
  buttons: {
    prefixes: ["rm:"],
    async press(press, locale, parts) {
      if (!parts.reminders)
        return {
          kind: "reminders",
          notice: localize(locale, {
            "zh-TW": "這個提醒已經結束或取消了。",
            en: "This reminder has ended or was cancelled.",
          }),
        };
      try {
        const answer = await parts.reminders.press({
          data: press.data,
          platform: press.platform,
          userId: press.userId,
          // A group's admins may cancel any reminder of the group there (issue 39).
          ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
        });
        return {
          kind: "reminders",
          notice: answer.notice,
          ...(answer.closeText ? { closeText: answer.closeText } : {}),
          ...(press.data.startsWith("rm:c:") && answer.cancelled ? { dropButton: true } : {}),
        };
      } catch (error) {
        parts.log.error({ err: error, platform: press.platform }, "reminder button failed");
        return { kind: "reminders", notice: localize(locale, PRESS_AGAIN), failed: true };
      }
    },
  },
  conversation: {
    stores: [
      {
        // Per person (`reminder:{<platform>:<userId>}:items`), each record naming the chat it is posted in.
        name: "reminders",
        move: (redis, from, to) => moveRecordsOfChat(redis, `reminder:{${from.platform}:*}:items`, from, to),
      },
    ],
  },
};
