/**
 * A run resumed after an approval goes through the same answer pipeline as a fresh message, end to
 * end on Discord (the real discord.js adapter and worker parts, the fake gateway and REST, the
 * strict fake Messages API): a decision job whose delivery fails part-way sends only the chunks
 * not yet sent, a retried decision job appends its run to the history once, and a resumed tool
 * that hangs is ended by the answer's deadline with the short apology. (Streaming of a resumed
 * run: in `streaming-discord.test.ts`.)
 */
import { expect, it } from "vitest";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "../../adapters/discord/split.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { text, toolUse } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import { seedTodos, todoLines, waitingTool } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { keysEverywhere } from "../helpers/redis.js";
import { requestsFor } from "./scenarios-common.js";

const DEADLINE_SECONDS = 4;
const WAIT = 20_000;

/** A dangerous tool that waits until its call's abort signal fires. */
const { tool: waitForSignal, aborted } = waitingTool("e2e_wait_for_signal_dc");

let stack: Stack;
let redis: RedisClient;
useStack(
  { env: { ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS) }, tools: [waitForSignal] },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

function user(n: number, name: string): FakeUser {
  return { id: `70300000000000${String(n).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** What the bot posted in `channelId`, apart from `prompt`. */
function postedIn(channelId: string, prompt?: SentMessage): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId && m !== prompt);
}

/** Asks in the DM of `from`, waits for the approval prompt and presses its approve button. */
async function askAndApprove(
  from: FakeUser,
  question: string,
  beforePress: (channelId: string) => void = () => {},
): Promise<{ channel: string; prompt: SentMessage; pressedAt: number; messageId: string }> {
  const dc = stack.discord;
  const channel = dc.dmChannel(from);
  const asked = dc.sendUserMessage(from, question, { dm: true });
  const buttons = (m: SentMessage) =>
    ((dc.message(m.id)?.components ?? []) as { components: { custom_id: string }[] }[]).flatMap((r) => r.components);
  const prompt = await dc.waitFor(
    () => postedIn(channel).find((m) => buttons(m).length > 0),
    WAIT,
    "the approval prompt",
  );
  await dc.waitFor(() => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id), WAIT, "the bot's ✅/❌ reactions");
  beforePress(channel);
  const pressedAt = Date.now();
  dc.clickButton(from, prompt.id, buttons(prompt).find((b) => b.custom_id.endsWith(":y"))!.custom_id);
  return { channel, prompt, pressedAt, messageId: asked.id };
}

/** Log lines with `msg`. */
function logsSaying(msg: string): Record<string, unknown>[] {
  return stack.logs().filter((l) => l.msg === msg);
}

it(
  "a decision job failing after part of a multi-chunk answer was sent: the retry sends only " +
    "the rest, each chunk once, without asking the model again",
  async () => {
    const dc = stack.discord;
    const ivy = user(1, "Ivy");
    await seedTodos(redis, "discord", ivy.id, ["買牛奶"]);
    const story = ["一", "二", "三"].map((c) => c.repeat(1500)).join("\n\n");
    const chunks = splitMessage(story, DISCORD_MESSAGE_LIMIT);
    expect(chunks).toHaveLength(3);
    stack.model.enqueue(toolUse("delete_todo", { todo_id: 1 }), text(story));
    const retriesBefore = logsSaying("transient failure; the job will retry").length;
    const { channel, prompt } = await askAndApprove(ivy, "delete #1, then tell me a long story", (channelId) => {
      // The second chunk's create fails with a 500 on every attempt of the REST client (1 + 3 retries): the decision job fails part-way.
      dc.failNext({ method: "POST", path: new RegExp(`/channels/${channelId}/messages$`), after: 1 }, 500, 4);
    });
    await dc.waitFor(() => postedIn(channel, prompt).length >= 3, WAIT, "three chunks");
    await new Promise((r) => setTimeout(r, 500));
    expect(postedIn(channel, prompt).map((m) => m.content)).toEqual(chunks);
    // The answer's progress (sent count, start time, checkpoint, streamed messages) is gone once it is over.
    for (const kind of ["sent", "started", "run", "stream"])
      expect(await keysEverywhere(redis, `${kind}:{discord:${channel}}*`)).toEqual([]);
    expect(logsSaying("transient failure; the job will retry").length).toBe(retriesBefore + 1);
    expect(
      stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("tell me a long story")),
    ).toHaveLength(2);
    expect(await todoLines(redis, "discord", ivy.id)).toEqual([]);
    expect(dc.typing.filter((t) => t.channelId === channel && t.at >= prompt.at).length).toBeGreaterThan(0);
  },
);

it("a decision job retried after its history append appends the run once", async () => {
  const dc = stack.discord;
  const jun = user(2, "Jun");
  await seedTodos(redis, "discord", jun.id, ["退貨"]);
  stack.model.enqueue(toolUse("delete_todo", { todo_id: 1 }, { id: "toolu_once_dc" }), text("刪好了：#1 退貨"));
  const retriesBefore = logsSaying("transient failure; the job will retry").length;
  const { channel, prompt, messageId } = await askAndApprove(jun, "delete #1 (append once)", (channelId) => {
    // The answer's only chunk fails: the job fails after the run was appended to the history.
    dc.failNext({ method: "POST", path: new RegExp(`/channels/${channelId}/messages$`) }, 500, 4);
  });
  const answer = await dc.waitFor(
    () => postedIn(channel, prompt).find((m) => m.content === "刪好了：#1 退貨"),
    WAIT,
    "the answer",
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(postedIn(channel, prompt)).toEqual([answer]);
  expect(logsSaying("transient failure; the job will retry").length).toBe(retriesBefore + 1);
  const stored = (await redis.get(conversationKeys({ platform: "discord", chatId: channel }).history)) ?? "";
  expect(stored.split("\n").filter((l) => l.startsWith(`#{"id":${JSON.stringify(messageId)}`))).toHaveLength(1);
  expect(stored.split("toolu_once_dc").length - 1).toBe(2); // its tool_use and its tool_result, once each
  dc.sendUserMessage(jun, "thanks", { dm: true });
  await dc.waitFor(() => postedIn(channel).find((m) => m.content === "You said: thanks"), WAIT, "the next answer");
  expect(requestsFor(stack, "thanks")[0]!.messages.map((m) => m.role)).toEqual([
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
  ]);
});

it("a resumed run whose tool hangs is ended by the answer's deadline with the short apology, and the conversation moves on", async () => {
  const dc = stack.discord;
  const kai = user(3, "Kai");
  stack.model.enqueue(toolUse("e2e_wait_for_signal_dc", {}));
  const { channel, prompt, pressedAt, messageId } = await askAndApprove(kai, "wait for the signal");
  const apology = await dc.waitFor(() => postedIn(channel, prompt)[0], DEADLINE_SECONDS * 1000 + WAIT, "the apology");
  const took = apology.at - pressedAt;
  expect(apology.content).toBe("抱歉，這次回答花了太久時間，我先停下來了。請再問一次，或把問題說得簡單一點。");
  expect(took).toBeGreaterThanOrEqual(DEADLINE_SECONDS * 1000 - 500);
  // Only this deadline ends it before the default one (180 s); a loaded machine may deliver the apology late.
  expect(took).toBeLessThan(DEADLINE_SECONDS * 1000 + 15_000);
  expect(aborted.count).toBe(1);
  const stored = (await redis.get(conversationKeys({ platform: "discord", chatId: channel }).history)) ?? "";
  expect(stored).not.toContain(`"id":${JSON.stringify(messageId)}`);
  dc.sendUserMessage(kai, "are you back?", { dm: true });
  await dc.waitFor(
    () => postedIn(channel).find((m) => m.content === "You said: are you back?"),
    WAIT,
    "the next answer",
  );
  expect(requestsFor(stack, "are you back?")[0]!.messages).toHaveLength(1);
}, 60_000);
