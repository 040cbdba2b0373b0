/**
 * Button presses, routed in one place for every adapter: an adapter hands over what was pressed
 * (the button's `callback_data` / `custom_id`, who pressed, where) and renders the answer —
 * a notice for the presser, and what to do with the pressed message (close it, drop the pressed
 * button, remove every button). It never parses a button's data itself.
 *
 * A press goes to the feature that owns its data's prefix (`Feature.buttons` in `src/feature.ts`,
 * the list in `src/features.ts`): `ap:` and `pm:` approvals (a prompt's approve / decline / always
 * allow, a `/permissions` revoke), `rm:` reminders, `tk:` scheduled tasks, `st:` settings, `mm:`
 * memory, `sp:` a live answer's Stop button (`src/stop/`). Data no feature owns is answered as an
 * expired button.
 */
import { BOT_FEATURES, type FeatureSet } from "./features.js";
import { PRESS_AGAIN, type ButtonAnswer, type ButtonPress, type PressParts } from "./feature.js";
import { decisionNotice } from "./approvals/decision.js";
import { localize } from "./i18n.js";

export type { ButtonAnswer, ButtonPress } from "./feature.js";
export { CLOSED_APPROVAL_ID, parseApprovalButton } from "./approvals/feature.js";

/** The name of the feature whose button `data` is; `unknown` when none. */
export function buttonKind(data: string, features: FeatureSet = BOT_FEATURES): string {
  return features.buttonOwner(data)?.name ?? "unknown";
}

/**
 * Handles a press (see the module comment). Never throws: a failure is logged and answered with
 * "try again", and the pressed message is left as it is.
 *
 * @param parts - the adapter's context: its approval decider, reminder actions and command runner.
 * @param features - the features to route to; default the bot's.
 */
export async function pressButton(
  parts: PressParts,
  press: ButtonPress,
  features: FeatureSet = BOT_FEATURES,
): Promise<ButtonAnswer> {
  // The conversation's language (`/settings`), when one is set, else the adapter's: every notice speaks it.
  const locale = (await parts.commands.languageOf(press)) ?? press.locale;
  const owner = features.buttonOwner(press.data);
  if (!owner?.buttons) return { kind: "unknown", notice: decisionNotice({ status: "not_found" }, locale) };
  try {
    return await owner.buttons.press(press, locale, parts);
  } catch (error) {
    parts.log.error({ err: error, platform: press.platform, feature: owner.name }, "button press failed");
    return { kind: owner.name, notice: localize(locale, PRESS_AGAIN), failed: true };
  }
}
