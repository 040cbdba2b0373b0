/**
 * Issue 9's end-to-end scenarios on Telegram: the real grammy client (adapter part) and the
 * worker part against the fake Bot API, the strict fake Messages API answered by the scripted
 * model, the fake CWA and a real Redis. Each scenario uses its own users and chats.
 */
import type { Chat, Message, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import { overloaded } from "../fakes/anthropic.js";
import { speakerLabel } from "../../src/prompts.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";
import {
  ANSWER_TIMEOUT_MS,
  leakedSecrets,
  MODEL_RETRIES,
  modelSaw,
  QUIET_WINDOW_MS,
  recordedForecast,
  redisDump,
  requestsFor,
  secretsInChats,
  secretsInRedis,
  taipeiDate,
  textsOf,
  toolUsesOf,
} from "./scenarios-common.js";
/** Model calls of the outage scenario that answer 529: two attempts of the loop, each with the SDK's own retries. */
const FAILED_CALLS = 2 * (MODEL_RETRIES + 1);

let stack: Stack;
// One stack for the file; after each test, the strict fake must have refused nothing (valid history).
useStack({ modelRetries: MODEL_RETRIES }, (started) => (stack = started));

/** The messages the bot sent to `chat`, in order. */
const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** `from` writes `text` in `chat`; resolves with the user's message and the bot's next message in that chat. */
async function ask(chat: Chat, from: User, text: string): Promise<{ message: Message; answer: FakeSentMessage }> {
  return stack.telegram.ask({ chat, from, text }, ANSWER_TIMEOUT_MS);
}

describe("Telegram scenarios", () => {
  it("DM 'what time is it': get_current_datetime runs and the answer carries today's date in Taipei", async () => {
    const tg = stack.telegram;
    const user = tg.user(91001, "Mei");
    const from = taipeiDate(Date.now());
    const { answer } = await ask(tg.privateChat(user), user, "what time is it");
    const to = taipeiDate(Date.now());
    expect(requestsFor(stack, "what time is it")).toHaveLength(1);
    expect(answer.text).toMatch(/^get_current_datetime: /);
    expect(answer.text).toContain("Asia/Taipei");
    expect([from, to].some((date) => answer.text.includes(`${date}T`))).toBe(true);
    expect(answer.text).toMatch(/\+08:00/);
    expect(answer.payload.reply_parameters).toBeUndefined();
  });

  it("a group message mentioning the bot is answered as a reply; one without the mention gets nothing", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009100200, "家庭群組");
    const ann = tg.user(91002, "Ann");

    const ignored = "calc 7 * 6 大家晚餐吃什麼";
    const before = stack.model.requests.length;
    tg.sendUserMessage({ chat: group, from: ann, text: ignored });
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(stack.model.requests.length).toBe(before);
    expect(sentTo(group)).toEqual([]);
    expect(tg.chatActions.filter((a) => String(a.chat_id) === String(group.id))).toEqual([]);

    const { message, answer } = await ask(group, ann, `@${tg.bot.username} calc 6 * 7`);
    expect(answer.text).toContain("42");
    expect(answer.payload.reply_parameters).toMatchObject({ message_id: message.message_id });
    const [request] = requestsFor(stack, "calc 6 * 7");
    expect(textsOf(request!.messages[request!.messages.length - 1]!)).toEqual([
      `${speakerLabel({ platform: "telegram", userId: "91002", userName: "Ann" })} calc 6 * 7`,
    ]);
    expect(modelSaw(stack, "大家晚餐吃什麼")).toBe(false);
  });

  it("/tools lists every tool with delete_todo marked dangerous, without asking the model", async () => {
    const tg = stack.telegram;
    const user = tg.user(91003, "Kai");
    const before = stack.model.requests.length;
    const { answer } = await ask(tg.privateChat(user), user, "/tools");
    for (const name of stack.toolbox.list().map((t) => t.name)) expect(answer.text).toContain(name);
    expect(answer.text).toContain("⚠️ delete_todo");
    expect(answer.text).not.toContain("⚠️ list_todos");
    expect(answer.text).toContain("可用的工具");
    expect(stack.model.requests.length).toBe(before);
  });

  it("/help and /tools in zh-TW name the shipped tools by their Chinese titles and summaries, not their names or English descriptions", async () => {
    const tg = stack.telegram;
    const user = tg.user(91013, "Tsai");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const shipped = stack.toolbox.list().filter((t) => t.title);
    expect(shipped.map((t) => t.name)).toEqual(
      expect.arrayContaining(["add_todo", "set_reminder", "cancel_reminder", "get_current_datetime", "calculate"]),
    );
    const help = (await ask(chat, user, "/help")).answer.text;
    expect(help).toMatch(/^嗨！我是會使用工具的 AI 助理，可以幫你：/);
    for (const tool of shipped) {
      expect(help).toContain(tool.title!["zh-TW"]);
      // (a command may share a tool's name: /memory is the memory tool's command)
      expect(help.replace(/\/[a-z_]+/g, "")).not.toContain(tool.name);
    }
    const tools = (await ask(chat, user, "/tools")).answer.text;
    for (const tool of shipped) {
      expect(tools).toContain(`${tool.name} ${tool.title!["zh-TW"]} — ${tool.summary!["zh-TW"]}`);
      expect(tools).not.toContain(tool.description.split(" ").slice(0, 4).join(" "));
    }
    expect(tools).toContain("⚠️ delete_todo 刪除待辦 — 永久刪除你的一項待辦（會先請你確認）。");
    expect(stack.model.requests.length).toBe(before);
  });

  it("todos: add two, list, complete one, delete one through the approval prompt → the final list is right", async () => {
    const tg = stack.telegram;
    const user = tg.user(91004, "Yu");
    const chat = tg.privateChat(user);

    expect((await ask(chat, user, "add todo 買牛奶")).answer.text).toBe("add_todo: 已新增待辦：#1 買牛奶");
    expect((await ask(chat, user, "add todo 繳電費")).answer.text).toBe("add_todo: 已新增待辦：#2 繳電費");
    expect((await ask(chat, user, "list todos")).answer.text).toBe(
      "list_todos: 你的待辦（2 項未完成）：\n#1 買牛奶\n#2 繳電費",
    );
    const today = taipeiDate(Date.now());
    expect((await ask(chat, user, "complete #1")).answer.text).toMatch(
      /^complete_todo: 已完成：#1 買牛奶（已完成 \d{4}-\d\d-\d\d）$/,
    );

    const { answer: prompt } = await ask(chat, user, "delete #2");
    expect(prompt.text).toContain("需要你的確認");
    expect(prompt.text).toContain("刪除待辦 #2「繳電費」");
    const approve = tg.buttons(prompt).find((b) => b.text.includes("確認"));
    expect(approve?.callback_data).toMatch(/^ap:[A-Za-z0-9_-]+:y$/);
    const afterPrompt = sentTo(chat).length;
    tg.pressButton({ from: user, message: prompt, data: approve!.callback_data! });
    const result = await tg.waitFor(
      () => sentTo(chat)[afterPrompt],
      ANSWER_TIMEOUT_MS,
      "the answer after the approval",
    );
    expect(result.text).toBe("delete_todo: 已刪除：#2 繳電費");
    // The prompt was edited to its outcome, without buttons.
    await tg.waitFor(() => prompt.text.startsWith("✅"), ANSWER_TIMEOUT_MS, "the prompt edited to its outcome");
    expect(prompt.text).toContain("已確認：刪除待辦 #2「繳電費」");
    expect(tg.buttons(prompt)).toEqual([]);
    expect(tg.callbackAnswers).toHaveLength(1);

    expect((await ask(chat, user, "list todos")).answer.text).toBe(
      "list_todos: 沒有未完成的待辦（已完成 1 項；要看全部請設 include_completed）。",
    );
    const all = (await ask(chat, user, "list all todos")).answer.text;
    expect(all).toMatch(/^list_todos: 你的全部待辦（0 項未完成，1 項已完成）：\n#1 買牛奶（已完成 \d{4}-\d\d-\d\d）$/);
    expect([today, taipeiDate(Date.now())]).toContain(/已完成 (\d{4}-\d\d-\d\d)/.exec(all)![1]);
    expect(all).not.toContain("繳電費");
  });

  it("weather for 台北 comes from the recorded CWA forecast of 臺北市", async () => {
    const tg = stack.telegram;
    const user = tg.user(91005, "Lin");
    const { answer } = await ask(tg.privateChat(user), user, "台北天氣如何");
    expect(stack.cwa.requests.at(-1)?.searchParams.get("locationName")).toBe("臺北市");
    expect(answer.text).toContain("get_weather: 臺北市 36 小時天氣預報");
    const windows = recordedForecast("臺北市");
    expect(windows).toHaveLength(3);
    for (const w of windows) {
      const temp = w.minT === w.maxT ? w.minT : `${w.minT}–${w.maxT}`;
      expect(answer.text).toContain(`${w.wx}，降雨機率 ${w.pop}%，氣溫 ${temp}°C`);
    }
  });

  it("calculate: (1200 + 800) * 0.05 → 100", async () => {
    const tg = stack.telegram;
    const user = tg.user(91006, "Hao");
    const { answer } = await ask(tg.privateChat(user), user, "calc (1200 + 800) * 0.05");
    expect(requestsFor(stack, "calc (1200 + 800) * 0.05")).toHaveLength(1);
    expect(toolUsesOf(stack, "calculate").map((b) => b.input)).toContainEqual({ expression: "(1200 + 800) * 0.05" });
    expect(answer.text).toMatch(/^calculate: .*\b100\b/);
    expect(answer.text).not.toMatch(/100\.0|99\.9/);
  });

  it("a follow-up ('and tomorrow?') reaches the model with the earlier turns of the chat", async () => {
    const tg = stack.telegram;
    const user = tg.user(91007, "Chen");
    const chat = tg.privateChat(user);
    await ask(chat, user, "what time is it");
    const { answer } = await ask(chat, user, "and tomorrow?");
    expect(answer.text).toBe("Earlier you asked: what time is it");
    const [request] = requestsFor(stack, "and tomorrow?");
    const roles = request!.messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "user", "assistant", "user"]);
    expect(textsOf(request!.messages[0]!)).toEqual(["what time is it"]);
    const toolUse = (request!.messages[1]!.content as Record<string, unknown>[]).find((b) => b.type === "tool_use");
    expect(toolUse?.name).toBe("get_current_datetime");
    const toolResult = (request!.messages[2]!.content as Record<string, unknown>[]).find(
      (b) => b.type === "tool_result",
    );
    expect(toolResult?.tool_use_id).toBe(toolUse?.id);
    expect(textsOf(request!.messages[3]!).join("")).toMatch(/^get_current_datetime: /);
  });

  it("a short model outage (529 on every SDK attempt, twice) is retried within the answer and answered; the next message works", async () => {
    const tg = stack.telegram;
    const user = tg.user(91008, "Wu");
    const chat = tg.privateChat(user);
    stack.model.enqueue(...Array.from({ length: FAILED_CALLS }, () => overloaded()));
    const { answer } = await ask(chat, user, "calc 1 + 1");
    expect(answer.text).toMatch(/^calculate: .*\b2\b/);
    expect(stack.model.pending()).toBe(0);
    expect(requestsFor(stack, "calc 1 + 1")).toHaveLength(FAILED_CALLS + 1); // the failures, then the call that asked for the tool

    const next = await ask(chat, user, "calc 2 + 3");
    expect(next.answer.text).toMatch(/^calculate: .*\b5\b/);
    // The failed turn left no half-written history behind: the new request starts fresh and is valid.
    const [request] = requestsFor(stack, "calc 2 + 3");
    expect(request!.messages[0]!.role).toBe("user");
  });

  it("no log line, chat message or stored value (history, traces, approvals) carries a token or key", async () => {
    expect(stack.logs().length).toBeGreaterThan(50);
    expect(leakedSecrets(stack)).toEqual([]);
    expect(secretsInChats(stack)).toEqual([]);
    const dump = await redisDump(stack);
    expect(dump.some((e) => e.key.includes("trace"))).toBe(true);
    expect(dump.some((e) => e.key.includes("history"))).toBe(true);
    expect(await secretsInRedis(stack)).toEqual([]);
  });
});
