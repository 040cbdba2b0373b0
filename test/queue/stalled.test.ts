/**
 * Whether a conversation has a live chat job (`otherLiveChatJob`), on real BullMQ and Redis: what
 * an `unblock` job asks before it takes up an inbox, so that a job that is merely waiting, running,
 * delayed or just failed (its replacement on the way) keeps its inbox.
 */
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { CHATS_QUEUE, chatJobId } from "../../src/queue/keys.js";
import { FAILED_RECENTLY_MS, otherLiveChatJob } from "../../src/queue/stalled.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { useRedis } from "../helpers/use-redis.js";
import { message, waitFor } from "../worker/harness.js";

describe("otherLiveChatJob", () => {
  let redis: RedisClient;
  let url: string;
  let queue: Queue<IncomingMessage>;
  useRedis((connection, server) => {
    redis = connection;
    url = server.url;
    queue = new Queue<IncomingMessage>(CHATS_QUEUE, { connection });
  });
  afterAll(async () => {
    await queue.close();
  });
  beforeEach(async () => {
    await redis.flushall();
  });

  /** A connection for a BullMQ Worker, disconnected after the test. */
  const connections: RedisClient[] = [];
  const workerConnection = () => {
    const connection = connectRedis(url, { maxRetriesPerRequest: null });
    connections.push(connection);
    return connection;
  };
  afterEach(() => {
    for (const c of connections.splice(0)) c.disconnect();
  });

  const live = (chat: { chatId: string; topicId?: string }, except = "", now = Date.now()) =>
    otherLiveChatJob(redis, queue, { platform: "telegram", ...chat }, except, now);
  const add = (m: IncomingMessage, id: string, delay = 0) => queue.add("chat", m, { jobId: id, delay });
  const telegram = (chatId: string, id: string, topicId?: string): IncomingMessage => ({
    ...message(chatId, id, "hi"),
    platform: "telegram",
    ...(topicId ? { topicId } : {}),
  });

  it("finds a waiting or delayed job of the conversation, never the one asking, and none after it completed", async () => {
    expect(await live({ chatId: "-100" })).toBeUndefined();
    const waiting = chatJobId({ platform: "telegram", chatId: "-100" }, "1");
    await add(telegram("-100", "1"), waiting);
    expect(await live({ chatId: "-100" })).toBe(waiting);
    expect(await live({ chatId: "-100" }, waiting)).toBeUndefined();
    const delayed = `${chatJobId({ platform: "telegram", chatId: "-100" }, "1")}-r1`;
    await add(telegram("-100", "1"), delayed, 60_000);
    expect(await live({ chatId: "-100" }, waiting)).toBe(delayed);
    const worker = new Worker(CHATS_QUEUE, async () => "done", {
      connection: connectRedis(url, { maxRetriesPerRequest: null }),
    });
    await waitFor(async () => (await queue.getJobCounts("completed")).completed === 1, 10_000, "the job to complete");
    await worker.close();
    expect(await live({ chatId: "-100" }, delayed)).toBeUndefined();
  });

  it("counts only the conversation's own jobs: not another chat whose id continues this one's, nor another topic", async () => {
    await add(telegram("-100-5", "1"), chatJobId({ platform: "telegram", chatId: "-100-5" }, "1"));
    await add(telegram("-200", "1", "11"), chatJobId({ platform: "telegram", chatId: "-200" }, "1"));
    expect(await live({ chatId: "-100" })).toBeUndefined();
    expect(await live({ chatId: "-200", topicId: "12" })).toBeUndefined();
    expect(await live({ chatId: "-200" })).toBeUndefined();
    expect(await live({ chatId: "-200", topicId: "11" })).toBe(
      chatJobId({ platform: "telegram", chatId: "-200" }, "1"),
    );
  });

  it("counts a job that failed less than a minute ago (its replacement may be on its way), not one that failed before", async () => {
    const id = chatJobId({ platform: "telegram", chatId: "-300" }, "1");
    await queue.add("chat", telegram("-300", "1"), { jobId: id, attempts: 1 });
    const worker = new Worker(
      CHATS_QUEUE,
      async () => {
        throw new UnrecoverableError("broken");
      },
      { connection: workerConnection() },
    );
    await waitFor(async () => (await queue.getJobState(id)) === "failed", 10_000, "the job to fail");
    await worker.close();
    const failedAt = (await queue.getJob(id))!.finishedOn!;
    expect(await live({ chatId: "-300" }, "", failedAt + FAILED_RECENTLY_MS - 1000)).toBe(id);
    expect(await live({ chatId: "-300" }, "", failedAt + FAILED_RECENTLY_MS + 1000)).toBeUndefined();
  });
});
