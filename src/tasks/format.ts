/**
 * The words of scheduled tasks: one task as a line (list_tasks, `/tasks`), the header of an
 * occurrence's answer (with its lateness), the user turn of an occurrence, and the button data of
 * the pause / resume / cancel buttons.
 */
import type { Locale } from "../config.js";
import { englishNoun, localize } from "../i18n.js";
import { markdownLiteral } from "../plain-text.js";
import { LATE_AFTER_MS } from "../reminders/format.js";
import { durationInWords, monthEndDay, repeatInWords, timeInWords, timeIso } from "../reminders/time.js";
import type { Task, TaskOwner } from "./store.js";

/** The mark the user turn of an occurrence starts with, so the model knows nobody typed it just now. */
export const SCHEDULED_MARK = "[scheduled task]";

/** The user turn of an occurrence: `[scheduled task] <instruction>`. */
export function scheduledTurn(task: Pick<Task, "instruction">): string {
  return `${SCHEDULED_MARK} ${task.instruction}`;
}

/** The instruction cut to `max` characters (code points) with `…`, on one line. */
export function shortInstruction(instruction: string, max = 60): string {
  const flat = instruction.replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : flat;
}

/**
 * One task as a line: `#3 天氣與待辦 — 2026年12月2日 星期三 07:30（2026-12-02T07:30:00+08:00），每天`;
 * a paused one says so (and why, after failures) instead of a time.
 * @param options.markdown - the line goes into a Markdown message (`/tasks`): the instruction (cut
 *   first) is written as a literal ({@link markdownLiteral}), so it shows as it was written.
 *   Default: plain (a tool's result for the model, a button's notice).
 */
export function formatTask(task: Task, locale: Locale, timeZone: string, options: { markdown?: boolean } = {}): string {
  const short = shortInstruction(task.instruction);
  const what = options.markdown ? markdownLiteral(short) : short;
  const repeat = repeatInWords(task.repeat, locale, monthEndDay(task.repeat, task.at, task.timezone));
  if (task.paused) {
    const why =
      task.paused.by === "failures"
        ? localize(
            locale,
            { "zh-TW": "連續失敗 {n} 次後暫停", en: "paused after {n} {failures} in a row" },
            { n: task.failures, failures: englishNoun(task.failures, "failure") },
          )
        : task.paused.by === "unreachable"
          ? localize(locale, {
              "zh-TW": "無法再傳訊到它的聊天室，已暫停",
              en: "paused: the bot cannot write to its chat",
            })
          : task.paused.by === "left"
            ? localize(locale, { "zh-TW": "設定的人已離開群組，已暫停", en: "paused: its owner left the group" })
            : task.paused.by === "operator"
              ? localize(locale, { "zh-TW": "已由機器人管理者暫停", en: "paused by the bot's operator" })
              : localize(locale, { "zh-TW": "已暫停", en: "paused" });
    return localize(
      locale,
      { "zh-TW": "#{id} {what} — {why}，{repeat}", en: "#{id} {what} — {why}, {repeat}" },
      { id: task.id, what, why, repeat },
    );
  }
  if (task.next === undefined)
    return localize(locale, { "zh-TW": "#{id} {what} — 已執行", en: "#{id} {what} — done" }, { id: task.id, what });
  return localize(
    locale,
    { "zh-TW": "#{id} {what} — {words}（{iso}），{repeat}", en: "#{id} {what} — {words} ({iso}), {repeat}" },
    { id: task.id, what, words: timeInWords(task.next, timeZone, locale), iso: timeIso(task.next, timeZone), repeat },
  );
}

/**
 * A task to be scheduled, in full for its owner's confirmation (the approval prompt of
 * schedule_task): `排程任務（每天，第一次 2026年12月2日 星期三 07:30）：「…」` — the schedule in words
 * and the whole instruction (on one line, quoted), so the owner sees exactly what would run.
 */
export function describeTask(task: Pick<Task, "instruction" | "at" | "repeat" | "timezone">, locale: Locale): string {
  const repeat = repeatInWords(task.repeat, locale, monthEndDay(task.repeat, task.at, task.timezone));
  return localize(
    locale,
    {
      "zh-TW": "排程任務（{repeat}，{first} {time}）：「{what}」",
      en: "Schedule a task ({repeat}, {first} {time}): “{what}”",
    },
    {
      repeat,
      first: task.repeat
        ? localize(locale, { "zh-TW": "第一次", en: "first on" })
        : localize(locale, { "zh-TW": "時間", en: "on" }),
      time: timeInWords(task.at, task.timezone, locale),
      what: task.instruction.replace(/\s+/g, " ").trim(),
    },
  );
}

/**
 * The first line of an occurrence's answer: `📅 排程任務 #3`, and when it starts more than
 * `LATE_AFTER_MS` after its time, how late and the time it was due.
 */
export function occurrenceHeader(
  task: Pick<Task, "id" | "timezone">,
  dueAt: number,
  lateMs: number,
  locale: Locale,
): string {
  const head = localize(locale, { "zh-TW": "📅 排程任務 #{id}", en: "📅 Scheduled task #{id}" }, { id: task.id });
  if (lateMs <= LATE_AFTER_MS) return head;
  return `${head}${locale === "en" ? " " : ""}${localize(
    locale,
    {
      "zh-TW": "（晚了 {late}：原定 {time}，當時機器人沒有在執行）",
      en: "(late by {late}: it was due {time}, while the bot was not running)",
    },
    { late: durationInWords(lateMs, locale), time: timeInWords(dueAt, task.timezone, locale) },
  )}`;
}

const safe = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** A task button's action: `p` pause, `r` resume, `c` cancel. */
export type TaskButtonAction = "p" | "r" | "c";

/**
 * Which list a task button was shown in: `list`, one person's `/tasks` here; `group`, a group's
 * every task shown to its admins (cancel buttons only). A button outside a list (a paused task's
 * notice, a list of an older version) has none.
 */
export type TaskListView = "list" | "group";

/**
 * The data of a task button: `tk:<action>[<view>]:<userId>.<taskId>` (the view `l` or `g` for a
 * button of a `/tasks` list; the user id made safe: other characters become `%hh`), at most 64
 * bytes for the ids platforms use (Telegram `callback_data`).
 */
export function taskButton(action: TaskButtonAction, owner: TaskOwner, taskId: number, view?: TaskListView): string {
  const mark = view === undefined ? "" : view === "list" ? "l" : "g";
  return `tk:${action}${mark}:${safe(owner.userId)}.${taskId}`;
}

/** True when `data` is a task button's data (`tk:…`). */
export function isTaskButton(data: string): boolean {
  return data.startsWith("tk:");
}

/** Reads `tk:<action>[<view>]:<token>`; undefined for anything else (a group's list has cancel buttons only). */
export function parseTaskButton(
  data: string,
): { action: TaskButtonAction; userId: string; taskId: number; view?: TaskListView } | undefined {
  const m = /^tk:([prc])([lg]?):([A-Za-z0-9_%-]{1,48})\.(\d{1,9})$/.exec(data);
  if (!m) return undefined;
  if (m[2] === "g" && m[1] !== "c") return undefined;
  try {
    return {
      action: m[1] as TaskButtonAction,
      userId: decodeURIComponent(m[3]!),
      taskId: Number(m[4]),
      ...(m[2] ? { view: m[2] === "l" ? ("list" as const) : ("group" as const) } : {}),
    };
  } catch {
    return undefined;
  }
}
