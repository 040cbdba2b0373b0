/**
 * A stop is not a crash. A worker whose graceful stop gives up on an answer still being written
 * (its wait ran out: `npm run chat`'s Ctrl-C, a `docker stop`) marks that answer interrupted
 * (`ChatWorker.interrupt`): the next start does it again without counting a crash toward the skip
 * after `CRASHES_BEFORE_SKIP` crashes. The tester's case, at its core: two stops that give up during
 * the same slow answer, and the third start answers the message (it used to skip it with the
 * apology). Real crashes (SIGKILL of a worker process) still count, with an interruption between them.
 *
 * Real parts: a test Redis, the real worker, SDK client and Discord outbound against the fake
 * Discord; the fake Messages API never answers the slow attempts (`hang`). The stop's wait is the
 * `timeoutMs` of `close` (50 ms, instead of 30 s); the time after a stop is moved, not waited for:
 * a job handed back comes due (`promote`), a dead worker's locks run out (`expireLocks`).
 */
import type { Queue } from "bullmq";
import { spawn, type ChildProcess, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { afterEach, expect, it } from "vitest";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { progressKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { hang, text, toolUse } from "../fakes/anthropic.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import { captureLogger } from "../helpers/log.js";
import { expireLocks } from "../helpers/jobs.js";
import { startDiscordWorker } from "./children.js";
import { waitFor } from "./harness.js";
import { discordDm as dm, useKillScene } from "./kill-scene.js";

const startScene = useKillScene();
const workers: { close(timeoutMs?: number): Promise<void> }[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const w of workers.splice(0)) await w.close(50);
});

const APOLOGY = "抱歉，處理這則訊息時出了問題，我先跳過它。可以換個方式再說一次嗎？";

/**
 * What the time after a stop does to the chat job, without waiting for it: a job the stop handed
 * back (delayed until its lock would have lapsed) comes due; one left active by a dead or stopped
 * worker has its lock run out, and the next stalled-job check hands it on (counting a stall).
 */
async function timePasses(redis: RedisClient, queue: Queue<IncomingMessage>): Promise<void> {
  for (const job of await queue.getJobs(["delayed"])) await job.promote();
  await expireLocks(redis, queue);
}

it("two stops that give up during the same answer: the third start answers the message, not the skip apology", async () => {
  const { model, discord, redis, queue, server } = await startScene();
  model.enqueue(hang(), hang(), text("慢慢想好的回答。"));
  const ann = { id: "704000000000000011", username: "ann" };
  const slow = dm(discord, ann, "請慢慢回答");
  await queue.enqueue(slow);
  const start = (log = captureLogger("debug")) => {
    const w = startDiscordWorker({ redisUrl: server.url, modelUrl: model.url, discord, log: log.log });
    workers.push(w);
    return { ...w, lines: log.lines };
  };

  const stopped: string[][] = [];
  for (const attempt of [1, 2]) {
    const w = start();
    await w.worker.waitUntilReady();
    await waitFor(() => model.requests.length >= attempt, 30_000, `attempt ${attempt} asking the model`);
    await w.close(50); // the stop's wait runs out: the answer is still being written
    stopped.push(w.lines);
    await timePasses(redis, queue.queue);
  }

  // Handed back twice, never stalled: BullMQ counted no stall, no failed attempt.
  const [waiting] = await queue.queue.getJobs(["wait", "delayed", "active"]);
  const counts = { stalled: waiting?.stalledCounter, made: waiting?.attemptsMade };

  const third = start();
  await third.worker.waitUntilReady();
  const inDm = () => discord.sent.filter((m) => m.channelId === slow.chatId).map((m) => String(m.content));
  await discord.waitFor(() => inDm().length >= 1, 30_000, "the answer");
  expect(inDm()).toEqual(["慢慢想好的回答。"]);
  expect(model.requests).toHaveLength(3);
  expect(third.lines.join("\n")).not.toContain("skipped with an apology");
  expect(counts).toEqual({ stalled: 0, made: 0 });
  for (const lines of stopped) expect(lines.join("\n")).toContain("the answer being written is interrupted");
  // The job finished, and the answer's crash marker went with it.
  await waitFor(
    async () => (await queue.queue.getJobCounts("active", "wait", "delayed")).active === 0,
    15_000,
    "the job finished",
  );
  expect(await redis.exists(progressKeys(slow, slow.messageId).crashes)).toBe(0);
}, 120_000);

it("real crashes still count: crashed, stopped, crashed again → skipped with the apology", async () => {
  const { model, discord, redis, queue, server, startChild, bury } = await startScene();
  // The first and third attempts crash their worker process (SIGKILL); the second is stopped mid-answer.
  model.enqueue(toolUse("crash_worker", {}), hang(), toolUse("crash_worker", {}), text("不該出現的回答"));
  const ann = { id: "704000000000000012", username: "ann" };
  const bomb = dm(discord, ann, "please crash the worker");
  await queue.enqueue(bomb);
  const died = (child: ChildProcess) =>
    waitFor(() => child.exitCode !== null || child.signalCode !== null, 45_000, "the child worker to die");

  const first = await startChild({ CRASH_TOOL: "1" });
  await died(first);
  expect(first.signalCode).toBe("SIGKILL");
  await bury(first);

  const stopped = startDiscordWorker({ redisUrl: server.url, modelUrl: model.url, discord });
  workers.push(stopped);
  await waitFor(() => model.requests.length >= 2, 30_000, "the second attempt asking the model");
  await stopped.close(50);
  await timePasses(redis, queue.queue);

  const third = await startChild({ CRASH_TOOL: "1" });
  await died(third);
  expect(third.signalCode).toBe("SIGKILL");
  await bury(third);
  expect(model.requests).toHaveLength(3);

  const { log, lines } = captureLogger("debug");
  const last = startDiscordWorker({ redisUrl: server.url, modelUrl: model.url, discord, log });
  workers.push(last);
  const inDm = () => discord.sent.filter((m) => m.channelId === bomb.chatId).map((m) => String(m.content));
  await discord.waitFor(() => inDm().length >= 1, 45_000, "the apology");
  expect(inDm()).toEqual([APOLOGY]);
  expect(model.requests).toHaveLength(3); // not run a fourth time
  expect(lines.join("\n")).toContain("crashed a worker 2 times");
}, 150_000);

/** `npm start` as a worker process (`ROLE=worker`) on the scene's Redis, model and Discord, its output piped; killed after the test. */
function startWorkerProcess(
  scene: Pick<Awaited<ReturnType<typeof startScene>>, "server" | "model" | "discord">,
  env: Record<string, string> = {},
): ChildProcessByStdio<null, Readable, Readable> {
  const { server, model, discord } = scene;
  const child = spawn(process.execPath, nodeArgs("src/main.ts"), {
    env: childEnv({
      LOG_LEVEL: "info",
      ROLE: "worker",
      REDIS_URL: server.url,
      ANTHROPIC_API_KEY: "sk-test-abcdefgh",
      ANTHROPIC_BASE_URL: model.url,
      DISCORD_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return child;
}

it("`npm start`'s forced exit (a second SIGTERM) marks the answer interrupted before it exits; the next worker answers it", async () => {
  const { model, discord, redis, queue, server } = await startScene();
  model.enqueue(hang(), text("第二次就答好了。"));
  const ann = { id: "704000000000000013", username: "ann" };
  const slow = dm(discord, ann, "請慢慢回答");
  await queue.enqueue(slow);
  const child = startWorkerProcess({ server, model, discord });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await waitFor(() => model.requests.length >= 1, 60_000, "the worker asking the model");
  child.kill("SIGTERM");
  await waitFor(() => output.includes("SIGTERM: stopping"), 10_000, "the first SIGTERM handled");
  await new Promise((r) => setTimeout(r, 1100)); // a repeat within 1 s is taken for a relayed copy
  child.kill("SIGTERM");
  expect(await exited).toBe(1);
  expect(output).toContain("SIGTERM again: exiting now");
  expect(output).toContain("the answer being written is interrupted");
  // Handed back (no stall to wait for), its fresh attempt's share taken back from the crash marker.
  const [job] = await queue.queue.getJobs(["delayed"]);
  expect({ stalled: job?.stalledCounter, made: job?.attemptsMade }).toEqual({ stalled: 0, made: 0 });
  expect(await redis.get(progressKeys(slow, slow.messageId).crashes)).toBe("-1");

  await timePasses(redis, queue.queue);
  const { log, lines } = captureLogger("debug");
  const next = startDiscordWorker({ redisUrl: server.url, modelUrl: model.url, discord, log });
  workers.push(next);
  const inDm = () => discord.sent.filter((m) => m.channelId === slow.chatId).map((m) => String(m.content));
  await discord.waitFor(() => inDm().length >= 1, 30_000, "the answer");
  expect(inDm()).toEqual(["第二次就答好了。"]);
  expect(lines.join("\n")).not.toContain("ended with its worker process");
}, 120_000);

it("a stop whose log reader is gone (`npm start | tee log`, Ctrl-C ends tee too) still marks the answer interrupted", async () => {
  const { model, discord, redis, queue, server } = await startScene();
  model.enqueue(hang(), text("第二次就答好了。"));
  const bea = { id: "704000000000000014", username: "bea" };
  const slow = dm(discord, bea, "請慢慢回答");
  await queue.enqueue(slow);
  const child = startWorkerProcess({ server, model, discord }, { SHUTDOWN_WAIT_SECONDS: "1" });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await waitFor(() => model.requests.length >= 1, 60_000, "the worker asking the model");
  // The reader of its output goes away (as `tee` does on the terminal's Ctrl-C): every later write meets EPIPE.
  child.stdout.destroy();
  child.stderr.destroy();
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
  const [job] = await queue.queue.getJobs(["delayed"]);
  expect({ stalled: job?.stalledCounter, made: job?.attemptsMade }).toEqual({ stalled: 0, made: 0 });
  expect(await redis.get(progressKeys(slow, slow.messageId).crashes)).toBe("-1");
}, 120_000);
