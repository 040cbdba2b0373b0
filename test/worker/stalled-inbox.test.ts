/**
 * An inbox holding messages while no chat job drains it: the job was removed (as an operator does
 * in Bull Board or with redis-cli) or lost. A message queued behind a head queued 5 minutes ago or
 * more (`STALLED_INBOX_MS`, the producer's clock injected) gets the conversation an `unblock` job,
 * which takes the inbox up when no other job of the conversation is alive — and leaves it alone
 * when its job is merely slow, so no message is answered twice. Real producer, worker, Redis, SDK
 * and the strict fake Messages API.
 */
import { createHash } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { IncomingMessageSchema, type IncomingMessage } from "../../src/queue/incoming.js";
import { chatJobId, conversationKeys } from "../../src/queue/keys.js";
import { CHAT_JOB_OPTIONS, ChatQueue, unblockJobId } from "../../src/queue/producer.js";
import { STALLED_INBOX_MS } from "../../src/queue/stalled.js";
import { captureLogger } from "../helpers/log.js";
import { message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
let producer: ChatQueue | undefined;
afterEach(async () => {
  await producer?.close();
  producer = undefined;
  await h?.stop();
  h = undefined;
});

/** The harness with a logger the test reads, a model that follows the todo tools, and a producer on the test's clock. */
async function start(): Promise<{ h: Harness; lines: string[]; clock: { now: number }; producer: ChatQueue }> {
  const { log, lines } = captureLogger("debug");
  const started = await startHarness({ log });
  started.fake.enqueue(...Array.from({ length: 10 }, () => todoModel));
  const clock = { now: Date.now() };
  producer = new ChatQueue({ redis: started.redis, now: () => clock.now });
  return { h: started, lines, clock, producer };
}

const said = (lines: string[], text: string) => lines.some((l) => l.includes(text));
const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

/** Waits until the job `id` (added before) ended: an unblock job is removed once completed. */
async function ended(h: Harness, id: string): Promise<void> {
  await waitFor(async () => (await h.queue.queue.getJobState(id)) === "unknown", 10_000, `job ${id} to end`);
}
const todos = (h: Harness, chatId: string) => h.redis.lrange(`test-todos:console:user-${chatId}`, 0, -1);

it("an inbox whose job was removed answers again, in order, when a message comes 5 minutes after its head", async () => {
  const started = await start();
  h = started.h;
  const { clock, lines } = started;
  const inbox = conversationKeys({ platform: "console", chatId: "r1" }).inbox;
  // The worker takes nothing while the operator removes the waiting job.
  await h.queue.queue.pause(); // the whole queue: a worker's own pause may still take a job it was fetching
  expect(await started.producer.enqueue(message("r1", "1", "first"))).toBe("scheduled");
  expect(await h.queue.queue.remove(chatJobId({ platform: "console", chatId: "r1" }, "1"))).toBe(1);
  clock.now += 60_000;
  // Behind a head queued a minute ago: nothing more than queued.
  expect(await started.producer.enqueue(message("r1", "2", "second"))).toBe("queued");
  const counts = await h.queue.queue.getJobCounts("waiting", "active", "delayed", "prioritized");
  expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
  await h.queue.queue.resume();
  await new Promise((r) => setTimeout(r, 300));
  expect(h.output.answers()).toEqual([]);
  // Five minutes after the head was queued: the conversation gets a job again.
  clock.now += STALLED_INBOX_MS - 60_000;
  expect(await started.producer.enqueue(message("r1", "3", "third"))).toBe("queued");
  await waitFor(() => h!.output.answers().length === 3, 10_000, "the three answers");
  expect(h.output.answers()).toEqual(["echo: first", "echo: second", "echo: third"]);
  await waitFor(async () => (await h!.redis.exists(inbox)) === 0, 5000, "the inbox to empty");
  expect(h.fake.requests).toHaveLength(3);
  expect(h.fake.rejections).toEqual([]);
  expect(said(lines, "had no live job (removed or lost); answering it now")).toBe(true);
});

it("a job that is merely slow keeps its inbox: the message queued 6 minutes after its head is answered once, after it", async () => {
  const started = await start();
  h = started.h;
  const { clock, lines } = started;
  const chat = { platform: "console" as const, chatId: "r2" };
  expect(await started.producer.enqueue(message("r2", "1", "add todo milk slow 1500"))).toBe("scheduled");
  // The model asked for the tool, which is running (1.5 s).
  await waitFor(() => h!.fake.requests.length === 1, 10_000, "the first model request");
  const head = (await h.redis.lindex(conversationKeys(chat).inbox, 0))!;
  clock.now += STALLED_INBOX_MS + 60_000;
  expect(await started.producer.enqueue(message("r2", "2", "thanks"))).toBe("queued");
  await ended(h, unblockJobId(chat, sha1(head)));
  expect(said(lines, "still has a live job of its conversation; left to it")).toBe(true);
  await waitFor(() => h!.output.answers().length === 2, 10_000, "both answers");
  expect(h.output.answers()).toEqual(["ok: added #1: milk", "echo: thanks"]);
  expect(await todos(h, "r2")).toEqual(["milk"]);
  expect(h.fake.requests).toHaveLength(3);
  expect(said(lines, "answering it now")).toBe(false);
});

it("an entry Redis cannot decode, answered slowly by the chat's job, is answered once when a message queues behind it", async () => {
  const started = await start();
  h = started.h;
  const { lines } = started;
  const chat = { platform: "console" as const, chatId: "r3" };
  const entry = (m: IncomingMessage, extra = "") =>
    JSON.stringify({ ...IncomingMessageSchema.parse(m), text: `${m.text}${extra}`, queuedAt: Date.now() });
  const first = message("r3", "1", "first");
  // The second entry holds a lone surrogate's escape (an older version's), which cjson cannot decode.
  const second = entry(message("r3", "2", "add todo tea slow 1500"), " \ud800");
  await h.redis.rpush(conversationKeys(chat).inbox, entry(first), second);
  await h.queue.queue.add("chat", first, { ...CHAT_JOB_OPTIONS, jobId: chatJobId(chat, "1") });
  // The job answered the first and now runs the second's tool (1.5 s).
  await waitFor(() => h!.fake.requests.length === 2, 10_000, "the second entry's model request");
  expect(await started.producer.enqueue(message("r3", "3", "and now?"))).toBe("queued");
  await ended(h, unblockJobId(chat, sha1(second)));
  await waitFor(() => h!.output.answers().length >= 3, 10_000, "three answers");
  await waitFor(async () => (await h!.redis.exists(conversationKeys(chat).inbox)) === 0, 5000, "the inbox to empty");
  expect(await todos(h, "r3")).toEqual(["tea"]);
  expect(h.output.answers()).toEqual(["echo: first", "ok: added #1: tea", "echo: and now?"]);
  expect(h.fake.requests).toHaveLength(4);
  expect(said(lines, "still has a live job of its conversation; left to it")).toBe(true);
});

it("a full inbox whose job was removed is taken up too: the message refused as full can be sent again", async () => {
  const started = await start();
  h = started.h;
  const { clock } = started;
  const chat = { platform: "console" as const, chatId: "r4" };
  await h.queue.queue.pause(); // the whole queue: a worker's own pause may still take a job it was fetching
  expect(await started.producer.enqueue(message("r4", "1", "first"), { maxQueued: 2 })).toBe("scheduled");
  expect(await h.queue.queue.remove(chatJobId(chat, "1"))).toBe(1);
  expect(await started.producer.enqueue(message("r4", "2", "second"), { maxQueued: 2 })).toBe("queued");
  await h.queue.queue.resume();
  clock.now += STALLED_INBOX_MS;
  const third = message("r4", "3", "third");
  expect(await started.producer.enqueue(third, { maxQueued: 2 })).toBe("full");
  await waitFor(() => h!.output.answers().length === 2, 10_000, "the waiting messages' answers");
  await waitFor(async () => (await h!.redis.exists(conversationKeys(chat).inbox)) === 0, 5000, "the inbox to empty");
  expect(await started.producer.enqueue(third, { maxQueued: 2 })).toBe("scheduled");
  await waitFor(() => h!.output.answers().length === 3, 10_000, "the third answer");
  expect(h.output.answers()).toEqual(["echo: first", "echo: second", "echo: third"]);
});
