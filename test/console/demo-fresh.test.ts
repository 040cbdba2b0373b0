/**
 * A fresh demo at every start (`src/demo/fresh.ts`): what an earlier demo left is deleted — its
 * conversation's keys, its person's todos, memory and reminders, its queues — while the real chat's
 * conversation, todos and queues on the same Redis, and the demo's own chat lease, stay.
 */
import { expect, it } from "vitest";
import { chatLeaseKey } from "../../adapters/console/index.js";
import { ApprovalStore } from "../../src/approvals/store.js";
import { clearDemo } from "../../src/demo/fresh.js";
import { memoryKey } from "../../src/memory/store.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

it("deletes the demo's conversation, person and queue keys; keeps the real chat's and the demo's lease", async () => {
  const demo = { platform: "console" as const, chatId: "demo" };
  const local = { platform: "console" as const, chatId: "local" };
  const demoKeys = [
    conversationKeys(demo).history,
    conversationKeys(demo).settings,
    "todo:{console:demo}:items",
    "todo:{console:demo}:seq",
    "reminder:{console:demo}:items",
    memoryKey({ kind: "personal", platform: "console", userId: "demo" }),
    "console-demo:reminders:delayed",
    "console-demo:chats:meta",
  ];
  const kept = [
    chatLeaseKey(demo),
    conversationKeys(local).history,
    "todo:{console:alice}:items",
    memoryKey({ kind: "personal", platform: "console", userId: "alice" }),
    "console:chats:meta",
    "console:reminders:delayed",
  ];
  for (const key of [...demoKeys, ...kept]) await redis.set(key, "x");
  const approvals = new ApprovalStore(redis, { timeoutMs: 60_000 });
  const deleted = await clearDemo(redis, approvals, {
    chatId: "demo",
    userId: "demo",
    prefix: "console-demo",
    keep: [chatLeaseKey(demo)],
  });
  expect(deleted).toBe(demoKeys.length);
  for (const key of demoKeys) expect(await redis.exists(key), key).toBe(0);
  for (const key of kept) expect(await redis.exists(key), key).toBe(1);
});
