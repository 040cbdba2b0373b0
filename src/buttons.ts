/**
 * Button presses, routed in one place for every adapter: an adapter hands over what was pressed
 * (the button's `callback_data` / `custom_id`, who pressed, where) and renders the answer —
 * a notice for the presser, and what to do with the pressed message (close it, drop the pressed
 * button, remove every button, show a pressed `/reminders` or `/tasks` list as it is now). It never
 * parses a button's data itself.
 *
 * A press goes to the feature that owns its data's prefix (`Feature.buttons` in `src/feature.ts`,
 * the list in `src/features.ts`): `ap:` and `pm:` approvals (a prompt's approve / decline / always
 * allow, a `/permissions` revoke), `rm:` reminders, `tk:` scheduled tasks, `st:` settings, `mm:`
 * memory, `sp:` a live answer's Stop button (`src/stop/`). Data no feature owns (a button of an
 * older version, or forged) is answered with {@link UNKNOWN_BUTTON}.
 */
import { PRESS_AGAIN, type ButtonAnswer, type ButtonPress } from "./feature.js";
import { buttonOwner, FEATURES, type ButtonCore, type RunningFeatures } from "./features.js";
import { localize } from "./i18n.js";

export type { ButtonAnswer, ButtonPress } from "./feature.js";
export { CLOSED_APPROVAL_ID, parseApprovalButton } from "./approvals/feature.js";

/** The notice for a press whose data no feature owns: the button is not one this version handles. */
export const UNKNOWN_BUTTON = {
  "zh-TW": "這個按鈕已失效。",
  en: "This button no longer works.",
} as const;

/** The name of the feature whose button `data` is (by prefix); `unknown` when none. */
export function buttonKind(data: string): string {
  return buttonOwner(FEATURES, data)?.name ?? "unknown";
}

/**
 * Handles a press (see the module comment), in the conversation's language (`/settings`) when one
 * is set, else the adapter's. Never throws: a failure is logged and answered with "press again",
 * and the pressed message is left as it is.
 *
 * @param features - the features started in this process.
 * @param core - what the core lends every press (the decider, the conversation's language).
 */
export async function pressButton(
  features: RunningFeatures,
  core: ButtonCore,
  press: ButtonPress,
): Promise<ButtonAnswer> {
  const locale = (await core.languageOf(press).catch(() => undefined)) ?? press.locale;
  const handler = features.pressHandler(press.data);
  if (!handler) return { kind: "unknown", notice: localize(locale, UNKNOWN_BUTTON) };
  try {
    return await handler.press(press, locale, core);
  } catch (error) {
    core.log.error({ err: error, platform: press.platform, feature: handler.name }, "button press failed");
    return { kind: handler.name, notice: localize(locale, PRESS_AGAIN), failed: true };
  }
}
