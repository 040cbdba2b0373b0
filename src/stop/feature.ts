/**
 * The Stop feature (issue 42): the live answer's Stop button (`sp:<stop id>`), which stops the
 * answer being written when the presser asked or administers the group (`src/stop/stops.ts` for
 * the control path). It keeps no conversation data that a move or `/reset` would carry: the
 * `answering` record lives only while an answer is being written.
 */
import type { Feature } from "../feature.js";
import { STOP_BUTTON_PREFIX } from "./stops.js";

/** The Stop feature (see the module comment). */
export const stopFeature: Feature = {
  name: "stop",
  buttons: {
    prefixes: [STOP_BUTTON_PREFIX],
    async press(press, locale, parts) {
      const answer = await parts.commands.pressStop({
        data: press.data,
        platform: press.platform,
        chatId: press.chatId,
        ...(press.topicId ? { topicId: press.topicId } : {}),
        chatKind: press.chatKind,
        userId: press.userId,
        locale,
        isGroupAdmin: press.isGroupAdmin,
      });
      return { kind: "stop", notice: answer.notice, ...(answer.failed ? { failed: true } : {}) };
    },
  },
};
