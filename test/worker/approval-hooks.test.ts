import { afterEach, expect, it } from "vitest";
import { Queue } from "bullmq";
import { DECISIONS_QUEUE } from "../../src/queue/keys.js";
import type { PausedOutcome } from "../../src/agent/contract.js";
import { message, startHarness, todoModel, waitFor, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

it("without an approval store, a dangerous call is not run, the user is told, and the history stays valid", async () => {
  h = await startHarness();
  h.fake.enqueue(todoModel, todoModel, todoModel, todoModel, todoModel);
  await h.queue.enqueue(message("a1", "1", "add todo milk"));
  await h.queue.enqueue(message("a1", "2", "delete todo 1"));
  await h.queue.enqueue(message("a1", "3", "list todos"));
  await waitFor(() => h!.output.answers().length === 3);
  expect(h.output.answers()[1]).toBe("這個動作（delete_todo）需要你確認，但目前無法進行確認，所以沒有執行。");
  expect(h.output.answers()[2]).toBe("ok: #1 milk"); // not deleted
  expect(h.fake.rejections).toEqual([]);
  // the paused run left nothing in the history: run 1 and run 3 only
  const history = await h.history.load({ platform: "console", chatId: "a1" });
  expect(history).toHaveLength(8);
});

it("calls the approval flow: supersede before each new message, begin on a pause; decisions do not wait behind the chat", async () => {
  const calls: string[] = [];
  const begun: PausedOutcome[] = [];
  h = await startHarness({
    env: { WORKER_CONCURRENCY: "1" },
    // The worker's real flow, its entry points watched.
    approvals: (flow) => {
      const begin = flow.begin.bind(flow);
      const supersede = flow.supersedePending.bind(flow);
      const take = flow.takeDecision.bind(flow);
      flow.begin = async (msg, outcome, outbound) => {
        calls.push(`begin:${msg.messageId}`);
        begun.push(outcome);
        return begin(msg, outcome, outbound);
      };
      flow.supersedePending = async (chat, outbound) => {
        calls.push(`supersede:${chat.chatId}`);
        return supersede(chat, outbound);
      };
      flow.takeDecision = async (data) => {
        calls.push(`decision:${(data as { approvalId: string }).approvalId}`);
        return take(data);
      };
    },
  });
  h.fake.enqueue(todoModel, todoModel, todoModel);
  await h.queue.enqueue(message("b1", "1", "delete todo 2"));
  await waitFor(() => begun.length === 1);
  expect(begun[0]!.call.name).toBe("delete_todo");
  expect(begun[0]!.call.input).toEqual({ number: 2 });
  expect(calls).toEqual(["supersede:b1", "begin:1"]);

  // A slow chat job occupies the only chat slot; a decision still goes through at once.
  await h.queue.enqueue(message("b1", "2", "add todo eggs slow 1500"));
  await waitFor(() => calls.length === 3);
  const decisions = new Queue(DECISIONS_QUEUE, { connection: h.redis });
  await decisions.add("decision", { approvalId: "ap-9" }, { jobId: "ap-9" });
  await waitFor(() => calls.includes("decision:ap-9"), 1000, "the decision while the chat job runs");
  // The chat job is still running: besides the prompt and its closing as superseded, nothing was answered yet.
  const answers = () => h!.output.answers().filter((a) => !/^(⚠️|↩️)/.test(a));
  expect(answers()).toEqual([]);
  await waitFor(() => answers().length === 1, 5000);
  expect(calls).toEqual(["supersede:b1", "begin:1", "supersede:b1", "decision:ap-9"]);
  await decisions.close();
});
