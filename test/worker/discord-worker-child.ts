/**
 * A worker in a process of its own that answers on Discord, for tests that kill it (SIGKILL)
 * mid-delivery: the real worker, agent loop and SDK client on `REDIS_URL`, the fake model at
 * `MODEL_URL`, and the real Discord outbound (REST) against the fake Discord at
 * `DISCORD_API_URL` with `DISCORD_TOKEN`; `STREAMING` and `STREAM_EDIT_INTERVAL_MS` when set;
 * with `CRASH_TOOL=1` the `crash_worker` tool that kills this process; the memory tool with `WITH_MEMORY=1`.
 * Prints `ready` once it takes jobs.
 */
import { startDiscordWorker } from "./children.js";

const { worker } = startDiscordWorker({
  redisUrl: process.env.REDIS_URL!,
  modelUrl: process.env.MODEL_URL!,
  discord: { token: process.env.DISCORD_TOKEN!, apiUrl: process.env.DISCORD_API_URL! },
  // streamed answers when the test asks for them (testConfig's default is off)
  env: process.env.STREAMING
    ? { STREAMING: process.env.STREAMING, STREAM_EDIT_INTERVAL_MS: process.env.STREAM_EDIT_INTERVAL_MS }
    : {},
  crashTool: process.env.CRASH_TOOL === "1",
  // the memory tool when the test asks for it (WITH_MEMORY=1)
  memory: process.env.WITH_MEMORY === "1",
});
await worker.waitUntilReady();
process.stdout.write("ready\n");
