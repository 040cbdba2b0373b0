/**
 * The scheduled tasks feature: the buttons of `/tasks` and of a paused task's notice (`tk:…`:
 * pause, resume, cancel), and the tasks of a conversation, which move with it (each record names
 * the chat it runs in).
 */
import type { Feature } from "../feature.js";
import { moveRecordsOfChat } from "../conversations/keys.js";

/** The scheduled tasks feature (see the module comment). */
export const tasksFeature: Feature = {
  name: "tasks",
  buttons: {
    prefixes: ["tk:"],
    async press(press, locale, parts) {
      const answer = await parts.commands.pressTask({
        data: press.data,
        platform: press.platform,
        userId: press.userId,
        locale,
        // A group's admins may cancel any task of the group there (issue 39).
        ...(press.chatKind === "group" ? { chatId: press.chatId, isGroupAdmin: press.isGroupAdmin } : {}),
      });
      return { kind: "tasks", notice: answer.notice, ...(answer.changed ? { dropButton: true } : {}) };
    },
  },
  conversation: {
    stores: [
      {
        // Per person (`task:{<platform>:<userId>}:items`, src/tasks/store.ts), each record naming the chat it runs in.
        name: "tasks",
        move: (redis, from, to) => moveRecordsOfChat(redis, `task:{${from.platform}:*}:items`, from, to),
      },
    ],
  },
};
