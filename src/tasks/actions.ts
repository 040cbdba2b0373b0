/**
 * What people do with their scheduled tasks outside the model: the `/tasks` listing (the asker's
 * tasks in this conversation, each with pause or resume and cancel buttons) and the presses of
 * those buttons and of the resume button sent when a task paused after failures.
 * Platform-neutral: an adapter hands over the button data and who pressed, and shows the notice.
 *
 * Only the owner's presses count (the owner's id is in the button data), except that a group's
 * administrators (and bot admins) see every task of the group in `/tasks` and may cancel them
 * there (issue 39).
 */
import { listButtonLimit } from "../feature.js";
import type { Config, Locale } from "../config.js";
import { localize } from "../i18n.js";
import { markdownLiteral } from "../plain-text.js";
import type { Logger } from "../log.js";
import type { ConversationRef, Platform } from "../queue/incoming.js";
import type { RedisClient } from "../redis.js";
import { formatTask, parseTaskButton, shortInstruction, taskButton } from "./format.js";
import type { TaskScheduler } from "./schedule.js";
import { deleteTask, getTask, groupTasks, isIn, listTasks, updateTask, type Task, type TaskOwner } from "./store.js";

/** A press on a task button. */
export interface TaskPress {
  /** The button's `callback_data` / `custom_id` (`tk:…`). */
  data: string;
  platform: Platform;
  /** Who pressed. */
  userId: string;
  locale: Locale;
  /** The chat the pressed message is in: a group's admin may cancel that group's tasks there. */
  chatId?: string;
  /** True for a bot admin (`ADMIN_USERS`). */
  admin?: boolean;
  /** Whether the presser administers the group pressed in (asked only for someone else's task). */
  isGroupAdmin?: (() => Promise<boolean>) | undefined;
  /**
   * The conversation the pressed message is in (its chat and topic): a press on a `/tasks` list's
   * button answers with that list as it is now ({@link TaskPressAnswer.listing}). Without it, none.
   */
  place?: { chatId: string; topicId?: string | undefined };
}

/** The answer to a press: the notice for the presser, and whether the press changed the task (the adapter drops the pressed button). */
export interface TaskPressAnswer {
  notice: string;
  changed: boolean;
  /**
   * The pressed `/tasks` list as it is now (a cancelled task gone, a paused one with its Resume
   * button), for the adapter to show in place of the pressed message: set for a press on a list's
   * button (`tk:pl:`, `tk:rl:`, `tk:cl:`, `tk:cg:`) that changed a task, or, on one person's list,
   * that its owner pressed (the task ended or was changed meanwhile). Absent for a button outside a list.
   */
  listing?: TaskListing;
}

/** The `/tasks` listing: text and buttons (`label`, `data` of at most 64 bytes; at most 25). */
export interface TaskListing {
  /** Markdown (a command's reply): instructions and names people chose are literals in it. */
  text: string;
  buttons: { label: string; data: string }[];
}

/** Task actions the adapters call (see the module comment). */
export class TaskActions {
  /** @param parts.scheduler - a scheduler on the `tasks` queue (the adapters' own connection and prefix). */
  constructor(private readonly parts: { config: Config; redis: RedisClient; scheduler: TaskScheduler; log: Logger }) {}

  /**
   * The asker's tasks set in this conversation, each with a pause (or resume) and a cancel button.
   * @throws when Redis fails.
   */
  async listing(
    asker: ConversationRef & {
      userId: string;
      locale: Locale;
      chatKind?: "dm" | "group";
      admin?: boolean;
      isGroupAdmin?: (() => Promise<boolean>) | undefined;
    },
  ): Promise<TaskListing> {
    if (asker.chatKind === "group" && (asker.admin || (await asker.isGroupAdmin?.().catch(() => false))))
      return this.#groupListing(asker);
    return this.#ownListing({ platform: asker.platform, userId: asker.userId }, asker);
  }

  /** One person's tasks set in this conversation (its chat and topic), each with its buttons. */
  async #ownListing(owner: TaskOwner, asker: ConversationRef & { locale: Locale }): Promise<TaskListing> {
    const { locale } = asker;
    const here = (await listTasks(this.parts.redis, owner, this.parts.log)).filter((t) => isIn(t, asker));
    if (here.length === 0) {
      return {
        text: localize(locale, { "zh-TW": "你在這裡沒有排程任務。", en: "You have no scheduled tasks here." }),
        buttons: [],
      };
    }
    const title = localize(locale, { "zh-TW": "你在這裡的排程任務：", en: "Your scheduled tasks here:" });
    const lines = here.map((t) => formatTask(t, locale, t.timezone, { markdown: true }));
    const buttons = here.slice(0, ownTasksWithButtons(asker.platform)).flatMap((t) => [
      // Paused by the bot's operator in the console: only the console resumes it; its owner may cancel it.
      ...(t.paused?.by === "operator"
        ? []
        : [
            t.paused
              ? {
                  label: localize(locale, { "zh-TW": "▶️ 繼續 #{id}", en: "▶️ Resume #{id}" }, { id: t.id }),
                  data: taskButton("r", owner, t.id, "list"),
                }
              : {
                  label: localize(locale, { "zh-TW": "⏸️ 暫停 #{id}", en: "⏸️ Pause #{id}" }, { id: t.id }),
                  data: taskButton("p", owner, t.id, "list"),
                },
          ]),
      {
        label: localize(locale, { "zh-TW": "❌ 取消 #{id}", en: "❌ Cancel #{id}" }, { id: t.id }),
        data: taskButton("c", owner, t.id, "list"),
      },
    ]);
    return {
      text: [title, ...lines, ...moreThanButtons(here.length, ownTasksWithButtons(asker.platform), locale)].join("\n"),
      buttons,
    };
  }

  /**
   * Every task of the group (any topic, anyone's), for its admins (issue 39): each line names its
   * owner; each task has a cancel button.
   */
  async #groupListing(asker: ConversationRef & { locale: Locale }): Promise<TaskListing> {
    const { locale } = asker;
    const all = await groupTasks(this.parts.redis, asker.platform, asker.chatId, this.parts.log);
    if (all.length === 0)
      return {
        text: localize(locale, { "zh-TW": "這個群組沒有排程任務。", en: "This group has no scheduled tasks." }),
        buttons: [],
      };
    const title = localize(locale, {
      "zh-TW": "這個群組的所有排程任務（管理員檢視）：",
      en: "Every scheduled task of this group (admin view):",
    });
    const lines = all.map(({ task }) =>
      localize(
        locale,
        { "zh-TW": "{line}（{name} 設定）", en: "{line} (set by {name})" },
        { line: formatTask(task, locale, task.timezone, { markdown: true }), name: markdownLiteral(task.userName) },
      ),
    );
    const buttons = all.slice(0, listButtonLimit(asker.platform)).map(({ owner, task }) => ({
      label: localize(
        locale,
        { "zh-TW": "❌ 取消 {name} 的 #{id}", en: "❌ Cancel {name}'s #{id}" },
        { id: task.id, name: shortInstruction(task.userName, 16) },
      ),
      data: taskButton("c", owner, task.id, "group"),
    }));
    return {
      text: [title, ...lines, ...moreThanButtons(all.length, listButtonLimit(asker.platform), locale)].join("\n"),
      buttons,
    };
  }

  /**
   * Handles a press: pause, resume or cancel. Refuses anyone but the owner — except a cancel by an
   * administrator of the group the task runs in, pressed in that group (`chatId`, `admin` or
   * `isGroupAdmin`); a task that no longer exists, or is already in the state pressed for, is said so.
   * A press on a list's button also answers with the list as it is now (see {@link TaskPressAnswer.listing}).
   * @throws when Redis or the queue fails (the adapter answers "try again").
   */
  async press(press: TaskPress): Promise<TaskPressAnswer> {
    const parsed = parseTaskButton(press.data);
    if (!parsed) return { notice: gone(press.locale), changed: false };
    const answer = await this.#press(press, parsed);
    const { view } = parsed;
    if (!view || !press.place || !(answer.changed || (view === "list" && parsed.userId === press.userId)))
      return answer;
    const { chatId, topicId } = press.place;
    const here = { platform: press.platform, chatId, ...(topicId ? { topicId } : {}), locale: press.locale };
    const owner = { platform: press.platform, userId: parsed.userId };
    return {
      ...answer,
      listing: view === "group" ? await this.#groupListing(here) : await this.#ownListing(owner, here),
    };
  }

  /** {@link press} without the list. */
  async #press(press: TaskPress, parsed: NonNullable<ReturnType<typeof parseTaskButton>>): Promise<TaskPressAnswer> {
    const { redis, log } = this.parts;
    const { locale } = press;
    if (parsed.userId !== press.userId && parsed.action === "c" && press.chatId !== undefined) {
      const owner = { platform: press.platform, userId: parsed.userId };
      const task = await getTask(redis, owner, parsed.taskId, log);
      if (
        task?.chatKind === "group" &&
        task.chatId === press.chatId &&
        (press.admin || (await press.isGroupAdmin?.().catch(() => false)))
      ) {
        await cancelTask(redis, this.parts.scheduler, owner, task);
        log.info({ task: `${owner.platform}:${owner.userId}#${task.id}` }, "scheduled task cancelled by a group admin");
        return {
          notice: localize(
            locale,
            { "zh-TW": "已取消 {name} 的排程任務 #{id}。", en: "Cancelled {name}'s scheduled task #{id}." },
            { id: task.id, name: task.userName },
          ),
          changed: true,
        };
      }
    }
    if (parsed.userId !== press.userId) {
      return {
        notice: localize(locale, {
          "zh-TW": "這是別人的排程任務，只有設定的人可以按。",
          en: "This is someone else's scheduled task: only the person who set it can press these.",
        }),
        changed: false,
      };
    }
    const owner = { platform: press.platform, userId: parsed.userId };
    const task = await getTask(redis, owner, parsed.taskId, log);
    if (!task) return { notice: gone(locale), changed: false };
    const id = task.id;
    const tlog = log.child({ task: `${owner.platform}:${owner.userId}#${id}` });
    if (parsed.action === "c") {
      await cancelTask(redis, this.parts.scheduler, owner, task);
      tlog.info("scheduled task cancelled with its button");
      return {
        notice: localize(locale, { "zh-TW": "已取消排程任務 #{id}。", en: "Cancelled scheduled task #{id}." }, { id }),
        changed: true,
      };
    }
    if (parsed.action === "p") {
      if (task.paused)
        return {
          notice: localize(
            locale,
            { "zh-TW": "排程任務 #{id} 已經暫停了。", en: "Scheduled task #{id} is paused already." },
            { id },
          ),
          changed: false,
        };
      if (task.next === undefined) return { notice: gone(locale), changed: false };
      await pauseTask(redis, this.parts.scheduler, owner, task, { by: "owner" });
      tlog.info("scheduled task paused by its owner");
      return {
        notice: localize(
          locale,
          {
            "zh-TW": "已暫停排程任務 #{id}（/tasks 可以繼續）。",
            en: "Paused scheduled task #{id} (/tasks to resume).",
          },
          { id },
        ),
        changed: true,
      };
    }
    if (!task.paused)
      return {
        notice: localize(
          locale,
          { "zh-TW": "排程任務 #{id} 沒有暫停。", en: "Scheduled task #{id} is not paused." },
          { id },
        ),
        changed: false,
      };
    if (task.paused.by === "operator")
      return {
        notice: localize(
          locale,
          {
            "zh-TW": "排程任務 #{id} 由機器人管理者暫停，只有管理者可以繼續（你可以取消它）。",
            en: "Scheduled task #{id} was paused by the bot's operator: only the operator can resume it (you may cancel it).",
          },
          { id },
        ),
        changed: false,
      };
    const next = await resumeTask(redis, this.parts.scheduler, owner, task);
    tlog.info({ next: new Date(next).toISOString() }, "scheduled task resumed");
    return {
      notice: localize(
        locale,
        { "zh-TW": "已繼續排程任務 #{id}，下次：{line}", en: "Resumed scheduled task #{id}; next: {line}" },
        { id, line: formatTask({ ...task, paused: undefined, next }, locale, task.timezone) },
      ),
      changed: true,
    };
  }
}

/** Deletes the task and removes what is scheduled for it. @throws when Redis fails. */
export async function cancelTask(
  redis: RedisClient,
  scheduler: TaskScheduler | undefined,
  owner: TaskOwner,
  task: Task,
): Promise<void> {
  await deleteTask(redis, owner, task.id);
  // Without a scheduler here its jobs find no task when due and end (a repeat's schedulers are removed then).
  await scheduler?.unschedule(owner, task);
}

/**
 * Pauses the task: marks it paused (`by` the owner, the operator, or after failures with the `reason`) and
 * removes what is scheduled. A job already running finds it paused after its answer and stops there.
 * @returns the paused task as stored.
 */
export async function pauseTask(
  redis: RedisClient,
  scheduler: TaskScheduler | undefined,
  owner: TaskOwner,
  task: Task,
  why: { by: "owner" | "failures" | "unreachable" | "left" | "operator"; reason?: string },
): Promise<Task> {
  const paused: Task = {
    ...task,
    paused: { at: Date.now(), by: why.by, ...(why.reason ? { reason: why.reason } : {}) },
    next: undefined,
  };
  await updateTask(redis, owner, paused);
  await scheduler?.unschedule(owner, task);
  return paused;
}

/**
 * Resumes a paused task from now on: failures forgotten, the next occurrence scheduled (a repeat's
 * next time after now; a one-off at its time, or at once when that passed).
 * @returns the next time it is due, ms since the Unix epoch.
 */
export async function resumeTask(
  redis: RedisClient,
  scheduler: TaskScheduler,
  owner: TaskOwner,
  task: Task,
  now = Date.now(),
): Promise<number> {
  // Unpaused first: a one-off due at once must find its task running when its job starts.
  const resumed: Task = { ...task, paused: undefined, failures: 0, next: Math.max(now, task.at) };
  await updateTask(redis, owner, resumed);
  const next = await scheduler.schedule(owner, task, now, now);
  if (next !== resumed.next) await updateTask(redis, owner, { ...resumed, next });
  return next;
}

/**
 * How many of one person's tasks get buttons on `platform`: each has two (pause or resume, and
 * cancel), so half of {@link listButtonLimit} (12 on Telegram and Discord, 6 on LINE).
 */
function ownTasksWithButtons(platform: string): number {
  return Math.floor(listButtonLimit(platform) / 2);
}

/** The line ending a list of `count` tasks when some lack buttons (more than `shown`); none otherwise. */
function moreThanButtons(count: number, shown: number, locale: Locale): string[] {
  if (count <= shown) return [];
  return [
    localize(
      locale,
      {
        "zh-TW": "（按鈕只列出前 {n} 個；取消一些之後再傳 /tasks，就會出現其餘的按鈕。）",
        en: "(Buttons for the first {n} only; cancel some and send /tasks again for the rest.)",
      },
      { n: shown },
    ),
  ];
}

function gone(locale: Locale): string {
  return localize(locale, {
    "zh-TW": "這個排程任務已經結束或取消了。",
    en: "This scheduled task has ended or was cancelled.",
  });
}
