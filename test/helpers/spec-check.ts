/**
 * A vitest setup file (vitest.config.ts `setupFiles`): fails a test during which the bot sent the
 * fake Telegram or Discord a request their published API descriptions do not allow
 * (`test/fakes/spec-violations.ts`), even when the bot caught the error the fake answered. A
 * violation during a file's `beforeAll` fails the file's first test; one during its `afterAll`,
 * the file.
 */
import { afterAll, afterEach } from "vitest";
import { describeSpecViolations, takeSpecViolations } from "../fakes/spec-violations.js";

function failOnViolations(): void {
  const violations = takeSpecViolations();
  if (violations.length === 0) return;
  throw new Error(
    `the bot sent ${violations.length} request(s) that the platform's published API does not allow ` +
      `(a test that sends one on purpose takes it with fake.takeSpecViolations()):\n${describeSpecViolations(violations)}`,
  );
}

afterEach(failOnViolations);
afterAll(failOnViolations);
