/**
 * The demo's English for a tool's result written in Chinese (`npm run chat -- --demo`, and the fake
 * model of `npm run fakes`). The bot's tools answer in the bot's language (`BOT_LOCALE`, or the
 * conversation's `/settings language`), not in the words of the message: the real model reads a
 * Chinese result and answers an English-writing person in English. The scripted demo cannot
 * translate, so for a person who writes in English it shows the tool's own English text for the
 * same result: the same function or text of the tool (the calculator, the clock, the todo list, a
 * reminder) rendered in English, used only when its Chinese rendering is exactly the result the
 * tool gave (so the English says what the tool said, nothing else). A result no tool text renders
 * (the weather, whose forecasts are the Central Weather Administration's Chinese words; a todo
 * whose reminders were cancelled with it) gets none: the demo shows it as it came, saying it is
 * in the bot's language. What the tools return to the model is not changed.
 */
import { DateTime } from "luxon";
import { localize, type Localized } from "../i18n.js";
import { formatReminder } from "../reminders/format.js";
import type { Reminder } from "../reminders/store.js";
import { ToolError } from "../toolbox/tool.js";
import { ADDED_TEXT } from "../../tools/add_todo.js";
import { calculate } from "../../tools/calculate.js";
import { COMPLETED_TEXT } from "../../tools/complete_todo.js";
import { DELETED_TEXT } from "../../tools/delete_todo.js";
import { describeNow } from "../../tools/get_current_datetime.js";
import { LIST_TEXT } from "../../tools/list_todos.js";
import { REMINDER_SET_TEXT } from "../../tools/set_reminder.js";
import { formatTodo, noSuchTodo, TODO_NOTE_TEXT, type Todo } from "../../tools/todo/store.js";

/**
 * `render("en")` when `render("zh-TW")` is exactly `result` (the same answer of the same tool, in
 * English), `result` when it is that English already, else undefined.
 */
function sameInEnglish(result: string, render: (locale: "zh-TW" | "en") => string | undefined): string | undefined {
  const english = render("en");
  return english === result || render("zh-TW") === result ? english : undefined;
}

/** What `run` returns, or the message of the ToolError it throws (a tool's refusal, worded like its results). */
function answerOf(run: () => string): string | undefined {
  try {
    return run();
  } catch (error) {
    return error instanceof ToolError ? error.message : undefined;
  }
}

/**
 * The placeholders of `text` when it is `texts[locale]` (default zh-TW) with them filled in
 * (`{name}` stands for any text, a name used twice for the same text), else undefined.
 */
function placeholdersOf(
  text: string,
  texts: Localized,
  locale: "zh-TW" | "en" = "zh-TW",
): Record<string, string> | undefined {
  const seen = new Set<string>();
  const pattern = texts[locale]
    .split(/(\{\w+\})/)
    .map((part) => {
      const name = /^\{(\w+)\}$/.exec(part)?.[1];
      if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      if (seen.has(name)) return `\\k<${name}>`;
      seen.add(name);
      return `(?<${name}>[\\s\\S]*?)`;
    })
    .join("");
  const groups = new RegExp(`^${pattern}$`).exec(text)?.groups;
  return groups ? { ...groups } : undefined;
}

/**
 * `text` written with one of `texts`, in English: the same placeholders, each first put in English
 * by `english[name]` when given (a todo's line); `text` itself when an English text of `texts`
 * wrote it; undefined when no text of `texts` wrote it or a placeholder has no English.
 */
function textInEnglish(
  text: string,
  texts: readonly Localized[],
  english: Record<string, (value: string) => string | undefined> = {},
): string | undefined {
  for (const candidate of texts) {
    if (placeholdersOf(text, candidate, "en")) return text;
    const found = placeholdersOf(text, candidate);
    if (!found) continue;
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(found)) {
      const inEnglish = english[name] ? english[name](value) : value;
      if (inEnglish === undefined) return undefined;
      params[name] = inEnglish;
    }
    return localize("en", candidate, params);
  }
  return undefined;
}

/** A todo's line (`#3 買牛奶（到期 2026-12-01，已完成 2026-11-29）`, {@link formatTodo}) in English, in `timezone`. */
function todoLineInEnglish(line: string, timezone: string): string | undefined {
  const parts = /^#(\d+) ([\s\S]*?)(?:（([^（）]*)）)?$/.exec(line);
  if (!parts) return undefined;
  const todo: Todo = { id: Number(parts[1]), title: parts[2]!, createdAt: "" };
  for (const note of parts[3]?.split("，") ?? []) {
    const due = placeholdersOf(note, TODO_NOTE_TEXT.due)?.due;
    const done = placeholdersOf(note, TODO_NOTE_TEXT.done)?.date;
    if (due !== undefined) todo.due = due;
    else if (done !== undefined)
      todo.completedAt = DateTime.fromISO(done, { zone: timezone }).set({ hour: 12 }).toUTC().toISO() ?? "";
    else return undefined;
  }
  return sameInEnglish(line, (locale) => formatTodo(todo, locale, timezone));
}

/** A reminder's line as set_reminder writes it ({@link formatReminder}) in English: its text is the call's. */
function reminderLineInEnglish(line: string, input: Record<string, unknown>, timezone: string): string | undefined {
  const id = /^#(\d+) /.exec(line)?.[1];
  const iso = /（(\d{4}-\d\d-\d\dT[^）]+)）/.exec(line)?.[1];
  const at = iso ? DateTime.fromISO(iso).toMillis() : NaN;
  if (!id || !Number.isFinite(at)) return undefined;
  const reminder: Reminder = {
    id: Number(id),
    text: typeof input.text === "string" ? input.text.trim() : "",
    at,
    next: at,
    ...(typeof input.repeat === "string" ? { repeat: input.repeat as Reminder["repeat"] } : {}),
    ...(typeof input.todo_id === "number" ? { todoId: input.todo_id } : {}),
    timezone,
    chatId: "",
    chatKind: "dm",
    userName: "",
    createdAt: 0,
  };
  return sameInEnglish(line, (locale) => formatReminder(reminder, locale, timezone));
}

/** The result of a todo tool called with `input.todo_id` that refused an id not in the list, in English. */
function noSuchTodoInEnglish(result: string, input: Record<string, unknown>): string | undefined {
  const id = Number(input.todo_id);
  return Number.isInteger(id) ? sameInEnglish(result, (locale) => noSuchTodo(id, locale)) : undefined;
}

/** Each tool's result in English, from its call's input, the result and the user's time zone (see the module comment). */
const READINGS: Record<
  string,
  (result: string, input: Record<string, unknown>, timezone: string) => string | undefined
> = {
  calculate: (result, input) =>
    sameInEnglish(result, (locale) => answerOf(() => calculate(String(input.expression ?? ""), locale))),
  get_current_datetime: (result) => {
    const iso = /ISO 8601：(\S+)$/.exec(result)?.[1];
    const zone = /（([^，（）]+)，UTC[^）]*）\n/.exec(result)?.[1];
    if (!iso || !zone) return undefined;
    return sameInEnglish(result, (locale) => answerOf(() => describeNow(new Date(iso), zone, locale)));
  },
  add_todo: (result, _input, timezone) =>
    textInEnglish(result, [ADDED_TEXT], { line: (line) => todoLineInEnglish(line, timezone) }),
  complete_todo: (result, input, timezone) =>
    textInEnglish(result, [COMPLETED_TEXT.done, COMPLETED_TEXT.already], {
      line: (line) => todoLineInEnglish(line, timezone),
    }) ?? noSuchTodoInEnglish(result, input),
  delete_todo: (result, input, timezone) =>
    textInEnglish(result, [DELETED_TEXT], { line: (line) => todoLineInEnglish(line, timezone) }) ??
    noSuchTodoInEnglish(result, input),
  list_todos: (result, _input, timezone) => {
    const [header = "", ...lines] = result.split("\n");
    const head = textInEnglish(header, [LIST_TEXT.empty, LIST_TEXT.noneOpen, LIST_TEXT.all, LIST_TEXT.open]);
    const todos = lines.map((line) => todoLineInEnglish(line, timezone));
    return head !== undefined && todos.every((t) => t !== undefined) ? [head, ...todos].join("\n") : undefined;
  },
  set_reminder: (result, input, timezone) =>
    textInEnglish(result, [REMINDER_SET_TEXT], { line: (line) => reminderLineInEnglish(line, input, timezone) }),
};

/**
 * The tool's own English for `result`, the answer of `tool` to `input` written in Chinese (see the
 * module comment), for a person who writes in English; undefined when the demo has none.
 * @param timezone - the user's time zone (`TIMEZONE`), the one the tools wrote times in.
 */
export function englishResult(
  tool: string,
  input: Record<string, unknown>,
  result: string,
  timezone: string,
): string | undefined {
  return Object.hasOwn(READINGS, tool) ? READINGS[tool]!(result, input, timezone) : undefined;
}
