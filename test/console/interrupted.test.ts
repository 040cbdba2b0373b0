/**
 * The tester's sequence in `npm run chat`, in a real terminal (a pseudo-terminal): during one slow
 * answer, a Ctrl-C whose shutdown wait runs out (`SHUTDOWN_WAIT_SECONDS=1` instead of 30), then on
 * the next start a forced double Ctrl-C during the redo; the third start answers the message. It
 * used to skip it with 「抱歉，處理這則訊息時出了問題，我先跳過它。」: each stop had counted as a crash
 * of the worker. The fake Messages API never answers the first two attempts (`hang`). The time
 * between the starts is moved, not waited for: the job handed back comes due (`promote`), a lock
 * left behind runs out (`expireLocks`), and so does the lease a forced exit leaves (30 s).
 */
import { Queue } from "bullmq";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { chatLeaseKey } from "../../adapters/console/lease.js";
import { CHATS_QUEUE } from "../../src/queue/keys.js";
import { connectRedis } from "../../src/redis.js";
import { hang, startFakeAnthropic, text } from "../fakes/anthropic.js";
import { expireLocks } from "../helpers/jobs.js";
import { startRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";
import { startTerminalChat, type TerminalChat } from "./terminal.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

it("Ctrl-C past the shutdown wait, then a forced double Ctrl-C during the redo: the third start answers the message", async () => {
  const server = await startRedis();
  cleanups.push(() => server.stop());
  const fake = await startFakeAnthropic();
  cleanups.push(() => fake.close());
  const redis = connectRedis(server.url, { maxRetriesPerRequest: 1 });
  cleanups.push(async () => redis.disconnect());
  const queue = new Queue(CHATS_QUEUE, { connection: redis, prefix: "console" });
  cleanups.push(() => queue.close());
  fake.enqueue(hang(), hang(), text("慢慢想好的回答。"));
  const env = {
    REDIS_URL: server.url,
    ANTHROPIC_API_KEY: "test-key",
    ANTHROPIC_BASE_URL: fake.url,
    BOT_LOCALE: "zh-TW",
    STREAMING: "on",
    STREAM_EDIT_INTERVAL_MS: "100",
    SHUTDOWN_WAIT_SECONDS: "1",
  };
  const start = async (): Promise<TerminalChat> => {
    const chat = await startTerminalChat({ env });
    cleanups.push(() => chat.close());
    await chat.waitForScreen((rows) => rows.some((r) => r.includes("開始對話")), "the chat to start", 90_000);
    return chat;
  };
  const logOf = (chat: TerminalChat) => readFile(path.join(chat.cwd, ".data", "chat.log"), "utf8").catch(() => "");
  /** What the time between two starts does: a job handed back comes due, a lock or lease left behind runs out. */
  const timePasses = async () => {
    for (const job of await queue.getJobs(["delayed"])) await job.promote();
    await expireLocks(redis, queue);
    await redis.del(chatLeaseKey({ platform: "console", chatId: "local" }));
  };

  const first = await start();
  first.type("請慢慢回答");
  await waitFor(() => fake.requests.length >= 1, 30_000, "the first attempt asking the model");
  first.keys("\x03"); // Ctrl-C; the answer is still being written when the 1 s wait runs out
  expect(await first.exited).toBe(0);
  expect(await logOf(first)).toContain("still running after 1 s");
  await timePasses();

  const second = await start();
  await waitFor(() => fake.requests.length >= 2, 30_000, "the redo asking the model");
  second.keys("\x03");
  await waitFor(async () => (await logOf(second)).includes("SIGINT: stopping"), 10_000, "the Ctrl-C handled");
  await new Promise((r) => setTimeout(r, 1100)); // a second Ctrl-C within 1 s is taken for a relayed copy
  second.keys("\x03"); // the user insists: a forced exit
  expect(await second.exited).toBe(1);
  expect(second.lines().join("\n")).toContain("立即結束。");
  await timePasses();

  const third = await start();
  await third.waitForScreen(
    (rows) => rows.some((r) => r.includes("慢慢想好的回答。") || r.includes("我先跳過它")),
    "the answer (or the skip apology)",
  );
  expect(third.lines().join("\n")).not.toContain("我先跳過它");
  expect(third.lines()).toContain("bot> 慢慢想好的回答。");
  expect(fake.requests).toHaveLength(3);
}, 180_000);
