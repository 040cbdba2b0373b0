/**
 * Issue 38 item 9 end to end: a conversation's chosen model (`/model`, one of `MODELS`) that the
 * Messages API no longer serves (404 `not_found_error`, `model: <id>`, as the API answers). The
 * conversation falls back to `ANTHROPIC_MODEL`: the message is answered, its people are told once
 * in their language which model answers now, and the operator log names the model as the cause;
 * a 404 for `ANTHROPIC_MODEL` itself names `ANTHROPIC_MODEL` (not `ANTHROPIC_BASE_URL`). Real grammy
 * and discord.js clients and worker, the fake platforms, the strict fake Messages API.
 */
import { describe, expect, it } from "vitest";
import { localize, MODEL_GONE_NOTICE } from "../../src/i18n.js";
import { silentLogger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { SettingsStore } from "../../src/settings/store.js";
import type { FakeErrorReply } from "../fakes/anthropic.js";
import type { FakeUser } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { requestsFor } from "./scenarios-common.js";
import { scriptedModel } from "./scripted-model.js";

const GONE = "claude-old-4";
const DEFAULT = "claude-now-5";
/** When true, the API serves no model at all (a retired `ANTHROPIC_MODEL`). */
let defaultGone = false;

const notFound = (model: string): FakeErrorReply => ({
  status: 404,
  errorType: "not_found_error",
  message: `model: ${model}`,
});

let stack: Stack;
let redis: RedisClient;
useStack(
  {
    env: { ANTHROPIC_MODEL: DEFAULT, MODELS: `${GONE}=Old` },
    model: (request) =>
      request.model === GONE || (defaultGone && request.model === DEFAULT)
        ? notFound(request.model)
        : scriptedModel(request),
  },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const settings = () => new SettingsStore(redis, stack.config, silentLogger);

describe("issue 38 (9): a chosen model the API no longer serves", () => {
  it("Telegram DM (zh-TW): answered by ANTHROPIC_MODEL, told once, the model named in the log; the next message asks ANTHROPIC_MODEL only", async () => {
    const tg = stack.telegram;
    const user = tg.user(93901, "Wen");
    const dm = tg.privateChat(user);
    await settings().set({ platform: "telegram", chatId: String(dm.id) }, "model", GONE);
    tg.sendUserMessage({ chat: dm, from: user, text: "first question" });
    const answer = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === dm.id && m.text.startsWith("You said: first question")),
      15_000,
      "the answer",
    );
    const notice = localize("zh-TW", MODEL_GONE_NOTICE, { gone: GONE, now: DEFAULT });
    expect(answer.text).toBe(`You said: first question\n\n${notice}`);
    expect(requestsFor(stack, "first question").map((r) => r.model)).toEqual([GONE, DEFAULT]);
    const logged = stack.logs().filter((l) => String(l.msg).includes(`the model ${GONE} chosen for this conversation`));
    expect(logged).toHaveLength(1);
    expect(logged[0]!.level).toBe(50);
    expect(JSON.stringify(logged[0])).not.toContain("ANTHROPIC_BASE_URL");

    tg.sendUserMessage({ chat: dm, from: user, text: "second question" });
    const next = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === dm.id && m.text.startsWith("You said: second question")),
      15_000,
      "the next answer",
    );
    expect(next.text).toBe("You said: second question");
    expect(requestsFor(stack, "second question").map((r) => r.model)).toEqual([DEFAULT]);
  }, 40_000);

  it("Discord channel in English: the notice is in English", async () => {
    const dc = stack.discord;
    const ann: FakeUser = { id: "715390000000000001", username: "ann", global_name: "Ann" };
    const conversation = { platform: "discord" as const, chatId: dc.channelId };
    await settings().set(conversation, "model", GONE);
    await settings().set(conversation, "language", "en");
    dc.sendUserMessage(ann, `<@${dc.bot.id}> english please`, { channelId: dc.channelId });
    const answer = await dc.waitFor(
      () => dc.sent.find((m) => String(m.message.content).startsWith("You said: english please")),
      15_000,
      "the answer",
    );
    expect(String(answer.message.content)).toBe(
      `You said: english please\n\n${localize("en", MODEL_GONE_NOTICE, { gone: GONE, now: DEFAULT })}`,
    );
  }, 40_000);

  it("a 404 for ANTHROPIC_MODEL itself: the configuration apology, and the log names ANTHROPIC_MODEL", async () => {
    defaultGone = true;
    try {
      const tg = stack.telegram;
      const user = tg.user(93902, "Lin");
      const dm = tg.privateChat(user);
      tg.sendUserMessage({ chat: dm, from: user, text: "anyone there" });
      const apology = await tg.waitFor(() => tg.sent.find((m) => m.chatId === dm.id), 15_000, "the apology");
      expect(apology.text).toBe("抱歉，這個請求無法處理（服務設定有問題），已記錄下來給管理員。");
      expect(requestsFor(stack, "anyone there").map((r) => r.model)).toEqual([DEFAULT]);
      const named = stack
        .logs()
        .filter((l) => String(l.msg).startsWith(`ANTHROPIC_MODEL (${DEFAULT}) is not served by the Messages API`));
      expect(named).toHaveLength(1);
    } finally {
      defaultGone = false;
    }
  }, 40_000);
});
