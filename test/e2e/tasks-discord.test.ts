/**
 * Issue 32's scheduled tasks on Discord, end to end: the real discord.js adapter and REST
 * outbound against the fake Discord, real Redis and BullMQ, the strict fake Messages API answered
 * by the scripted model. A task is set a minute ahead (the tools refuse less than 10 s); the test checks
 * that BullMQ holds its job for that time, then brings the job forward (`bringForward`) instead of
 * waiting, and the task must start running (a worker takes its job) within 2 s of its new time. A
 * worker in a process of its own is killed (SIGKILL) in the middle of an occurrence, and the
 * occurrence is answered once by the worker that takes it over. The policy is `allowlist`, so
 * access is checked at each occurrence.
 */
import type { ChildProcess } from "node:child_process";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { AccessStore } from "../../src/access/store.js";
import { defineTool } from "../../src/toolbox/tool.js";
import type { RunningBot } from "../../src/app.js";
import type { RedisClient } from "../../src/redis.js";
import { getTask, listTasks } from "../../src/tasks/store.js";
import { getTodo } from "../../tools/todo/store.js";
import { hang, overloaded, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeInteraction, FakeUser, SentMessage } from "../fakes/discord.js";
import { spawnChildWorker } from "../worker/children.js";
import { seedTodos } from "./approvals-helpers.js";
import { bringForward, expireLocks } from "../helpers/jobs.js";
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
/** A slow read-only tool (1.5 s) that counts how many of its calls run at the same time. */
const slow = { running: 0, most: 0, calls: 0 };
const slowTool = defineTool({
  name: "slow_test_report",
  description: "Takes a second and a half to write a report (a test tool).",
  tags: ["util"],
  readOnly: true,
  input: z.object({}),
  run: async () => {
    slow.calls += 1;
    slow.running += 1;
    slow.most = Math.max(slow.most, slow.running);
    await new Promise((r) => setTimeout(r, 1500));
    slow.running -= 1;
    return "report written";
  },
});

useStack({ model: tasksModel, env: { ACCESS_POLICY: "allowlist" }, tools: [slowTool] }, (started, connection) => {
  stack = started;
  redis = connection;
});

const WAIT = 30_000;
let queue: ReturnType<typeof tasksQueue>;
let access: AccessStore;
let child: ChildProcess | undefined;
beforeAll(async () => {
  queue = tasksQueue(redis);
  access = new AccessStore(redis);
  await access.allowChat(`discord:${stack.discord.guildId}`);
});
afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(async () => {
  await queue.close();
});

let nextUser = 0;
/** A user allowed to talk to the bot in DMs (the server is allowed as a whole). */
async function user(name: string): Promise<FakeUser> {
  nextUser += 1;
  const u = {
    id: `73000000000000${String(nextUser).padStart(4, "0")}`,
    username: name.toLowerCase(),
    global_name: name,
  };
  await access.allowUser(`discord:${u.id}`);
  return u;
}

const mention = () => `<@${stack.discord.bot.id}>`;

/** The bot's message in `channelId` whose content contains `needle`, sent after the first `after` messages. */
async function sentWith(channelId: string, needle: string, after = 0): Promise<SentMessage> {
  const dc = stack.discord;
  return dc.waitFor(
    () => dc.sent.slice(after).find((m) => m.channelId === channelId && m.content.includes(needle)),
    WAIT,
    `a message containing ${needle}`,
  );
}

function allWith(channelId: string, needle: string): SentMessage[] {
  return stack.discord.sent.filter((m) => m.channelId === channelId && m.content.includes(needle));
}

/**
 * Sends `text` as `from` (in a DM, or mentioning the bot in `channelId`) and waits for the answer
 * containing `needle`; a `call schedule_task …` is confirmed by `from` on its approval prompt first.
 */
async function say(
  from: FakeUser,
  text: string,
  needle: string,
  where: { dm: true } | { channelId: string },
): Promise<SentMessage> {
  const dc = stack.discord;
  const seen = dc.sent.length;
  const channelId = "dm" in where ? dc.dmChannel(from) : where.channelId;
  if ("dm" in where) dc.sendUserMessage(from, text, { dm: true });
  else dc.sendUserMessage(from, `${mention()} ${text}`, { channelId });
  if (text.startsWith("call schedule_task ")) {
    // Issue 39: every task is confirmed by its owner on an approval prompt first.
    const prompt = await dc.waitFor(
      () =>
        dc.sent
          .slice(seen)
          .find(
            (m) => m.channelId === channelId && m.content.includes("排程任務（") && Array.isArray(m.payload.components),
          ),
      WAIT,
      "the approval prompt of a scheduled task",
    );
    await notice(dc.clickButton(from, prompt.id, button(prompt, "ap:").replace(/:[yna]$/, ":y")));
  }
  return sentWith(channelId, needle, seen);
}

function button(message: SentMessage, prefix: string): string {
  const rows = message.payload.components as { components: { custom_id: string }[] }[];
  const id = rows.flatMap((r) => r.components).find((c) => c.custom_id.startsWith(prefix))?.custom_id;
  expect(id, `a button ${prefix}… on "${message.content}"`).toBeDefined();
  return id!;
}

/** The ephemeral notice the bot answered an interaction with. */
async function notice(interaction: FakeInteraction): Promise<string> {
  const dc = stack.discord;
  await dc.waitFor(
    () => interaction.response && (interaction.response.type === 4 || interaction.edits.length > 0),
    WAIT,
    "the interaction's answer",
  );
  return String(interaction.edits.at(-1)?.content ?? interaction.response!.data?.content ?? "");
}

/**
 * The update of a press on an ephemeral list's button (response type 7, `UPDATE_MESSAGE`): the
 * list's content and buttons as the press left them.
 */
async function updated(
  interaction: FakeInteraction,
): Promise<{ content: string; buttons: { label: string; custom_id: string }[] }> {
  await stack.discord.waitFor(() => interaction.response, WAIT, "the press's answer");
  expect(interaction.response!.type).toBe(7);
  const data = interaction.response!.data ?? {};
  const rows = (data.components ?? []) as { components: { label: string; custom_id: string }[] }[];
  return { content: String(data.content), buttons: rows.flatMap((r) => r.components) };
}

/** The model requests whose last user turn contains `needle`. */
function requestsSaying(needle: string): FakeRequest[] {
  return stack.model.requests.filter((r) => {
    const last = r.messages.at(-1)!;
    const blocks = typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
    return last.role === "user" && blocks.some((b) => b.type === "text" && String(b.text).includes(needle));
  });
}

// The two timed scenarios wait for their tasks in real time and share only the stack (own people,
// chats and tasks): they run side by side. The tests after them run one at a time.
it.concurrent(
  "a task a minute ahead in a thread runs once at its time with two workers, pinging only its owner, not as a reply",
  async () => {
    const dc = stack.discord;
    const hana = await user("Hana");
    const thread = dc.threadId;
    const at = secondsAhead(60);
    const set = await say(
      hana,
      `call schedule_task {"instruction":"what time is it","at":"${localIso(at)}"}`,
      "schedule_task:",
      { channelId: thread },
    );
    expect(set.content).toMatch(
      /^schedule_task: 已排程任務：#1 what time is it — .+（\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00），不重複$/,
    );
    const second: RunningBot = await stack.startWorker();
    try {
      const owner = { platform: "discord" as const, userId: hana.id };
      const occurrence = taskOccurrenceJobId(owner, 1, at, false);
      const { heldFor, dueNow } = await bringForward(queue, occurrence);
      expect(Math.abs(heldFor - at)).toBeLessThanOrEqual(1000);
      const ran = await sentWith(thread, "📅 排程任務 #1");
      expect(Math.abs((await occurrenceStartedAt(queue, occurrence)) - dueNow)).toBeLessThanOrEqual(2000);
      expect(ran.content).toMatch(new RegExp(`^<@${hana.id}> 📅 排程任務 #1\\n\\nget_current_datetime: `));
      expect(ran.payload.allowed_mentions).toEqual({ parse: [], users: [hana.id], replied_user: false });
      expect(ran.payload.message_reference).toBeUndefined();
      expect(ran.payload.enforce_nonce).toBe(true);
      await quiet(1000);
      expect(allWith(thread, "📅 排程任務 #1")).toHaveLength(1);
      expect(requestsSaying("[scheduled task] what time is it")).toHaveLength(1);
    } finally {
      await second.stop();
    }
    const follow = await say(hana, "and tomorrow?", "Earlier you asked", { channelId: thread });
    expect(follow.content).toBe("Earlier you asked: [scheduled task] what time is it");
  },
  90_000,
);

it.concurrent(
  "a weekly task runs at its time in a DM and its next occurrence is the scheduler's, a week later",
  async () => {
    const dc = stack.discord;
    const jin = await user("Jin");
    const dm = dc.dmChannel(jin);
    const at = secondsAhead(60);
    await say(
      jin,
      `call schedule_task {"instruction":"calc 19.99 * 3","at":"${localIso(at)}","repeat":"weekly"}`,
      "schedule_task:",
      { dm: true },
    );
    const owner = { platform: "discord" as const, userId: jin.id };
    expect(await taskSchedulerNext(queue, owner, 1)).toBe(at);
    const occurrence = taskOccurrenceJobId(owner, 1, at, true);
    const { heldFor, dueNow } = await bringForward(queue, occurrence);
    expect(Math.abs(heldFor - at)).toBeLessThanOrEqual(1000);
    const ran = await sentWith(dm, "📅 排程任務 #1");
    expect(Math.abs((await occurrenceStartedAt(queue, occurrence)) - dueNow)).toBeLessThanOrEqual(2000);
    expect(ran.content).toBe("📅 排程任務 #1\n\ncalculate: 19.99 * 3 = 59.97");
    expect(ran.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    await eventually(
      async () => (await taskSchedulerNext(queue, owner, 1)) === at + 7 * 86_400_000,
      "the scheduler's next run a week later",
    );
    await eventually(
      async () => (await getTask(redis, owner, 1))?.next === at + 7 * 86_400_000,
      "the stored next time a week later",
    );
  },
  90_000,
);

it("a worker killed (SIGKILL) during an occurrence: the worker that takes it over answers it, once", async () => {
  const dc = stack.discord;
  const kim = await user("Kim");
  const dm = dc.dmChannel(kim);
  await say(
    kim,
    `call schedule_task {"instruction":"calc 6 * 7","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { dm: true },
  );
  const owner = { platform: "discord" as const, userId: kim.id };
  // Only the child worker runs when the occurrence starts; its model call hangs.
  await stack.worker.stop();
  child = await spawnChildWorker("test/e2e/tasks-worker-child.ts", {
    STACK_CONFIG: JSON.stringify(stack.config),
    REDIS_URL: stack.redis.url,
  });
  stack.model.enqueue(hang());
  const job = await addOccurrence(queue, owner, 1);
  await dc.waitFor(() => stack.model.hanging() === 1, WAIT, "the child's model call");
  child.kill("SIGKILL");
  await dc.waitFor(() => child!.signalCode === "SIGKILL", WAIT, "the child worker to die");
  // Its lock would run out after LOCK_DURATION_MS (src/worker/worker.ts); the test does not wait for that.
  expect(await expireLocks(redis, queue)).toEqual([job]);
  await stack.restartWorker();
  const ran = await sentWith(dm, "📅 排程任務 #1");
  expect(ran.content).toBe("📅 排程任務 #1\n\ncalculate: 6 * 7 = 42");
  expect(await outcomeOf(queue, job)).toBe("answered");
  await quiet(1000);
  expect(allWith(dm, "📅 排程任務 #1")).toHaveLength(1);
  expect(requestsSaying("[scheduled task] calc 6 * 7")).toHaveLength(2); // the hung one, and the one answered
}, 90_000);

it("an occurrence whose model call fails (529, after the SDK's own retry) is retried and answered once, without an apology", async () => {
  const dc = stack.discord;
  const ray = await user("Ray");
  const dm = dc.dmChannel(ray);
  await say(
    ray,
    `call schedule_task {"instruction":"calc 5 * 5","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { dm: true },
  );
  const owner = { platform: "discord" as const, userId: ray.id };
  stack.model.enqueue(overloaded(), overloaded());
  const seen = dc.sent.length;
  const job = await addOccurrence(queue, owner, 1);
  expect(await outcomeOf(queue, job, 40_000)).toBe("answered");
  expect(requestsSaying("[scheduled task] calc 5 * 5").length).toBeGreaterThanOrEqual(3); // two overloaded, one answered
  expect(
    dc.sent
      .slice(seen)
      .filter((m) => m.channelId === dm)
      .map((m) => m.content),
  ).toEqual(["📅 排程任務 #1\n\ncalculate: 5 * 5 = 25"]);
  expect(await getTask(redis, owner, 1)).toMatchObject({ failures: 0, last: { ok: true } });
}, 60_000);

it("an occurrence that fell due while no worker ran runs once when one starts, saying how late it is", async () => {
  const dc = stack.discord;
  const sam = await user("Sam");
  const dm = dc.dmChannel(sam);
  await say(
    sam,
    `call schedule_task {"instruction":"calc 7 * 8","at":"${localIso(Date.now() + 3600_000)}"}`,
    "schedule_task:",
    { dm: true },
  );
  const owner = { platform: "discord" as const, userId: sam.id };
  await stack.worker.stop();
  // Due five minutes ago, while no worker ran (as a worker that was down finds its delayed job).
  const due = Date.now() - 5 * 60_000;
  await addOccurrence(queue, owner, 1, due);
  await quiet(300);
  expect(allWith(dm, "📅 排程任務 #1")).toEqual([]);
  await stack.restartWorker();
  const ran = await sentWith(dm, "📅 排程任務 #1");
  expect(ran.content).toMatch(
    /^📅 排程任務 #1（晚了 5 分鐘：原定 .+，當時機器人沒有在執行）\n\ncalculate: 7 \* 8 = 56$/,
  );
  await quiet(1000);
  expect(allWith(dm, "📅 排程任務 #1")).toHaveLength(1);
}, 60_000);

it("an occurrence still being answered when the next one is due does not overlap it: the next waits, then runs", async () => {
  const dc = stack.discord;
  const tom = await user("Tom");
  const dm = dc.dmChannel(tom);
  await say(
    tom,
    `call schedule_task {"instruction":"call slow_test_report","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { dm: true },
  );
  const owner = { platform: "discord" as const, userId: tom.id };
  const first = await addOccurrence(queue, owner, 1, Date.now() - 1000);
  await dc.waitFor(() => slow.running === 1, WAIT, "the first occurrence's slow tool");
  const next = await addOccurrence(queue, owner, 1);
  await dc.waitFor(
    () => stack.logs().some((l) => l.msg === "the previous occurrence is still being answered; this one waits"),
    WAIT,
    "the next occurrence waiting",
  );
  expect(slow.calls).toBe(1);
  expect(await outcomeOf(queue, first)).toBe("answered");
  // It looks again after OVERLAP_WAIT_MS (src/worker/task.ts); the test does not wait for that time.
  await bringForward(queue, next, 0);
  expect(await outcomeOf(queue, next, 30_000)).toBe("answered");
  expect(slow).toMatchObject({ calls: 2, most: 1 });
  expect(allWith(dm, "📅 排程任務 #1").map((m) => m.content)).toEqual([
    "📅 排程任務 #1\n\nslow_test_report: report written",
    "📅 排程任務 #1\n\nslow_test_report: report written",
  ]);
}, 60_000);

it("a dangerous tool in an occurrence pings its owner with the approval prompt and runs only after she approves", async () => {
  const dc = stack.discord;
  const lea = await user("Lea");
  const max = await user("Max");
  await seedTodos(redis, "discord", lea.id, ["倒垃圾"]);
  await say(
    lea,
    `call schedule_task {"instruction":"call delete_todo {\\"todo_id\\":1}","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { channelId: dc.channelId },
  );
  const owner = { platform: "discord" as const, userId: lea.id };
  const seen = dc.sent.length;
  const job = await addOccurrence(queue, owner, 1);
  const prompt = await dc.waitFor(
    () => dc.sent.slice(seen).find((m) => m.channelId === dc.channelId && Array.isArray(m.payload.components)),
    WAIT,
    "the approval prompt",
  );
  expect(await outcomeOf(queue, job)).toBe("asked");
  expect(prompt.content).toMatch(new RegExp(`^<@${lea.id}> .*刪除待辦 #1「倒垃圾」`, "s"));
  expect(prompt.payload.allowed_mentions).toEqual({ parse: [], users: [lea.id], replied_user: false });
  expect(await getTodo(redis, owner, 1)).toBeDefined();
  expect(await notice(dc.clickButton(max, prompt.id, button(prompt, "ap:")))).toBe("只有 Lea 可以決定。");
  expect(await getTodo(redis, owner, 1)).toBeDefined();
  const yes = button(prompt, "ap:").replace(/:[yna]$/, ":y");
  await notice(dc.clickButton(lea, prompt.id, yes));
  const done = await sentWith(dc.channelId, "delete_todo:", seen);
  expect(done.content).toMatch(new RegExp(`^<@${lea.id}> delete_todo: 已刪除`));
  expect(await getTodo(redis, owner, 1)).toBeUndefined();
});

it("3 failing occurrences in a row pause the task and tell its owner why, with a resume button only he can press", async () => {
  const dc = stack.discord;
  const ned = await user("Ned");
  const oli = await user("Oli");
  await say(
    ned,
    `call schedule_task {"instruction":"FAIL-MODEL digest","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { channelId: dc.channelId },
  );
  const owner = { platform: "discord" as const, userId: ned.id };
  for (let i = 1; i <= 3; i++)
    expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1, Date.now() - i))).toBe("failed");
  const paused = await sentWith(dc.channelId, "已暫停");
  expect(paused.content).toMatch(
    new RegExp(`^<@${ned.id}> ⏸️ 排程任務 #1（FAIL-MODEL digest）連續 3 次沒有完成，已暫停。原因：`),
  );
  expect(paused.payload.allowed_mentions).toEqual({ parse: [], users: [ned.id], replied_user: false });
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  expect(await notice(dc.clickButton(oli, paused.id, button(paused, "tk:r:")))).toBe(
    "這是別人的排程任務，只有設定的人可以按。",
  );
  expect(await notice(dc.clickButton(ned, paused.id, button(paused, "tk:r:")))).toMatch(/^已繼續排程任務 #1，下次：/);
  expect(await getTask(redis, owner, 1)).toMatchObject({ failures: 0 });
  expect(await taskSchedulerNext(queue, owner, 1)).toBe((await getTask(redis, owner, 1))?.next);
});

it("/tasks answers ephemerally with pause/resume and cancel buttons for the asker's tasks in this channel; a press updates that list in place", async () => {
  const dc = stack.discord;
  const pia = await user("Pia");
  const later = localIso(Date.now() + 3600_000);
  await say(
    pia,
    `call schedule_task {"instruction":"weekly report","at":"${later}","repeat":"weekly"}`,
    "schedule_task:",
    { channelId: dc.channelId },
  );
  await say(pia, `call schedule_task {"instruction":"elsewhere","at":"${later}"}`, "schedule_task:", {
    channelId: dc.threadId,
  });
  const owner = { platform: "discord" as const, userId: pia.id };
  const listed = dc.slashCommand(pia, "tasks", { channelId: dc.channelId });
  await dc.waitFor(() => listed.response, WAIT, "the /tasks answer");
  expect(listed.response!.data!.flags).toBe(64);
  expect(String(listed.response!.data!.content)).toMatch(/^你在這裡的排程任務：\n#1 weekly report — .+，每週$/);
  const rows = listed.response!.data!.components as { components: { label: string; custom_id: string }[] }[];
  const buttons = rows.flatMap((r) => r.components);
  expect(buttons.map((c) => c.label)).toEqual(["⏸️ 暫停 #1", "❌ 取消 #1"]);
  // Pause: the pressed list itself is updated (UPDATE_MESSAGE): the notice on top, #1 paused, Resume for Pause.
  const paused = await updated(dc.clickEphemeralButton(pia, listed, buttons[0]!.custom_id));
  expect(paused.content).toBe(
    "已暫停排程任務 #1（/tasks 可以繼續）。\n\n你在這裡的排程任務：\n#1 weekly report — 已暫停，每週",
  );
  expect(paused.buttons.map((c) => c.label)).toEqual(["▶️ 繼續 #1", "❌ 取消 #1"]);
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  const again = dc.slashCommand(pia, "tasks", { channelId: dc.channelId });
  await dc.waitFor(() => again.response, WAIT, "the second /tasks answer");
  const rows2 = again.response!.data!.components as { components: { label: string; custom_id: string }[] }[];
  expect(rows2.flatMap((r) => r.components)).toEqual(paused.buttons);
  // Resume from the updated list: it runs again, with its Pause button back.
  const resumed = await updated(dc.clickEphemeralButton(pia, listed, paused.buttons[0]!.custom_id));
  expect(resumed.content).toMatch(/^已繼續排程任務 #1，下次：.+\n\n你在這裡的排程任務：\n#1 weekly report — .+，每週$/);
  expect(resumed.buttons.map((c) => c.label)).toEqual(["⏸️ 暫停 #1", "❌ 取消 #1"]);
  expect(await taskSchedulerNext(queue, owner, 1)).toBeDefined();
  // Cancel: the list says there are none here, and has no buttons.
  const cancelled = await updated(dc.clickEphemeralButton(pia, listed, resumed.buttons[1]!.custom_id));
  expect(cancelled).toEqual({ content: "已取消排程任務 #1。\n\n你在這裡沒有排程任務。", buttons: [] });
  expect(await taskSchedulerNext(queue, owner, 1)).toBeUndefined();
  expect((await listTasks(redis, owner)).map((t) => t.instruction)).toEqual(["elsewhere"]);
  // The cancelled task's buttons are gone from the list: it cannot be pressed again.
  expect(() => dc.clickEphemeralButton(pia, listed, buttons[1]!.custom_id)).toThrow(/no button/);
}, 60_000);

it("revoked access stops a task: a revoked user's DM task and a disabled server's task do not run", async () => {
  const dc = stack.discord;
  const quinn = await user("Quinn");
  const dm = dc.dmChannel(quinn);
  const later = localIso(Date.now() + 3600_000);
  await say(
    quinn,
    `call schedule_task {"instruction":"calc 2 + 2","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
    { dm: true },
  );
  await say(
    quinn,
    `call schedule_task {"instruction":"calc 3 + 3","at":"${later}","repeat":"daily"}`,
    "schedule_task:",
    { channelId: dc.channelId },
  );
  expect(await getTask(redis, { platform: "discord", userId: quinn.id }, 2)).toMatchObject({ guildId: dc.guildId });
  const owner = { platform: "discord" as const, userId: quinn.id };
  expect(await outcomeOf(queue, await addOccurrence(queue, owner, 2))).toBe("answered");
  await access.revokeUser(`discord:${quinn.id}`);
  await access.revokeChat(`discord:${dc.guildId}`);
  try {
    const calls = stack.model.requests.length;
    const sent = dc.sent.length;
    expect(await outcomeOf(queue, await addOccurrence(queue, owner, 1))).toBe("refused");
    expect(await outcomeOf(queue, await addOccurrence(queue, owner, 2))).toBe("refused");
    expect(stack.model.requests.length).toBe(calls);
    expect(dc.sent.length).toBe(sent);
    expect(allWith(dm, "📅 排程任務")).toHaveLength(0);
  } finally {
    await access.allowChat(`discord:${dc.guildId}`);
  }
});

it("issue 39: a server task whose owner left the guild pauses at its next occurrence (guild member lookup) and tells the admins once", async () => {
  const dc = stack.discord;
  const nia = await user("Nia");
  const owner = { platform: "discord" as const, userId: nia.id };
  await say(
    nia,
    `call schedule_task {"instruction":"read the channel and sum it up","at":"${localIso(Date.now() + 3600_000)}","repeat":"daily"}`,
    "schedule_task:",
    { channelId: dc.channelId },
  );
  dc.leaveGuild(nia);
  const seen = dc.sent.length;
  const requests = stack.model.requests.length;
  const job = await addOccurrence(queue, owner, 1);
  expect(await outcomeOf(queue, job)).toBe("paused");
  expect(dc.memberLookups).toContain(nia.id);
  const notice = await sentWith(dc.channelId, "給群組管理員", seen);
  expect(notice.content).toContain("Nia 已不在這個群組，他設定的排程任務 #1（read the channel and sum it up）已暫停");
  expect(notice.content).not.toContain(`<@${nia.id}>`);
  expect(button(notice, "tk:c:")).toBeDefined();
  expect(stack.model.requests.length).toBe(requests);
  expect((await getTask(redis, owner, 1))?.paused).toMatchObject({ by: "left" });
  const again = await addOccurrence(queue, owner, 1, Date.now() + 1);
  expect(await outcomeOf(queue, again)).toBe("paused");
  await quiet(300);
  expect(allWith(dc.channelId, "給群組管理員")).toHaveLength(1);
});
