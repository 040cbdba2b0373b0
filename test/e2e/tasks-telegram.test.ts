/**
 * Issue 32's scheduled tasks on Telegram, end to end: the real grammy adapter and worker parts
 * against the fake Bot API, real Redis and BullMQ, the strict fake Messages API answered by the
 * scripted model, which calls schedule_task and runs each occurrence's instruction through the
 * real loop, toolbox, approvals and history. A task is set a minute ahead (the tools refuse less than
 * 10 s); the test checks that BullMQ holds its job for that time, then brings the job forward
 * (`bringForward`) instead of waiting, and the task must start running (a worker takes its job)
 * within 2 s of its new time. The policy is `allowlist`, so access is checked at each occurrence.
 */
import type { Chat, User } from "grammy/types";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AccessStore } from "../../src/access/store.js";
import type { RunningBot } from "../../src/app.js";
import { speakerLabel } from "../../src/prompts.js";
import type { RedisClient } from "../../src/redis.js";
import { taskJobId } from "../../src/tasks/schedule.js";
import { addTask, getTask, listTasks } from "../../src/tasks/store.js";
import { getTodo } from "../../tools/todo/store.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { seedTodos } from "./approvals-helpers.js";
import { bringForward } from "../helpers/jobs.js";
import { useStack, type Stack } from "./harness.js";
import { eventually, localIso, quiet, secondsAhead } from "./reminders-helpers.js";
import {
  addOccurrence,
  occurrenceStartedAt,
  outcomeOf,
  taskOccurrenceJobId,
  taskSchedulerNext,
  tasksModel,
  tasksQueue,
} from "./tasks-helpers.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: tasksModel, env: { ACCESS_POLICY: "allowlist" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 30_000;
let queue: ReturnType<typeof tasksQueue>;
let access: AccessStore;
beforeAll(() => {
  queue = tasksQueue(redis);
  access = new AccessStore(redis);
});
afterAll(async () => {
  await queue.close();
});

/** A user allowed to talk to the bot (the file's policy is allowlist). */
async function person(id: number, name: string): Promise<User> {
  await access.allowUser(`telegram:${id}`);
  return stack.telegram.user(id, name);
}

/** A group the bot is enabled in. */
async function enabledGroup(id: number, title: string, forum = false): Promise<Chat> {
  await access.allowChat(`telegram:${id}`);
  return stack.telegram.group(id, title, forum);
}

/** The bot's message in `chatId` whose text contains `needle`, sent after the first `after` messages. */
async function sentWith(chatId: number, needle: string, after = 0): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () => tg.sent.slice(after).find((m) => m.chatId === chatId && m.text.includes(needle)),
    WAIT,
    `a message containing ${needle}`,
  );
}

/** Messages of the bot in `chatId` whose text contains `needle`. */
function allWith(chatId: number, needle: string): FakeSentMessage[] {
  return stack.telegram.sent.filter((m) => m.chatId === chatId && m.text.includes(needle));
}

/**
 * Sends `text` as `from` in `chat` (topic `thread`) and waits for the answer containing `needle`.
 * A `call schedule_task …` is confirmed first: `from` presses ✅ on its approval prompt (issue 39:
 * every task is confirmed by its owner).
 */
async function say(chat: Chat, from: User, text: string, needle: string, thread?: number): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  const seen = tg.sent.length;
  const mention = chat.type === "private" || text.startsWith("/") ? "" : `@${tg.bot.username} `;
  tg.sendUserMessage({
    chat,
    from,
    text: `${mention}${text}`,
    ...(thread ? { message_thread_id: thread } : {}),
  });
  if (text.startsWith("call schedule_task ")) {
    const prompt = await taskPrompt(chat.id, seen);
    tg.pressButton({ from, message: prompt, data: data(prompt, "ap:").replace(/:[yna]$/, ":y") });
  }
  return sentWith(chat.id, needle, seen);
}

/** The approval prompt of a schedule_task call in `chatId`, sent after the first `after` messages. */
async function taskPrompt(chatId: number, after: number): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () =>
      tg.sent
        .slice(after)
        .find((m) => m.chatId === chatId && m.text.includes("排程任務（") && tg.buttons(m).length > 0),
    WAIT,
    "the approval prompt of a scheduled task",
  );
}

/** The model requests whose last user turn contains `needle`. */
function requestsSaying(needle: string): FakeRequest[] {
  return stack.model.requests.filter((r) => {
    const last = r.messages.at(-1)!;
    const blocks = typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
    return last.role === "user" && blocks.some((b) => b.type === "text" && String(b.text).includes(needle));
  });
}

async function toast(id: string): Promise<string> {
  const tg = stack.telegram;
  const a = await tg.waitFor(
    () => tg.callbackAnswers.find((x) => String(x.callback_query_id) === id),
    WAIT,
    `the answer to callback query ${id}`,
  );
  return String(a.text ?? "");
}

function data(message: FakeSentMessage, prefix: string): string {
  const found = stack.telegram
    .buttons(message)
    .map((b) => b.callback_data!)
    .find((d) => d.startsWith(prefix));
  expect(found, `a button ${prefix}… on "${message.text}"`).toBeDefined();
  return found!;
}

// The two timed scenarios wait for their tasks in real time and share only the stack (own people,
// chats and tasks): they run side by side. The tests after them run one at a time.
it.concurrent(
  "a task a minute ahead in a forum topic runs once at its time as its owner — through a worker " +
    "restart and with two workers — mentioning her; the answer joins the history",
  async () => {
    const group = await enabledGroup(-1009101, "家庭群組", true);
    const alice = await person(9101, "Alice");
    const at = secondsAhead(60);
    const set = await say(
      group,
      alice,
      `call schedule_task {"instruction":"what time is it","at":"${localIso(at)}"}`,
      "schedule_task:",
      77,
    );
    expect(set.text).toMatch(
      /^schedule_task: 已排程任務：#1 what time is it — .+（\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00），不重複$/,
    );
    expect(await getTask(redis, { platform: "telegram", userId: "9101" }, 1)).toMatchObject({
      instruction: "what time is it",
      at,
      next: at,
      chatId: String(group.id),
      topicId: "77",
      chatKind: "group",
    });

    // Between scheduling and the run: the worker restarts, and a second worker joins.
    await stack.restartWorker();
    const second: RunningBot = await stack.startWorker();
    try {
      const owner = { platform: "telegram" as const, userId: "9101" };
      const occurrence = taskOccurrenceJobId(owner, 1, at, false);
      const { heldFor, dueNow } = await bringForward(queue, occurrence);
      expect(Math.abs(heldFor - at)).toBeLessThanOrEqual(1000);
      const ran = await sentWith(group.id, "📅 排程任務 #1");
      expect(Math.abs((await occurrenceStartedAt(queue, occurrence)) - dueNow)).toBeLessThanOrEqual(2000);
      expect(ran.text).toMatch(/^Alice 📅 排程任務 #1\n\nget_current_datetime: /);
      expect(ran.entities).toContainEqual(
        expect.objectContaining({
          type: "text_mention",
          offset: 0,
          length: 5,
          user: expect.objectContaining({ id: 9101 }) as unknown,
        }),
      );
      expect(ran.payload.message_thread_id).toBe(77);
      expect(ran.payload.reply_parameters).toBeUndefined();
      // The model was asked once, as Alice, with the instruction marked as a scheduled task.
      const turn = `${speakerLabel({ platform: "telegram", userId: "9101", userName: "Alice" })} [scheduled task] what time is it`;
      expect(requestsSaying(turn)).toHaveLength(1);
      await quiet(1000);
      expect(allWith(group.id, "📅 排程任務 #1")).toHaveLength(1);
      expect(requestsSaying("[scheduled task] what time is it")).toHaveLength(1);
      // A one-off ends once it ran.
      expect(await listTasks(redis, { platform: "telegram", userId: "9101" })).toEqual([]);
    } finally {
      await second.stop();
    }
    // The occurrence is in the topic's history: a follow-up question sees it.
    const follow = await say(group, alice, "and tomorrow?", "Earlier you asked", 77);
    expect(follow.text).toBe("Earlier you asked: [scheduled task] what time is it");
  },
  90_000,
);

it.concurrent(
  "a daily task runs at its time in a DM (no mention), and its next occurrence is the scheduler's, a day later",
  async () => {
    const tg = stack.telegram;
    const carol = await person(9201, "Carol");
    const chat = tg.privateChat(carol);
    // The DM's persona (`/persona`) is one of the settings an occurrence is answered with.
    await say(chat, carol, "/persona Talk like a pirate.", "好的，從下一則訊息起");
    const at = secondsAhead(60);
    const set = await say(
      chat,
      carol,
      `call schedule_task {"instruction":"calc 1200 * 0.05","at":"${localIso(at)}","repeat":"daily"}`,
      "schedule_task:",
    );
    expect(set.text).toMatch(/^schedule_task: 已排程任務：#1 calc 1200 \* 0\.05 — .+，每天$/);
    const owner = { platform: "telegram" as const, userId: "9201" };
    expect(await taskSchedulerNext(queue, owner, 1)).toBe(at);
    const occurrence = taskOccurrenceJobId(owner, 1, at, true);
    const { heldFor, dueNow } = await bringForward(queue, occurrence);
    expect(Math.abs(heldFor - at)).toBeLessThanOrEqual(1000);
    const ran = await sentWith(chat.id, "📅 排程任務 #1");
    expect(Math.abs((await occurrenceStartedAt(queue, occurrence)) - dueNow)).toBeLessThanOrEqual(2000);
    expect(ran.text).toBe("📅 排程任務 #1\n\ncalculate: 1200 * 0.05 = 60");
    const asked = requestsSaying("[scheduled task] calc 1200 * 0.05")[0]!;
    const system = typeof asked.system === "string" ? asked.system : (asked.system ?? []).map((b) => b.text).join("\n");
    expect(system).toContain("<persona>\nTalk like a pirate.\n</persona>");
    await eventually(
      async () => (await taskSchedulerNext(queue, owner, 1)) === at + 86_400_000,
      "the scheduler's next run a day later",
    );
    await eventually(
      async () => (await getTask(redis, owner, 1))?.next === at + 86_400_000,
      "the stored next time a day later",
    );
    expect(await getTask(redis, owner, 1)).toMatchObject({ failures: 0, last: { dueAt: at, ok: true } });
    await quiet(1000);
    expect(allWith(chat.id, "📅 排程任務 #1")).toHaveLength(1);
    const list = await say(chat, carol, "call list_tasks", "list_tasks:");
    expect(list.text).toMatch(
      /^list_tasks: 你的排程任務（1 個）：\n#1 calc 1200 \* 0\.05 — .+（\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00），每天$/,
    );
    const cancelled = await say(chat, carol, 'call cancel_task {"task_id":1}', "cancel_task:");
    expect(cancelled.text).toBe("cancel_task: 已取消排程任務 #1：calc 1200 * 0.05");
    expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  },
  90_000,
);

it("a dangerous tool in an occurrence posts the approval prompt to its owner (mentioned) and runs only after she approves", async () => {
  const tg = stack.telegram;
  const group = await enabledGroup(-1009301, "讀書會");
  const dana = await person(9301, "Dana");
  const bob = await person(9302, "Bob");
  await seedTodos(redis, "telegram", "9301", ["還書"]);
  await say(
    group,
    dana,
    `call schedule_task {"instruction":"call delete_todo {\\"todo_id\\":1}","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
  );
  const owner = { platform: "telegram" as const, userId: "9301" };
  const seen = tg.sent.length;
  const job = await addOccurrence(queue, owner, 1);
  const prompt = await tg.waitFor(
    () => tg.sent.slice(seen).find((m) => m.chatId === group.id && tg.buttons(m).length > 0),
    WAIT,
    "the approval prompt",
  );
  expect(await outcomeOf(queue, job)).toBe("asked");
  expect(prompt.text).toMatch(/^Dana .*刪除待辦 #1「還書」/s);
  expect(prompt.entities).toContainEqual(expect.objectContaining({ type: "text_mention", offset: 0, length: 4 }));
  expect((await getTodo(redis, owner, 1))?.title).toBe("還書");
  // Only Dana decides.
  expect(await toast(tg.pressButton({ from: bob, message: prompt, data: data(prompt, "ap:") }))).toBe(
    "只有 Dana 可以決定。",
  );
  expect(await getTodo(redis, owner, 1)).toBeDefined();
  tg.pressButton({ from: dana, message: prompt, data: data(prompt, "ap:").replace(/:[yna]$/, ":y") });
  const done = await sentWith(group.id, "delete_todo:", seen);
  expect(done.text).toMatch(/^Dana delete_todo: 已刪除/);
  expect(await getTodo(redis, owner, 1)).toBeUndefined();
});

it("3 failing occurrences in a row pause the task and tell its owner why, with a resume button only she can press", async () => {
  const tg = stack.telegram;
  const erin = await person(9401, "Erin");
  const mallory = await person(9402, "Mallory");
  const chat = tg.privateChat(erin);
  await say(
    chat,
    erin,
    `call schedule_task {"instruction":"FAIL-MODEL summary","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
  );
  const owner = { platform: "telegram" as const, userId: "9401" };
  for (let i = 1; i <= 3; i++) {
    const job = await addOccurrence(queue, owner, 1, Date.now() - i);
    expect(await outcomeOf(queue, job)).toBe("failed");
    expect((await getTask(redis, owner, 1))?.failures).toBe(i);
  }
  const notice = await sentWith(chat.id, "已暫停");
  expect(notice.text).toMatch(
    /^⏸️ 排程任務 #1（FAIL-MODEL summary）連續 3 次沒有完成，已暫停。原因：.+\n按「繼續」恢復，或用 \/tasks 管理。$/s,
  );
  expect(tg.buttons(notice).map((b) => b.text)).toEqual(["▶️ 繼續"]);
  expect(await getTask(redis, owner, 1)).toMatchObject({ paused: { by: "failures" }, failures: 3 });
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  // While paused, an occurrence does not run.
  const calls = stack.model.requests.length;
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("paused");
  expect(stack.model.requests.length).toBe(calls);

  expect(await toast(tg.pressButton({ from: mallory, message: notice, data: data(notice, "tk:r:") }))).toBe(
    "這是別人的排程任務，只有設定的人可以按。",
  );
  expect((await getTask(redis, owner, 1))?.paused).toBeDefined();
  expect(await toast(tg.pressButton({ from: erin, message: notice, data: data(notice, "tk:r:") }))).toMatch(
    /^已繼續排程任務 #1，下次：#1 FAIL-MODEL summary — /,
  );
  const resumed = await getTask(redis, owner, 1);
  expect(resumed).toMatchObject({ failures: 0 });
  expect(resumed?.paused).toBeUndefined();
  expect(await taskSchedulerNext(queue, owner, 1)).toBe(resumed?.next);
});

it(
  "/tasks lists the asker's tasks here with pause/resume and cancel buttons; another member's presses are refused; " +
    "a press edits the list to the tasks as they are now",
  async () => {
    const tg = stack.telegram;
    const group = await enabledGroup(-1009501, "專案群組");
    const frank = await person(9501, "Frank");
    const gus = await person(9502, "Gus");
    const later = localIso(Date.now() + 3600_000);
    await say(
      group,
      frank,
      `call schedule_task {"instruction":"sum up today","at":"${later}","repeat":"weekdays"}`,
      "schedule_task:",
    );
    await say(group, frank, `call schedule_task {"instruction":"what time is it","at":"${later}"}`, "schedule_task:");
    const owner = { platform: "telegram" as const, userId: "9501" };

    const list = await say(group, frank, "/tasks", "排程任務");
    expect(list.text).toMatch(
      /^你在這裡的排程任務：\n#1 sum up today — .+，每個工作日（週一到週五）\n#2 what time is it — .+，不重複$/,
    );
    expect(tg.buttons(list).map((b) => b.text)).toEqual(["⏸️ 暫停 #1", "❌ 取消 #1", "⏸️ 暫停 #2", "❌ 取消 #2"]);
    // Gus has none here, and cannot press Frank's.
    expect((await say(group, gus, "/tasks", "排程任務")).text).toBe("你在這裡沒有排程任務。");
    const shown = list.text;
    expect(await toast(tg.pressButton({ from: gus, message: list, data: data(list, "tk:cl:") }))).toBe(
      "這是別人的排程任務，只有設定的人可以按。",
    );
    expect(await listTasks(redis, owner)).toHaveLength(2);
    expect(list.text).toBe(shown);

    // Pause #1: its scheduler goes; the list is edited: #1 paused, with a resume button.
    expect(await toast(tg.pressButton({ from: frank, message: list, data: data(list, "tk:pl:") }))).toBe(
      "已暫停排程任務 #1（/tasks 可以繼續）。",
    );
    expect((await getTask(redis, owner, 1))?.paused).toMatchObject({ by: "owner" });
    expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
    await tg.waitFor(() => list.text.includes("已暫停"), WAIT, "the list edited");
    expect(list.text).toMatch(
      /^你在這裡的排程任務：\n#2 what time is it — .+，不重複\n#1 sum up today — 已暫停，每個工作日（週一到週五）$/,
    );
    expect(tg.buttons(list).map((b) => b.text)).toEqual(["⏸️ 暫停 #2", "❌ 取消 #2", "▶️ 繼續 #1", "❌ 取消 #1"]); // paused ones last
    // /tasks again shows the same.
    const again = await say(group, frank, "/tasks", "排程任務");
    expect(again.text).toBe(list.text);
    expect(tg.buttons(again)).toEqual(tg.buttons(list));
    // Resume #1 from the edited list: it runs again, and the list says so, with its pause button back.
    expect(await toast(tg.pressButton({ from: frank, message: list, data: data(list, "tk:rl:") }))).toMatch(
      /^已繼續排程任務 #1，下次：/,
    );
    expect(await taskSchedulerNext(queue, owner, 1)).toBe((await getTask(redis, owner, 1))?.next);
    await tg.waitFor(() => !list.text.includes("已暫停"), WAIT, "the list edited back");
    expect(list.text).toBe(shown);
    expect(tg.buttons(list).map((b) => b.text)).toEqual(["⏸️ 暫停 #1", "❌ 取消 #1", "⏸️ 暫停 #2", "❌ 取消 #2"]);
    // Cancel #2: gone, and its pending job with it.
    const at2 = (await getTask(redis, owner, 2))!.next!;
    expect(await queue.getJob(taskJobId(owner, 2, at2))).toBeDefined();
    const cancel2 = tg
      .buttons(again)
      .map((b) => b.callback_data!)
      .find((d) => d.startsWith("tk:cl:") && d.endsWith(".2"))!;
    expect(await toast(tg.pressButton({ from: frank, message: again, data: cancel2 }))).toBe("已取消排程任務 #2。");
    expect((await listTasks(redis, owner)).map((t) => t.id)).toEqual([1]);
    expect(await queue.getJob(taskJobId(owner, 2, at2))).toBeUndefined();
    // The list pressed in is edited to what is left (the older list `again` showed #1 paused: now it runs).
    await tg.waitFor(() => !again.text.includes("what time is it"), WAIT, "the list edited");
    expect(again.text).toMatch(/^你在這裡的排程任務：\n#1 sum up today — .+，每個工作日（週一到週五）$/);
    expect(tg.buttons(again).map((b) => b.text)).toEqual(["⏸️ 暫停 #1", "❌ 取消 #1"]);
  },
);

it("/tasks with more tasks than buttons fit (12 tasks of two buttons each) gives buttons to the first 12 and says so in a last line", async () => {
  const tg = stack.telegram;
  const nia = await person(9551, "Nia");
  const chat = tg.privateChat(nia);
  const owner = { platform: "telegram" as const, userId: "9551" };
  const at = Date.now() + 3600_000;
  const add = (i: number) =>
    addTask(
      redis,
      owner,
      {
        instruction: `task ${i}`,
        at,
        next: at,
        timezone: "Asia/Taipei",
        chatId: String(chat.id),
        chatKind: "dm",
        userName: "Nia",
        createdAt: Date.now(),
      },
      100,
    );
  for (let i = 1; i <= 12; i++) await add(i);
  const note = "（按鈕只列出前 12 個；取消一些之後再傳 /tasks，就會出現其餘的按鈕。）";
  const twelve = await say(chat, nia, "/tasks", "排程任務");
  expect(twelve.text).not.toContain(note);
  expect(tg.buttons(twelve)).toHaveLength(24);
  await add(13);
  const thirteen = await say(chat, nia, "/tasks", "排程任務");
  expect(thirteen.text).toContain("#13 task 13");
  expect(thirteen.text.split("\n").at(-1)).toBe(note);
  expect(tg.buttons(thirteen)).toHaveLength(24);
});

it("revoked access stops a task: a revoked user's occurrence and a disabled group's do not run", async () => {
  const tg = stack.telegram;
  const hal = await person(9601, "Hal");
  const chat = tg.privateChat(hal);
  const group = await enabledGroup(-1009602, "社團");
  const later = localIso(Date.now() + 3600_000);
  await say(
    chat,
    hal,
    `call schedule_task {"instruction":"calc 2 + 2","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
  );
  await say(
    group,
    hal,
    `call schedule_task {"instruction":"calc 3 + 3","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
  );
  const owner = { platform: "telegram" as const, userId: "9601" };
  // Allowed: an occurrence runs.
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("answered");
  expect(allWith(chat.id, "📅 排程任務 #1")).toHaveLength(1);

  await access.revokeUser("telegram:9601");
  await access.revokeChat(`telegram:${group.id}`);
  const calls = stack.model.requests.length;
  const sent = tg.sent.length;
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("refused");
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 2))).toBe("refused");
  expect(stack.model.requests.length).toBe(calls);
  expect(tg.sent.length).toBe(sent);
  expect(allWith(chat.id, "📅 排程任務 #1")).toHaveLength(1);
  expect(allWith(group.id, "📅 排程任務 #2")).toHaveLength(0);
});

it("issue 38 (10): a chat that blocked the bot (403) pauses its task at once, before any model call; the owner told privately, or it is logged", async () => {
  const tg = stack.telegram;
  const ivy = await person(9701, "Ivy");
  const chat = tg.privateChat(ivy);
  const group = await enabledGroup(-1009702, "封鎖群組");
  const later = localIso(Date.now() + 3600_000);
  await say(
    chat,
    ivy,
    `call schedule_task {"instruction":"calc 1 + 1","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
  );
  await say(
    group,
    ivy,
    `call schedule_task {"instruction":"calc 2 + 2","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
  );
  const owner = { platform: "telegram" as const, userId: "9701" };

  // The owner blocked the bot: her DM task pauses without a model call; no private chat is left to tell her.
  tg.blockBot(chat.id);
  const calls = stack.model.requests.length;
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("paused");
  expect(stack.model.requests.length).toBe(calls);
  expect(await getTask(redis, owner, 1)).toMatchObject({ paused: { by: "unreachable" }, failures: 0 });
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  expect(
    stack
      .logs()
      .filter((l) => String(l.msg).includes("no private chat to tell its owner") && l.task === "telegram:9701#1"),
  ).toHaveLength(1);
  // Paused: the next occurrence does not run either.
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("paused");
  expect(stack.model.requests.length).toBe(calls);

  // She unblocks it, the group removes the bot: the group task pauses, she is told in her private chat.
  tg.unblockBot(chat.id);
  tg.blockBot(group.id, "Forbidden: bot was kicked from the supergroup chat");
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 2))).toBe("paused");
  expect(stack.model.requests.length).toBe(calls);
  expect(await getTask(redis, owner, 2)).toMatchObject({ paused: { by: "unreachable" } });
  const told = await sentWith(chat.id, "⏸️ 排程任務 #2");
  expect(told.text).toBe(
    "⏸️ 排程任務 #2（calc 2 + 2）已暫停：我無法再傳訊到它的聊天室（被封鎖、移出，或聊天室已不存在）。用 /tasks 管理。",
  );
  tg.unblockBot(group.id);
});

it("issue 39: a group task whose owner left pauses at its next occurrence, telling admins once; admins see and cancel every task of the group", async () => {
  const tg = stack.telegram;
  const group = await enabledGroup(-1009901, "社區群組");
  const kim = await person(9901, "Kim");
  const lee = await person(9902, "Lee");
  const mo = await person(9903, "Mo");
  tg.admins.set(group.id, new Set([9902]));
  const owner = { platform: "telegram" as const, userId: "9901" };
  const later = localIso(Date.now() + 3600_000);
  await say(
    group,
    kim,
    `call schedule_task {"instruction":"sum up the group's week","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
  );
  await say(group, mo, `call schedule_task {"instruction":"what time is it","at":"${later}"}`, "schedule_task:");

  // Kim is removed from the group; her task's next occurrence finds it.
  tg.departed.set(group.id, new Map([[9901, "kicked"]]));
  const seen = tg.sent.length;
  const requests = stack.model.requests.length;
  const first = await addOccurrence(queue, owner, 1);
  expect(await outcomeOf(queue, first)).toBe("paused");
  const notice = await sentWith(group.id, "給群組管理員", seen);
  expect(notice.text).toBe(
    "⏸️ 給群組管理員：Kim 已不在這個群組，他設定的排程任務 #1（sum up the group's week）已暫停，不會再執行。管理員可以用 /tasks 查看，或按「取消」刪除它。",
  );
  expect(notice.entities.filter((e) => e.type === "text_mention")).toEqual([]);
  expect(stack.model.requests.length).toBe(requests); // the group's history was not read for her
  expect((await getTask(redis, owner, 1))?.paused).toMatchObject({ by: "left" });
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  // Told once: a later copy of an occurrence finds the task paused and posts nothing.
  const second = await addOccurrence(queue, owner, 1, Date.now() + 1);
  expect(await outcomeOf(queue, second)).toBe("paused");
  await quiet(300);
  expect(allWith(group.id, "給群組管理員")).toHaveLength(1);

  // A member sees only their own tasks and cannot cancel Kim's; an admin sees every task of the group.
  expect((await say(group, mo, "/tasks", "排程任務")).text).toMatch(/^你在這裡的排程任務：\n#1 what time is it/);
  expect(await toast(tg.pressButton({ from: mo, message: notice, data: data(notice, "tk:c:") }))).toBe(
    "這是別人的排程任務，只有設定的人可以按。",
  );
  const list = await say(group, lee, "/tasks", "排程任務");
  expect(list.text).toMatch(
    /^這個群組的所有排程任務（管理員檢視）：\n#1 what time is it — .+（Mo 設定）\n#1 sum up the group's week — 設定的人已離開群組，已暫停，每天（Kim 設定）$/,
  );
  expect(tg.buttons(list).map((b) => b.text)).toEqual(["❌ 取消 Mo 的 #1", "❌ 取消 Kim 的 #1"]);
  expect(await toast(tg.pressButton({ from: lee, message: notice, data: data(notice, "tk:c:") }))).toBe(
    "已取消 Kim 的排程任務 #1。",
  );
  expect(await listTasks(redis, owner)).toEqual([]);
  expect(await listTasks(redis, { platform: "telegram", userId: "9903" })).toHaveLength(1);
});
