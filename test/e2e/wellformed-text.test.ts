/**
 * Texts that are not plain well-formed words, end to end on the real grammy and discord.js clients
 * (adapter part), the worker part, a real Redis and the strict fake Messages API (which refuses a
 * lone UTF-16 surrogate as the real API does):
 *
 * - a message ending in a lone surrogate (`"…\ud800"`) used to be answered and then freeze its
 *   conversation for good: its inbox entry, JSON with the escape `\ud800`, could not be decoded by
 *   Redis' `cjson`, so the worker's finish script put it back and ended the job, and no message of
 *   the conversation was answered again. Now the message is made well-formed when normalised
 *   (U+FFFD for the lone half) and the next message is answered;
 * - a message of only invisible characters (zero-width spaces, word joiner, BOM) gets the local
 *   "write your question" notice, as a whitespace-only one does, without a model call.
 */
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import type { FakeUser } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { waitFor } from "../worker/harness.js";
import { ANSWER_TIMEOUT_MS, MODEL_RETRIES } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
// After each test the strict fake must have refused nothing: no lone surrogate reached the model.
useStack({ modelRetries: MODEL_RETRIES }, (started, connection) => {
  stack = started;
  redis = connection;
});

/** Whether Redis' Lua `cjson` decodes every entry of `inbox` (true for an empty or missing inbox). */
async function redisDecodes(inbox: string): Promise<boolean> {
  const script =
    "for _, e in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do if not pcall(cjson.decode, e) then return 0 end end return 1";
  return (await redis.eval(script, 1, inbox)) === 1;
}

describe("Telegram: a lone UTF-16 surrogate", () => {
  it("a message ending in a lone surrogate is answered, and its conversation answers the next message", async () => {
    const tg = stack.telegram;
    const user = tg.user(93001, "Kao");
    const dm = tg.privateChat(user);
    const inbox = conversationKeys({ platform: "telegram", chatId: String(dm.id) }).inbox;

    const first = await tg.ask({ chat: dm, from: user, text: "hello \ud800" }, ANSWER_TIMEOUT_MS);
    expect(first.answer.text).toBe("You said: hello \ufffd");
    expect(await redisDecodes(inbox)).toBe(true);
    // The freeze: this one was queued behind the stuck entry and never answered.
    const next = await tg.ask({ chat: dm, from: user, text: "and tomorrow?" }, ANSWER_TIMEOUT_MS);
    expect(next.answer.text).toBe("Earlier you asked: hello \ufffd");
    await waitFor(async () => (await redis.exists(inbox)) === 0, 5000, "the inbox to empty");
    expect(tg.messagesTo(dm)).toHaveLength(2);
  });
});

describe("invisible characters alone", () => {
  it("Telegram: zero-width spaces, a word joiner or a BOM alone get the notice, as whitespace does, without a model call", async () => {
    const tg = stack.telegram;
    const user = tg.user(93002, "Hsu");
    const dm = tg.privateChat(user);
    const before = stack.model.requests.length;
    for (const text of ["\u200b\u200b", "\u2060", "\ufeff", " \u200b \u2060 "]) {
      const { answer } = await tg.ask({ chat: dm, from: user, text }, ANSWER_TIMEOUT_MS);
      expect(answer.text).toBe("有什麼需要幫忙的嗎？請把問題寫在同一則訊息裡。");
    }
    // A zero-width joiner inside an emoji is part of a visible text: it is answered.
    const { answer } = await tg.ask({ chat: dm, from: user, text: "👩\u200d💻" }, ANSWER_TIMEOUT_MS);
    expect(answer.text).toBe("You said: 👩\u200d💻");
    expect(stack.model.requests.length - before).toBe(1);
  });

  it("Discord: a DM of zero-width spaces alone gets the notice without a model call", async () => {
    const author: FakeUser = { id: "7100000000000093003", username: "lee", global_name: "Lee" };
    const before = stack.model.requests.length;
    const { answer } = await stack.discord.ask(author, "\u200b\u200b", { dm: true }, ANSWER_TIMEOUT_MS);
    expect(answer.content).toContain("請在訊息裡寫下你的問題");
    // The notice is the adapter's own reply: nothing was queued, so no model call can follow it.
    expect(stack.model.requests.length).toBe(before);
  });
});
