/**
 * delete_todo: removes an item from the requester's todo list for good. Dangerous: it runs only
 * after the requester approves the prompt written by `describe`.
 */
import { z } from "zod";
import { localize, type Localized } from "../src/i18n.js";
import { endRemindersOfTodo } from "../src/reminders/todos.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";
import { deleteTodo, formatTodo, getTodo, idField, noSuchTodo } from "./todo/store.js";

/** What delete_todo answers: `{line}` is the deleted todo ({@link formatTodo}). */
export const DELETED_TEXT: Localized = { "zh-TW": "已刪除：{line}", en: "Deleted: {line}" };

/**
 * The delete_todo tool (dangerous): `{ todo_id }` → `已刪除：#3 …`; `describe` gives the approval text `刪除待辦 #3「買牛奶」`.
 * Reminders tied to the todo are cancelled.
 */
export default defineTool({
  name: "delete_todo",
  title: { "zh-TW": "刪除待辦", en: "Delete a todo" },
  summary: {
    "zh-TW": "永久刪除你的一項待辦（會先請你確認）。",
    en: "Permanently deletes one of your todos (asks you first).",
  },
  description: [
    "Permanently delete one item from the user's todo list, by its number (#id from list_todos)" +
      ". This cannot be undone, and the user is asked to approve it first.",
    "Use it only when the user clearly asks to delete or remove an item (e.g. added by mistake).",
    "When something is done, use complete_todo instead, never delete_todo.",
  ].join(" "),
  tags: ["todo", "write"],
  activity: ({ todo_id }, locale) =>
    localize(locale, { "zh-TW": "刪除待辦 #{id}", en: "Deleting todo #{id}" }, { id: todo_id }),
  deferred: true,
  dangerous: true,
  input: z.object({ todo_id: idField }),
  async describe({ todo_id }, context) {
    const todo = await getTodo(context.redis, context, todo_id);
    // Nothing to delete: refuse before anyone is asked to approve.
    if (!todo) throw new ToolError(noSuchTodo(todo_id, context.locale));
    return localize(
      context.locale,
      { "zh-TW": "刪除待辦 #{id}「{title}」", en: 'Delete todo #{id} "{title}"' },
      { id: todo_id, title: todo.title },
    );
  },
  async run({ todo_id }, context) {
    const { locale } = context;
    const todo = await deleteTodo(context.redis, context, todo_id);
    if (!todo) throw new ToolError(noSuchTodo(todo_id, locale));
    const ended = await endRemindersOfTodo(context.redis, context, todo_id, locale);
    return localize(locale, DELETED_TEXT, { line: formatTodo(todo, locale, context.timezone) }) + ended;
  },
});
