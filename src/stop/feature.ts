/**
 * The Stop feature (issue 42): `/stop` and the live answer's Stop button (`sp:<stop id>`), which
 * stop the answer being written when the person asked or administers the group. Its state in an
 * adapter process sends stop requests over the adapter's Redis (`requestStop`); the worker side —
 * the answers registered and aborted — is the answer pipeline's (`AnswerStops`, see `stops.ts` for
 * the control path). It keeps no conversation data that a move or `/reset` would carry: a chat
 * message's answer is found at the head of the inbox, and a resumed approval's `answering` record
 * lives only while that answer is being written.
 */
import { defineFeature, PRESS_AGAIN } from "../feature.js";
import { localize, type Localized } from "../i18n.js";
import { pressStopButton, stopCommand, type StopServices } from "./commands.js";
import { AnswerStops, requestStop, STOP_BUTTON_PREFIX } from "./stops.js";

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/** The Stop feature (see the module comment). */
export const stopFeature = defineFeature<StopServices>({
  name: "stop",
  start: ({ redis, log }) => ({ state: { request: (request) => requestStop(redis, request, log) } }),
  // A worker registers the answers it writes and listens for their stop requests (`AnswerServices.stops`).
  // On the Redis of the conversations' keys (where the adapters look), which is the worker's one Redis in production.
  worker({ redis, log }) {
    const stops = new AnswerStops(redis, log);
    return { lends: { stops }, close: () => stops.close() };
  },
  commands: [
    {
      name: "stop",
      description: d("停止正在寫的回答", "Stop the answer being written"),
      access: "everyone",
      run: (inv, services, stops) => stopCommand(inv, services, stops),
    },
  ],
  buttons: {
    prefixes: [STOP_BUTTON_PREFIX],
    async press(press, locale, stops, core) {
      try {
        const { notice, outcome } = await pressStopButton(press, locale, stops, core);
        core.log.info({ platform: press.platform, chatId: press.chatId, outcome }, "Stop button pressed");
        return { kind: "stop", notice };
      } catch (error) {
        core.log.error({ err: error, platform: press.platform, chatId: press.chatId }, "Stop button failed");
        return { kind: "stop", notice: localize(locale, PRESS_AGAIN), failed: true };
      }
    },
  },
});
