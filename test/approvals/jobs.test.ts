/**
 * The approval flow through a real BullMQ `decisions` queue and Worker on a real Redis, processed
 * as the worker's own `decisions` Worker does (`answerDecision`): a click becomes one job even when
 * repeated, the worker resumes the run, and the delayed expiry job closes an undecided approval.
 */
import { Queue, QueueEvents, Worker, type JobsOptions } from "bullmq";
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ResumeAgent } from "../../src/approvals/flow.js";
import { decisionJobId, decisionQueueHooks, DECISIONS_QUEUE } from "../../src/approvals/jobs.js";
import { connectRedis } from "../../src/redis.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { RecordingOutbound } from "./recording-outbound.js";
import { harness, message, paused, toolRuns, type Harness } from "./support.js";

let server: TestRedis;
let redis: RedisClient;
let bull: RedisClient;
let queue: Queue;
let events: QueueEvents;
const workers: Worker[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  bull = connectRedis(server.url, { maxRetriesPerRequest: null });
  queue = new Queue(DECISIONS_QUEUE, { connection: bull });
  events = new QueueEvents(DECISIONS_QUEUE, { connection: { path: server.url } });
  await events.waitUntilReady();
});
afterAll(async () => {
  for (const w of workers) await w.close();
  await events.close();
  await queue.close();
  bull.disconnect();
  redis.disconnect();
  await server.stop();
});
beforeEach(async () => {
  for (const w of workers.splice(0)) await w.close();
  await queue.obliterate({ force: true });
  await redis.del("notes:telegram:u1", ...(await redis.keys("history:*")));
  await redis.hset("notes:telegram:u1", { "1": "買牛奶", "2": "繳電費" });
  toolRuns.count = 0;
});

const call2 = { toolUseId: "toolu_q", name: "approvals_test_delete_note", input: { note_id: 2 } };

/** A flow over the queue, and a Worker processing it. */
function wired(options: { timeoutMs?: number; resumeAgent?: ResumeAgent; jobOptions?: JobsOptions } = {}): Harness {
  const hooks = decisionQueueHooks(queue, options.jobOptions);
  const h = harness(redis, new RecordingOutbound(), {
    ...hooks,
    timeoutMs: options.timeoutMs,
    resumeAgent: options.resumeAgent,
  });
  workers.push(
    new Worker(DECISIONS_QUEUE, h.process, { connection: { path: server.url, maxRetriesPerRequest: null } }),
  );
  return h;
}

/** Waits until `condition()` holds, polling every 10 ms, up to `ms`. */
async function until(condition: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("decisions queue", () => {
  it("a click becomes one job (a double click and a repeated onDecision too), processed by a worker", async () => {
    const h = wired();
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    const clicks = await Promise.all([
      h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true }),
      h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true }),
      h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u2", approve: true }),
    ]);
    expect(
      clicks
        .slice(0, 2)
        .map((c) => c.status)
        .sort(),
    ).toEqual(["accepted", "already_decided"]);
    // u2's click: not theirs while open, or told it was decided once it is.
    expect(["not_requester", "already_decided"]).toContain(clicks[2]!.status);
    // The store retried onDecision (e.g. after a lost reply): still one job.
    await decisionQueueHooks(queue).onDecision({ approvalId: id, verdict: "approved" });

    const job = await queue.getJob(decisionJobId({ approvalId: id, verdict: "approved" }));
    expect(job?.data).toEqual({ approvalId: id, verdict: "approved" });
    expect(await job!.waitUntilFinished(events, 5000)).toEqual({ status: "answered", text: "Deleted note #2." });
    expect(toolRuns.count).toBe(1);
    expect(h.outbound.answers.map((a) => a.text)).toEqual(["Deleted note #2."]);
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("approved");
    expect(await queue.getJobCounts("completed", "waiting", "active")).toMatchObject({
      completed: 1,
      waiting: 0,
      active: 0,
    });
    // The expiry job is still scheduled; when it fires it finds nothing to do.
    const expiry = await queue.getJob(decisionJobId({ approvalId: id, verdict: "expired" }));
    expect(await expiry?.getState()).toBe("delayed");
    expect(expiry?.opts.delay).toBe(300_000);
  });

  it("the delayed expiry job closes an undecided approval as timed out", async () => {
    const h = wired({ timeoutMs: 300 });
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    const expiry = await queue.getJob(decisionJobId({ approvalId: id, verdict: "expired" }));
    expect(await expiry!.waitUntilFinished(events, 5000)).toEqual({
      status: "answered",
      text: "Not run: the user expired it.",
    });
    expect(h.outbound.prompts[0]!.closed?.outcome).toBe("expired");
    expect(await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: true })).toEqual({
      status: "not_found",
    });
    expect(toolRuns.count).toBe(0);
  });

  it("an invalid job is logged and skipped, not retried", async () => {
    wired();
    const job = await queue.add("decision", { approvalId: "../x", verdict: "approved" } as never);
    expect(await job.waitUntilFinished(events, 5000)).toEqual({ status: "skipped", reason: "invalid_job" });
    await until(async () => (await queue.getJobCounts("completed")).completed === 1);
  });

  it("when the last attempt fails, the requester gets a short message and the record is removed", async () => {
    let attempts = 0;
    const h = wired({
      jobOptions: { attempts: 2, backoff: { type: "fixed", delay: 10 } },
      resumeAgent: async () => {
        attempts++;
        // The model could not be reached (a transient failure: the job is retried until its last attempt).
        throw Object.assign(new Error("model unavailable"), { code: "ECONNRESET" });
      },
    });
    const id = await h.flow.begin(message, paused([call2]), h.outbound);
    await h.store.decide({ approvalId: id, platform: "telegram", deciderId: "u1", approve: false });
    const job = await queue.getJob(decisionJobId({ approvalId: id, verdict: "declined" }));
    await expect(job!.waitUntilFinished(events, 5000)).rejects.toThrow("model unavailable");
    expect(attempts).toBe(2);
    expect(h.outbound.answers.map((a) => a.text)).toEqual([
      "抱歉，處理確認時出了問題（刪除筆記 #2「繳電費」）。這個動作沒有執行，請稍後再試一次。",
    ]);
    expect(await h.store.get(id)).toBeUndefined();
    expect(await h.conversations()).toEqual([]);
  });
});
