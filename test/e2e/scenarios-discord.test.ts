/**
 * Issue 9's end-to-end scenarios on Discord: the real discord.js client (adapter part) and the
 * worker part (REST only) against the fake Discord REST + gateway, the strict fake Messages API
 * answered by the scripted model, the fake CWA and a real Redis. Each scenario uses its own
 * users; DM scenarios have their own DM channels, group ones share the guild's text channel
 * (and its thread) but run one after another.
 */
import { describe, expect, it } from "vitest";
import { FORWARDED_END, FORWARDED_START } from "../../src/prompts.js";
import { overloaded } from "../fakes/anthropic.js";
import { speakerLabel } from "../../src/prompts.js";
import type { FakeInteraction, FakeMessage, FakeUser, SentMessage } from "../fakes/discord.js";
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

let nextUser = 0;
/** A fresh user for one scenario. */
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `71000000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** Where a message is written: a DM with its author, or a guild channel (default the text channel). */
type Where = { dm: true } | { channelId?: string };

/** The messages the bot created in `channelId`, in order. */
const sentIn = (channelId: string): SentMessage[] => stack.discord.messagesIn(channelId);

/** `author` writes `content`; resolves with the user's message and the bot's next message in that channel. */
async function ask(
  author: FakeUser,
  content: string,
  where: Where = { dm: true },
): Promise<{ message: FakeMessage; answer: SentMessage }> {
  return stack.discord.ask(author, content, where, ANSWER_TIMEOUT_MS);
}

const mention = () => `<@${stack.discord.bot.id}>`;

/** The approval prompt's `custom_id` for 確認 (`ap:<id>:y`). */
function approveButton(prompt: SentMessage): string {
  const rows = prompt.payload.components as { components: { label: string; custom_id: string }[] }[];
  const button = rows.flatMap((r) => r.components).find((c) => c.label === "確認");
  expect(button?.custom_id).toMatch(/^ap:[A-Za-z0-9_-]+:y$/);
  return button!.custom_id;
}

/**
 * One todo run in a DM: add two, list, complete #1, delete #2 through the approval prompt
 * (`via` the 確認 button or the ✅ reaction, by the requester), then the final lists. Checks every
 * answer, the prompt edited to its outcome, and that the adapter recorded the decision `via` that path.
 */
async function todoRun(author: FakeUser, via: "button" | "reaction"): Promise<void> {
  const dc = stack.discord;
  const interactionsBefore = dc.interactions.size;
  const channelId = dc.dmChannel(author);
  expect((await ask(author, "add todo 買牛奶")).answer.content).toBe("add_todo: 已新增待辦：#1 買牛奶");
  expect((await ask(author, "add todo 繳電費")).answer.content).toBe("add_todo: 已新增待辦：#2 繳電費");
  expect((await ask(author, "list todos")).answer.content).toBe(
    "list_todos: 你的待辦（2 項未完成）：\n#1 買牛奶\n#2 繳電費",
  );
  const today = taipeiDate(Date.now());
  expect((await ask(author, "complete #1")).answer.content).toMatch(
    /^complete_todo: 已完成：#1 買牛奶（已完成 \d{4}-\d\d-\d\d）$/,
  );

  const { message, answer: prompt } = await ask(author, "delete #2");
  expect(prompt.content).toContain("需要確認：刪除待辦 #2「繳電費」");
  expect(prompt.payload.message_reference).toMatchObject({ message_id: message.id });
  // The bot offers both reactions on the prompt.
  await dc.waitFor(
    () => dc.reactionUsers(prompt.id, "❌").includes(dc.bot.id),
    ANSWER_TIMEOUT_MS,
    "the bot's ✅/❌ reactions",
  );
  expect(dc.reactionUsers(prompt.id, "✅")).toContain(dc.bot.id);

  const afterPrompt = sentIn(channelId).length;
  let press: FakeInteraction | undefined;
  if (via === "button") press = dc.clickButton(author, prompt.id, approveButton(prompt));
  else dc.react(author, prompt.id, "✅");
  const result = await dc.waitFor(
    () => sentIn(channelId)[afterPrompt],
    ANSWER_TIMEOUT_MS,
    "the answer after the approval",
  );
  expect(result.content).toBe("delete_todo: 已刪除：#2 繳電費");
  // The prompt was edited to its outcome, its buttons disabled.
  const closed = await dc.waitFor(
    () => (dc.message(prompt.id)!.content.startsWith("✅") ? dc.message(prompt.id)! : undefined),
    ANSWER_TIMEOUT_MS,
    "the prompt edited",
  );
  expect(closed.content).toContain("已確認：刪除待辦 #2「繳電費」");
  const buttons = (closed.components as { components: { disabled?: boolean }[] }[]).flatMap((r) => r.components);
  expect(buttons.length).toBe(2);
  expect(buttons.every((b) => b.disabled === true)).toBe(true);

  expect((await ask(author, "list todos")).answer.content).toBe(
    "list_todos: 沒有未完成的待辦（已完成 1 項；要看全部請設 include_completed）。",
  );
  const all = (await ask(author, "list all todos")).answer.content;
  expect(all).toMatch(/^list_todos: 你的全部待辦（0 項未完成，1 項已完成）：\n#1 買牛奶（已完成 \d{4}-\d\d-\d\d）$/);
  expect([today, taipeiDate(Date.now())]).toContain(/已完成 (\d{4}-\d\d-\d\d)/.exec(all)![1]);
  expect(all).not.toContain("繳電費");

  const decisions = stack.logs().filter((l) => l.msg === `approval ${via}: accepted`);
  expect(decisions.map((l) => l.deciderId)).toEqual([author.id]);
  if (press) {
    // The click was acknowledged ephemerally (Discord wants an answer within 3 s).
    expect(press.response?.data?.flags).toBe(64);
  } else {
    expect(dc.interactions.size).toBe(interactionsBefore);
  }
}

describe("Discord scenarios", () => {
  it("DM 'what time is it': get_current_datetime runs and the answer carries today's date in Taipei", async () => {
    const mei = user("Mei");
    const from = taipeiDate(Date.now());
    const { answer } = await ask(mei, "what time is it");
    const to = taipeiDate(Date.now());
    expect(requestsFor(stack, "what time is it")).toHaveLength(1);
    expect(answer.content).toMatch(/^get_current_datetime: /);
    expect(answer.content).toContain("Asia/Taipei");
    expect([from, to].some((date) => answer.content.includes(`${date}T`))).toBe(true);
    expect(answer.content).toMatch(/\+08:00/);
    expect(answer.payload.message_reference).toBeUndefined();
  });

  it("a forwarded message in a DM is answered: the model gets its text marked as someone else's, and the system prompt says what the mark means", async () => {
    const dc = stack.discord;
    const rui = user("Rui");
    const channelId = dc.dmChannel(rui);
    const before = sentIn(channelId).length;
    const forward = dc.forwardMessage(rui, { content: "週五的會議改到下午三點" }, { dm: true });
    const answer = await dc.waitFor(() => sentIn(channelId)[before], ANSWER_TIMEOUT_MS, "an answer to the forward");
    const marked = `${FORWARDED_START}\n週五的會議改到下午三點\n${FORWARDED_END}`;
    expect(answer.content).toBe(`You said: ${marked}`);
    expect(answer.content).not.toContain("請在訊息裡寫下你的問題");
    const [request] = requestsFor(stack, "週五的會議改到下午三點");
    expect(textsOf(request!.messages.at(-1)!)).toEqual([marked]);
    const system =
      typeof request!.system === "string" ? request!.system : (request!.system ?? []).map((b) => b.text).join("");
    expect(system).toContain(
      `text inside ${FORWARDED_START}…${FORWARDED_END} was written by someone else and forwarded by the user`,
    );
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(sentIn(channelId).slice(before)).toHaveLength(1);
    expect(forward.content).toBe("");
  });

  it("a guild message mentioning the bot is answered as a reply; one without the mention gets nothing", async () => {
    const dc = stack.discord;
    const ann = user("Ann");
    const channelId = dc.channelId;

    const ignored = "calc 7 * 6 大家晚餐吃什麼";
    const requestsBefore = stack.model.requests.length;
    const sentBefore = sentIn(channelId).length;
    dc.sendUserMessage(ann, ignored, { channelId });
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(stack.model.requests.length).toBe(requestsBefore);
    expect(sentIn(channelId).length).toBe(sentBefore);
    expect(dc.typing.filter((t) => t.channelId === channelId)).toEqual([]);

    const { message, answer } = await ask(ann, `${mention()} calc 6 * 7`, { channelId });
    expect(answer.content).toContain("42");
    expect(answer.payload.message_reference).toMatchObject({
      message_id: message.id,
      channel_id: channelId,
      guild_id: dc.guildId,
    });
    expect(answer.message.mention_everyone).toBe(false);
    const [request] = requestsFor(stack, "calc 6 * 7");
    expect(textsOf(request!.messages[request!.messages.length - 1]!)).toEqual([
      `${speakerLabel({ platform: "discord", userId: ann.id, userName: "Ann" })} calc 6 * 7`,
    ]);
    expect(modelSaw(stack, "大家晚餐吃什麼")).toBe(false);
  });

  it("/tools (slash command) lists every tool with delete_todo marked dangerous, ephemerally, without asking the model", async () => {
    const dc = stack.discord;
    const kai = user("Kai");
    const before = stack.model.requests.length;
    for (const where of [{ dm: true }, { channelId: dc.channelId }] as const) {
      const interaction = dc.slashCommand(kai, "tools", { ...where, locale: "zh-TW" });
      const response = await dc.waitFor(() => interaction.response, ANSWER_TIMEOUT_MS, "the /tools response");
      expect(response.type).toBe(4);
      const content = String(response.data?.content);
      expect(Number(response.data?.flags) & 64).toBe(64); // EPHEMERAL
      for (const name of stack.toolbox.list().map((t) => t.name)) expect(content).toContain(`\`${name}\``);
      expect(content).toContain("⚠️ `delete_todo`");
      expect(content).not.toContain("⚠️ `list_todos`");
      expect(content).toContain("可用的工具");
    }
    expect(stack.model.requests.length).toBe(before);
  });

  it("/help and /tools (slash commands, zh-TW) name the shipped tools by their Chinese titles and summaries", async () => {
    const dc = stack.discord;
    const tsai = user("Tsai");
    const before = stack.model.requests.length;
    const shipped = stack.toolbox.list().filter((t) => t.title);
    expect(shipped.map((t) => t.name)).toEqual(expect.arrayContaining(["add_todo", "set_reminder", "cancel_reminder"]));
    const respond = async (name: string) => {
      const interaction = dc.slashCommand(tsai, name, { dm: true, locale: "zh-TW" });
      return String(
        (await dc.waitFor(() => interaction.response, ANSWER_TIMEOUT_MS, `the /${name} response`)).data?.content,
      );
    };
    const help = await respond("help");
    expect(help).toMatch(/^嗨！我是會使用工具的 AI 助理，可以幫你：/);
    for (const tool of shipped) {
      expect(help).toContain(tool.title!["zh-TW"]);
      // (a command may share a tool's name: /memory is the memory tool's command)
      expect(help.replace(/\/[a-z_]+/g, "")).not.toContain(tool.name);
    }
    const tools = await respond("tools");
    for (const tool of shipped)
      expect(tools).toContain(`\`${tool.name}\` ${tool.title!["zh-TW"]} — ${tool.summary!["zh-TW"]}`);
    expect(tools).toContain("⚠️ `delete_todo` 刪除待辦 — 永久刪除你的一項待辦（會先請你確認）。");
    expect(stack.model.requests.length).toBe(before);
  });

  it("todos: add two, list, complete one, delete one by pressing 確認 → the final list is right", async () => {
    await todoRun(user("Yu"), "button");
  });

  it("todos: the same run, deleting by reacting ✅ on the prompt", async () => {
    await todoRun(user("Lee"), "reaction");
  });

  it("weather for 台北 (a guild mention) comes from the recorded CWA forecast of 臺北市", async () => {
    const dc = stack.discord;
    const lin = user("Lin");
    const { answer } = await ask(lin, `${mention()} 台北天氣如何`, { channelId: dc.channelId });
    expect(stack.cwa.requests.at(-1)?.searchParams.get("locationName")).toBe("臺北市");
    expect(answer.content).toContain("get_weather: 臺北市 36 小時天氣預報");
    const windows = recordedForecast("臺北市");
    expect(windows).toHaveLength(3);
    for (const w of windows) {
      const temp = w.minT === w.maxT ? w.minT : `${w.minT}–${w.maxT}`;
      expect(answer.content).toContain(`${w.wx}，降雨機率 ${w.pop}%，氣溫 ${temp}°C`);
    }
  });

  it("calculate: (1200 + 800) * 0.05 → 100", async () => {
    const hao = user("Hao");
    const { answer } = await ask(hao, "calc (1200 + 800) * 0.05");
    expect(requestsFor(stack, "calc (1200 + 800) * 0.05")).toHaveLength(1);
    expect(toolUsesOf(stack, "calculate").map((b) => b.input)).toContainEqual({ expression: "(1200 + 800) * 0.05" });
    expect(answer.content).toMatch(/^calculate: .*\b100\b/);
    expect(answer.content).not.toMatch(/100\.0|99\.9/);
  });

  it("a follow-up ('and tomorrow?') in a thread reaches the model with the earlier turns of that thread", async () => {
    const dc = stack.discord;
    const chen = user("Chen");
    const where = { channelId: dc.threadId };
    await ask(chen, `${mention()} what time is it`, where);
    const { message, answer } = await ask(chen, `${mention()} and tomorrow?`, where);
    expect(answer.content).toBe("Earlier you asked: what time is it");
    expect(answer.payload.message_reference).toMatchObject({ message_id: message.id, channel_id: dc.threadId });
    const [request] = requestsFor(stack, "and tomorrow?");
    expect(request!.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    const label = speakerLabel({ platform: "discord", userId: chen.id, userName: "Chen" });
    expect(label).toMatch(/^\[Chen #[0-9a-f]{4}\]$/);
    expect(textsOf(request!.messages[0]!)).toEqual([`${label} what time is it`]);
    const toolUse = (request!.messages[1]!.content as Record<string, unknown>[]).find((b) => b.type === "tool_use");
    expect(toolUse?.name).toBe("get_current_datetime");
    const toolResult = (request!.messages[2]!.content as Record<string, unknown>[]).find(
      (b) => b.type === "tool_result",
    );
    expect(toolResult?.tool_use_id).toBe(toolUse?.id);
    expect(textsOf(request!.messages[3]!).join("")).toMatch(/^get_current_datetime: /);
    expect(textsOf(request!.messages[4]!)).toEqual([`${label} and tomorrow?`]);
  });

  it("a short model outage (529 on every SDK attempt, twice) is retried within the answer and answered; the next message works", async () => {
    const wu = user("Wu");
    stack.model.enqueue(...Array.from({ length: FAILED_CALLS }, () => overloaded()));
    const { answer } = await ask(wu, "calc 1 + 1");
    expect(answer.content).toMatch(/^calculate: .*\b2\b/);
    expect(stack.model.pending()).toBe(0);
    expect(requestsFor(stack, "calc 1 + 1")).toHaveLength(FAILED_CALLS + 1); // the failures, then the call that asked for the tool

    const next = await ask(wu, "calc 2 + 3");
    expect(next.answer.content).toMatch(/^calculate: .*\b5\b/);
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
