/**
 * Issue 8's expiry scenario on Telegram and Discord, end to end, with the shortest timeout the
 * configuration allows (`CONFIRM_TIMEOUT_SECONDS=5`): the prompt is edited to "expired", a short
 * answer is sent, nothing is deleted, a late click changes nothing and the history stays valid
 * (a follow-up message is answered and the strict fake model rejected nothing).
 */
import type { RedisClient } from "../../src/redis.js";
import { expect, it } from "vitest";
import type { FakeUser } from "../fakes/discord.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
let redis: RedisClient;
useStack({ env: { CONFIRM_TIMEOUT_SECONDS: "5" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

/** Long enough for the 5 s expiry plus the delayed job's pickup and the edits. */
const EXPIRY_WAIT = 15_000;
const WAIT = 10_000;
const EXPIRED_RESULT =
  "The user did not confirm delete_todo within 5 seconds, so the approval expired and it was not run.";

// The two scenarios wait out real time and share only the stack (own users, chats and todos): they run side by side.
it.concurrent(
  "Telegram: an undecided approval expires: prompt edited, short answer, nothing deleted, history valid",
  async () => {
    const tg = stack.telegram;
    const user = tg.user(7201, "Ivy");
    const chat = tg.privateChat(user);
    await seedTodos(redis, "telegram", "7201", ["買牛奶"]);
    tg.sendUserMessage({ chat, from: user, text: "delete #1" });
    const prompt = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === 7201 && tg.buttons(m).length > 0),
      WAIT,
      "the approval prompt",
    );
    const asked = Date.now();
    const yes = tg.buttons(prompt).find((b) => b.callback_data?.endsWith(":y"))!.callback_data!;

    const answer = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === 7201 && m.text.startsWith("delete_todo:")),
      EXPIRY_WAIT,
      "the expiry answer",
    );
    expect(Date.now() - asked).toBeGreaterThanOrEqual(4000);
    expect(answer.text).toContain(EXPIRED_RESULT);
    await tg.waitFor(() => prompt.text.includes("逾時未確認"), WAIT, "the prompt edited to expired");
    expect(prompt.text).toBe("⌛ 逾時未確認，未執行：刪除待辦 #1「買牛奶」");
    expect(tg.buttons(prompt)).toEqual([]);
    expect(await todoLines(redis, "telegram", "7201")).toEqual(["#1 買牛奶"]);

    // A late click (an old client still showing the buttons) changes nothing.
    const late = tg.pressButton({ from: user, message: prompt, data: yes });
    const toast = await tg.waitFor(
      () => tg.callbackAnswers.find((a) => String(a.callback_query_id) === late),
      WAIT,
      "the late click's answer",
    );
    expect(toast.text).toBe("這個確認請求已過期或不存在。");

    tg.sendUserMessage({ chat, from: user, text: "and tomorrow?" });
    const followUp = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === 7201 && m.text.startsWith("Earlier you asked")),
      WAIT,
      "the follow-up answer",
    );
    expect(followUp.text).toBe("Earlier you asked: delete #1");
    expect(await todoLines(redis, "telegram", "7201")).toEqual(["#1 買牛奶"]);
  },
);

it.concurrent(
  "Discord: an undecided approval expires: prompt edited with disabled buttons, short answer, history valid",
  async () => {
    const dc = stack.discord;
    const jo: FakeUser = { id: "702000000000009001", username: "jo", global_name: "Jo" };
    const channel = dc.dmChannel(jo);
    await seedTodos(redis, "discord", jo.id, ["繳電費"]);
    dc.sendUserMessage(jo, "delete #1", { dm: true });
    const prompt = await dc.waitFor(
      () => dc.sent.find((m) => m.channelId === channel && (m.message.components as unknown[]).length > 0),
      WAIT,
      "the approval prompt",
    );
    const asked = Date.now();

    const answer = await dc.waitFor(
      () => dc.sent.find((m) => m.channelId === channel && m.content.startsWith("delete_todo:")),
      EXPIRY_WAIT,
      "the expiry answer",
    );
    expect(Date.now() - asked).toBeGreaterThanOrEqual(4000);
    expect(answer.content).toContain(EXPIRED_RESULT);
    await dc.waitFor(() => dc.message(prompt.id)!.content.includes("逾時未確認"), WAIT, "the prompt edited to expired");
    expect(dc.message(prompt.id)!.content).toBe("⌛ 逾時未確認，未執行：刪除待辦 #1「繳電費」");
    const buttons = (dc.message(prompt.id)!.components as { components: { disabled?: boolean }[] }[]).flatMap(
      (r) => r.components,
    );
    expect(buttons.map((b) => b.disabled)).toEqual([true, true]);

    // A late ✅ on the closed prompt changes nothing.
    dc.react(jo, prompt.id, "✅");
    dc.sendUserMessage(jo, "and tomorrow?", { dm: true });
    const followUp = await dc.waitFor(
      () => dc.sent.find((m) => m.channelId === channel && m.content.startsWith("Earlier you asked")),
      WAIT,
      "the follow-up answer",
    );
    expect(followUp.content).toBe("Earlier you asked: delete #1");
    expect(await todoLines(redis, "discord", jo.id)).toEqual(["#1 繳電費"]);
    expect(dc.sent.filter((m) => m.channelId === channel && m.content.startsWith("delete_todo:"))).toHaveLength(1);
  },
);
