import type { RedisClient } from "../../src/redis.js";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { PausedRun } from "../../src/agent/contract.js";
import { decisionNotice } from "../../src/approvals/decider.js";
import {
  APPROVAL_ID_LENGTH,
  APPROVAL_ID_PATTERN,
  ApprovalStore,
  UNKNOWN_OUTCOME,
  type NewApproval,
} from "../../src/approvals/store.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { connectRedis } from "../../src/redis.js";
import type { ToolExecution } from "../../src/toolbox/toolbox.js";
import { HistoryStore } from "../../src/history/store.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
let redis: RedisClient;
const connections: RedisClient[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  connections.push(redis);
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushall();
});

function message(overrides: Partial<IncomingMessage> = {}): IncomingMessage {
  return {
    platform: "telegram",
    chatId: "-100200",
    chatKind: "group",
    userId: "u1",
    userName: "Alice",
    text: "把買牛奶刪掉",
    messageId: "m1",
    sentAt: 1_700_000_000_000,
    reply: {},
    ...overrides,
  };
}

const call = { toolUseId: "toolu_01", name: "delete_todo", input: { todo_id: 3 } };
const run: PausedRun = {
  messages: [
    { role: "user", content: "把買牛奶刪掉" },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_01", name: "delete_todo", input: { todo_id: 3 } }] },
  ],
  history: [],
  results: [],
  pending: [call],
  turns: 1,
  callCounts: { 'delete_todo:{"todo_id":3}': 1 },
};

function approval(overrides: Partial<NewApproval> = {}): NewApproval {
  return { message: message(), run, call, action: "刪除待辦 #3「買牛奶」", locale: "zh-TW", ...overrides };
}

/** A store whose clock the test moves. */
function storeWithClock(start = 1_800_000_000_000, options: { timeoutMs?: number } = {}) {
  const clock = { now: start };
  const decisions: { approvalId: string; verdict: string }[] = [];
  const store = new ApprovalStore(redis, {
    timeoutMs: options.timeoutMs ?? 300_000,
    now: () => clock.now,
    onDecision: (d) => {
      decisions.push(d);
    },
  });
  return { store, clock, decisions };
}

describe("ApprovalStore.create and get", () => {
  it("returns an unguessable 22-character base64url id that fits callback_data and custom_id", async () => {
    const { store } = storeWithClock();
    const ids = new Set<string>();
    // The same approval 50 times: 50 different ids, so nothing in them comes from the data.
    for (let i = 0; i < 50; i++) ids.add(await store.create(approval()));
    expect(ids.size).toBe(50);
    for (const id of ids) {
      expect(id).toHaveLength(APPROVAL_ID_LENGTH);
      expect(id).toMatch(APPROVAL_ID_PATTERN);
      expect(Buffer.byteLength(`approve:${id}`)).toBeLessThanOrEqual(64);
      expect(Buffer.from(id, "base64url")).toHaveLength(16);
      expect(Buffer.from(id, "base64url").toString("base64url")).toBe(id);
    }
  });

  it("saves the whole record with expiry, a Redis TTL a bit longer than the timeout, and the chat index", async () => {
    const { store } = storeWithClock(1_800_000_000_000);
    const id = await store.create(approval());
    const record = await store.get(id);
    expect(record).toMatchObject({
      id,
      status: "pending",
      platform: "telegram",
      chatId: "-100200",
      requesterId: "u1",
      requesterName: "Alice",
      createdAt: 1_800_000_000_000,
      expiresAt: 1_800_000_300_000,
      action: "刪除待辦 #3「買牛奶」",
      locale: "zh-TW",
      call,
      run,
      steps: [],
    });
    expect(record?.message.text).toBe("把買牛奶刪掉");
    const ttl = await redis.pttl(`approval:{approval}:${id}`);
    expect(ttl).toBeGreaterThan(300_000);
    expect(ttl).toBeLessThanOrEqual(300_000 + 600_000);
    expect(await store.pendingId({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBe(id);
  });

  it("keeps the prompt reference and finished steps", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    await store.setPrompt(id, { chatId: "-100200", messageId: "77" });
    await store.markStep(id, "history");
    const record = await store.get(id);
    expect(record?.prompt).toEqual({ chatId: "-100200", messageId: "77" });
    expect(record?.steps).toEqual(["history"]);
    expect(await store.idForPrompt("telegram", { chatId: "-100200", messageId: "77" })).toBe(id);
    expect(await store.idForPrompt("discord", { chatId: "-100200", messageId: "77" })).toBeUndefined();
    expect(await redis.pttl(`approval:{approval}:prompt:telegram:-100200:77`)).toBeGreaterThan(300_000);
  });

  it("does not create a record without TTL when the prompt is saved for an unknown id", async () => {
    const { store } = storeWithClock();
    await store.setPrompt("A".repeat(22), { chatId: "1", messageId: "2" });
    expect(await redis.exists(`approval:{approval}:${"A".repeat(22)}`)).toBe(0);
    expect(await store.get("A".repeat(22))).toBeUndefined();
    expect(await store.get("../../etc")).toBeUndefined();
  });

  it("survives a restart: a new store on a new connection reads and decides it", async () => {
    const { store } = storeWithClock(Date.now());
    const id = await store.create(approval());
    await store.setPrompt(id, { chatId: "-100200", messageId: "77" });

    const other = connectRedis(server.url);
    connections.push(other);
    const decisions: string[] = [];
    const reborn = new ApprovalStore(other, {
      timeoutMs: 300_000,
      onDecision: (d) => void decisions.push(`${d.approvalId}:${d.verdict}`),
    });
    expect((await reborn.get(id))?.run).toEqual(run);
    expect(await reborn.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "accepted",
      approve: true,
    });
    expect(decisions).toEqual([`${id}:approved`]);
  });
});

describe("ApprovalStore.decide", () => {
  it("accepts the requester's approval once and calls onDecision once", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    const first = await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(first).toEqual({ status: "accepted", approve: true });
    expect(decisionNotice(first, "zh-TW")).toBe("已確認，處理中…");
    const again = await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    expect(again).toEqual({ status: "already_decided", verdict: "approved" });
    expect(decisionNotice(again, "zh-TW")).toBe("這個請求已經確認過了。");
    expect(decisions).toEqual([{ approvalId: id, verdict: "approved" }]);
    expect((await store.get(id))?.status).toBe("approved");
    expect((await store.get(id))?.deciderId).toBe("u1");
  });

  it("carries the press's reply token (LINE) into the decision for the answer, and only an accepted one", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    const reply = { replyToken: "0f3e2d1c0b0a09080706050403020100", replyTokenAt: 1_800_000_000_000 };
    await store.decide({ approvalId: id, platform: "telegram", deciderId: "someone else", approve: true, reply });
    await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true, reply });
    expect(decisions).toEqual([{ approvalId: id, verdict: "approved", reply }]);
  });

  it("tells someone else who presses a decided prompt how it was decided, not who may decide it: while the record is kept and after", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false })).toEqual({
      status: "accepted",
      approve: false,
    });
    const other = await store.decide({ approvalId: id, platform: "telegram", deciderId: "u2", approve: true });
    expect(other).toEqual({ status: "already_decided", verdict: "declined" });
    expect(decisionNotice(other, "zh-TW")).toBe("這個請求已經取消了。");
    await store.finish(id);
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u2", approve: true })).toEqual({
      status: "already_decided",
      verdict: "declined",
    });
    // A prompt closed by its requester's new message, pressed by someone else.
    const superseded = await store.create(approval());
    await store.supersede({ platform: "telegram", chatId: "-100200", userId: "u1" });
    const late = await store.decide({ approvalId: superseded, platform: "telegram", deciderId: "u2", approve: true });
    expect(decisionNotice(late, "en")).toBe("This request was already closed: a new message came, so it was not done.");
    expect(decisions).toEqual([{ approvalId: id, verdict: "declined" }]);
  });

  it("accepts a decline", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false })).toEqual({
      status: "accepted",
      approve: false,
    });
    expect(decisions).toEqual([{ approvalId: id, verdict: "declined" }]);
    expect((await store.get(id))?.status).toBe("declined");
  });

  it("refuses another member with the requester's name and changes nothing", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    const result = await store.decide({ approvalId: id, platform: "telegram", deciderId: "u2", approve: true });
    expect(result).toEqual({ status: "not_requester", requesterName: "Alice" });
    expect(decisionNotice(result, "en")).toBe("Only Alice can decide.");
    expect((await store.get(id))?.status).toBe("pending");
    expect(decisions).toEqual([]);
  });

  it("answers not_found for an unknown id, a malformed id, and another platform", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    expect(
      await store.decide({ approvalId: "B".repeat(22), platform: "telegram", deciderId: "u1", approve: true }),
    ).toEqual({ status: "not_found" });
    expect(await store.decide({ approvalId: "x", platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(await store.decide({ approvalId: id, platform: "discord", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect((await store.get(id))?.status).toBe("pending");
    expect(decisions).toEqual([]);
  });

  it("answers not_found once the time is past expiresAt, even before the expiry job ran", async () => {
    const { store, clock, decisions } = storeWithClock(1_800_000_000_000);
    const id = await store.create(approval());
    clock.now += 300_000;
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u2", approve: true })).toEqual({
      status: "not_requester",
      requesterName: "Alice",
    });
    clock.now += 1;
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect((await store.get(id))?.status).toBe("pending");
    expect(decisions).toEqual([]);
  });

  it("answers not_found after the Redis TTL removed the record (real time)", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 30, graceMs: 20 });
    const id = await store.create(approval());
    const deadline = Date.now() + 2000;
    while ((await redis.exists(`approval:{approval}:${id}`)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    expect(await store.get(id)).toBeUndefined();
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(await store.pendingId({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBeUndefined();
  });

  it("20 concurrent decisions from two connections (approve, decline, other users): exactly one accepted", async () => {
    const { store, decisions } = storeWithClock(Date.now());
    const id = await store.create(approval());
    const second = connectRedis(server.url);
    connections.push(second);
    const onSecond: string[] = [];
    const store2 = new ApprovalStore(second, { timeoutMs: 300_000, onDecision: (d) => void onSecond.push(d.verdict) });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? store : store2).decide({
          approvalId: id,
          platform: "telegram",
          deciderId: i % 3 === 2 ? "u2" : "u1",
          approve: i % 4 < 2,
        }),
      ),
    );
    const accepted = results.filter((r) => r.status === "accepted");
    expect(accepted).toHaveLength(1);
    expect(decisions.length + onSecond.length).toBe(1);
    // The other user's clicks before the winning one are refused as not theirs; after it, told it was decided.
    const others = results.filter((_, i) => i % 3 === 2);
    expect(others).toHaveLength(6);
    for (const r of others) expect(["not_requester", "already_decided"]).toContain(r.status);
    const winner = results.findIndex((r) => r.status === "accepted");
    for (const [i, r] of results.entries()) if (i % 3 !== 2 && i !== winner) expect(r.status).toBe("already_decided");
    const record = await store.get(id);
    expect(record?.status).toBe((accepted[0] as { approve: boolean }).approve ? "approved" : "declined");
  });

  it("undoes the decision and rethrows when onDecision fails, so the requester can press again", async () => {
    let fail = true;
    const queued: string[] = [];
    const store = new ApprovalStore(redis, {
      timeoutMs: 300_000,
      onDecision: (d) => {
        if (fail) throw new Error("queue unreachable");
        queued.push(d.verdict);
      },
    });
    const id = await store.create(approval());
    await expect(
      store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true }),
    ).rejects.toThrow("queue unreachable");
    expect((await store.get(id))?.status).toBe("pending");
    fail = false;
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "accepted",
      approve: true,
    });
    expect(queued).toEqual(["approved"]);
  });
});

describe("ApprovalStore.expire, supersede and finish", () => {
  it("expire moves pending to expired once and returns the record; decisions then get not_found", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    const record = await store.expire(id);
    expect(record?.status).toBe("expired");
    expect(record?.run).toEqual(run);
    expect(await store.expire(id)).toBeUndefined();
    expect(await store.supersede({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBeUndefined();
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(await store.pendingId({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBeUndefined();
  });

  it("expire does nothing to a decided approval", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    expect(await store.expire(id)).toBeUndefined();
    expect((await store.get(id))?.status).toBe("declined");
  });

  it("supersede closes the chat's pending approval once; a later click is already_decided", async () => {
    const { store, decisions } = storeWithClock();
    const id = await store.create(approval());
    const chat = { platform: "telegram" as const, chatId: "-100200", userId: "u1" };
    expect(await store.supersede({ platform: "telegram", chatId: "other", userId: "u1" })).toBeUndefined();
    const record = await store.supersede(chat);
    expect(record?.id).toBe(id);
    expect(record?.status).toBe("superseded");
    expect(await store.supersede(chat)).toBeUndefined();
    expect(await store.expire(id)).toBeUndefined();
    const late = await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(late).toEqual({ status: "already_decided", verdict: "superseded" });
    expect(decisionNotice(late, "en")).toBe("This request was already closed: a new message came, so it was not done.");
    expect(decisions).toEqual([]);
  });

  it("with hints, create writes the pending hint in the conversation's slot first; supersede skips the pending index when the hint says none", async () => {
    const hints = connectRedis(server.url);
    connections.push(hints);
    const store = new ApprovalStore(redis, { timeoutMs: 60_000, graceMs: 1_000, hints });
    const chat = { platform: "telegram" as const, chatId: "-100200", userId: "u1" };
    const key = store.pendingHintKey(chat);
    expect(key).toBe("approval-pending:{telegram:-100200}:u1");
    expect(await redis.get(key!)).toBeNull();
    const id = await store.create(approval());
    expect(await redis.get(key!)).toBe(id);
    // As long as the record while pending (timeout + grace).
    const ttl = await redis.pttl(key!);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(61_000);
    // The worker read no hint: no command reaches the pending index, so nothing is closed.
    const before = Number(/cmdstat_get:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
    expect(await store.supersede(chat, null)).toBeUndefined();
    const after = Number(/cmdstat_get:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
    expect(after).toBe(before);
    expect(await store.pendingId(chat)).toBe(id);
    // The hint read: the approval is superseded as before.
    expect((await store.supersede(chat, id))?.status).toBe("superseded");
    // Without hints, a null hint is not trusted: the index is read.
    const plain = new ApprovalStore(redis, { timeoutMs: 60_000 });
    expect(plain.pendingHintKey(chat)).toBeUndefined();
    const second = await plain.create(approval({ message: message({ messageId: "m2" }) }));
    expect((await plain.supersede(chat, null))?.id).toBe(second);
  });

  it("supersede racing a click: exactly one of them wins", async () => {
    for (let round = 0; round < 10; round++) {
      const { store } = storeWithClock(Date.now());
      const id = await store.create(approval({ message: message({ chatId: `race${round}` }) }));
      const [decided, superseded] = await Promise.all([
        store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true }),
        store.supersede({ platform: "telegram", chatId: `race${round}`, userId: "u1" }),
      ]);
      expect(Number(decided.status === "accepted") + Number(superseded !== undefined)).toBe(1);
    }
  });

  it("supersede does not close a decided approval", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true });
    expect(await store.supersede({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBeUndefined();
    expect((await store.get(id))?.status).toBe("approved");
  });

  it("keeps one pending approval per requester and conversation: only the requester's own conversation supersedes it", async () => {
    const { store } = storeWithClock();
    const topic11 = { platform: "telegram" as const, chatId: "-100200", topicId: "11" };
    const alice = await store.create(approval({ message: message({ ...topic11, reply: { threadId: "11" } }) }));
    const bob = await store.create(
      approval({
        message: message({ ...topic11, userId: "u2", userName: "Bob", messageId: "m2", reply: { threadId: "11" } }),
      }),
    );
    const aliceInChat = await store.create(approval({ message: message({ messageId: "m3" }) }));
    expect(new Set([alice, bob, aliceInChat]).size).toBe(3);
    expect(await store.pendingId({ ...topic11, userId: "u1" })).toBe(alice);
    expect(await store.pendingId({ ...topic11, userId: "u2" })).toBe(bob);
    expect(await store.pendingId({ platform: "telegram", chatId: "-100200", userId: "u1" })).toBe(aliceInChat);
    expect(await store.get(alice)).toMatchObject({
      platform: "telegram",
      chatId: "-100200",
      topicId: "11",
      requesterId: "u1",
    });
    expect((await store.get(aliceInChat))?.topicId).toBeUndefined();

    // Bob writing in topic 11, Alice writing in topic 22: nothing of Alice's closes.
    expect(await store.supersede({ ...topic11, userId: "u3" })).toBeUndefined();
    expect(await store.supersede({ ...topic11, topicId: "22", userId: "u1" })).toBeUndefined();
    expect((await store.supersede({ ...topic11, userId: "u2" }))?.id).toBe(bob);
    expect((await store.get(alice))?.status).toBe("pending");
    expect((await store.get(aliceInChat))?.status).toBe("pending");
    // Alice writing again in topic 11 closes her topic-11 prompt only.
    expect((await store.supersede({ ...topic11, userId: "u1" }))?.id).toBe(alice);
    expect((await store.get(aliceInChat))?.status).toBe("pending");
    expect(
      await store.decide({ approvalId: aliceInChat, platform: "telegram", deciderId: "u1", approve: true }),
    ).toEqual({ status: "accepted", approve: true });

    // Expiry and finish clear the right index (the topic's), so nothing is left behind.
    const again = await store.create(
      approval({ message: message({ ...topic11, messageId: "m4", reply: { threadId: "11" } }) }),
    );
    expect((await store.expire(again))?.topicId).toBe("11");
    expect(await store.pendingId({ ...topic11, userId: "u1" })).toBeUndefined();
    for (const id of [alice, bob, aliceInChat, again]) await store.finish(id);
    // The decided and superseded ones leave their markers (until their prompts' expiry), the expired one nothing.
    expect((await redis.keys("*")).sort()).toEqual(
      [alice, bob, aliceInChat].map((id) => `approval:{approval}:decided:${id}`).sort(),
    );
  });

  it("finish removes the record and its chat index, and leaves a newer approval's index alone", async () => {
    const { store } = storeWithClock();
    const chat = { platform: "telegram" as const, chatId: "-100200", userId: "u1" };
    const first = await store.create(approval());
    const second = await store.create(approval());
    await store.setPrompt(first, { chatId: "-100200", messageId: "5" });
    await store.setPrompt(second, { chatId: "-100200", messageId: "6" });
    await store.finish(first);
    expect(await store.get(first)).toBeUndefined();
    expect(await store.idForPrompt("telegram", { chatId: "-100200", messageId: "5" })).toBeUndefined();
    expect(await store.idForPrompt("telegram", { chatId: "-100200", messageId: "6" })).toBe(second);
    expect(await store.pendingId(chat)).toBe(second);
    await store.finish(second);
    await store.finish(second);
    expect(await store.pendingId(chat)).toBeUndefined();
    expect(await redis.dbsize()).toBe(0);
  });
});

/** The commands `connection` sends while `work` runs, by name (a script is one: `eval`). */
async function sentDuring(connection: RedisClient, work: () => Promise<unknown>): Promise<string[]> {
  const spy = vi.spyOn(connection as Redis, "sendCommand");
  try {
    await work();
    return spy.mock.calls.map(([command]) => command.name);
  } finally {
    spy.mockRestore();
  }
}

describe("ApprovalStore: a press after the record was finished", () => {
  const press = (store: ApprovalStore, id: string, deciderId = "u1", platform: "telegram" | "discord" = "telegram") =>
    store.decide({ approvalId: id, platform, deciderId, approve: true });

  it("is answered as before the deletion until the prompt's expiresAt (already_decided, how, to anyone), then not_found", async () => {
    const { store, clock, decisions } = storeWithClock(1_800_000_000_000);
    const id = await store.create(approval());
    clock.now += 60_000;
    expect(await press(store, id)).toEqual({ status: "accepted", approve: true });
    clock.now += 5_000;
    await store.finish(id);
    expect(await store.get(id)).toBeUndefined();

    const late = await press(store, id);
    expect(late).toEqual({ status: "already_decided", verdict: "approved" });
    expect(decisionNotice(late, "zh-TW")).toBe("這個請求已經確認過了。");
    expect(decisionNotice(late, "en")).toBe("This request was already confirmed.");
    expect(await press(store, id, "u2")).toEqual({ status: "already_decided", verdict: "approved" });
    expect(await press(store, id, "u1", "discord")).toEqual({ status: "not_found" });
    // Nothing is written by these presses: no record comes back, no second decision.
    expect(await redis.exists(`approval:{approval}:${id}`)).toBe(0);
    expect(decisions).toEqual([{ approvalId: id, verdict: "approved" }]);
    // What is left: the fields the decide script reads, living until the prompt's expiry (300 s after it was asked).
    const marker = `approval:{approval}:decided:${id}`;
    expect(await redis.hgetall(marker)).toEqual({
      status: "approved",
      platform: "telegram",
      requesterId: "u1",
      requesterName: "Alice",
      expiresAt: "1800000300000",
    });
    const ttl = await redis.pttl(marker);
    expect(ttl).toBeGreaterThan(230_000);
    expect(ttl).toBeLessThanOrEqual(235_000);

    clock.now = 1_800_000_300_000;
    expect(await press(store, id)).toEqual({ status: "already_decided", verdict: "approved" });
    clock.now += 1;
    const expired = await press(store, id);
    expect(expired).toEqual({ status: "not_found" });
    expect(decisionNotice(expired, "zh-TW")).toBe("這個確認請求已過期或不存在。");
  });

  it("a declined approval is told as cancelled", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    await store.finish(id);
    const late = await press(store, id);
    expect(late).toEqual({ status: "already_decided", verdict: "declined" });
    expect(decisionNotice(late, "zh-TW")).toBe("這個請求已經取消了。");
    expect(decisionNotice(late, "en")).toBe("This request was already cancelled.");
  });

  it("an expired approval, and a decided one finished after /reset, leave nothing: not_found", async () => {
    const { store } = storeWithClock();
    const expired = await store.create(approval());
    await store.expire(expired);
    await store.finish(expired);
    const reset = await store.create(approval({ message: message({ messageId: "m2" }) }));
    await press(store, reset);
    await store.finish(reset, { reset: true });
    expect(await press(store, expired)).toEqual({ status: "not_found" });
    expect(await press(store, reset)).toEqual({ status: "not_found" });
    expect(await redis.dbsize()).toBe(0);
  });

  it("leaves no marker when the prompt has already expired, and the marker goes with its TTL (real time)", async () => {
    const { store, clock } = storeWithClock(1_800_000_000_000);
    const id = await store.create(approval());
    await press(store, id);
    clock.now += 300_000;
    await store.finish(id);
    expect(await redis.dbsize()).toBe(0);

    const quick = new ApprovalStore(redis, { timeoutMs: 150 });
    const other = await quick.create(approval({ message: message({ messageId: "m2" }) }));
    await press(quick, other);
    await quick.finish(other);
    expect(await press(quick, other)).toEqual({ status: "already_decided", verdict: "approved" });
    const deadline = Date.now() + 2000;
    while ((await redis.exists(`approval:{approval}:decided:${other}`)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    expect(await redis.dbsize()).toBe(0);
    expect(await press(quick, other)).toEqual({ status: "not_found" });
  });

  it("costs no extra command: a decision is HMGET + one script, finish is HMGET + one script", async () => {
    const { store } = storeWithClock();
    const id = await store.create(approval());
    await store.setPrompt(id, { chatId: "-100200", messageId: "5" });
    expect(await sentDuring(redis, () => press(store, id))).toEqual(["hmget", "eval"]);
    expect(await sentDuring(redis, () => store.finish(id))).toEqual(["hmget", "eval"]);
    expect(await sentDuring(redis, () => press(store, id))).toEqual(["hmget", "eval"]);
  });
});

describe("ApprovalStore.executeOnce", () => {
  const done = (content: string): ToolExecution => ({ ok: true, content, durationMs: 5 });

  it("runs once for 10 concurrent callers on two connections; all get the same result", async () => {
    const second = connectRedis(server.url);
    connections.push(second);
    const stores = [
      new ApprovalStore(redis, { timeoutMs: 300_000 }),
      new ApprovalStore(second, { timeoutMs: 300_000 }),
    ];
    let runs = 0;
    const execute = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 50));
      return done(`Deleted todo #3 (run ${runs})`);
    };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => stores[i % 2]!.executeOnce("toolu_conc", execute)),
    );
    expect(runs).toBe(1);
    for (const r of results) expect(r).toEqual(done("Deleted todo #3 (run 1)"));
    expect(await stores[0]!.executeOnce("toolu_conc", execute)).toEqual(done("Deleted todo #3 (run 1)"));
    expect(runs).toBe(1);
    expect(await stores[0]!.executeOnce("toolu_other", execute)).toEqual(done("Deleted todo #3 (run 2)"));
  });

  it("keeps a failed result too: a retry does not run the tool again", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 300_000 });
    let runs = 0;
    const failing = async (): Promise<ToolExecution> => ({
      ok: false,
      content: `No todo #9 (run ${++runs})`,
      durationMs: 1,
    });
    expect(await store.executeOnce("toolu_fail", failing)).toEqual({
      ok: false,
      content: "No todo #9 (run 1)",
      durationMs: 1,
    });
    expect(await store.executeOnce("toolu_fail", failing)).toEqual({
      ok: false,
      content: "No todo #9 (run 1)",
      durationMs: 1,
    });
    expect(runs).toBe(1);
  });

  it("after a crash between claim and result, a later caller does not run the tool and reports the outcome as unknown", async () => {
    const crashed = new ApprovalStore(redis, { timeoutMs: 300_000 });
    let runs = 0;
    // The first process claims and never stores a result (it "dies" inside the tool).
    void crashed.executeOnce("toolu_crash", () => {
      runs++;
      return new Promise<ToolExecution>(() => {});
    });
    // The tool starts only after the claim is stored: wait for it (no fixed sleep, which loses under load).
    for (let i = 0; i < 500 && runs === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(1);
    // A new process, 40 s later (past executionWaitMs, 35 s).
    const laterConnection = connectRedis(server.url);
    connections.push(laterConnection);
    const later = new ApprovalStore(laterConnection, { timeoutMs: 300_000, now: () => Date.now() + 40_000 });
    const result = await later.executeOnce("toolu_crash", async () => {
      runs++;
      return done("ran again");
    });
    expect(runs).toBe(1);
    expect(result).toEqual({ ok: false, content: UNKNOWN_OUTCOME, durationMs: 0 });
    expect(result.content).toContain("list_todos");
  });

  it("a caller that finds a fresh claim waits for its result instead of reporting unknown", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 300_000, executionWaitMs: 2000 });
    let release: () => void = () => {};
    const first = store.executeOnce(
      "toolu_wait",
      () => new Promise<ToolExecution>((r) => (release = () => r(done("Deleted")))),
    );
    await new Promise((r) => setTimeout(r, 10));
    const second = store.executeOnce("toolu_wait", async () => done("ran again"));
    setTimeout(() => release(), 100);
    expect(await second).toEqual(done("Deleted"));
    expect(await first).toEqual(done("Deleted"));
  });

  it("a thrown execute is stored as unknown outcome, not retried", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 300_000 });
    let runs = 0;
    const throwing = async (): Promise<ToolExecution> => {
      runs++;
      throw new Error("boom");
    };
    expect((await store.executeOnce("toolu_throw", throwing)).content).toBe(UNKNOWN_OUTCOME);
    expect((await store.executeOnce("toolu_throw", throwing)).content).toBe(UNKNOWN_OUTCOME);
    expect(runs).toBe(1);
  });
});

describe("ApprovalStore and /reset", () => {
  /** A store that records its onReset calls, and the HistoryStore whose reset bumps the generation. */
  function resetStore() {
    const resets: string[] = [];
    const decisions: string[] = [];
    const store = new ApprovalStore(redis, {
      timeoutMs: 300_000,
      onDecision: (d) => void decisions.push(d.approvalId),
      onReset: async (id) => void resets.push(id),
    });
    const history = new HistoryStore(redis, { maxMessages: 50, ttlSeconds: 3600 });
    return { store, history, resets, decisions };
  }

  it("a decision after /reset (the announcement missed) closes the approval as expired: not_found, onReset, no decision", async () => {
    const { store, history, resets, decisions } = resetStore();
    const conversation = { platform: "telegram" as const, chatId: "-100200" };
    const id = await store.create(approval({ resets: await history.generation(conversation) }));
    expect(await store.resetSince((await store.get(id))!)).toBe(false);
    await history.reset(conversation);
    expect(await history.generation(conversation)).toBe(1);
    expect(await store.resetSince((await store.get(id))!)).toBe(true);

    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(decisions).toEqual([]);
    expect(resets).toEqual([id]);
    expect((await store.get(id))?.status).toBe("expired");
    expect(await store.pendingId(message())).toBeUndefined();
    // Another message of the requester finds nothing to supersede.
    expect(await store.supersede(message())).toBeUndefined();
  });

  it(
    "closeForReset closes the conversation's approvals asked before the reset, every " +
      "requester's, and leaves newer ones and other conversations open",
    async () => {
      const { store, history, resets } = resetStore();
      const group = { platform: "telegram" as const, chatId: "-100200" };
      const before = await history.generation(group);
      const alice = await store.create(approval({ resets: before }));
      const bob = await store.create(
        approval({ message: message({ userId: "u2", userName: "Bob", messageId: "m2" }), resets: before }),
      );
      const topic = await store.create(approval({ message: message({ topicId: "7", messageId: "m3" }), resets: 0 }));
      await history.reset(group);
      const after = await store.create(
        approval({
          message: message({ userId: "u3", userName: "Cleo", messageId: "m4" }),
          resets: await history.generation(group),
        }),
      );

      expect((await store.closeForReset(group)).sort()).toEqual([alice, bob].sort());
      expect(resets.sort()).toEqual([alice, bob].sort());
      expect((await store.get(alice))?.status).toBe("expired");
      expect((await store.get(bob))?.status).toBe("expired");
      expect((await store.get(after))?.status).toBe("pending");
      expect((await store.get(topic))?.status).toBe("pending");
      // Run again (a second worker heard it too): nothing left to close.
      expect(await store.closeForReset(group)).toEqual([]);
      expect(await redis.smembers("approval:{approval}:open:telegram:-100200")).toEqual([after]);
      await store.finish(after);
      expect(await redis.exists("approval:{approval}:open:telegram:-100200")).toBe(0);
    },
  );
});
