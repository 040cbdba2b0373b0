/**
 * Issue 38 item 2: a compaction whose worker is killed (SIGKILL) during its summary's model call
 * is redone by another worker within 30 s, once. The compaction lease is short (`LEASE_MS`) and
 * renewed while the compaction runs; the job taken over finds the lease still held by its own
 * earlier run and is retried with its backoff instead of being ended as done. Real BullMQ worker
 * in a child process and in this one, real Redis, the strict fake Messages API.
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, expect, it } from "vitest";
import { LEASE_MS } from "../../src/compaction/compactor.js";
import { CompactionQueue, startCompactionWorker, type CompactionWorker } from "../../src/compaction/queue.js";
import { CompactionStore } from "../../src/compaction/store.js";
import { createAnthropicClient } from "../../src/agent/client.js";
import { silentLogger } from "../../src/log.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { LOCK_DURATION_MS, STALLED_INTERVAL_MS } from "../../src/worker/worker.js";
import { hang, startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { spawnChildWorker } from "./children.js";
import { waitFor } from "./harness.js";

let server: TestRedis | undefined;
let redis: RedisClient | undefined;
let model: FakeAnthropic | undefined;
let child: ChildProcess | undefined;
let second: CompactionWorker | undefined;
let queue: CompactionQueue | undefined;
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await second?.close(true);
  await queue?.close();
  await redis?.quit().catch(() => {});
  await model?.close();
  await server?.stop();
});

const user = (t: string) => `U${JSON.stringify({ role: "user", content: t })}\n`;
const said = (t: string) => `${JSON.stringify({ role: "assistant", content: [{ type: "text", text: t }] })}\n`;

it("a compaction killed during its model call is redone by another worker within 30 s, once", async () => {
  server = await startRedis();
  redis = connectRedis(server.url, { maxRetriesPerRequest: null });
  model = await startFakeAnthropic();
  const conversation = { platform: "discord" as const, chatId: "38020001" };
  const history = Array.from({ length: 12 }, (_, i) => user(`question ${i}`) + said(`answer ${i}`)).join("");
  await redis.set(conversationKeys(conversation).history, history);
  model.enqueue(hang(), text("- 12 questions were asked and answered"));

  child = await spawnChildWorker("test/worker/compaction-child.ts", { REDIS_URL: server.url, MODEL_URL: model.url });
  queue = new CompactionQueue({ redis });
  await queue.request({
    conversation,
    owner: { platform: "discord", userId: "1", chatId: conversation.chatId },
    reason: "messages",
    keepTurns: 2,
  });
  await waitFor(() => model!.hanging() === 1, 30_000, "the child's summary call");
  // The worker that takes the job over is up before the kill, as another replica would be.
  const config = testConfig({ ANTHROPIC_API_KEY: "test-key", ANTHROPIC_BASE_URL: model.url });
  second = startCompactionWorker(
    {
      config,
      log: silentLogger,
      client: createAnthropicClient(config, { maxRetries: 0 }),
      store: new CompactionStore(redis, 3600),
    },
    {
      redis,
      concurrency: 1,
      lockDurationMs: LOCK_DURATION_MS,
      stalledIntervalMs: STALLED_INTERVAL_MS,
      log: silentLogger,
    },
  );
  await second.worker.waitUntilReady();
  child.kill("SIGKILL");
  const killedAt = Date.now();
  await waitFor(
    async () => (await redis!.get(conversationKeys(conversation).history))?.startsWith("S") === true,
    30_000,
    "the compaction redone",
  );
  const redoneMs = Date.now() - killedAt;
  console.log(`killed compaction redone ${redoneMs} ms after the kill (lease ${LEASE_MS} ms)`);
  expect(redoneMs).toBeLessThan(30_000);
  // asked twice in all: the killed call and the one that wrote the summary
  expect(model.requests).toHaveLength(2);
  const stored = (await redis.get(conversationKeys(conversation).history))!;
  expect(stored).toContain("12 questions were asked and answered");
  expect(stored).toContain("question 11");
  expect(stored).not.toContain('"question 0"');
}, 90_000);
