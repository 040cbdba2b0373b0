/**
 * Issue 40 item 4: budgets count what a person is billed, as input tokens (budget tokens): input
 * × 1, cache writes × 1.25, cache reads × 0.1, output × the model's output/input price ratio from
 * `MODEL_PRICES` (5 when the model has none).
 *
 * Through the real pipeline: the real grammy client against the fake Bot API, the access gate, the
 * queue, the worker and the usage store on a real Redis, and the strict fake Messages API answering
 * with `usage` that carries cache writes and cache reads. The figures are exact.
 */
import type { Chat, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import type { RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import { silentLogger } from "../../src/log.js";
import { budgetTokensOf, UsageStore } from "../../src/usage/store.js";
import { text, type FakeMessageReply } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "../e2e/harness.js";
import { ANSWER_TIMEOUT_MS } from "../e2e/scenarios-common.js";

const BUDGET = 20_000;
const CHEAP = "claude-cheap-test";

let stack: Stack;
let redis: RedisClient;
useStack(
  {
    env: {
      USER_DAILY_TOKENS: String(BUDGET),
      // The default model: output 15 / input 3 = 5; the cheap one: 4 / 1 = 4.
      MODEL_PRICES: `3,15,3.75,0.3;${CHEAP}=1,4,1.25,0.1`,
      MODELS: `${CHEAP}=Cheap`,
    },
  },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

/** One model call of a cached conversation: 1,000 input, 2,000 cache writes, 30,000 cache reads, 200 output. */
const USAGE = {
  input_tokens: 1000,
  cache_creation_input_tokens: 2000,
  cache_read_input_tokens: 30_000,
  output_tokens: 200,
};

function answer(words: string): FakeMessageReply {
  return { ...text(words), usage: USAGE };
}

async function ask(chat: Chat, from: User, words: string): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, text: words }, ANSWER_TIMEOUT_MS)).answer;
}

describe("budget tokens (issue 40 item 4)", () => {
  it("the weights: input 1, cache write 1.25, cache read 0.1, output the price ratio (5 without a price)", () => {
    expect(budgetTokensOf(USAGE)).toBe(1000 + 2500 + 3000 + 1000);
    expect(budgetTokensOf(USAGE, 4)).toBe(1000 + 2500 + 3000 + 800);
    // rounded to a whole token per call: 0.1 × 5 = 0.5
    expect(
      budgetTokensOf({ input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 0 }),
    ).toBe(1);
  });

  it("/usage in a Telegram group shows no one's usage there: it says to ask in a private chat", async () => {
    const tg = stack.telegram;
    const user = tg.user(40402, "Mei");
    const group = tg.group(-1004040201, "同事群");
    const reply = (await ask(group, user, "/usage")).text;
    expect(reply).toBe("用量是個人資訊，請在私訊中傳送 /usage 給我查看。");
    const all = (await ask(group, user, "/usage all")).text;
    expect(all).toBe("用量是個人資訊，請在私訊中傳送 /usage 給我查看。");
  });

  it(
    "a Telegram DM: each model call counts its billed-equivalent tokens at its model's price ratio; " +
      "/usage says so in zh-TW and English; the gate refuses at the budget",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(40401, "Lin");
      const dm = tg.privateChat(user);
      const conversation = { platform: "telegram" as const, chatId: String(dm.id) };
      const usage = new UsageStore(redis, stack.config.TIMEZONE);

      // 1. The default model (15 / 3 = 5): 1000 + 1.25 × 2000 + 0.1 × 30000 + 5 × 200 = 7500.
      stack.model.enqueue(answer("第一個回答"));
      expect((await ask(dm, user, "第一個問題")).text).toBe("第一個回答");
      // The usage is in Redis before the answer goes out.
      expect((await usage.userTotals("telegram", "40401")).day).toMatchObject({ tokens: 33_200, budget: 7500 });

      // 2. The conversation's model is the cheap one (4 / 1 = 4): 1000 + 2500 + 3000 + 4 × 200 = 7300.
      const settings = new SettingsStore(redis, stack.config, silentLogger);
      await settings.set(conversation, "model", CHEAP);
      stack.model.enqueue(answer("第二個回答"));
      expect((await ask(dm, user, "第二個問題")).text).toBe("第二個回答");
      expect(stack.model.requests.at(-1)!.model).toBe(CHEAP);
      const day = (await usage.userTotals("telegram", "40401")).day;
      // 66,400 raw tokens would have spent the 20,000 budget three times over; 14,800 budget tokens leave 5,200.
      expect(day).toMatchObject({ tokens: 66_400, budget: 14_800, calls: 2 });
      expect((await usage.chatTotals("telegram", String(dm.id))).day.budget).toBe(14_800);
      expect(await usage.topUsers(10)).toContainEqual({ user: "telegram:40401", tokens: 14_800 });

      const zh = (await ask(dm, user, "/usage")).text;
      expect(zh).toContain("66400 tokens，2 次模型呼叫（輸入 2000、輸出 400、快取寫入 4000、快取讀取 60000）");
      expect(zh).toContain("每日額度：剩 5200 / 20000 tokens（今天已計 14800）");
      expect(zh).toContain(
        "額度以計費等值 tokens 計算：輸入 ×1、快取寫入 ×1.25、快取讀取 ×0.1、輸出 ×5（模型輸出與輸入的價格比）。",
      );
      await settings.set(conversation, "language", "en");
      const en = (await ask(dm, user, "/usage")).text;
      expect(en).toContain("Daily budget: 5200 of 20000 tokens left (14800 counted today)");
      expect(en).toContain(
        "Budgets count billed-equivalent tokens: input ×1, cache writes ×1.25, cache reads ×0.1, output ×5 (the model's output/input price ratio).",
      );

      // 3. A third call (the cheap model, 7300) crosses the budget: 22,100 ≥ 20,000; the next message is refused without a model call.
      stack.model.enqueue(answer("third answer"));
      expect((await ask(dm, user, "third question")).text).toBe("third answer");
      expect((await usage.userTotals("telegram", "40401")).day.budget).toBe(22_100);
      const requests = stack.model.requests.length;
      const refused = await ask(dm, user, "fourth question");
      expect(refused.text).toContain("You have used today's budget (20000 tokens)");
      expect(stack.model.requests.length).toBe(requests);
    },
    60_000,
  );
});
