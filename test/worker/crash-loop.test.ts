/**
 * Issue 26 item 2: a message whose processing kills the worker process is not handed to the next
 * worker again and again. A worker in its own process (the real worker, SDK client and Discord
 * outbound against the fake Discord, a real Redis) calls a tool that SIGKILLs its process; BullMQ's
 * stalled-job check hands the job to a second such child, which dies the same way; the third
 * worker skips the message with a short apology (logged with its conversation and message id,
 * never its content) and answers the chat's next message.
 */
import type { ChildProcess } from "node:child_process";
import { expect, it } from "vitest";
import { text, toolUse, type FakeRequest } from "../fakes/anthropic.js";
import { captureLogger } from "../helpers/log.js";
import { lastText, waitFor } from "./harness.js";
import { discordDm as dm, useKillScene } from "./kill-scene.js";

const startScene = useKillScene();

/** "crash" → the crash tool; a tool result or anything else → an echo of the last text. */
function crashingModel(request: FakeRequest) {
  const last = request.messages[request.messages.length - 1]!;
  const afterTool = Array.isArray(last.content) && last.content.some((b) => b.type === "tool_result");
  return !afterTool && lastText(request).includes("crash")
    ? toolUse("crash_worker", {})
    : text(`echo: ${lastText(request)}`);
}

async function died(child: ChildProcess): Promise<void> {
  await waitFor(() => child.exitCode !== null || child.signalCode !== null, 45_000, "the child worker to die");
}

it("a message that crashed a worker twice is skipped with an apology; the chat's next message is answered", async () => {
  const { model, discord, queue, startChild, startSecondWorker, bury } = await startScene({ fallback: crashingModel });
  const ann = { id: "704000000000000001", username: "ann" };
  const bomb = dm(discord, ann, "please crash the worker");
  const next = dm(discord, ann, "hello after that");
  await queue.enqueue(bomb);
  await queue.enqueue(next);

  const first = await startChild({ CRASH_TOOL: "1" });
  await died(first);
  expect(first.signalCode).toBe("SIGKILL");
  expect(await bury(first)).toHaveLength(1);
  const second = await startChild({ CRASH_TOOL: "1" });
  await died(second);
  expect(second.signalCode).toBe("SIGKILL");
  expect(await bury(second)).toHaveLength(1);
  const bombCalls = () => model.requests.filter((r) => lastText(r).includes("please crash")).length;
  expect(bombCalls()).toBe(2);

  const { log, lines } = captureLogger("debug");
  const third = startSecondWorker(undefined, log);
  await third.worker.waitUntilReady();
  const inDm = () => discord.sent.filter((m) => m.channelId === bomb.chatId).map((m) => String(m.content));
  await discord.waitFor(() => inDm().length >= 2, 45_000, "the apology and the next answer");
  expect(inDm()).toEqual([
    "抱歉，處理這則訊息時出了問題，我先跳過它。可以換個方式再說一次嗎？",
    "echo: hello after that",
  ]);
  expect(bombCalls()).toBe(2); // the third worker did not run it again

  const skipped = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => String(l.msg).includes("crashed a worker 2 times"));
  expect(skipped).toMatchObject({ chat: `discord:${bomb.chatId}`, messageId: bomb.messageId, crashes: 2 });
  expect(lines.join("\n")).not.toContain("please crash");
  await waitFor(
    async () => (await queue.queue.getJobCounts("active", "wait", "delayed")).active === 0,
    15_000,
    "the job finished",
  );
}, 150_000);
