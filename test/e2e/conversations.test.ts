/**
 * Issue 12, item 1, end to end: a conversation is a chat plus its Telegram topic. The real
 * grammy and discord.js clients against the strict fakes (forum topics with `is_topic_message`
 * and `message_thread_id`; a send into a topic the chat does not have is refused), the worker,
 * real Redis and the scripted model. Each scenario has its own group and people.
 */
import type { RedisClient } from "../../src/redis.js";
import type { Chat, Message, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { quietWindow, seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, requestsFor, textsOf } from "./scenarios-common.js";
import { approvalsModel } from "./scripted-approvals.js";

let stack: Stack;
let redis: RedisClient;
// The bot has topics enabled in private chats (Bot API 9.3), so private-chat topics can be tried too.
useStack({ model: approvalsModel, telegram: { bot: { has_topics_enabled: true } as never } }, (started, connection) => {
  stack = started;
  redis = connection;
});

/** A forum supergroup with topics 11 and 22 (`createTopic`). */
function forum(id: number): Chat {
  const tg = stack.telegram;
  const chat = tg.group(id, "讀書會", true);
  tg.createTopic(chat, "數學", 11);
  tg.createTopic(chat, "英文", 22);
  return chat;
}

/** The bot's messages that reply to `message` (answers, hints and approval prompts), in order. */
function repliesTo(message: Message): FakeSentMessage[] {
  return stack.telegram.sent.filter(
    (m) =>
      m.chatId === message.chat.id &&
      (m.payload.reply_parameters as { message_id?: number } | undefined)?.message_id === message.message_id,
  );
}

/** `from` mentions the bot with `text` in `chat` (in `topic` when given); resolves with the message and the bot's first reply to it. */
async function ask(
  chat: Chat,
  topic: number | undefined,
  from: User,
  text: string,
): Promise<{ message: Message; answer: FakeSentMessage }> {
  const tg = stack.telegram;
  const message = tg.sendUserMessage({
    chat,
    from,
    text: `@${tg.bot.username} ${text}`,
    ...(topic ? { message_thread_id: topic } : {}),
  });
  const answer = await tg.waitFor(() => repliesTo(message)[0], ANSWER_TIMEOUT_MS, `an answer to "${text}"`);
  return { message, answer };
}

/** The one model request whose last user turn contains `fragment`. */
function requestFor(fragment: string) {
  const found = requestsFor(stack, fragment);
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** Every text of a request's messages, joined (to check what a request did not carry). */
function everything(request: ReturnType<typeof requestFor>): string {
  return JSON.stringify(request.messages);
}

/** The approval prompt among the replies to `message`. */
async function promptFor(message: Message): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () => repliesTo(message).find((m) => tg.buttons(m).length > 0),
    ANSWER_TIMEOUT_MS,
    "the approval prompt",
  );
}

function approveData(prompt: FakeSentMessage): string {
  return stack.telegram.approveData(prompt);
}

describe("Telegram forum topics are conversations of their own", () => {
  it("a follow-up in topic 22 does not see topic 11's turns; each answer goes to its own topic", async () => {
    const tg = stack.telegram;
    const chat = forum(-1008800100);
    const alice = tg.user(88001, "Alice");
    const bob = tg.user(88002, "Bob");

    const a = await ask(chat, 11, alice, "my name is 小明");
    expect(a.answer.text).toBe("You said: my name is 小明");
    expect(a.answer.payload.message_thread_id).toBe(11);
    expect(a.answer.message.message_thread_id).toBe(11);

    const b = await ask(chat, 22, bob, "and tomorrow? (B in 22)");
    expect(b.answer.text).toBe("I have no earlier question from you.");
    expect(b.answer.payload.message_thread_id).toBe(22);
    const request22 = requestFor("and tomorrow? (B in 22)");
    expect(request22.messages).toHaveLength(1);
    expect(everything(request22)).not.toContain("小明");
    expect(textsOf(request22.messages[0]!)[0]).toMatch(/^\[Bob #[0-9a-f]{4}\] and tomorrow\? \(B in 22\)$/);

    // Topic 11 still has its own history.
    const a2 = await ask(chat, 11, alice, "and tomorrow? (A in 11)");
    expect(a2.answer.text).toMatch(/^Earlier you asked: my name is 小明$/);
    expect(a2.answer.payload.message_thread_id).toBe(11);
    expect(everything(requestFor("and tomorrow? (A in 11)"))).not.toContain("B in 22");

    // Typing went to the right topics too, and the chat outside topics has no history.
    const actions = tg.chatActions.filter((x) => String(x.chat_id) === String(chat.id));
    expect(new Set(actions.map((x) => x.message_thread_id))).toEqual(new Set([11, 22]));
    const keys = (topicId?: string) =>
      conversationKeys({ platform: "telegram", chatId: String(chat.id), ...(topicId ? { topicId } : {}) });
    expect(await redis.exists(keys("11").history)).toBe(1);
    expect(await redis.exists(keys("22").history)).toBe(1);
    expect(await redis.exists(keys().history)).toBe(0);
  });

  it("/reset in topic 11 forgets topic 11 only; topic 22 keeps its history", async () => {
    const tg = stack.telegram;
    const chat = forum(-1008800200);
    const carol = tg.user(88003, "Carol");
    const dan = tg.user(88004, "Dan");
    await ask(chat, 11, carol, "my name is 阿華");
    await ask(chat, 22, dan, "calc 6 * 7");

    // In a group only its administrators may /reset (issue 13): Carol administers this forum.
    tg.admins.set(chat.id, new Set([carol.id]));
    const reset = tg.sendUserMessage({ chat, from: carol, text: `/reset@${tg.bot.username}`, message_thread_id: 11 });
    const done = await tg.waitFor(() => repliesTo(reset)[0], ANSWER_TIMEOUT_MS, "the /reset answer");
    expect(done.text).toBe("好的，我已經忘掉這個話題之前的對話了（其他話題不受影響）。");
    expect(done.payload.message_thread_id).toBe(11);

    const in11 = await ask(chat, 11, carol, "and tomorrow? (after reset, 11)");
    expect(in11.answer.text).toBe("I have no earlier question from you.");
    expect(requestFor("and tomorrow? (after reset, 11)").messages).toHaveLength(1);

    const in22 = await ask(chat, 22, dan, "and tomorrow? (after reset, 22)");
    expect(in22.answer.text).toBe("Earlier you asked: calc 6 * 7");
    expect(in22.answer.payload.message_thread_id).toBe(22);
    const request22 = requestFor("and tomorrow? (after reset, 22)");
    expect(request22.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    expect(everything(request22)).not.toContain("阿華");
  });
});

describe("Telegram private-chat topics (Bot API 9.3) are conversations of their own", () => {
  it("two topics of one private chat keep separate histories, and answers go to their topic", async () => {
    const tg = stack.telegram;
    const ken = tg.user(88041, "Ken");
    const chat = tg.privateChat(ken);
    const trip = tg.createTopic(chat, "旅行", undefined, ken);
    const work = tg.createTopic(chat, "工作", undefined, ken);
    const say = async (topic: number, text: string): Promise<FakeSentMessage> => {
      const before = tg.sent.length;
      tg.sendUserMessage({ chat, from: ken, text, message_thread_id: topic });
      return tg.waitFor(
        () => tg.sent.slice(before).find((m) => m.chatId === ken.id),
        ANSWER_TIMEOUT_MS,
        `an answer to "${text}"`,
      );
    };
    const first = await say(trip, "my name is 阿健");
    expect(first.text).toBe("You said: my name is 阿健");
    expect(first.payload.message_thread_id).toBe(trip);
    const other = await say(work, "and tomorrow? (work topic)");
    expect(other.text).toBe("I have no earlier question from you.");
    expect(other.payload.message_thread_id).toBe(work);
    expect(everything(requestFor("and tomorrow? (work topic)"))).not.toContain("阿健");
    const same = await say(trip, "and tomorrow? (trip topic)");
    expect(same.text).toBe("Earlier you asked: my name is 阿健");
    expect(same.payload.message_thread_id).toBe(trip);
    // Private turns carry no speaker label.
    expect(textsOf(requestFor("and tomorrow? (trip topic)").messages[0]!)).toEqual(["my name is 阿健"]);
  });
});

describe("a pending approval is closed only by its requester in its conversation", () => {
  it(
    "A's prompt in topic 11 stays open while B writes in topic 22 and in topic 11, and A " +
      "writes in topic 22; A writing in topic 11 supersedes it",
    async () => {
      const tg = stack.telegram;
      const chat = forum(-1008800300);
      const alice = tg.user(88011, "Alice");
      const bob = tg.user(88012, "Bob");
      await seedTodos(redis, "telegram", "88011", ["買牛奶", "繳電費"]);

      const ask1 = tg.sendUserMessage({
        chat,
        from: alice,
        text: `@${tg.bot.username} delete #1`,
        message_thread_id: 11,
      });
      const prompt = await promptFor(ask1);
      expect(prompt.payload.message_thread_id).toBe(11);
      expect(prompt.text).toContain("只有 Alice 可以決定");
      const open = prompt.text;

      const others = [
        { topic: 22, from: bob, text: "calc 6 * 7", result: "42" },
        { topic: 11, from: bob, text: "calc 7 * 8", result: "56" },
        { topic: 22, from: alice, text: "calc 2 * 3", result: "6" },
      ];
      for (const o of others) {
        const { answer } = await ask(chat, o.topic, o.from, o.text);
        expect(answer.text).toContain(o.result);
        expect(answer.payload.message_thread_id).toBe(o.topic);
      }
      await quietWindow(300);
      expect(prompt.text).toBe(open);
      expect(tg.buttons(prompt)).toHaveLength(3); // still open: confirm, cancel, always allow
      expect(await todoLines(redis, "telegram", "88011")).toEqual(["#1 買牛奶", "#2 繳電費"]);
      // Bob's turn in topic 11 was answered on topic 11's history, which does not hold Alice's paused run.
      expect(everything(requestFor("calc 7 * 8"))).not.toContain("delete #1");

      const again = await ask(chat, 11, alice, "calc 1 + 1");
      expect(again.answer.text).toContain("2");
      expect(again.answer.payload.message_thread_id).toBe(11);
      await tg.waitFor(() => prompt.text.includes("收到新訊息"), ANSWER_TIMEOUT_MS, "the prompt edited to superseded");
      expect(tg.buttons(prompt)).toEqual([]);
      expect(await todoLines(redis, "telegram", "88011")).toEqual(["#1 買牛奶", "#2 繳電費"]);
      // Alice's new request ran on topic 11's history: Bob's turn, then her closed run.
      const request = requestFor("calc 1 + 1");
      expect(everything(request)).toContain("calc 7 * 8");
      expect(everything(request)).toContain("The user sent a new message instead of confirming delete_todo");
      expect(everything(request)).not.toContain("calc 2 * 3");
    },
  );

  it("two people's prompts in one topic stay open side by side; each button press answers in that topic", async () => {
    const tg = stack.telegram;
    const chat = forum(-1008800400);
    const erin = tg.user(88021, "Erin");
    const fay = tg.user(88022, "Fay");
    await seedTodos(redis, "telegram", "88021", ["洗車"]);
    await seedTodos(redis, "telegram", "88022", ["買花"]);

    const fromErin = tg.sendUserMessage({
      chat,
      from: erin,
      text: `@${tg.bot.username} delete #1`,
      message_thread_id: 11,
    });
    const erinPrompt = await promptFor(fromErin);
    const fromFay = tg.sendUserMessage({
      chat,
      from: fay,
      text: `@${tg.bot.username} delete #1`,
      message_thread_id: 11,
    });
    const fayPrompt = await promptFor(fromFay);
    expect(erinPrompt.messageId).not.toBe(fayPrompt.messageId);
    await quietWindow(300);
    expect(tg.buttons(erinPrompt)).toHaveLength(3); // Fay's message did not close Erin's prompt

    tg.pressButton({ from: fay, message: fayPrompt, data: approveData(fayPrompt) });
    const fayDone = await tg.waitFor(
      () => repliesTo(fromFay).find((m) => m.text.startsWith("delete_todo:")),
      ANSWER_TIMEOUT_MS,
      "Fay's answer",
    );
    expect(fayDone.text).toBe("delete_todo: 已刪除：#1 買花");
    expect(fayDone.payload.message_thread_id).toBe(11);
    expect(tg.buttons(erinPrompt)).toHaveLength(3);

    tg.pressButton({ from: erin, message: erinPrompt, data: approveData(erinPrompt) });
    const erinDone = await tg.waitFor(
      () => repliesTo(fromErin).find((m) => m.text.startsWith("delete_todo:")),
      ANSWER_TIMEOUT_MS,
      "Erin's answer",
    );
    expect(erinDone.text).toBe("delete_todo: 已刪除：#1 洗車");
    expect(erinDone.payload.message_thread_id).toBe(11);
    expect(await todoLines(redis, "telegram", "88021")).toEqual([]);
    expect(await todoLines(redis, "telegram", "88022")).toEqual([]);
  });

  it("in an ordinary group, another member's message is answered while the prompt stays open", async () => {
    const tg = stack.telegram;
    const chat = tg.group(-1008800500, "家庭群組");
    const gina = tg.user(88031, "Gina");
    const hank = tg.user(88032, "Hank");
    await seedTodos(redis, "telegram", "88031", ["繳房租"]);
    const request = tg.sendUserMessage({ chat, from: gina, text: `@${tg.bot.username} delete #1` });
    const prompt = await promptFor(request);
    expect(prompt.payload.message_thread_id).toBeUndefined();

    const { answer } = await ask(chat, undefined, hank, "calc 6 * 7");
    expect(answer.text).toContain("42");
    await quietWindow(300);
    expect(tg.buttons(prompt)).toHaveLength(3); // still open: confirm, cancel, always allow

    tg.pressButton({ from: gina, message: prompt, data: approveData(prompt) });
    const done = await tg.waitFor(
      () => repliesTo(request).find((m) => m.text.startsWith("delete_todo:")),
      ANSWER_TIMEOUT_MS,
      "Gina's answer",
    );
    expect(done.text).toBe("delete_todo: 已刪除：#1 繳房租");
  });
});

describe("Discord threads", () => {
  it("a thread is its own conversation: the parent channel's turns do not reach it", async () => {
    const dc = stack.discord;
    const ivy: FakeUser = { id: "720000000000000001", username: "ivy", global_name: "Ivy" };
    const sentIn = (channelId: string): SentMessage[] => dc.sent.filter((m) => m.channelId === channelId);
    const say = async (channelId: string, content: string): Promise<SentMessage> => {
      const before = sentIn(channelId).length;
      dc.sendUserMessage(ivy, `<@${dc.bot.id}> ${content}`, { channelId });
      return dc.waitFor(() => sentIn(channelId)[before], ANSWER_TIMEOUT_MS, `an answer to "${content}"`);
    };
    expect((await say(dc.channelId, "my name is 小美")).content).toBe("You said: my name is 小美");
    expect((await say(dc.threadId, "and tomorrow? (thread)")).content).toBe("I have no earlier question from you.");
    const request = requestFor("and tomorrow? (thread)");
    expect(request.messages).toHaveLength(1);
    expect(everything(request)).not.toContain("小美");
    expect((await say(dc.channelId, "and tomorrow? (parent)")).content).toBe("Earlier you asked: my name is 小美");
  });
});
