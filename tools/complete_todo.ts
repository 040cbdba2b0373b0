/**
 * complete_todo: marks an item of the requester's todo list as done.
 */
import { z } from "zod";
import { localize, type Localized } from "../src/i18n.js";
import { endRemindersOfTodo } from "../src/reminders/todos.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";
import { completeTodo, formatTodo, idField, noSuchTodo } from "./todo/store.js";

/** What complete_todo answers: the todo marked done, or (`{id}`) one that was done already; `{line}` is the todo ({@link formatTodo}). */
export const COMPLETED_TEXT = {
  done: { "zh-TW": "已完成：{line}", en: "Marked done: {line}" },
  already: { "zh-TW": "#{id} 早就完成了，沒有變更：{line}", en: "#{id} was already done; nothing changed: {line}" },
} satisfies Record<string, Localized>;

/**
 * The complete_todo tool: `{ todo_id }` → `已完成：#3 …`; an already completed todo is reported, not an error; an id not
 * in the list is a ToolError naming it. Reminders tied to the todo are cancelled.
 */
export default defineTool({
  name: "complete_todo",
  title: { "zh-TW": "完成待辦", en: "Complete a todo" },
  summary: { "zh-TW": "把你的一項待辦標為已完成。", en: "Marks one of your todos as done." },
  description: [
    "Mark one item of the user's todo list as done, by its number (#id from list_todos).",
    "Use it whenever the user says something is done, finished or bought: finished items are completed, never deleted.",
    "If you do not know the number, call list_todos first. It only works on the user's own list.",
  ].join(" "),
  tags: ["todo", "write"],
  activity: ({ todo_id }, locale) =>
    localize(locale, { "zh-TW": "完成待辦 #{id}", en: "Completing todo #{id}" }, { id: todo_id }),
  deferred: true,
  input: z.object({ todo_id: idField }),
  async run({ todo_id }, context) {
    const { locale } = context;
    const result = await completeTodo(context.redis, context, todo_id);
    if (result.status === "missing") throw new ToolError(noSuchTodo(todo_id, locale));
    const line = formatTodo(result.todo, locale, context.timezone);
    if (result.status === "already") {
      return localize(locale, COMPLETED_TEXT.already, { id: todo_id, line });
    }
    const ended = await endRemindersOfTodo(context.redis, context, todo_id, locale);
    return localize(locale, COMPLETED_TEXT.done, { line }) + ended;
  },
});
