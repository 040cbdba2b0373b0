/**
 * Requests the fake Telegram and Discord refused because the platform's published API description
 * does not allow them (`test/fixtures/specs/`: Telegram's Bot API as scraped from
 * https://core.telegram.org/bots/api, Discord's OpenAPI description from
 * https://github.com/discord/discord-api-spec). The fakes answer such a request with the error the
 * platform gives and record it here; `test/helpers/spec-check.ts` (a vitest setup file) fails the
 * test during which it happened, even when the bot swallowed the error.
 *
 * A test that sends a request the spec forbids on purpose takes it with
 * {@link takeSpecViolations} (or the fake's own `takeSpecViolations()`) and asserts on it.
 */

/** One refused request. */
export interface SpecViolation {
  platform: "telegram" | "discord" | "line";
  /** What was called: a Bot API method (`sendMessage`) or a Discord route (`POST /channels/{channel_id}/messages`). */
  request: string;
  /** What is wrong, one line each, with the field's path (`reply_markup.inline_keyboard[0][0].callback_data: …`). */
  problems: string[];
  /** The request's parameters or JSON body as received. */
  payload: unknown;
  /** ms since the Unix epoch. */
  at: number;
}

const recorded: SpecViolation[] = [];

/** Records a refused request (called by the fakes). */
export function recordSpecViolation(violation: SpecViolation): void {
  recorded.push(violation);
}

/**
 * Returns the violations recorded so far and forgets them.
 * @param platform - only this platform's (the others stay recorded).
 */
export function takeSpecViolations(platform?: SpecViolation["platform"]): SpecViolation[] {
  const taken = recorded.filter((v) => platform === undefined || v.platform === platform);
  for (const v of taken) recorded.splice(recorded.indexOf(v), 1);
  return taken;
}

/** One readable paragraph per violation, for a failing test's message. */
export function describeSpecViolations(violations: SpecViolation[]): string {
  return violations
    .map(
      (v) =>
        `${v.platform} ${v.request}:\n${v.problems.map((p) => `  - ${p}`).join("\n")}\n  payload: ${truncate(JSON.stringify(v.payload), 600)}`,
    )
    .join("\n");
}

function truncate(text: string | undefined, max: number): string {
  if (text === undefined) return "(none)";
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
