/**
 * Issue 12's agent-loop and worker faults on Telegram, end to end: the real grammy client (adapter
 * part) and the worker part against the fake Bot API, the strict fake Messages API and a real Redis.
 * Each test uses its own users and chats.
 */
import type { Chat, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { TraceStore } from "../../src/trace/store.js";
import { overloaded, toolUse, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, MODEL_RETRIES, requestsFor, textsOf } from "./scenarios-common.js";
import { scriptedModel } from "./scripted-model.js";

/** The scripted model, plus: a user text containing `please refuse` is refused (`stop_reason: "refusal"`). */
function model(request: FakeRequest): FakeMessageReply {
  const last = request.messages[request.messages.length - 1]!;
  if (last.role === "user" && textsOf(last).some((t) => t.includes("please refuse"))) {
    return { content: [{ type: "text", text: "I can't help with that." }], stop_reason: "refusal" };
  }
  return scriptedModel(request);
}

let stack: Stack;
let redis: RedisClient;
useStack({ modelRetries: MODEL_RETRIES, model }, (started, connection) => {
  stack = started;
  redis = connection;
});

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

async function ask(chat: Chat, from: User, text: string, timeoutMs = ANSWER_TIMEOUT_MS): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, text }, timeoutMs)).answer;
}

describe("Telegram: refusals", () => {
  it("a refused message gets the apology, leaves nothing in the history, and the next request is sent as if it had not happened", async () => {
    const tg = stack.telegram;
    const user = tg.user(92001, "Lin");
    const dm = tg.privateChat(user);
    const conversation = { platform: "telegram" as const, chatId: String(dm.id) };

    expect((await ask(dm, user, "hello there")).text).toBe("You said: hello there");
    const apology = await ask(dm, user, "please refuse this");
    expect(apology.text).toContain("無法協助");
    const next = await ask(dm, user, "and tomorrow?");
    // the model saw the first exchange, not the refused turn nor the apology
    expect(next.text).toBe("Earlier you asked: hello there");
    const [request] = requestsFor(stack, "and tomorrow?");
    expect(request!.messages.map((m) => textsOf(m).join(" "))).toEqual([
      "hello there",
      "You said: hello there",
      "and tomorrow?",
    ]);
    const stored = (await redis.get(conversationKeys(conversation).history))!;
    expect(stored).not.toContain("please refuse");
    expect(stored.split("\n").filter((l) => l !== "" && !l.startsWith("#"))).toHaveLength(4);
    // the trace still records the refusal
    const runs = await new TraceStore(redis).runs(conversation);
    const refused = runs.find((r) =>
      r.events.some((e) => e.type === "user_input" && String(e.data.text).includes("please refuse")),
    )!;
    expect(refused.events.find((e) => e.type === "model_response")!.data).toMatchObject({ stopReason: "refusal" });
    expect(refused.events.find((e) => e.type === "final_answer")!.data).toMatchObject({ refused: true });
    // exactly one apology went out
    expect(sentTo(dm).filter((m) => m.text.includes("無法協助"))).toHaveLength(1);
  });
});

describe("Telegram: a write runs once across retries", () => {
  it("the model call after add_todo fails: the retry adds no second todo and the model gets the recorded result", async () => {
    const tg = stack.telegram;
    const user = tg.user(92002, "Wu");
    const dm = tg.privateChat(user);
    const before = stack.model.requests.length;
    // the model call after the tool result fails on both SDK attempts: the loop asks again after a short wait
    stack.model.enqueue(
      toolUse("add_todo", { title: "買牛奶" }),
      ...Array.from({ length: MODEL_RETRIES + 1 }, () => overloaded()),
    );
    const answer = await ask(dm, user, "add todo 買牛奶", 30_000);
    expect(answer.text).toBe("add_todo: 已新增待辦：#1 買牛奶");
    expect(await redis.hlen("todo:{telegram:92002}:items")).toBe(1);
    expect(await redis.get("todo:{telegram:92002}:seq")).toBe("1");
    const requests = stack.model.requests.slice(before);
    expect(requests).toHaveLength(MODEL_RETRIES + 3);
    const retried = requests[requests.length - 1]!;
    expect(retried.messages).toEqual(requests[1]!.messages); // same tool_use id, same recorded tool_result
    expect(sentTo(dm)).toHaveLength(1);
  });
});

describe("Telegram: flood control (429 retry_after)", () => {
  it("an answer meeting 429s past the retry plugin's attempts is delivered once the flood ends, exactly once", async () => {
    const tg = stack.telegram;
    const user = tg.user(92003, "Chen");
    const dm = tg.privateChat(user);
    const calls = () =>
      tg.calls.filter((c) => c.method === "sendMessage" && String(c.payload.chat_id) === String(dm.id)).length;
    // retry_after 1 s: the plugin's 1 + 3 attempts end after about 3 s, inside the 5 s flood.
    const floodMs = 5000;
    tg.rateLimit("sendMessage", { retryAfter: 1, forMs: floodMs });
    const started = Date.now();
    const answer = await ask(dm, user, "hello through the flood", 45_000);
    expect(answer.text).toBe("You said: hello through the flood");
    expect(Date.now() - started).toBeGreaterThanOrEqual(floodMs - 1000);
    // the plugin tries 1 + 3 times per send; the worker kept going after it gave up
    expect(calls()).toBeGreaterThan(4);
    expect(sentTo(dm)).toHaveLength(1);
    const stored = (await redis.get(conversationKeys({ platform: "telegram", chatId: String(dm.id) }).history))!;
    expect(stored).toContain("You said: hello through the flood");
    expect(
      stack
        .logs()
        .some(
          (l) =>
            l.msg === "the platform is rate limiting this chat; waiting out its retry_after before sending the rest",
        ),
    ).toBe(true);
  }, 60_000);
});
