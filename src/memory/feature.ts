/**
 * The memory feature: the delete buttons of `/memory` (`mm:…`; in a group only its administrators
 * and bot admins may delete), and a group's shared memory, which moves with the group (a topic
 * shares its group's, so only the whole chat moves it).
 */
import type { Feature } from "../feature.js";
import { localize } from "../i18n.js";
import { memoryKey } from "./store.js";

/** The memory feature (see the module comment). */
export const memoryFeature: Feature = {
  name: "memory",
  buttons: {
    prefixes: ["mm:"],
    async press(press, locale, parts) {
      if (!press.chatKind)
        return {
          kind: "memory",
          notice: localize(locale, { "zh-TW": "這裡無法刪除記憶。", en: "Memory cannot be deleted from here." }),
        };
      const answer = await parts.commands.pressMemory({
        data: press.data,
        platform: press.platform,
        chatId: press.chatId,
        chatKind: press.chatKind,
        userId: press.userId,
        locale,
        isGroupAdmin: press.isGroupAdmin,
      });
      return {
        kind: "memory",
        notice: answer.notice,
        ...(answer.closeText ? { closeText: answer.closeText } : {}),
        ...(answer.deletedFile ? { dropButton: true } : {}),
      };
    },
  },
  conversation: {
    stores: [
      {
        // `memory:group:{<platform>:<chatId>}` (src/memory/store.ts).
        name: "group memory",
        keys: (c) => (c.topicId ? [] : [memoryKey({ kind: "group", platform: c.platform, chatId: c.chatId })]),
      },
    ],
  },
};
