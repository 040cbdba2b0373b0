/**
 * What the model reads in the `tool_result` (`is_error: true`) of a dangerous call that was not run
 * because of how its approval ended (`resumeAgent` in `loop.ts`), and the way back from such a text
 * to that verdict. The texts are instructions to the model, in English; a model answers the person
 * in their own words. The demo's script answers by rules (`src/demo/script.ts`), so it reads the
 * verdict back with {@link notRunVerdict} to answer as a model would (「好的，已取消，沒有刪除。」),
 * never with the instruction itself.
 */
import type { ApprovalVerdict } from "./contract.js";

/** The verdicts of an approval that leave its call not run. */
export type NotRunVerdict = Exclude<ApprovalVerdict, "approved">;

/** How the text of each verdict begins: distinct, so {@link notRunVerdict} tells them apart. */
const OPENINGS: Record<NotRunVerdict, string> = {
  declined: "The user declined this action, so ",
  expired: "The user did not confirm ",
  superseded: "The user sent a new message instead of confirming ",
};

/**
 * What the model reads when the pending call of `tool` was not run, by the approval's verdict.
 * @param confirmTimeoutSeconds - how long the approval waited (`CONFIRM_TIMEOUT_SECONDS`), told when it expired.
 */
export function notRunText(tool: string, verdict: NotRunVerdict, confirmTimeoutSeconds: number): string {
  switch (verdict) {
    case "declined":
      return (
        `${OPENINGS.declined}${tool} was not run. Tell the user it was not done;` +
        ` do not call it again unless the user asks for it again.`
      );
    case "expired":
      return (
        `${OPENINGS.expired}${tool} within ${confirmTimeoutSeconds} ` +
        `seconds, so the approval expired and it was not run. Tell the user it was not done and ` +
        `that they can ask again.`
      );
    case "superseded":
      return (
        `${OPENINGS.superseded}${tool}, so it was cancelled and ` +
        `not run. Do not run it unless the user asks for it again.`
      );
  }
}

/**
 * The verdict a tool result's text tells, when it is a {@link notRunText}.
 * @returns the verdict, or undefined for any other text (a tool's own result or error).
 */
export function notRunVerdict(text: string): NotRunVerdict | undefined {
  return (Object.keys(OPENINGS) as NotRunVerdict[]).find((verdict) => text.startsWith(OPENINGS[verdict]));
}
