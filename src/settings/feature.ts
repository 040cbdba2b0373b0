/**
 * The settings feature: the buttons of `/settings` (`/persona`, `/model`: `st:…`), which change a
 * setting only when the presser may change the conversation's settings, and the conversation's
 * settings, which move with it (and which `/reset` keeps).
 */
import type { Feature } from "../feature.js";
import { conversationKeys } from "../queue/keys.js";

/** The settings feature (see the module comment). */
export const settingsFeature: Feature = {
  name: "settings",
  buttons: {
    prefixes: ["st:"],
    async press(press, locale, parts) {
      const answer = await parts.commands.pressSettings({
        data: press.data,
        platform: press.platform,
        chatId: press.chatId,
        ...(press.topicId ? { topicId: press.topicId } : {}),
        chatKind: press.chatKind ?? "group",
        userId: press.userId,
        locale,
        isGroupAdmin: press.isGroupAdmin,
        readsAllGroupMessages: press.readsAllGroupMessages,
      });
      return {
        kind: "settings",
        notice: answer.notice,
        ...(answer.listing ? { replaceWith: answer.listing } : {}),
        ...(answer.failed ? { failed: true } : {}),
      };
    },
  },
  conversation: { stores: [{ name: "settings", keys: (c) => [conversationKeys(c).settings] }] },
};
