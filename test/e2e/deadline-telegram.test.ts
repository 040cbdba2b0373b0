/**
 * One deadline per answer (`ANSWER_DEADLINE_SECONDS`, short here), end to end on Telegram: a model
 * API that accepts the request and never answers, and a chat whose flood control outlasts the
 * deadline (or ends within the late-delivery bound after it). Real grammy adapter and worker parts, the fake Bot API, the strict fake Messages API.
 */
import type { Chat, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { LATE_DELIVERY_MS } from "../../src/worker/deliver.js";
import { hang } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { waitFor } from "../worker/harness.js";
import { useStack, type Stack } from "./harness.js";
import { MODEL_RETRIES, requestsFor, textsOf } from "./scenarios-common.js";

const DEADLINE_SECONDS = 4;
let stack: Stack;
let redis: RedisClient;
useStack(
  { modelRetries: MODEL_RETRIES, env: { ANSWER_DEADLINE_SECONDS: String(DEADLINE_SECONDS) } },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

async function ask(chat: Chat, from: User, text: string, timeoutMs = 20_000): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, text }, timeoutMs)).answer;
}

describe("Telegram: one deadline per answer", () => {
  it("a model that never answers: after the deadline the user gets the short apology, the call is aborted, and the next message is answered", async () => {
    const tg = stack.telegram;
    const user = tg.user(93001, "Hsu");
    const dm = tg.privateChat(user);
    stack.model.enqueue(hang());
    const started = Date.now();
    const apology = await ask(dm, user, "a question the model never answers");
    const took = Date.now() - started;
    expect(apology.text).toBe("抱歉，這次回答花了太久時間，我先停下來了。請再問一次，或把問題說得簡單一點。");
    expect(took).toBeGreaterThanOrEqual(DEADLINE_SECONDS * 1000 - 500);
    // Only this deadline ends it before the default one (180 s); a loaded machine may deliver the apology late.
    expect(took).toBeLessThan(DEADLINE_SECONDS * 1000 + 15_000);
    await waitFor(() => stack.model.hanging() === 0, 5000, "the hanging model call to be aborted");
    // the conversation moves on: the next message is answered at once, without the stopped one
    const next = await ask(dm, user, "are you back?", 10_000);
    expect(next.text).toBe("You said: are you back?");
    const [request] = requestsFor(stack, "are you back?");
    expect(request!.messages).toHaveLength(1);
    expect(sentTo(dm)).toHaveLength(2);
  }, 60_000);

  it(
    "a flood control that outlasts the deadline but ends within the late-delivery bound: the " +
      "answer is delivered late, exactly once, and stays in the history",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(93002, "Tsai");
      const dm = tg.privateChat(user);
      const conversation = { platform: "telegram" as const, chatId: String(dm.id) };
      // the retry plugin's own attempts (1 + 3, 1 s apart) end inside the flood; the worker waits out the rest past the deadline
      const floodMs = 6000;
      tg.rateLimit("sendMessage", { retryAfter: 1, forMs: floodMs });
      const started = Date.now();
      const answer = await ask(dm, user, "hello into the flood", 30_000);
      expect(answer.text).toBe("You said: hello into the flood");
      expect(answer.at - started).toBeGreaterThanOrEqual(floodMs - 1000); // after the flood, well past the deadline
      expect(answer.at - started).toBeLessThan(DEADLINE_SECONDS * 1000 + LATE_DELIVERY_MS);
      const stored = (await redis.get(conversationKeys(conversation).history)) ?? "";
      expect(stored).toContain("hello into the flood");
      await new Promise((r) => setTimeout(r, 500));
      expect(sentTo(dm)).toHaveLength(1); // once, and no apology
    },
    60_000,
  );

  it(
    "a flood control whose retry_after ends past the late-delivery bound: the answer is " +
      "dropped from the history, no apology is sent into the 429, and the next message works",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(93003, "Kao");
      const dm = tg.privateChat(user);
      const conversation = { platform: "telegram" as const, chatId: String(dm.id) };
      // longer than the retry plugin waits by itself (60 s) and than the deadline + 60 s
      const retryAfter = Math.ceil((DEADLINE_SECONDS * 1000 + LATE_DELIVERY_MS) / 1000) + 5;
      tg.rateLimit("sendMessage", { retryAfter, forMs: retryAfter * 1000 });
      tg.sendUserMessage({ chat: dm, from: user, text: "hello into the long flood" });
      await waitFor(
        () =>
          stack
            .logs()
            .some((l) => String(l.msg).startsWith("the answer could not be delivered within ANSWER_DEADLINE_SECONDS")),
        30_000,
        "the worker to give up",
      );
      const stored = (await redis.get(conversationKeys(conversation).history)) ?? "";
      expect(stored).not.toContain("hello into the long flood");
      tg.rateLimit("sendMessage", { retryAfter: 1, forMs: 0 }); // the flood ends
      expect(sentTo(dm)).toEqual([]); // nothing got through, and no apology was queued behind the flood
      const next = await ask(dm, user, "and tomorrow?", 15_000);
      expect(next.text).toBe("I have no earlier question from you.");
      const [request] = requestsFor(stack, "and tomorrow?").filter(
        (r) => JSON.stringify(r.messages).includes("and tomorrow?") && r.messages.length === 1,
      );
      expect(request!.messages.map((m) => textsOf(m).join(" "))).toEqual(["and tomorrow?"]);
      expect(sentTo(dm)).toHaveLength(1);
    },
    60_000,
  );
});
