/**
 * Values a version before messages were made well-formed left in Redis may hold the JSON escape of
 * a lone UTF-16 surrogate (`\ud800`: `JSON.stringify` escapes only a lone one), which the Messages
 * API refuses in a request (400 "no low surrogate in string"; the strict fake too). Each such value
 * that reaches the model is planted here as that version stored it, and a message goes through the
 * real producer, worker, Redis and SDK: the request must be one the strict fake accepts, with the
 * lone half read as U+FFFD, and the user must get an answer.
 */
import { Queue } from "bullmq";
import { afterEach, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { memoryKey } from "../../src/memory/store.js";
import { memoryTools } from "../../src/memory/tool.js";
import { TASKS_QUEUE, taskJobId, type TaskJobData } from "../../src/tasks/schedule.js";
import { taskKeys } from "../../src/tasks/store.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import { message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** True when every string in `value` (keys too) is well-formed UTF-16. */
function wellFormedThroughout(value: unknown): boolean {
  if (typeof value === "string") return value.isWellFormed();
  if (Array.isArray(value)) return value.every(wellFormedThroughout);
  if (typeof value === "object" && value !== null)
    return Object.entries(value).every(([k, v]) => k.isWellFormed() && wellFormedThroughout(v));
  return true;
}

/** Sends `text` to chat `chatId`, waits for the answer, and returns the one request the model got. */
async function ask(h: Harness, chatId: string, text: string): Promise<FakeRequest> {
  await h.queue.enqueue(message(chatId, "10", text));
  await waitFor(() => h.output.answers().length === 1, 10_000, "the answer");
  // The model echoes the last user turn (where a memory block leads it).
  expect(h.output.answers()).toHaveLength(1);
  expect(h.output.answers()[0]).toMatch(/^echo: /);
  expect(h.output.answers()[0]!.endsWith(text)).toBe(true);
  expect(h.fake.rejections).toEqual([]);
  expect(h.fake.requests).toHaveLength(1);
  const request = h.fake.requests[0]!;
  expect(wellFormedThroughout(request)).toBe(true);
  return request;
}

/** A history's lines as the bot stores them: a user text turn (`U`), the answer, the run's tag. */
const run = (user: unknown, assistant: unknown, id: string) =>
  `U${JSON.stringify(user)}\n${JSON.stringify(assistant)}\n#${JSON.stringify({ id })}\n`;

it("a history line with a lone surrogate, read by the fast path or by the schema, is sent with U+FFFD", async () => {
  h = await startHarness();
  h.fake.enqueue(todoModel);
  const value =
    run({ role: "user", content: "hi \ud800" }, { role: "assistant", content: "hello" }, "1") +
    // Keys in another order than the schema's output: decoded by the schema, not taken as parsed.
    run(
      { content: [{ text: "and \udc00 this", type: "text" }], role: "user" },
      { role: "assistant", content: [{ type: "text", text: "noted \ud83d" }] },
      "2",
    );
  expect(value).toContain("\\ud800");
  await h.redis.set(conversationKeys({ platform: "console", chatId: "s1" }).history, value);
  const request = await ask(h, "s1", "what did I say?");
  expect(request.messages.slice(0, 4)).toEqual([
    { role: "user", content: "hi \ufffd" },
    { role: "assistant", content: "hello" },
    { role: "user", content: [{ type: "text", text: "and \ufffd this" }] },
    { role: "assistant", content: [{ type: "text", text: "noted \ufffd" }] },
  ]);
});

it("a summary with a lone surrogate is sent with U+FFFD", async () => {
  h = await startHarness();
  h.fake.enqueue(todoModel);
  const summary = { text: "we spoke of \ud800 things", summarized: 4, compactions: 1, at: 1 };
  await h.redis.set(
    conversationKeys({ platform: "console", chatId: "s2" }).history,
    `S${JSON.stringify(summary)}\n` +
      run({ role: "user", content: "hi" }, { role: "assistant", content: "hello" }, "1"),
  );
  const request = await ask(h, "s2", "go on");
  expect(JSON.stringify(request.messages[0])).toContain("we spoke of \ufffd things");
});

it("a persona with a lone surrogate is sent with U+FFFD", async () => {
  h = await startHarness();
  h.fake.enqueue(todoModel);
  await h.redis.set(
    conversationKeys({ platform: "console", chatId: "s3" }).settings,
    JSON.stringify({ persona: "Speak like a pirate \udc00 always" }),
  );
  const request = await ask(h, "s3", "ahoy");
  expect(JSON.stringify(request.system)).toContain("pirate \ufffd always");
});

it("memory with a lone surrogate is sent with U+FFFD", async () => {
  h = await startHarness({ env: { MEMORY: "on" }, tools: memoryTools });
  h.fake.enqueue(todoModel);
  const scope = { kind: "personal" as const, platform: "console" as const, userId: "user-s4" };
  await h.redis.set(
    memoryKey(scope),
    JSON.stringify({ files: { "/memories/tea\ud800.md": { text: "likes tea \ud800 a lot", updatedAt: 1 } } }),
  );
  const request = await ask(h, "s4", "what do I like?");
  expect(JSON.stringify(request)).toContain("likes tea \ufffd a lot");
  expect(JSON.stringify(request)).toContain("/memories/tea\ufffd.md");
});

it("a scheduled task whose instruction holds a lone surrogate runs with U+FFFD", async () => {
  h = await startHarness();
  h.fake.enqueue(todoModel);
  const owner = { platform: "console" as const, userId: "user-s5" };
  const dueAt = Date.now();
  const task = {
    id: 1,
    instruction: "summarise my day \ud800 please",
    at: dueAt,
    next: dueAt,
    timezone: "Asia/Taipei",
    chatId: "s5",
    chatKind: "dm",
    userName: "Alice",
    createdAt: dueAt - 60_000,
    failures: 0,
  };
  await h.redis.hset(taskKeys(owner).items, "1", JSON.stringify(task));
  const tasks = new Queue<TaskJobData>(TASKS_QUEUE, { connection: h.redis });
  try {
    await tasks.add("task", { ...owner, taskId: 1, dueAt }, { jobId: taskJobId(owner, 1, dueAt) });
    await waitFor(() => h!.output.answers().length === 1, 10_000, "the occurrence's answer");
  } finally {
    await tasks.close();
  }
  expect(h.fake.rejections).toEqual([]);
  expect(h.fake.requests).toHaveLength(1);
  expect(wellFormedThroughout(h.fake.requests[0])).toBe(true);
  expect(h.output.answers()[0]).toContain("echo: [scheduled task] summarise my day \ufffd please");
});
