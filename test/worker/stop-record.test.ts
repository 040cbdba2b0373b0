/**
 * Where Stop finds the answer being written (issue 42; its cost, issue 37): a chat message's answer
 * writes nothing to Redis — the adapter finds it at the head of the conversation's inbox until its
 * answer is stored in the history — while a resumed approval's answer writes its `answering` record
 * and deletes it when it ends. A stop request for an answer that has not begun yet stops it as it
 * begins. Real Redis, the producer's real enqueue and the history's real append; the worker side
 * (`AnswerStops`) and the adapter side (`requestStop`) talk over Redis pub/sub as in production.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger } from "../../src/log.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { ChatQueue } from "../../src/queue/producer.js";
import type { RedisClient } from "../../src/redis.js";
import {
  AnswerStoppedError,
  AnswerStops,
  answeringKey,
  requestStop,
  stopIdOf,
  type RunningAnswer,
} from "../../src/stop/stops.js";
import { useRedis } from "../helpers/use-redis.js";
import { waitFor } from "./harness.js";

let redis: RedisClient;
useRedis((connection) => (redis = connection));

let stops: AnswerStops;
let queue: ChatQueue;
let history: HistoryStore;
beforeAll(async () => {
  stops = new AnswerStops(redis, silentLogger);
  await stops.ready();
  queue = new ChatQueue({ redis });
  history = new HistoryStore(redis, { maxMessages: 40, ttlSeconds: 600 });
});
afterAll(async () => {
  await stops.close();
  await queue.close();
});

function message(chatId: string, messageId: string, userId = "ann"): IncomingMessage {
  return {
    platform: "telegram",
    chatId,
    chatKind: "group",
    userId,
    userName: "Ann",
    text: "今天天氣如何？",
    messageId,
    sentAt: Date.now(),
    reply: {},
  };
}

/** Counts the commands `redis` runs while `work` runs (INFO commandstats, the INFO calls left out). */
async function commandsDuring(work: () => Promise<unknown>): Promise<number> {
  const calls = async () =>
    [...(await redis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)]
      .filter((m) => m[1] !== "info")
      .reduce((n, m) => n + Number(m[2]), 0);
  const before = await calls();
  await work();
  return (await calls()) - before;
}

describe("Stop's record", () => {
  it("a chat message's answer writes nothing; the adapter finds it at the inbox's head until its answer is stored", async () => {
    const m = message("-4201", "11");
    await queue.enqueue(m);
    let running: RunningAnswer | undefined;
    const commands = await commandsDuring(async () => {
      running = await stops.begin(m, { userId: m.userId, messageId: m.messageId }, { inbox: true });
    });
    expect(commands).toBe(0);
    expect(running!.id).toBe(stopIdOf(m, "11"));
    expect(running!.id).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(await redis.exists(answeringKey(m))).toBe(0);

    // Someone who did not ask: refused. A button of another answer: finished. The asker: stopping.
    expect(await requestStop(redis, { ...m, userId: "bob" }, silentLogger)).toBe("not_allowed");
    expect(await requestStop(redis, { ...m, userId: "ann", id: stopIdOf(m, "10") }, silentLogger)).toBe("finished");
    expect(running!.signal.aborted).toBe(false);
    expect(await requestStop(redis, { ...m, userId: "ann", id: running!.id }, silentLogger)).toBe("stopping");
    await waitFor(() => running!.signal.aborted, 5000, "the answer's signal aborted");
    expect(running!.signal.reason).toBeInstanceOf(AnswerStoppedError);
    expect((running!.signal.reason as AnswerStoppedError).by).toBe("ann");

    // Its answer is stored (before delivery, as the pipeline does): the head is no longer being written.
    await running!.end();
    await history.append(
      m,
      [
        { role: "user", content: "今天天氣如何？" },
        { role: "assistant", content: "晴。" },
      ],
      {
        messageId: "11",
        text: "晴。",
      },
    );
    expect(await requestStop(redis, { ...m, userId: "ann", id: running!.id }, silentLogger)).toBe("finished");
    expect(await requestStop(redis, { ...m, userId: "ann" }, silentLogger)).toBe("nothing");
  });

  it("a message whose id only starts like a stored one's is still being written", async () => {
    const m = message("-4202", "2");
    await history.append(
      m,
      [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
      ],
      {
        messageId: "21",
        text: "b",
      },
    );
    await queue.enqueue(m);
    const early = stops.early;
    expect(await requestStop(redis, { ...m, userId: "ann", id: stopIdOf(m, "2") }, silentLogger)).toBe("stopping");
    await waitFor(() => stops.early > early, 5000, "the request kept by the worker");
  });

  it("a stop sent before the answer began stops it as it begins", async () => {
    const m = message("-4203", "31");
    await queue.enqueue(m);
    const early = stops.early;
    expect(await requestStop(redis, { ...m, userId: "ann" }, silentLogger)).toBe("stopping");
    // The request reaches the worker's subscriber before any answer is registered: kept, then applied.
    await waitFor(() => stops.early > early, 5000, "the request kept by the worker");
    const running = await stops.begin(m, { userId: "ann", messageId: "31" }, { inbox: true });
    expect(running.signal.aborted).toBe(true);
    await running.end();
  });

  it("a resumed approval's answer writes its record and deletes it at the end; /stop finds it first", async () => {
    const m = message("-4204", "41");
    await queue.enqueue(message("-4204", "42", "carol")); // a later message of someone else heads the inbox
    const running = await stops.begin(m, { userId: "ann", messageId: "41" }, { ttlSeconds: 60 });
    expect(running.id).not.toBe(stopIdOf(m, "41"));
    expect(JSON.parse((await redis.get(answeringKey(m)))!)).toEqual({ id: running.id, userId: "ann", messageId: "41" });
    expect(await redis.ttl(answeringKey(m))).toBeGreaterThan(50);
    expect(await requestStop(redis, { ...m, userId: "ann" }, silentLogger)).toBe("stopping");
    await waitFor(() => running.signal.aborted, 5000, "the resumed answer stopped");
    await running.end();
    expect(await redis.exists(answeringKey(m))).toBe(0);
    // Then /stop finds the head (Carol's message): Ann may not stop it.
    expect(await requestStop(redis, { ...m, userId: "ann" }, silentLogger)).toBe("not_allowed");
  });
});
