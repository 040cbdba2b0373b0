/**
 * An approval asked for in one `npm run chat` is still answerable in the next: the chat shows the
 * pending prompt again when it starts, and `y` then runs the tool (once).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { showPendingApproval } from "../../adapters/console/index.js";
import { ApprovalStore } from "../../src/approvals/store.js";
import { connectRedis } from "../../src/redis.js";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { todoModel, waitFor } from "../worker/harness.js";
import { startConsoleBot, type ConsoleSession } from "./harness.js";

let server: TestRedis;
let fake: FakeAnthropic;
beforeAll(async () => {
  server = await startRedis();
  fake = await startFakeAnthropic({ fallback: todoModel });
});
afterAll(async () => {
  await fake.close();
  await server.stop();
});

const config = testConfig({ ROLE: "all", BOT_LOCALE: "en", CONFIRM_TIMEOUT_SECONDS: "300" });
const requester = { platform: "console" as const, chatId: "local", userId: "me" };

/** One `npm run chat` session: the console adapter on its own streams, through the real bot. */
function session(): Promise<ConsoleSession> {
  return startConsoleBot({ redisUrl: server.url, config, fakeUrl: fake.url });
}

it("shows the pending approval again after a restart, and y then runs the tool", async () => {
  const first = await session();
  first.type("add todo tea");
  await waitFor(() => first.output.answers().includes("ok: added #1: tea"), 15_000, "the todo");
  first.type("delete todo 1");
  await waitFor(() => first.adapter.outbound.openPrompt !== undefined, 15_000, "the approval prompt");
  const approvalId = first.adapter.outbound.openPrompt!.approvalId;
  await first.bot.stop(); // the chat exits with the approval still open

  const second = await session();
  const redis = connectRedis(server.url);
  try {
    second.type("y"); // before the prompt is shown again, y has nothing to answer (the old behaviour)
    await waitFor(() => second.output.answers().length === 1, 10_000, "the nothing-waiting answer");
    expect(second.output.answers()[0]).toBe("Nothing is waiting for confirmation.");

    const approvals = new ApprovalStore(redis, { timeoutMs: config.CONFIRM_TIMEOUT_SECONDS * 1000 });
    expect(await showPendingApproval({ approvals, outbound: second.adapter.outbound, requester })).toBe(approvalId);
    expect(second.output.answers()[1]).toMatch(
      /^⚠️ Confirmation needed: .*\n {5}Go ahead\? Type y \(yes\), n \(no\) or a \(always allow: do not ask again for this tool here\) within \d+ s\.$/,
    );
    expect(second.adapter.outbound.openPrompt?.approvalId).toBe(approvalId);

    second.type("y");
    await waitFor(
      () => second.output.answers().some((a) => a.includes("deleted #1: tea")),
      15_000,
      "the tool's result",
    );
    expect(await redis.lrange("test-todos:console:me", 0, -1)).toEqual([]);
    // Decided: nothing is shown on the next start.
    expect(await showPendingApproval({ approvals, outbound: second.adapter.outbound, requester })).toBeUndefined();
  } finally {
    redis.disconnect();
    await second.bot.stop();
  }
}, 60_000);
