/**
 * A run resumed after an approval goes through the same answer pipeline as a fresh message, end to
 * end on Telegram (the real grammy adapter and worker parts, the fake Bot API, the strict fake
 * Messages API): a decision job whose delivery fails part-way sends only the chunks not yet sent,
 * a retried decision job appends its run to the history once, and a resumed tool that hangs is
 * ended by the answer's deadline with the short apology. (Streaming of a resumed run: in
 * `streaming-telegram.test.ts`.)
 */
import type { Chat, User } from "grammy/types";
import { expect, it } from "vitest";
import { htmlToPlain, planChunks } from "../../adapters/telegram/split.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import { text, toolUse } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { seedTodos, todoLines, waitingTool } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { keysEverywhere } from "../helpers/redis.js";
import { requestsFor } from "./scenarios-common.js";

const DEADLINE_SECONDS = 4;
const WAIT = 20_000;

/** A dangerous tool that waits until its call's abort signal fires. */
const { tool: waitForSignal, aborted } = waitingTool("e2e_wait_for_signal");

let stack: Stack;
let redis: RedisClient;
useStack(
  { env: { ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS) }, tools: [waitForSignal] },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const dm = (id: number, name: string): { user: User; chat: Chat } => stack.telegram.dm(id, name);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** Asks in `chat`, waits for the approval prompt and presses its approve button. @returns when it was pressed (ms). */
async function askAndApprove(
  chat: Chat,
  from: User,
  question: string,
  beforePress: () => void = () => {},
): Promise<{ prompt: FakeSentMessage; pressedAt: number; messageId: string }> {
  const tg = stack.telegram;
  const asked = tg.sendUserMessage({ chat, from, text: question });
  const prompt = await tg.waitFor(
    () => sentTo(chat).find((m) => tg.buttons(m).length > 0),
    WAIT,
    "the approval prompt",
  );
  const yes = tg.approveData(prompt);
  beforePress();
  const pressedAt = Date.now();
  tg.pressButton({ from, message: prompt, data: yes });
  return { prompt, pressedAt, messageId: String(asked.message_id) };
}

/** Log lines of the worker part with `msg`. */
function logsSaying(msg: string): Record<string, unknown>[] {
  return stack.logs().filter((l) => l.msg === msg);
}

it(
  "a decision job failing after part of a multi-chunk answer was sent: the retry sends only " +
    "the rest, each chunk once, without asking the model again",
  async () => {
    const tg = stack.telegram;
    const { user, chat } = dm(7301, "Ivy");
    await seedTodos(redis, "telegram", "7301", ["買牛奶"]);
    const story = ["一", "二", "三"].map((c) => c.repeat(3000)).join("\n\n");
    const chunks = planChunks(story).map((c) => htmlToPlain(c.html));
    expect(chunks).toHaveLength(3);
    stack.model.enqueue(toolUse("delete_todo", { todo_id: 1 }), text(story));
    const retriesBefore = logsSaying("transient failure; the job will retry").length;
    const typingBefore = tg.chatActions.filter((a) => Number(a.chat_id) === chat.id).length;
    const { prompt } = await askAndApprove(chat, user, "delete #1, then tell me a long story", () => {
      // The second chunk's request is cut off (no answer, nothing sent): the decision job fails part-way.
      tg.dropNext("sendMessage", 1, { after: 1 });
    });
    await tg.waitFor(() => sentTo(chat).filter((m) => m !== prompt).length >= 3, WAIT, "three chunks");
    await new Promise((r) => setTimeout(r, 500));
    expect(
      sentTo(chat)
        .filter((m) => m !== prompt)
        .map((m) => m.text),
    ).toEqual(chunks);
    // The answer's progress (sent count, start time, checkpoint, streamed messages) is gone once it is over.
    for (const kind of ["sent", "started", "run", "stream"])
      expect(await keysEverywhere(redis, `${kind}:{telegram:${chat.id}}*`)).toEqual([]);
    expect(logsSaying("transient failure; the job will retry").length).toBe(retriesBefore + 1);
    // The answer was computed once: the model was asked for it once, the tool ran once.
    expect(
      stack.model.requests.filter((r) => JSON.stringify(r.messages).includes("tell me a long story")),
    ).toHaveLength(2);
    expect(await todoLines(redis, "telegram", "7301")).toEqual([]);
    // The resumed run showed the typing indicator, as a fresh answer does.
    expect(tg.chatActions.filter((a) => Number(a.chat_id) === chat.id && a.action === "typing").length).toBeGreaterThan(
      typingBefore,
    );
  },
);

it("a decision job retried after its history append appends the run once", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7302, "Jun");
  await seedTodos(redis, "telegram", "7302", ["退貨"]);
  stack.model.enqueue(toolUse("delete_todo", { todo_id: 1 }, { id: "toolu_once_tg" }), text("刪好了：#1 退貨"));
  const retriesBefore = logsSaying("transient failure; the job will retry").length;
  const { prompt, messageId } = await askAndApprove(chat, user, "delete #1 (append once)", () => {
    // The answer's only chunk is cut off: the job fails after the run was appended to the history.
    tg.dropNext("sendMessage", 1);
  });
  const answer = await tg.waitFor(
    () => sentTo(chat).find((m) => m !== prompt && m.text === "刪好了：#1 退貨"),
    WAIT,
    "the answer",
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(sentTo(chat).filter((m) => m !== prompt)).toEqual([answer]);
  expect(logsSaying("transient failure; the job will retry").length).toBe(retriesBefore + 1);
  const stored = (await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history)) ?? "";
  expect(stored.split("\n").filter((l) => l.startsWith(`#{"id":${JSON.stringify(messageId)}`))).toHaveLength(1);
  expect(stored.split("toolu_once_tg").length - 1).toBe(2); // its tool_use and its tool_result, once each
  // The next request carries the exchange once: the user turn, the call, its result, the answer, the new turn.
  tg.sendUserMessage({ chat, from: user, text: "thanks" });
  await tg.waitFor(() => sentTo(chat).find((m) => m.text === "You said: thanks"), WAIT, "the next answer");
  expect(requestsFor(stack, "thanks")[0]!.messages.map((m) => m.role)).toEqual([
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
  ]);
});

it("a resumed run whose tool hangs is ended by the answer's deadline with the short apology, and the conversation moves on", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(7303, "Kai");
  stack.model.enqueue(toolUse("e2e_wait_for_signal", {}));
  const { prompt, pressedAt, messageId } = await askAndApprove(chat, user, "wait for the signal");
  const apology = await tg.waitFor(
    () => sentTo(chat).find((m) => m !== prompt),
    DEADLINE_SECONDS * 1000 + WAIT,
    "the apology",
  );
  const took = apology.at - pressedAt;
  expect(apology.text).toBe("抱歉，這次回答花了太久時間，我先停下來了。請再問一次，或把問題說得簡單一點。");
  expect(took).toBeGreaterThanOrEqual(DEADLINE_SECONDS * 1000 - 500);
  // Only this deadline ends it before the default one (180 s); a loaded machine may deliver the apology late.
  expect(took).toBeLessThan(DEADLINE_SECONDS * 1000 + 15_000);
  expect(aborted.count).toBe(1);
  // Nothing of the stopped run is in the history; the next message is answered over a clean one.
  const stored = (await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history)) ?? "";
  expect(stored).not.toContain(`"id":${JSON.stringify(messageId)}`);
  tg.sendUserMessage({ chat, from: user, text: "are you back?" });
  await tg.waitFor(() => sentTo(chat).find((m) => m.text === "You said: are you back?"), WAIT, "the next answer");
  expect(requestsFor(stack, "are you back?")[0]!.messages).toHaveLength(1);
}, 60_000);
