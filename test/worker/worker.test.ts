import { afterEach, describe, expect, it } from "vitest";
import { speakerLabel } from "../../src/prompts.js";
import { conversationKeys, progressKeys } from "../../src/queue/keys.js";
import { TRACE_TTL_SECONDS, TraceStore, traceKey } from "../../src/trace/store.js";
import { captureLogger } from "../helpers/log.js";
import { badRequest } from "./model-errors.js";
import { overloaded, text, toolUse } from "../fakes/anthropic.js";
import { TRACE_RENEW_MS, TraceRenewals } from "../../src/worker/worker.js";
import { lastText, message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const model = (n: number) => Array.from({ length: n }, () => todoModel);

describe("worker", () => {
  it("keeps each chat in order with two workers and concurrency > 1, and loses no history update", async () => {
    h = await startHarness({ workers: 2, env: { WORKER_CONCURRENCY: "3" } });
    const chats = ["c1", "c2", "c3", "c4", "c5", "c6"];
    h.fake.enqueue(...model(chats.length * 4));
    const label = (c: string, userName: string) => speakerLabel({ platform: "console", userId: `user-${c}`, userName });
    // In each chat: "add todo" (its tool stays busy 1 s), then "list todos" once the first message
    // is being answered (its model call made: waited for, not a fixed time, which a loaded machine
    // could pass before the first message was even taken, so both would wait in the inbox together).
    await Promise.all(
      chats.map((c) =>
        h!.queue.enqueue(
          message(c, "1", `add todo milk-${c} slow 1000`, { chatKind: "group", userName: `Alice-${c}` }),
        ),
      ),
    );
    await waitFor(
      () =>
        chats.every((c) =>
          h!.fake.requests.some((r) => lastText(r) === `${label(c, `Alice-${c}`)} add todo milk-${c} slow 1000`),
        ),
      15_000,
      "the first message of each chat at the model",
    );
    await Promise.all(
      chats.map((c) => h!.queue.enqueue(message(c, "2", "list todos", { chatKind: "group", userName: `Bob-${c}` }))),
    );
    await waitFor(() => h!.output.answers().length === chats.length * 2, 15_000, "answers");

    expect(h.fake.rejections).toEqual([]);
    for (const c of chats) {
      // The second message's first model call carries the whole first exchange, with speaker names.
      const second = h.fake.requests.find((r) => lastText(r) === `${label(c, `Bob-${c}`)} list todos`)!;
      expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
      expect(second.messages[0]!.content).toBe(`${label(c, `Alice-${c}`)} add todo milk-${c} slow 1000`);
      expect(h.output.answers()).toContain(`ok: #1 milk-${c}`);
      expect((await h.history.read({ platform: "console", chatId: c })).stored).toBe(8);
      // The chat's job finishes (its finish script drops the scheduled mark) just after its last answer went out.
      await waitFor(
        async () => (await h!.redis.exists(conversationKeys({ platform: "console", chatId: c }).scheduled)) === 0,
        10_000,
        `chat ${c}'s scheduled mark to be dropped`,
      );
    }
    // both workers took part
    const counts = await Promise.all(h.workers.map((w) => w.chats.isRunning()));
    expect(counts).toEqual([true, true]);
  });

  it("processes a redelivered message once", async () => {
    h = await startHarness();
    h.fake.enqueue(...model(1));
    const m = message("r1", "42", "hello");
    expect(await h.queue.enqueue(m)).toBe("scheduled");
    expect(await h.queue.enqueue(m)).toBe("duplicate");
    await waitFor(() => h!.output.answers().length === 1);
    expect(await h.queue.enqueue(m)).toBe("duplicate");
    await new Promise((r) => setTimeout(r, 300));
    expect(h.output.answers()).toEqual(["echo: hello"]);
    expect(h.fake.requests).toHaveLength(1);
  });

  it("retries a failed send without calling the model again or resending sent chunks", async () => {
    h = await startHarness({ chunkChars: 20 });
    const long = "first part here\n\nsecond part here\n\nthird part here";
    h.fake.enqueue(text(long));
    h.outbound.failAfterChunk = 0;
    await h.queue.enqueue(message("s1", "1", "tell me three things"));
    await waitFor(() => h!.output.answers().length === 3, 15_000, "three chunks");
    expect(h.output.answers()).toEqual(["first part here", "second part here", "third part here"]);
    expect(h.fake.requests).toHaveLength(1);
    const history = await h.history.load({ platform: "console", chatId: "s1" });
    expect(history).toHaveLength(2);
    expect(h.outbound.typing).toBeGreaterThanOrEqual(1);
    // the answer is kept in the history, tagged with the message id; once the message is popped its sent count is gone
    expect((await h.history.read({ platform: "console", chatId: "s1" }, "1")).answer).toBe(long);
    const keys = progressKeys({ platform: "console", chatId: "s1" }, "1");
    await waitFor(async () => (await h!.redis.exists(keys.sent)) === 0, 2000, "the sent count to be deleted");
  });

  it("writes the run's trace with the pop, counts no chunk of a one-chunk answer, and tags the answer in the history", async () => {
    h = await startHarness({ traces: true });
    h.outbound.singleChunkUnits = 2000;
    h.fake.enqueue(...model(2));
    await h.queue.enqueue(message("tr1", "1", "hello"));
    await h.queue.enqueue(message("tr1", "2", "again"));
    await waitFor(() => h!.output.answers().length === 2);
    const chat = { platform: "console" as const, chatId: "tr1" };
    const traces = new TraceStore(h.redis);
    await waitFor(async () => (await traces.runs(chat)).length === 2, 2000, "both traces");
    const runs = await traces.runs(chat);
    expect(runs.map((r) => r.runId)).toEqual(["console:tr1:2", "console:tr1:1"]);
    expect(runs[0]!.events.map((e) => e.type)).toContain("final_answer");
    expect(await h.redis.ttl(traceKey(chat))).toBeGreaterThan(TRACE_TTL_SECONDS - 10);
    // no sent count was written (the finish script would not have deleted it)
    expect(await h.redis.exists(progressKeys(chat, "1").sent, progressKeys(chat, "2").sent)).toBe(0);
    expect((await h.history.read(chat, "1")).answer).toBe("echo: hello");
    expect((await h.history.read(chat, "2")).answer).toBe("echo: again");
    // the chat is idle: its inbox is gone; besides the dedupe marks only history and trace are left
    expect(await h.redis.exists(conversationKeys(chat).inbox)).toBe(0);
    const left = (await h.redis.keys("*{console:tr1}*")).filter((k) => !k.startsWith("seen:"));
    expect(left.sort()).toEqual([conversationKeys(chat).history, traceKey(chat)].sort());
    // Within the hour the worker does not renew the list's expiry again (TraceRenewals): a third run leaves it.
    await h.redis.expire(traceKey(chat), 1000);
    h.fake.enqueue(...model(1));
    await h.queue.enqueue(message("tr1", "3", "once more"));
    await waitFor(async () => (await traces.runs(chat)).length === 3, 15_000, "the third trace");
    expect(await h.redis.ttl(traceKey(chat))).toBeLessThanOrEqual(1000);
  });

  it("TraceRenewals: a chat's trace expiry is renewed on its first run here, then at most once an hour", () => {
    const renewals = new TraceRenewals();
    const t0 = 1_700_000_000_000;
    expect(renewals.due("trace:{a}", t0)).toBe(true);
    expect(renewals.due("trace:{a}", t0 + 1)).toBe(false);
    expect(renewals.due("trace:{b}", t0 + 1)).toBe(true);
    expect(renewals.due("trace:{a}", t0 + TRACE_RENEW_MS - 1)).toBe(false);
    expect(renewals.due("trace:{a}", t0 + TRACE_RENEW_MS)).toBe(true);
    // A clock that went back renews rather than trusting the note.
    expect(renewals.due("trace:{a}", t0)).toBe(true);
  });

  it("a retried job finds a one-chunk answer in the history and does not call the model again", async () => {
    h = await startHarness();
    h.outbound.singleChunkUnits = 2000;
    h.fake.enqueue(...model(1));
    // the send fails (a network error before the chunk went out): the job retries
    h.outbound.failBeforeSend = 1;
    await h.queue.enqueue(message("rt1", "1", "hello"));
    await waitFor(() => h!.output.answers().length === 1, 15_000, "the answer after the retry");
    expect(h.output.answers()).toEqual(["echo: hello"]);
    expect(h.fake.requests).toHaveLength(1);
    expect((await h.history.read({ platform: "console", chatId: "rt1" })).stored).toBe(2);
  });

  it("a refused message is not answered twice when its job is retried, and stores no message", async () => {
    h = await startHarness();
    h.outbound.singleChunkUnits = 2000;
    h.fake.enqueue({ content: [], stop_reason: "refusal" }, ...model(1));
    h.outbound.failBeforeSend = 1; // the apology's first send fails: the job retries
    await h.queue.enqueue(message("rf1", "1", "something bad"));
    await waitFor(() => h!.output.answers().length === 1, 15_000, "the apology after the retry");
    await h.queue.enqueue(message("rf1", "2", "hello"));
    await waitFor(() => h!.output.answers().length === 2, 15_000, "the next answer");
    expect(h.output.answers()[0]).toMatch(/無法協助/);
    expect(h.output.answers()[1]).toBe("echo: hello");
    expect(h.fake.requests).toHaveLength(2); // the retry did not ask the model again
    expect(h.fake.requests[1]!.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "hello", cache_control: { type: "ephemeral" } }] },
    ]);
    const chat = { platform: "console" as const, chatId: "rf1" };
    expect((await h.history.read(chat)).stored).toBe(2);
    expect((await h.history.read(chat, "1")).answer).toMatch(/無法協助/);
  });

  it("a 529 after add_todo ran is retried within the run: no second todo, and the model gets the same result", async () => {
    h = await startHarness();
    h.fake.enqueue(toolUse("add_todo", { item: "milk" }), overloaded(), todoModel);
    await h.queue.enqueue(message("w1", "1", "add todo milk"));
    await waitFor(() => h!.output.answers().length === 1, 15_000, "the answer after the retry");
    expect(h.output.answers()).toEqual(["ok: added #1: milk"]);
    expect(await h.redis.lrange("test-todos:console:user-w1", 0, -1)).toEqual(["milk"]);
    // the retry did not ask the model for the turn again: it sent the same tool_use id with the same result
    expect(h.fake.requests).toHaveLength(3);
    const [, failed, retried] = h.fake.requests;
    expect(retried!.messages).toEqual(failed!.messages);
    expect(lastText(retried!)).toBe("added #1: milk");
    const chat = { platform: "console" as const, chatId: "w1" };
    expect((await h.history.load(chat)).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    // the checkpoint is gone once the answer is in the history
    expect(await h.redis.exists(progressKeys(chat, "1").run)).toBe(0);
  });

  it("saves nothing for a read-only tool: a 529 after it is retried within the run, without a checkpoint or a ledger record", async () => {
    h = await startHarness();
    h.fake.enqueue(toolUse("list_todos", {}), overloaded(), todoModel);
    await h.redis.rpush("test-todos:console:user-w2", "eggs");
    await h.queue.enqueue(message("w2", "1", "list todos"));
    await waitFor(() => h!.output.answers().length === 1, 15_000, "the answer after the retry");
    expect(h.output.answers()).toEqual(["ok: #1 eggs"]);
    expect(h.fake.requests).toHaveLength(3);
    expect(h.fake.requests[2]!.messages).toEqual(h.fake.requests[1]!.messages);
    expect(await h.redis.keys("toolcall:*")).toEqual([]);
    expect(await h.redis.exists(progressKeys({ platform: "console", chatId: "w2" }, "1").run)).toBe(0);
  });

  it("apologises when the model fails for good, consumes the message, and answers the next one", async () => {
    h = await startHarness();
    h.fake.enqueue(badRequest(), ...model(1));
    await h.queue.enqueue(message("f1", "1", "first"));
    await h.queue.enqueue(message("f1", "2", "second"));
    await waitFor(() => h!.output.answers().length === 2);
    expect(h.output.answers()[0]).toMatch(/^抱歉/);
    expect(h.output.answers()[1]).toBe("echo: second");
    // the failed message left no trace in the history; the second run starts it
    const history = await h.history.load({ platform: "console", chatId: "f1" });
    expect(history.map((m) => m.content)).toEqual(["second", [{ type: "text", text: "echo: second" }]]);
  });

  it("retries a transient model failure (529) and then answers", async () => {
    h = await startHarness();
    h.fake.enqueue(overloaded(), ...model(1));
    await h.queue.enqueue(message("t1", "1", "are you there"));
    await waitFor(() => h!.output.answers().length === 1, 15_000);
    expect(h.output.answers()).toEqual(["echo: are you there"]);
    expect(h.fake.requests).toHaveLength(2);
  });

  it("finishes the job in flight on shutdown, and a new worker takes the rest", async () => {
    h = await startHarness();
    h.fake.enqueue(...model(4));
    await h.queue.enqueue(message("d1", "1", "add todo eggs slow 500"));
    await waitFor(() => h!.fake.requests.length === 1, 5000, "the first model call");
    const closing = h.workers[0]!.close();
    await h.queue.enqueue(message("d1", "2", "list todos"));
    await closing;
    expect(h.outbound.typing).toBeGreaterThanOrEqual(5); // refreshed every 50 ms in this harness while the 500 ms tool ran
    // the job in flight finished; the chat's next message was handed back, not taken
    expect(h.output.answers()).toEqual(["ok: added #1: eggs"]);
    await h.addWorker();
    await waitFor(() => h!.output.answers().length === 2);
    expect(h.output.answers()[1]).toBe("ok: #1 eggs");
  });

  it("a shutdown outlasting its grace says an answer is still running (not that Redis is down), and a new worker answers it", async () => {
    const { log, lines } = captureLogger("debug");
    h = await startHarness({ log });
    h.fake.enqueue(...model(4));
    await h.queue.enqueue(message("g1", "1", "add todo milk slow 1500"));
    await waitFor(() => h!.fake.requests.length === 1, 5000, "the first model call");
    await h.workers[0]!.close(300);
    const closed = h.workers.shift()!;
    const records = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    const shutdown = records().filter((r) => r.msg.startsWith("shutdown:"));
    expect(shutdown).toEqual([
      {
        ...shutdown[0],
        level: 40,
        msg:
          "shutdown: 1 answer is still running after 0.3 s; stopping it now: what is cut short goes back to the queue " +
          "in 6 s, marked interrupted (not a crash), and is done again by the next worker to start, or by another one running now",
      },
    ]);
    expect(closed.chats.isRunning()).toBe(false);
    // Handed back: a new worker writes the answer.
    await h.addWorker();
    await waitFor(() => h!.output.answers().includes("ok: added #1: milk"), 20_000, "the answer, done again");
  });

  it("fails a malformed job without retrying it", async () => {
    h = await startHarness();
    const job = await h.queue.queue.add("chat", { platform: "fax", chatId: "" } as never, {
      attempts: 5,
      jobId: "bad-1",
    });
    await waitFor(async () => (await job.isFailed()) === true, 5000, "the job to fail");
    const failed = await h.queue.queue.getJob("bad-1");
    expect(failed!.attemptsMade).toBe(1);
    expect(failed!.failedReason).toMatch(/malformed chat job/);
  });

  it("survives a Redis outage: the producer says try again, then both sides carry on", async () => {
    h = await startHarness();
    h.fake.enqueue(...model(2));
    await h.queue.enqueue(message("o1", "1", "before"));
    await waitFor(() => h!.output.answers().length === 1);
    const outage = h.server.restart(500);
    await new Promise((r) => setTimeout(r, 100));
    await expect(h.queue.enqueue(message("o1", "2", "during"))).rejects.toThrow(/could not/);
    await outage;
    await waitFor(
      async () => {
        try {
          await h!.queue.enqueue(message("o1", "3", "after"));
          return true;
        } catch {
          return false;
        }
      },
      10_000,
      "the producer to reconnect",
    );
    await waitFor(() => h!.output.answers().length === 2, 15_000, "the answer after the outage");
    expect(h.output.answers()[1]).toBe("echo: after");
  });
});
