/**
 * Issue 15: a worker killed (SIGKILL) in the middle of a streamed answer. A worker in its own
 * process streams an answer into a Discord channel (a posted message, then edits); it is killed
 * while the model is still writing; a second worker takes the job over once BullMQ sees the lost
 * lock, finds the posted message's id with the message's progress in Redis, and edits that message
 * into the one complete answer: no second copy, nothing left half-written.
 */
import { expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { discordDm, useKillScene } from "./kill-scene.js";

const ANSWER = "這是一個完整的回答，會慢慢地被串流到頻道裡。".repeat(12);
const STREAM_ENV = { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" };

const startScene = useKillScene();

it("a worker killed mid-stream: the worker that takes the job over edits the partial message into the one complete answer", async () => {
  const { model, discord, redis, queue, startChild, startSecondWorker, bury } = await startScene();

  // The first model call writes slowly (the worker dies during it); the retried run's call is quick.
  model.enqueue(
    { ...text(ANSWER), stream: { chunkChars: 10, totalMs: 30_000 } },
    { ...text(ANSWER), stream: { chunkChars: 40, totalMs: 500 } },
  );
  const child = await startChild(STREAM_ENV);
  const ann = { id: "704000000000000001", username: "ann" };
  const incoming = discordDm(discord, ann, "說個長故事");
  await queue.enqueue(incoming);
  const partial = await discord.waitFor(
    () => discord.sent.find((s) => s.channelId === incoming.chatId),
    30_000,
    "the streamed message",
  );
  await discord.waitFor(() => discord.edits.some((e) => e.messageId === partial.id), 30_000, "an edit while streaming");
  await bury(child);
  const shownAtKill = String(partial.message.content);
  expect(ANSWER.startsWith(shownAtKill)).toBe(true);
  expect(shownAtKill.length).toBeLessThan(ANSWER.length);

  startSecondWorker(STREAM_ENV);
  await discord.waitFor(
    () => String(partial.message.content) === ANSWER,
    45_000,
    "the partial message edited into the complete answer",
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(discord.sent.filter((s) => s.channelId === incoming.chatId).map((s) => s.id)).toEqual([partial.id]);
  expect(discord.deleted).toEqual([]);
  expect(model.requests).toHaveLength(2);
  // The finish script deletes the list of streamed messages after the final edit: waited for (a loaded machine lags).
  for (let waited = 0; (await redis.keys("stream:*")).length > 0 && waited < 10_000; waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  expect(await redis.keys("stream:*")).toEqual([]);
}, 120_000);
