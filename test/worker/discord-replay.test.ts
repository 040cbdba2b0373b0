/**
 * Issue 12, item 8: a worker killed after Discord accepted an answer but before the reply came
 * back. A worker in its own process delivers a one-part answer and a two-part answer; the fake
 * Discord accepts the one-part answer and the second part of the other (creates them, shows
 * them) but never confirms; the worker is killed with SIGKILL; a second worker takes both jobs
 * over and replays the deliveries with the same job-derived nonces, which the fake (like Discord
 * with `enforce_nonce`) answers with the messages it already created. Each answer appears once.
 */
import { expect, it } from "vitest";
import { text, type FakeRequest } from "../fakes/anthropic.js";
import { lastText, waitFor } from "./harness.js";
import { discordDm as dm, useKillScene } from "./kill-scene.js";

const LONG = `${"甲".repeat(1500)}\n\n${"乙".repeat(1500)}`;
const SHORT = "好的，明天早上八點提醒你。";

const startScene = useKillScene();

it("answers appear once after a kill between Discord accepting them and the worker hearing back (one-part and two-part)", async () => {
  const { model, discord, queue, startChild, startSecondWorker, bury } = await startScene({
    fallback: (r: FakeRequest) => text(lastText(r).includes("long") ? LONG : SHORT),
  });
  const child = await startChild();
  const ann = { id: "703000000000000001", username: "ann" };
  const ben = { id: "703000000000000002", username: "ben" };
  const long = dm(discord, ann, "a long answer please");
  const short = dm(discord, ben, "remind me tomorrow");
  discord.holdNextCreate({ channelId: long.chatId, after: 1 }); // the second part is accepted, never confirmed
  discord.holdNextCreate({ channelId: short.chatId }); // the only part is accepted, never confirmed
  await queue.enqueue(long);
  await queue.enqueue(short);
  await discord.waitFor(() => discord.heldCreates.length === 2, 30_000, "both answers accepted by Discord");
  const inChannel = (id: string) => discord.sent.filter((m) => m.channelId === id).map((m) => m.content);
  expect(inChannel(long.chatId)).toEqual(LONG.split("\n\n"));
  expect(inChannel(short.chatId)).toEqual([SHORT]);

  expect(await bury(child)).toHaveLength(2);
  const second = startSecondWorker();
  await second.worker.waitUntilReady();

  // The second worker takes both jobs over and replays exactly the unconfirmed parts.
  await discord.waitFor(
    () => discord.nonceReplays.length === 2,
    45_000,
    "both replays answered with the earlier messages",
  );
  await waitFor(
    async () => (await queue.queue.getJobCounts("active", "wait", "delayed")).active === 0,
    15_000,
    "the jobs finished",
  );
  expect(discord.nonceReplays.map((r) => r.messageId).sort()).toEqual(
    discord.heldCreates.map((h) => h.messageId).sort(),
  );
  expect(inChannel(long.chatId)).toEqual(LONG.split("\n\n"));
  expect(inChannel(short.chatId)).toEqual([SHORT]);
  expect(model.requests).toHaveLength(2); // the answers came from the history, not from a second model call
}, 120_000);
