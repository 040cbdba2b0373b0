/**
 * The waits of a failing model call's repeats in tests (`AgentDeps.modelRetry`): a tenth of the
 * bot's (`MODEL_RETRY_TIMING`, 2 s doubling up to 10 s), and the busy notice after 2 s instead of
 * 10 s, so an overload or a deadline is not waited out in seconds per repeat. The loop repeats,
 * notices and gives up as it does with the bot's waits, in less time. The end-to-end stack and the
 * worker harness give them to every run.
 */
import { MODEL_SILENT_LIMIT_MS, type ModelRetryTiming } from "../../src/agent/contract.js";

export const TEST_MODEL_RETRY: ModelRetryTiming = {
  firstWaitMs: 200,
  longestWaitMs: 1000,
  busyNoticeMs: 2000,
  silentLimitMs: MODEL_SILENT_LIMIT_MS,
};
