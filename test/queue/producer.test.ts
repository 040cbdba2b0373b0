import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisClient } from "../../src/redis.js";
import { ConsoleOutbound } from "../../adapters/console/outbound.js";
import { EnqueueError } from "../../src/adapter.js";
import { runAgent } from "../../src/agent/loop.js";
import { historyTtlSeconds } from "../../src/config.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger } from "../../src/log.js";
import { conversationKeys, dedupeKey } from "../../src/queue/keys.js";
import { ChatQueue } from "../../src/queue/producer.js";
import { connectRedis } from "../../src/redis.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { startWorker, type ChatWorker } from "../../src/worker/worker.js";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { CapturingStream, message, todoModel, waitFor } from "../worker/harness.js";
import { FEATURES } from "../../src/features.js";

// BullMQ on one redis-server and the inbox on another, so BullMQ's Queue.add can fail for real
// (its server is down) while the inbox script still runs.
describe("ChatQueue when adding the chat's job fails", () => {
  let bullServer: TestRedis;
  let storeServer: TestRedis;
  let fake: FakeAnthropic;
  let bull: RedisClient;
  let store: RedisClient;
  let workerBull: RedisClient;
  let workerStore: RedisClient;
  let queue: ChatQueue;
  let worker: ChatWorker;
  const output = new CapturingStream();

  beforeAll(async () => {
    [bullServer, storeServer, fake] = await Promise.all([startRedis(), startRedis(), startFakeAnthropic()]);
    const config = testConfig({ WORKER_CONCURRENCY: "2" });
    bull = connectRedis(bullServer.url, { maxRetriesPerRequest: 1 });
    store = connectRedis(storeServer.url, { maxRetriesPerRequest: 1 });
    workerBull = connectRedis(bullServer.url, { maxRetriesPerRequest: null });
    workerStore = connectRedis(storeServer.url, { maxRetriesPerRequest: null });
    queue = new ChatQueue({ redis: bull, store });
    worker = startWorker(
      {
        config,
        log: silentLogger,
        redis: workerBull,
        store: workerStore,
        history: new HistoryStore(workerStore, {
          maxMessages: config.HISTORY_MAX_MESSAGES,
          ttlSeconds: historyTtlSeconds(config),
        }),
        toolbox: new ToolBox([]),
        client: new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 }),
        runAgent,
        outbounds: { console: new ConsoleOutbound({ output, locale: config.BOT_LOCALE }) },
      },
      // No approvals: a dangerous call is told that confirmation is unavailable.
      FEATURES.filter((f) => f.name !== "approvals"),
    );
    await worker.waitUntilReady();
  });
  afterAll(async () => {
    await worker.close(5000);
    await queue.close();
    for (const c of [bull, store, workerBull, workerStore]) c.disconnect();
    await fake.close();
    await Promise.all([bullServer.stop(), storeServer.stop()]);
  });

  it("undoes a lone message (try again, retry accepted); keeps one with messages behind it and adds its job later, in order", async () => {
    fake.enqueue(...Array.from({ length: 3 }, () => todoModel));
    const outage = bullServer.restart(1500);
    await new Promise((r) => setTimeout(r, 100));

    // alone in its inbox: removed again, with its dedupe mark
    const lone = message("p1", "1", "lonely");
    await expect(queue.enqueue(lone)).rejects.toBeInstanceOf(EnqueueError);
    expect(await store.exists(conversationKeys(lone).inbox, dedupeKey(lone, "1"))).toBe(0);

    // a second message enters the inbox while the first one's add is still failing: both stay
    const first = queue.enqueue(message("p2", "1", "first"));
    await waitFor(
      async () => (await store.llen(conversationKeys({ platform: "console", chatId: "p2" }).inbox)) === 1,
      2000,
      "the first message in the inbox",
    );
    expect(await queue.enqueue(message("p2", "2", "second"))).toBe("queued");
    expect(await first).toBe("scheduled");

    await outage;
    // the background add reaches BullMQ once it is back; the chat is answered in order
    await waitFor(() => output.answers().length >= 2, 15_000, "both answers");
    expect(output.answers()).toEqual(["echo: first", "echo: second"]);

    // the lone message, sent again, is accepted and answered
    expect(await queue.enqueue(lone)).toBe("scheduled");
    await waitFor(() => output.answers().length === 3, 10_000, "the retried message");
    expect(output.answers()[2]).toBe("echo: lonely");
    expect(fake.rejections).toEqual([]);
  });
});
