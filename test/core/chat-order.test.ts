/**
 * `ChatOrder` (src/chat-order.ts), the per-chat chains of the LINE and Telegram adapters: one
 * chat's tasks one after another in the order queued, other chats side by side, a failed task not
 * breaking its chain, `busy` and `idle`. Injected pacing: each task waits for a deferred the test
 * resolves; no clock.
 */
import { describe, expect, it } from "vitest";
import { ChatOrder } from "../../src/chat-order.js";

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } {
  let resolve = () => {};
  let reject: (error: Error) => void = () => {};
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every settled promise's reactions run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ChatOrder", () => {
  it("runs one chat's tasks in the order queued, each after the one before ended; other chats run meanwhile", async () => {
    const order = new ChatOrder();
    const log: string[] = [];
    const slow = deferred();
    const first = order.run("a", async () => {
      log.push("a1 start");
      await slow.promise;
      log.push("a1 end");
      return 1;
    });
    const second = order.run("a", async () => {
      log.push("a2");
      return 2;
    });
    const other = order.run("b", async () => {
      log.push("b1");
      return 3;
    });
    expect(await other).toBe(3);
    await flush();
    expect(log).toEqual(["a1 start", "b1"]);
    expect(order.busy("a")).toBe(true);
    expect(order.busy("b")).toBe(false);
    slow.resolve();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(log).toEqual(["a1 start", "b1", "a1 end", "a2"]);
    expect(order.busy("a")).toBe(false);
  });

  it("a failed task rejects its own promise only: the chat's next task runs", async () => {
    const order = new ChatOrder();
    const failed = order.run("a", () => Promise.reject(new Error("boom")));
    const thrown = order.run("a", () => {
      throw new Error("thrown at once");
    });
    const next = order.run("a", async () => "ran");
    await expect(failed).rejects.toThrow("boom");
    await expect(thrown).rejects.toThrow("thrown at once");
    expect(await next).toBe("ran");
    expect(order.busy("a")).toBe(false);
  });

  it("is not busy any more by the time an awaited task's caller resumes", async () => {
    const order = new ChatOrder();
    await order.run("a", async () => undefined);
    expect(order.busy("a")).toBe(false);
  });

  it("idle() waits for every chain, also for tasks queued while it waits, and never rejects", async () => {
    const order = new ChatOrder();
    const a = deferred();
    const b = deferred();
    const later = deferred();
    void order.run("a", () => a.promise).catch(() => {});
    void order.run("b", () => b.promise);
    let idle = false;
    const waiting = order.idle().then(() => (idle = true));
    a.reject(new Error("failed"));
    await flush();
    expect(idle).toBe(false);
    void order.run("c", () => later.promise);
    b.resolve();
    await flush();
    expect(idle).toBe(false);
    later.resolve();
    await waiting;
    expect(idle).toBe(true);
    expect(await order.idle()).toBeUndefined();
  });
});
