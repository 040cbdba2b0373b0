/**
 * An inbox entry Redis cannot decode never stops a conversation. Such an entry (JSON holding the
 * escape of a lone UTF-16 surrogate, `\ud800`, which Redis' Lua `cjson` refuses: "invalid unicode
 * escape code") is planted directly in a conversation's inbox, as an older version or another
 * writer left it, and the real producer, worker, Redis and the strict fake Messages API run on:
 *
 * - the wedge an older finish script left (the entry put back at the head, no job for the chat):
 *   the next message adds a job that takes the entry up (answered, or removed without being sent
 *   again when its answer is in the history), then answers the rest — also when the inbox is full;
 * - an entry in the middle of the inbox is answered and removed by its id, and the messages behind
 *   it are answered; a malformed entry is dropped without its words in the log;
 * - an entry at the head that is not the job's own message gets a job of its own.
 */
import { afterEach, describe, expect, it } from "vitest";
import { conversationKeys, chatJobId } from "../../src/queue/keys.js";
import { IncomingMessageSchema, type IncomingMessage } from "../../src/queue/incoming.js";
import { CHAT_JOB_OPTIONS, UNBLOCK_JOB, UNBLOCK_JOB_OPTIONS, unblockJobId } from "../../src/queue/producer.js";
import { captureLogger } from "../helpers/log.js";
import { message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The inbox entry of `m` as the producer writes it. */
const entryOf = (m: IncomingMessage): string => JSON.stringify(IncomingMessageSchema.parse(m));

/** An inbox entry Redis cannot decode: `m` with its text ending in a lone high surrogate, written as JSON does (`\ud800`). */
const unreadableEntryOf = (m: IncomingMessage): string =>
  JSON.stringify({ ...IncomingMessageSchema.parse(m), text: `${m.text} \ud800` });

/** Whether Redis' Lua `cjson` decodes `entry`. */
async function redisDecodes(h: Harness, entry: string): Promise<boolean> {
  return (await h.redis.eval("return pcall(cjson.decode, ARGV[1]) and 1 or 0", 0, entry)) === 1;
}

/** Starts the harness with a logger whose lines the test reads. */
async function start(): Promise<{ h: Harness; lines: string[] }> {
  const { log, lines } = captureLogger("debug");
  const started = await startHarness({ log });
  started.fake.enqueue(...Array.from({ length: 10 }, () => todoModel));
  return { h: started, lines };
}

const parsedLines = (lines: string[]) => lines.map((l) => JSON.parse(l) as { msg: string; level: number });

describe("an inbox entry Redis cannot decode", () => {
  it("the planted entry is one Redis refuses, and a message with a lone surrogate is queued as one it reads", async () => {
    const started = await start();
    h = started.h;
    expect(await redisDecodes(h, unreadableEntryOf(message("q1", "1", "hi")))).toBe(false);
    const lone = message("q1", "2", "hello \ud800", { userName: "A\udc00" });
    await h.queue.enqueue(lone);
    await waitFor(() => h!.output.answers().length === 1, 10_000, "the answer");
    expect(h.output.answers()).toEqual(["echo: hello \ufffd"]);
    expect(h.fake.rejections).toEqual([]);
  });

  it("a conversation left without a job behind such an entry answers again when its next message comes", async () => {
    const started = await start();
    h = started.h;
    const chat = { platform: "console" as const, chatId: "w1" };
    const inbox = conversationKeys(chat).inbox;
    // What an older finish script left: the entry at the head, and no job for the chat.
    await h.redis.rpush(inbox, unreadableEntryOf(message("w1", "1", "stuck")));
    expect(await h.queue.enqueue(message("w1", "2", "hello again"))).toBe("queued");
    await waitFor(() => h!.output.answers().length === 2, 10_000, "both answers");
    expect(h.output.answers()).toEqual(["echo: stuck \ufffd", "echo: hello again"]);
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    expect(h.fake.rejections).toEqual([]);
    const warned = parsedLines(started.lines).filter((l) => l.level === 40 && l.msg.includes("Redis cannot decode"));
    expect(warned.length).toBeGreaterThan(0);
    for (const line of started.lines.filter((l) => l.includes("Redis cannot decode")))
      expect(line).not.toContain("stuck");
  });

  it("an entry whose answer is already in the history is removed without being sent again", async () => {
    const started = await start();
    h = started.h;
    const chat = { platform: "console" as const, chatId: "w2" };
    const inbox = conversationKeys(chat).inbox;
    const first = message("w2", "1", "hello");
    await h.queue.enqueue(first);
    await waitFor(() => h!.output.answers().length === 1, 10_000, "the first answer");
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    // The wedge as it happened: the message was answered, and its entry stayed at the head.
    await h.redis.rpush(inbox, unreadableEntryOf(first));
    expect(await h.queue.enqueue(message("w2", "2", "are you there"))).toBe("queued");
    await waitFor(() => h!.output.answers().length === 2, 10_000, "the next answer");
    expect(h.output.answers()).toEqual(["echo: hello", "echo: are you there"]);
    expect(h.fake.requests).toHaveLength(2);
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    expect(started.lines.some((l) => l.includes("answered but never removed"))).toBe(true);
  });

  it("a full inbox behind such an entry is taken up too: the message refused as full can be sent again", async () => {
    const started = await start();
    h = started.h;
    const inbox = conversationKeys({ platform: "console", chatId: "w3" }).inbox;
    await h.redis.rpush(inbox, unreadableEntryOf(message("w3", "1", "stuck")));
    const next = message("w3", "2", "let me in");
    expect(await h.queue.enqueue(next, { maxQueued: 1 })).toBe("full");
    await waitFor(() => h!.output.answers().length === 1, 10_000, "the stuck message's answer");
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    expect(await h.queue.enqueue(next, { maxQueued: 1 })).toBe("scheduled");
    await waitFor(() => h!.output.answers().length === 2, 10_000, "the next answer");
    expect(h.output.answers()).toEqual(["echo: stuck \ufffd", "echo: let me in"]);
  });

  it("an entry in the middle of the inbox is answered and removed, and the messages behind it are answered", async () => {
    const started = await start();
    h = started.h;
    const chat = { platform: "console" as const, chatId: "m1" };
    const inbox = conversationKeys(chat).inbox;
    const first = message("m1", "1", "first");
    const last = message("m1", "4", "last");
    await h.redis.rpush(
      inbox,
      entryOf(first),
      unreadableEntryOf(message("m1", "2", "middle")),
      '{"not json, secret words',
      entryOf(last),
    );
    // The chat's job, as the producer adds it for a message entering an empty inbox.
    await h.queue.queue.add("chat", first, { ...CHAT_JOB_OPTIONS, jobId: chatJobId(chat, "1") });
    await waitFor(() => h!.output.answers().length === 3, 10_000, "three answers");
    expect(h.output.answers()).toEqual(["echo: first", "echo: middle \ufffd", "echo: last"]);
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    const lines = parsedLines(started.lines);
    expect(lines.some((l) => l.level === 40 && l.msg.startsWith("removed an inbox entry Redis cannot decode"))).toBe(
      true,
    );
    expect(lines.some((l) => l.msg === "malformed message in a chat inbox; dropped")).toBe(true);
    expect(started.lines.join("")).not.toContain("secret words");
    expect(started.lines.join("")).not.toContain("middle");
  });

  it("a job added to take such an entry up does nothing once the entry is gone (the job draining the inbox goes on)", async () => {
    const started = await start();
    h = started.h;
    const chat = { platform: "console" as const, chatId: "g1" };
    const inbox = conversationKeys(chat).inbox;
    // The entry was removed by the job answering it, which now answers this one: no second answer.
    const busy = message("g1", "5", "being answered");
    await h.redis.rpush(inbox, entryOf(busy));
    const job = await h.queue.queue.add(UNBLOCK_JOB, busy, {
      ...UNBLOCK_JOB_OPTIONS,
      jobId: unblockJobId(chat, "f".repeat(40)),
    });
    // Removed once completed (its options): gone from BullMQ.
    await waitFor(async () => (await job.getState()) === "unknown", 10_000, "the job to end");
    expect(h.output.answers()).toEqual([]);
    expect(await h.redis.lrange(inbox, 0, -1)).toEqual([entryOf(busy)]);
  });

  it("such an entry at the head that is not the job's own message gets a job of its own", async () => {
    const started = await start();
    h = started.h;
    const chat = { platform: "console" as const, chatId: "u1" };
    const inbox = conversationKeys(chat).inbox;
    // The job's message is not in the inbox (the producer's undo emptied it); the entry there now is another's.
    await h.redis.rpush(inbox, unreadableEntryOf(message("u1", "2", "waiting")));
    const own = message("u1", "1", "mine");
    await h.queue.queue.add("chat", own, { ...CHAT_JOB_OPTIONS, jobId: chatJobId(chat, "1") });
    await waitFor(() => h!.output.answers().length === 2, 10_000, "both answers");
    expect(h.output.answers()).toEqual(["echo: mine", "echo: waiting \ufffd"]);
    await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    expect(started.lines.some((l) => l.includes("is not the message just answered"))).toBe(true);
  });
});
