/**
 * Issue 28: a memory write retried after a worker crash is applied once. A worker in its own
 * process runs a memory `insert` for a Discord DM, then is killed (SIGKILL) while its next model
 * call is in flight; the second worker takes the job over, resumes the run from the checkpoint
 * saved before the write, gets the write's recorded result (the `tool_use` id's exactly-once
 * record) instead of inserting again, and answers. The memory holds the line once.
 */
import { expect, it } from "vitest";
import { memoryKey, MemoryStore } from "../../src/memory/store.js";
import { hang, text, toolUse } from "../fakes/anthropic.js";
import { discordDm, useKillScene } from "./kill-scene.js";

const startScene = useKillScene();

it("a memory insert retried after the worker was killed is applied once", async () => {
  const { model, discord, redis, queue, startChild, startSecondWorker, bury } = await startScene();
  const ann = { id: "728000000000000001", username: "ann" };
  const scope = { kind: "personal" as const, platform: "discord" as const, userId: ann.id };
  await new MemoryStore(redis).update(scope, () => ({
    files: new Map([["/memories/notes.md", "住在新竹"]]),
    result: undefined,
  }));

  // The child inserts, then its next model call hangs until it is killed; the taken-over run's call answers.
  model.enqueue(
    toolUse(
      "memory",
      { command: "insert", path: "/memories/notes.md", insert_line: 1, insert_text: "媽媽生日在三月" },
      { id: "toolu_memory_once" },
    ),
    hang(),
    text("記好了。"),
  );
  const child = await startChild({ WITH_MEMORY: "1" });
  const incoming = discordDm(discord, ann, "記得媽媽生日在三月");
  await queue.enqueue(incoming);
  await discord.waitFor(() => model.hanging() === 1, 30_000, "the child's second model call");
  expect((await new MemoryStore(redis).read(scope))[0]!.text).toBe("住在新竹\n媽媽生日在三月");
  await bury(child);

  startSecondWorker({}, undefined, true);
  const answer = await discord.waitFor(
    () => discord.sent.find((s) => s.channelId === incoming.chatId),
    45_000,
    "the answer from the second worker",
  );
  expect(String(answer.payload.content)).toBe("記好了。\n\n📝 記住了：媽媽生日在三月");
  // Written once: the taken-over run got the recorded result of the same tool_use id.
  expect((await new MemoryStore(redis).read(scope)).map((f) => f.text)).toEqual(["住在新竹\n媽媽生日在三月"]);
  const last = model.requests.at(-1)!;
  const result = last.messages
    .flatMap((msg) => (Array.isArray(msg.content) ? msg.content : []))
    .find((b) => b.type === "tool_result");
  expect(result).toMatchObject({
    tool_use_id: "toolu_memory_once",
    content: "The file /memories/notes.md has been edited.",
  });
  expect(await redis.exists(memoryKey(scope))).toBe(1);
}, 120_000);
