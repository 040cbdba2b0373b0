/**
 * A scheduled task's occurrence through the answer pipeline (`pipeline.ts`): its *take* (the job of
 * the `tasks` queue checked against the task, its owner's access and budget, the occurrence's
 * marker and the task's running lock) and its *compute* (the agent loop on the conversation's
 * history with the user turn `[scheduled task] <instruction>`, as the owner, with the toolbox of
 * the conversation). Restore, persist, delivery, the deadline, approvals and retries are the fresh
 * message's: a dangerous tool posts the usual prompt to the owner and the run waits for it, grants
 * apply, usage is recorded for the owner, and the answer joins the history.
 *
 * Exactly once: every occurrence is one job (a one-off's own id, or the scheduler's
 * `repeat:<id>:<ms>`), which BullMQ gives to one worker at a time; the answer is tagged in the
 * history with the occurrence's id, so a retried or stalled job delivers the stored answer instead
 * of running again, and the occurrence's done marker (written when the answer is over) makes any
 * later copy of the job end at once. No overlap: while one occurrence of a task is being answered
 * (its running lock), the next one waits. A failed occurrence is retried by BullMQ within the
 * answer's deadline ({@link TASK_JOB_OPTIONS}); after {@link FAILURES_TO_PAUSE} failed
 * occurrences in a row the task pauses and its owner is told why, with a resume button.
 */
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { z } from "zod";
import type { AccessStore } from "../access/store.js";
import { englishNoun, localize, type Locale } from "../i18n.js";
import { destinationOf, type Outbound } from "../outbound.js";
import { ChatUnreachableError } from "../outbound-errors.js";
import { PLATFORMS, conversationKey, type IncomingMessage } from "../queue/incoming.js";
import { dueTimeOf } from "../reminders/delivery.js";
import { occurrenceRefusal } from "../tasks/access.js";
import { pauseTask } from "../tasks/actions.js";
import { occurrenceHeader, scheduledTurn, shortInstruction, taskButton } from "../tasks/format.js";
import { taskSchedulerIds, type TaskJobData, type TaskScheduler } from "../tasks/schedule.js";
import {
  DONE_TTL_SECONDS,
  FAILURES_TO_PAUSE,
  deleteTask,
  getTask,
  taskKeys,
  updateTask,
  type Task,
  type TaskOwner,
} from "../tasks/store.js";
import { budgetText } from "../usage/budget.js";
import type { UsageStore } from "../usage/store.js";
import { compute, userTurnOf } from "./compute.js";
import {
  answer,
  conversationLocale,
  freshCrashed,
  localeOf,
  outboundFor,
  type AnswerParts,
  type AnswerState,
  type Computed,
  type JobAttempt,
} from "./pipeline.js";
import { releaseIfHolder } from "../held-keys.js";

/** What answering occurrences needs beyond the pipeline's parts. */
export interface TaskParts extends AnswerParts {
  scheduler: TaskScheduler;
  access: AccessStore;
  usage: UsageStore;
}

/** How long a later occurrence waits for the one still being answered before it looks again, in ms. */
export const OVERLAP_WAIT_MS = 5000;

/** What one job did (the job's return value, for tests and the log). */
export type TaskOutcome = "answered" | "asked" | "failed" | "refused" | "gone" | "paused" | "already";

const TaskJobSchema = z.object({
  platform: z.enum(PLATFORMS),
  userId: z.string().min(1),
  taskId: z.number().int().positive(),
  dueAt: z.number().int().optional(),
});

/**
 * The id of the occurrence of task `taskId` due at `dueAt` (ms): `task-<platform>-<user>-<id>-<dueAt>`.
 * It is the occurrence message's `messageId` (the run tag in the history, the progress keys) and names its done marker.
 */
export function occurrenceId(owner: TaskOwner, taskId: number, dueAt: number): string {
  return `${taskSchedulerIds(owner, taskId)[0]}-${dueAt}`;
}

/** The message an occurrence enters the pipeline as: its owner's, in its conversation, marked `scheduled`, its text the user turn. */
export function occurrenceMessage(owner: TaskOwner, task: Task, dueAt: number): IncomingMessage {
  return {
    platform: owner.platform,
    chatId: task.chatId,
    chatKind: task.chatKind,
    userId: owner.userId,
    userName: task.userName,
    text: scheduledTurn(task),
    messageId: occurrenceId(owner, task.id, dueAt),
    sentAt: dueAt,
    ...(task.topicId ? { topicId: task.topicId } : {}),
    reply: { ...(task.topicId ? { threadId: task.topicId } : {}), ...(task.guildId ? { guildId: task.guildId } : {}) },
    scheduled: { taskId: task.id, dueAt },
  };
}

/**
 * Processes one job of the `tasks` queue.
 *
 * @param token - the job's lock token (BullMQ's processor argument), to put it back as delayed
 *   while an earlier occurrence of the task is still being answered.
 * @returns what became of the occurrence.
 * @throws to retry the job (a transient failure before its last attempt and the deadline, no
 *   outbound for the platform here, Redis unreachable); `DelayedError` when it waits for the
 *   previous occurrence; `UnrecoverableError` for malformed job data.
 */
export async function answerTask(parts: TaskParts, job: Job<TaskJobData>, token?: string): Promise<TaskOutcome> {
  const parsed = TaskJobSchema.safeParse(job.data);
  if (!parsed.success)
    throw new UnrecoverableError(
      `malformed task job: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  const { platform, userId, taskId } = parsed.data;
  const owner: TaskOwner = { platform, userId };
  const { redis } = parts;
  const dueAt = dueTimeOf(job);
  const id = occurrenceId(owner, taskId, dueAt);
  const log = parts.log.child({ task: `${platform}:${userId}#${taskId}`, occurrence: id, job: job.id });
  const task = await getTask(redis, owner, taskId, log);
  if (!task || task.paused) {
    // Cancelled or paused: a repeat's schedulers are removed here if that could not be done then.
    if (job.repeatJobKey)
      for (const sid of taskSchedulerIds(owner, taskId)) await parts.scheduler.queue.removeJobScheduler(sid);
    log.info(task ? "task is paused; this occurrence does not run" : "task no longer exists; nothing to do");
    return task ? "paused" : "gone";
  }
  const keys = taskKeys(owner);
  if ((await redis.exists(keys.done(id))) === 1) {
    log.info("occurrence already answered; not again");
    return "already";
  }
  // No overlap: the previous occurrence still being answered keeps this one waiting.
  const lockTtlMs = (parts.config.ANSWER_DEADLINE_SECONDS + 60) * 1000;
  const took = await redis.set(keys.running(taskId), id, "PX", lockTtlMs, "NX");
  const holder = took === "OK" ? id : await redis.get(keys.running(taskId));
  if (holder !== null && holder !== id) {
    log.info({ running: holder }, "the previous occurrence is still being answered; this one waits");
    await job.moveToDelayed(Date.now() + OVERLAP_WAIT_MS, token);
    throw new DelayedError();
  }
  try {
    return await runOccurrence(parts, job, owner, task, dueAt, log);
  } finally {
    await releaseIfHolder(redis, keys.running(taskId), id).catch((err: unknown) =>
      log.warn({ err }, "could not release the task's running lock (it expires by itself)"),
    );
  }
}

async function runOccurrence(
  parts: TaskParts,
  job: Job<TaskJobData>,
  owner: TaskOwner,
  task: Task,
  dueAt: number,
  log: AnswerParts["log"],
): Promise<TaskOutcome> {
  const { redis, config } = parts;
  const message = occurrenceMessage(owner, task, dueAt);
  const attempt: JobAttempt = {
    made: job.attemptsMade,
    allowed: job.opts.attempts ?? 1,
    resumed: job.attemptsStarted > 1,
    freshCrashed: freshCrashed(job),
  };
  const outbound = outboundFor(parts, owner.platform, attempt);
  if (!outbound) return "failed";
  const refusal = await occurrenceRefusal(config, parts, {
    platform: owner.platform,
    chatId: task.chatId,
    chatKind: task.chatKind,
    userId: owner.userId,
    guildId: task.guildId,
  });
  if (refusal?.kind === "access") {
    // Not served any more (a revoked user, a disabled group): nothing runs and nothing is posted.
    log.warn("the task's owner or chat is not served any more; this occurrence does not run");
    await finishOccurrence(parts, owner, task, dueAt, { ok: false, error: "access" }, log, undefined);
    return "refused";
  }
  if (refusal) {
    log.warn("a day budget is spent; this occurrence does not run");
    // Told in the conversation's language (read now: the occurrence's answer, which reads its settings, does not run).
    const locale = await conversationLocale(parts, message, log);
    const why =
      locale === config.BOT_LOCALE ? refusal.text : budgetText({ ...config, BOT_LOCALE: locale }, refusal.scope);
    await outbound
      .sendAnswer(destinationOf(message), `${occurrenceHeader(task, dueAt, 0, locale)}\n${why}`)
      .catch((err: unknown) => log.error({ err }, "could not tell the owner that the occurrence did not run"));
    await redis.set(taskKeys(owner).done(message.messageId), "refused", "EX", DONE_TTL_SECONDS);
    await finishOccurrence(parts, owner, task, dueAt, { ok: false, error: why }, log, outbound);
    return "failed";
  }
  // A chat that blocked the bot (or removed it) for good: the task pauses at once, before any model call.
  const unreachable = await unreachableChat(outbound, message, log);
  if (unreachable) {
    await pauseUnreachable(parts, owner, task, unreachable, log);
    return "paused";
  }
  if (await ownerLeft(outbound, task, owner)) {
    await pauseForLeaver(parts, owner, task, dueAt, outbound, log);
    return "paused";
  }
  log.info({ lateMs: Date.now() - dueAt }, "running a scheduled task's occurrence");
  const done = await answer(
    parts,
    {
      kind: "task",
      message,
      outbound,
      answerId: message.messageId,
      runId: `${conversationKey(message)}:${message.messageId}`,
      compute: (state) => computeTask(parts, state, task, dueAt),
      failureText: (locale) =>
        localize(
          locale,
          {
            "zh-TW": "抱歉，排程任務 #{id}（{what}）這次沒有完成。",
            en: "Sorry, scheduled task #{id} ({what}) could not be done this time.",
          },
          { id: task.id, what: shortInstruction(task.instruction, 40) },
        ),
      // The occurrence is over (answered, asking, or failed for good): any later copy of its job ends at once.
      settle: async () => void (await redis.set(taskKeys(owner).done(message.messageId), "1", "EX", DONE_TTL_SECONDS)),
    },
    attempt,
  );
  await done.tracer.finish();
  await redis.del(done.keys.sent, done.keys.started);
  if (done.failure instanceof ChatUnreachableError) {
    await pauseUnreachable(parts, owner, task, done.failure, log);
    return "paused";
  }
  if (done.failure !== undefined) {
    await finishOccurrence(
      parts,
      owner,
      task,
      dueAt,
      { ok: false, error: failureReason(done.failure, localeOf(parts, done)) },
      log,
      outbound,
    );
    return "failed";
  }
  await finishOccurrence(parts, owner, task, dueAt, { ok: true }, log, outbound);
  return done.result && "asked" in done.result ? "asked" : "answered";
}

/**
 * The compute of an occurrence: the one compute step (`compute.ts`) on the conversation's history
 * with its summary, the user turn marked as a scheduled task (after the owner's speaker label in
 * groups), the toolbox of the conversation, the conversation's settings (model, persona, language)
 * and the context-window rescue — or the run resumed from the checkpoint an earlier attempt saved
 * before it changed data. The answer starts with the occurrence's header (how late it is, when it
 * is), in the conversation's language.
 */
function computeTask(parts: AnswerParts, state: AnswerState, task: Task, dueAt: number): Promise<Computed> {
  const { message } = state.taken;
  return compute(parts, state, {
    message,
    userText: userTurnOf(message),
    executeOnce: parts.ledger.executeOnce,
    history: "conversation",
    lead: () => occurrenceHeader(task, dueAt, state.startedAt - dueAt, localeOf(parts, state)),
    resuming: "resuming the occurrence's run an earlier attempt saved before it changed data",
  });
}

/**
 * Whether the owner of a group task is no longer a member of its group (issue 39: a member who
 * left or was removed must not keep reading the group's history through a task). Asked of the
 * platform at each occurrence (`Outbound.isMember`); an answer that cannot be had (an API error)
 * lets the occurrence run.
 */
async function ownerLeft(outbound: Outbound, task: Task, owner: TaskOwner): Promise<boolean> {
  if (task.chatKind !== "group" || !outbound.isMember) return false;
  return (await outbound.isMember({ chatId: task.chatId, guildId: task.guildId }, owner.userId)) === false;
}

/**
 * Pauses a group task whose owner left the group, and tells the group's administrators once (the
 * paused task has no further occurrence) in the group, with a cancel button only they (or bot
 * admins) may press; `/tasks` shows them the group's tasks. The occurrence is marked done.
 */
async function pauseForLeaver(
  parts: TaskParts,
  owner: TaskOwner,
  task: Task,
  dueAt: number,
  outbound: Outbound,
  log: AnswerParts["log"],
): Promise<void> {
  const { redis, scheduler } = parts;
  await pauseTask(redis, scheduler, owner, task, { by: "left" });
  await redis.set(taskKeys(owner).done(occurrenceId(owner, task.id, dueAt)), "left", "EX", DONE_TTL_SECONDS);
  log.warn("the owner of a group task is no longer a member of the group; the task is paused and the admins told");
  const message = occurrenceMessage(owner, task, dueAt);
  const locale = await conversationLocale(parts, message, log);
  const text = localize(
    locale,
    {
      "zh-TW":
        "⏸️ 給群組管理員：{name} 已不在這個群組，他設定的排程任務 #{id}（{what}）已暫停，不會再執行。管理員可以用 /tasks 查看，或按「取消」刪除它。",
      en:
        "⏸️ For the group's admins: {name} is no longer in this group, so their scheduled task #{id} ({what}) " +
        "is paused and will not run. Admins can see it with /tasks, or press Cancel to delete it.",
    },
    { name: task.userName, id: task.id, what: shortInstruction(task.instruction, 40) },
  );
  // No mention: the owner is not in the group any more.
  const { mention: _gone, ...to } = destinationOf(message);
  const cancel = {
    label: localize(locale, { "zh-TW": "❌ 取消 #{id}", en: "❌ Cancel #{id}" }, { id: task.id }),
    data: taskButton("c", owner, task.id),
  };
  try {
    if (outbound.sendNotice) await outbound.sendNotice(to, text, [cancel]);
    else await outbound.sendAnswer(to, text);
  } catch (err) {
    log.error({ err }, "could not tell the group's admins that a task was paused");
  }
}

/**
 * After an occurrence: its outcome on the task (the failures in a row, the last run, the next
 * time); a one-off task ends (its record deleted); after {@link FAILURES_TO_PAUSE} failures in a
 * row a repeating task pauses and its owner is told why, with a resume button. Re-reads the task
 * first, so a pause or cancel made meanwhile stands.
 */
async function finishOccurrence(
  parts: TaskParts,
  owner: TaskOwner,
  was: Task,
  dueAt: number,
  result: { ok: boolean; error?: string },
  log: AnswerParts["log"],
  outbound: Outbound | undefined,
): Promise<void> {
  const { redis, scheduler } = parts;
  const task = await getTask(redis, owner, was.id, log);
  if (!task) return;
  if (!task.repeat) {
    await deleteTask(redis, owner, task.id, log);
    return;
  }
  const failures = result.ok ? 0 : task.failures + 1;
  const after: Task = {
    ...task,
    failures,
    last: { dueAt, ok: result.ok, ...(result.error ? { error: result.error } : {}) },
  };
  if (failures < FAILURES_TO_PAUSE || task.paused) {
    if (!task.paused) after.next = (await scheduler.nextRun(owner, task.id)) ?? task.next;
    await updateTask(redis, owner, after);
    return;
  }
  const reason = result.error ?? "";
  await pauseTask(redis, scheduler, owner, after, { by: "failures", reason });
  log.warn({ failures, reason }, "scheduled task paused after failing occurrences in a row; its owner is told");
  if (!outbound) return;
  const message = occurrenceMessage(owner, task, dueAt);
  const locale = await conversationLocale(parts, message, log);
  const text = localize(
    locale,
    {
      "zh-TW":
        "⏸️ 排程任務 #{id}（{what}）連續 {n} 次沒有完成，已暫停。原因：{reason}\n按「繼續」恢復，或用 /tasks 管理。",
      en:
        "⏸️ Scheduled task #{id} ({what}) failed {n} {times} in a row and is paused. Why: {reason}\n" +
        "Press Resume to start it again, or manage it with /tasks.",
    },
    {
      id: task.id,
      what: shortInstruction(task.instruction, 40),
      n: failures,
      times: englishNoun(failures, "time"),
      reason,
    },
  );
  const to = destinationOf(message);
  const resume = {
    label: localize(locale, { "zh-TW": "▶️ 繼續", en: "▶️ Resume" }),
    data: taskButton("r", owner, task.id),
  };
  try {
    if (outbound.sendNotice) await outbound.sendNotice(to, text, [resume]);
    else await outbound.sendAnswer(to, text);
  } catch (err) {
    log.error({ err }, "could not tell the owner that the task paused");
  }
}

/**
 * Whether the bot can still write to the chat of `message`: one typing indicator (no model call,
 * nothing posted) answered by the platform with "blocked, removed, or no such chat"
 * (`ChatUnreachableError`: Telegram 403 / 400 chat not found, Discord 50001 / 10003 / 50007).
 * @returns that error, or undefined when the chat takes it or failed for another reason (the
 *   occurrence then runs as usual). Never throws.
 */
async function unreachableChat(
  outbound: Outbound,
  message: IncomingMessage,
  log: AnswerParts["log"],
): Promise<ChatUnreachableError | undefined> {
  try {
    await outbound.sendTyping(destinationOf(message));
    return undefined;
  } catch (error) {
    if (error instanceof ChatUnreachableError) return error;
    log.debug({ err: error }, "the typing indicator before the occurrence failed; the occurrence runs");
    return undefined;
  }
}

/**
 * A task whose chat the bot can no longer write to (the owner blocked it, the bot was removed, the
 * chat is gone) pauses at once (`paused.by` `unreachable`; nothing more is posted in that chat) and
 * its owner is told in a private chat when there is one the bot can reach: on Telegram the owner's
 * private chat (its id is the user's), unless that is the unreachable chat; else the pause is
 * logged (Discord keeps no DM channel of its users). Never throws for a failed notice (logged).
 * @throws when Redis is unreachable (the job retries).
 */
async function pauseUnreachable(
  parts: TaskParts,
  owner: TaskOwner,
  was: Task,
  error: ChatUnreachableError,
  log: AnswerParts["log"],
): Promise<void> {
  const task = (await getTask(parts.redis, owner, was.id, log)) ?? was;
  const reason = "the bot cannot write to the task's chat (blocked, removed, or the chat is gone)";
  await pauseTask(parts.redis, parts.scheduler, owner, task, { by: "unreachable", reason });
  const dm = owner.platform === "telegram" && task.chatId !== owner.userId ? owner.userId : undefined;
  const logged = { chatId: task.chatId, chatKind: task.chatKind, err: { message: error.message, code: error.code } };
  if (!dm) {
    log.warn(logged, `scheduled task paused: ${reason}; no private chat to tell its owner`);
    return;
  }
  const outbound = parts.outbounds[owner.platform];
  // The owner's private chat is a conversation of its own: its language.
  const locale = await conversationLocale(parts, { platform: owner.platform, chatId: dm }, log);
  const text = localize(
    locale,
    {
      "zh-TW":
        "⏸️ 排程任務 #{id}（{what}）已暫停：我無法再傳訊到它的聊天室（被封鎖、移出，或聊天室已不存在）。用 /tasks 管理。",
      en: "⏸️ Scheduled task #{id} ({what}) is paused: I can no longer write to its chat (blocked, removed, or the chat is gone). Manage it with /tasks.",
    },
    { id: task.id, what: shortInstruction(task.instruction, 40) },
  );
  try {
    if (!outbound) throw new Error(`this worker has no ${owner.platform} outbound`);
    await outbound.sendAnswer({ conversation: { platform: owner.platform, chatId: dm }, chatKind: "dm" }, text);
    log.warn(logged, `scheduled task paused: ${reason}; its owner is told in a private chat`);
  } catch (err) {
    log.warn(
      { ...logged, notice: { message: err instanceof Error ? err.message : String(err) } },
      `scheduled task paused: ${reason}; its owner could not be told in a private chat`,
    );
  }
}

/** Why an occurrence failed, in words for its owner: the error's own `userMessage(locale)` when it has one, else its message. */
function failureReason(error: unknown, locale: Locale): string {
  const { userMessage } = (error ?? {}) as { userMessage?: unknown };
  if (typeof userMessage === "function") return String(userMessage.call(error, locale));
  return error instanceof Error ? error.message.slice(0, 200) : String(error).slice(0, 200);
}
