/**
 * A dead worker's job is picked up by another worker within 15 s: a worker in its own process
 * takes a job, is killed with SIGKILL while the model call is in flight, and a second worker
 * (this process) takes the job over once BullMQ's stalled-job check sees the lost lock.
 */
import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { hang, type FakeRequest } from "../fakes/anthropic.js";
import { LOCK_DURATION_MS, STALLED_INTERVAL_MS } from "../../src/worker/worker.js";
import { spawnChildWorker } from "./children.js";
import { message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await h?.stop();
  h = undefined;
});

/** Starts `worker-child.ts` on the harness's Redis and fake model; resolves once it takes jobs. */
function startChildWorker(harness: Harness): Promise<ChildProcess> {
  return spawnChildWorker("test/worker/worker-child.ts", {
    REDIS_URL: harness.server.url,
    MODEL_URL: harness.fake.url,
  });
}

describe("a dead worker's job", () => {
  it("is taken over by another worker within 15 s of a SIGKILL", async () => {
    expect(LOCK_DURATION_MS + STALLED_INTERVAL_MS).toBeLessThan(15_000);
    h = await startHarness({ workers: 0 });
    child = await startChildWorker(h);
    h.fake.enqueue(hang(), todoModel);
    await h.queue.enqueue(message("k1", "1", "hello"));
    await waitFor(() => h!.fake.hanging() === 1, 30_000, "the child's model call");
    // the second worker is up before the kill, as in production (another replica)
    const second = await h.addWorker();
    let takenAt = 0;
    second.chats.on("active", () => (takenAt ||= Date.now()));
    child.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => h!.output.answers().length === 1, 30_000, "the answer from the second worker");
    const pickupMs = takenAt - killedAt;
    console.log(`dead worker's job picked up after ${pickupMs} ms (answer after ${Date.now() - killedAt} ms)`);
    expect(takenAt).toBeGreaterThan(0);
    expect(pickupMs).toBeLessThan(15_000);
    expect(h.output.answers()).toEqual(["echo: hello"]);
  }, 90_000);

  it("issue 38 (13): with three workers under load, the killed worker's message is taken over within 10 s", async () => {
    h = await startHarness({ workers: 0 });
    child = await startChildWorker(h);
    // Every later reply takes 300 ms before its first token: the survivors stay busy with other chats.
    const slow = (request: FakeRequest) => ({ ...todoModel(request), stream: { firstTokenMs: 300 } });
    h.fake.enqueue(hang(), ...Array.from({ length: 80 }, () => slow));
    await h.queue.enqueue(message("k3", "1", "hello under load"));
    await waitFor(() => h!.fake.hanging() === 1, 30_000, "the child's model call");
    // Two more workers (three in all), then a steady load on them: 6 chats, one message every 200 ms.
    let takenAt = 0;
    for (const worker of [await h.addWorker(), await h.addWorker()])
      worker.chats.on("active", (job) => {
        if (job.data.chatId === "k3") takenAt ||= Date.now();
      });
    let sent = 0;
    const load = setInterval(() => {
      sent += 1;
      void h!.queue.enqueue(message(`load${sent % 6}`, `m${sent}`, `load ${sent}`));
    }, 200);
    try {
      await new Promise((r) => setTimeout(r, 1000)); // the load is running when the worker dies
      child.kill("SIGKILL");
      const killedAt = Date.now();
      await waitFor(
        () => h!.output.answers().includes("echo: hello under load"),
        30_000,
        "the killed message's answer",
      );
      const recoveryMs = Date.now() - killedAt;
      const pickupMs = takenAt - killedAt;
      console.log(
        `killed worker's message taken over ${pickupMs} ms and answered ${recoveryMs} ms after the kill (three workers, under load)`,
      );
      // Taken over within the lock (6 s) and one stalled-job check (3 s) at most; answered soon after.
      expect(takenAt).toBeGreaterThan(0);
      expect(pickupMs).toBeLessThan(10_000);
      expect(recoveryMs).toBeLessThan(15_000);
    } finally {
      clearInterval(load);
    }
  }, 90_000);
});
