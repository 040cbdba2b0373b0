/**
 * Issue 38 item 3: a Redis that loses its data while the bot runs (restarted without persistence)
 * is detected. The deployment marker written at start is gone when the connection is ready again:
 * one error names the cause, `/metrics` counts it, and a person pressing an approval asked before
 * the loss is told the bot lost its state, not that the request expired; the chats waiting for an
 * answer are told to send again (`src/waiting-chats.ts`). Real redis-server
 * (restarted without persistence), real ioredis connection, the real approval store.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { decisionNotice } from "../../src/approvals/decider.js";
import { ApprovalStore, type NewApproval } from "../../src/approvals/store.js";
import { renderMetrics } from "../../src/metrics.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { conversationKeys } from "../../src/queue/keys.js";
import { dataLostAt, readMarker, watchDataLoss } from "../../src/redis-marker.js";
import { LOST_STATE_TEXT, WaitingChats } from "../../src/waiting-chats.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";

let server: TestRedis;
let redis: RedisClient;
beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

const lostCount = async () =>
  Number(/^bot_redis_data_lost_total (\d+)/m.exec((await renderMetrics()).body)?.[1] ?? "0");

const approval: NewApproval = {
  message: {
    platform: "telegram",
    chatId: "-100300",
    chatKind: "group",
    userId: "u1",
    userName: "Alice",
    text: "把買牛奶刪掉",
    messageId: "m1",
    sentAt: 1_700_000_000_000,
    reply: {},
  },
  run: {
    messages: [{ role: "user", content: "把買牛奶刪掉" }],
    history: [],
    results: [],
    pending: [{ toolUseId: "toolu_01", name: "delete_todo", input: { todo_id: 3 } }],
    turns: 1,
    callCounts: {},
  },
  call: { toolUseId: "toolu_01", name: "delete_todo", input: { todo_id: 3 } },
  action: "刪除待辦 #3「買牛奶」",
  locale: "zh-TW",
};

it("Redis restarted empty: one error naming the cause, counted in /metrics, and an approval from before says the bot lost its state", async () => {
  const { log, lines } = captureLogger("info");
  const other = captureLogger("info");
  const second = connectRedis(server.url);
  // Two processes of one deployment: both see the same marker.
  const watch = watchDataLoss(redis, log);
  const watch2 = watchDataLoss(second, other.log);
  await Promise.all([watch.started, watch2.started]);
  const marker = await readMarker(redis);
  expect(marker?.lostAt).toBeUndefined();

  const store = new ApprovalStore(redis, { timeoutMs: 300_000, onDecision: () => {} });
  const before = await store.create(approval);
  const unknown = "A".repeat(before.length);
  expect(
    (await store.decide({ approvalId: unknown, platform: "telegram", deciderId: "u1", approve: true })).status,
  ).toBe("not_found");
  const counted = await lostCount();

  await server.restart(200); // no persistence: every key is gone
  await waitFor(async () => (await dataLostAt(redis).catch(() => undefined)) !== undefined, 10_000, "the loss seen");
  await waitFor(() => lines.length > 0 && other.lines.length > 0, 10_000, "both processes' checks");
  await Promise.all([watch.checked(), watch2.checked()]);

  const errors = [...lines, ...other.lines]
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => l.level === 50);
  // each process logs the loss once, naming the cause
  expect(errors).toHaveLength(2);
  expect(errors[0]!.msg).toContain("Redis lost its data");
  expect(errors[0]!.msg).toContain("without persistence");
  expect(await lostCount()).toBe(counted + 2);
  // both processes agree on the new marker
  const after = await readMarker(redis);
  expect(after?.id).not.toBe(marker?.id);
  expect(after?.lostAt).toBeGreaterThan(0);

  // a press of the approval asked before the loss: the bot lost its state, not "expired"
  const pressed = await store.decide({ approvalId: before, platform: "telegram", deciderId: "u1", approve: true });
  expect(pressed).toEqual({ status: "lost" });
  expect(decisionNotice(pressed, "zh-TW")).toBe(
    "抱歉，機器人的資料遺失了（資料庫重新啟動後是空的），這個確認請求已無法處理。請再說一次你的需求。",
  );
  // a new approval works as before
  const fresh = await store.create(approval);
  expect((await store.decide({ approvalId: fresh, platform: "telegram", deciderId: "u1", approve: true })).status).toBe(
    "accepted",
  );
  // a reconnection that finds the marker kept (a restart with persistence) logs nothing more
  const logged = lines.length + other.lines.length;
  const ready = new Promise((resolve) => second.once("ready", resolve));
  second.disconnect(true); // reconnects at once
  await ready;
  await watch2.checked();
  expect(lines.length + other.lines.length).toBe(logged);
  expect(await readMarker(redis)).toEqual(after);
  watch.stop();
  watch2.stop();
  second.disconnect();
}, 30_000);

it("Redis restarted empty with chats waiting: the process that queued them tells each once, in its language; answered chats are forgotten", async () => {
  const { log } = captureLogger("info");
  const conn = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  const watch = watchDataLoss(conn, log, { onLoss: () => void waiting.announce() });
  await watch.started;
  const sent: { chatId: string; text: string }[] = [];
  const languages: Record<string, "zh-TW" | "en"> = { "c-en": "en" };
  const waiting = new WaitingChats({
    redis: conn,
    watch,
    send: async (message, text) => void sent.push({ chatId: message.chatId, text }),
    languageOf: async (conversation) => languages[conversation.chatId],
    defaultLocale: "zh-TW",
    log,
    sweepMs: 60_000, // swept by the test
  });
  const message = (chatId: string) => ({ ...approval.message, chatId, messageId: `m-${chatId}` });
  for (const chatId of ["c-zh", "c-en", "c-done"]) {
    await conn.rpush(conversationKeys(message(chatId)).inbox, "{}");
    waiting.add(message(chatId));
  }
  // c-done is answered: its inbox goes, and a sweep forgets it.
  await conn.del(conversationKeys(message("c-done")).inbox);
  await waiting.sweep();
  expect(waiting.size).toBe(2);

  await server.restart(200);
  await waitFor(() => sent.length === 2, 10_000, "the waiting chats told");
  await watch.checked();
  expect(sent.sort((a, b) => a.chatId.localeCompare(b.chatId))).toEqual([
    { chatId: "c-en", text: LOST_STATE_TEXT.en },
    { chatId: "c-zh", text: LOST_STATE_TEXT["zh-TW"] },
  ]);
  expect(waiting.size).toBe(0);
  // Once: later sweeps and reconnections tell nobody again.
  await waiting.sweep();
  const ready = new Promise((resolve) => conn.once("ready", resolve));
  conn.disconnect(true);
  await ready;
  await watch.checked();
  expect(sent).toHaveLength(2);
  waiting.stop();
  watch.stop();
  conn.disconnect();
}, 30_000);

it("FLUSHALL: a chat queued before is told, one queued after (answered) is not; the other connection's clean reconnect reports nothing", async () => {
  const { log, lines } = captureLogger("info");
  const reports = new Map<string, number>();
  const conn = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  const other = connectRedis(server.url); // the same process's worker connection
  const watch = watchDataLoss(conn, log, { onLoss: () => void waiting.announce(), reports });
  const workerWatch = watchDataLoss(other, log, { reports });
  await Promise.all([watch.started, workerWatch.started]);
  const sent: string[] = [];
  const waiting = new WaitingChats({
    redis: conn,
    watch,
    send: async (message) => void sent.push(message.chatId),
    languageOf: async () => undefined,
    defaultLocale: "zh-TW",
    log,
    sweepMs: 60_000, // swept by the test
  });
  const message = (chatId: string) => ({ ...approval.message, chatId, messageId: `m-${chatId}` });
  await conn.rpush(conversationKeys(message("c-before")).inbox, "{}");
  waiting.add(message("c-before"));
  await waiting.sweep();
  const counted = await lostCount();

  await conn.flushall();
  // a message right after the flush: queued on the empty Redis, then answered (its inbox goes)
  await conn.rpush(conversationKeys(message("c-after")).inbox, "{}");
  waiting.add(message("c-after"));
  await conn.del(conversationKeys(message("c-after")).inbox);
  await waiting.sweep(); // the sweep sees the marker gone
  await waitFor(() => sent.length > 0, 10_000, "the chat from before told");
  await watch.checked();
  await waiting.sweep();
  expect(sent).toEqual(["c-before"]);
  expect(waiting.size).toBe(0);
  expect(await lostCount()).toBe(counted + 1);
  const errors = () => lines.map((l) => JSON.parse(l) as { level: number }).filter((l) => l.level === 50).length;
  expect(errors()).toBe(1);

  // the worker connection reconnects later to the same (kept) data: the loss is not reported again
  const ready = new Promise((resolve) => other.once("ready", resolve));
  other.disconnect(true);
  await ready;
  await workerWatch.checked();
  expect(errors()).toBe(1);
  expect(await lostCount()).toBe(counted + 1);
  expect(workerWatch.markerId()).toBe(watch.markerId());
  // and once more: nothing
  const again = new Promise((resolve) => other.once("ready", resolve));
  other.disconnect(true);
  await again;
  await workerWatch.checked();
  expect(errors()).toBe(1);
  waiting.stop();
  watch.stop();
  workerWatch.stop();
  conn.disconnect();
  other.disconnect();
}, 30_000);
