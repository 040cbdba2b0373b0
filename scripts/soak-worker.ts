/**
 * The worker of `npm run bench -- --soak`, in a process of its own so its memory is measured alone:
 * the production start-up (`startBot` with `ROLE=worker`: worker, approvals, reminders delivery,
 * traces, usage, the tools of `tools/`), configured from the environment the soak gives it (the
 * fake Messages API and fake Telegram of the tests, a test Redis). Started with `--expose-gc`.
 *
 * It talks to the soak over IPC: `{ type: "ready" }` once it takes jobs; on `{ type: "measure" }`
 * it collects garbage (see {@link settle}) and answers `{ type: "memory", usage }` (`process.memoryUsage()`, bytes);
 * on `{ type: "snapshot", file }` it writes a heap snapshot there (`v8.writeHeapSnapshot`) and
 * answers `{ type: "snapshot", file }`; on `{ type: "stop" }` it stops the bot and exits 0.
 */
import { writeHeapSnapshot } from "node:v8";
import { createAnthropicClient } from "../src/agent/client.js";
import { runAgent } from "../src/agent/loop.js";
import { startBot } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { silentLogger } from "../src/log.js";
import { loadTools } from "../src/toolbox/registry.js";

const config = loadConfig(process.env);
const { toolbox } = await loadTools({ config, log: silentLogger });
const bot = await startBot({
  config,
  log: silentLogger,
  redisUrl: config.REDIS_URL!,
  toolbox,
  role: "worker",
  agent: { runAgent, client: createAnthropicClient(config) },
});

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("start the soak worker with --expose-gc");

/**
 * Collects garbage until what it frees is freed: a collection, a pause of 100 ms (FinalizationRegistry
 * callbacks run in a task of their own after a collection, e.g. undici's, which lets go of the
 * `{ signal, abort }` pair of each finished fetch), then another collection.
 */
async function settle(): Promise<void> {
  gc!();
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc!();
}

process.on("message", (message: { type: string; file?: string }) => {
  if (message.type === "measure") {
    void settle().then(() => process.send!({ type: "memory", usage: process.memoryUsage() }));
  } else if (message.type === "snapshot") {
    void settle().then(() => process.send!({ type: "snapshot", file: writeHeapSnapshot(message.file) }));
  } else if (message.type === "stop") {
    void bot.stop().then(() => process.exit(0));
  }
});
process.send!({ type: "ready" });
