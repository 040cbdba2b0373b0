/**
 * add_todo: adds an item to the requester's personal todo list (see `todo/store.ts`).
 */
import { z } from "zod";
import { localize, type Localized } from "../src/i18n.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";
import { MAX_TODOS_PER_USER, addTodo, dueField, formatTodo, titleField } from "./todo/store.js";

/** What add_todo answers: `{line}` is the new todo ({@link formatTodo}). */
export const ADDED_TEXT: Localized = { "zh-TW": "已新增待辦：{line}", en: "Added to your todos: {line}" };

/** The add_todo tool: `{ title, due? }` → `已新增待辦：#1 買牛奶（到期 2026-12-01）`. */
export default defineTool({
  name: "add_todo",
  title: { "zh-TW": "新增待辦", en: "Add a todo" },
  summary: {
    "zh-TW": "把一件事加進你的個人待辦清單，可加上到期日。",
    en: "Adds an item to your personal todo list, optionally with a due date.",
  },
  description: [
    "Add an item to the user's personal todo list (it belongs to the person, not the chat, and follows them between chats).",
    "Use it when the user asks to remember, note or add something to do, optionally with a due date.",
    "One call per item. Not for being reminded at a specific time (use set_reminder for that, " +
      "optionally with the todo's id), and not for other people's lists.",
  ].join(" "),
  tags: ["todo", "write"],
  input: z.object({ title: titleField, due: dueField }),
  activity: ({ title }, locale) =>
    localize(locale, { "zh-TW": "新增待辦：{title}", en: "Adding a todo: {title}" }, { title }),
  async run({ title, due }, context) {
    const todo = await addTodo(context.redis, context, title, due);
    if (!todo) {
      throw new ToolError(
        `The user's todo list is full: it already holds ${MAX_TODOS_PER_USER} items (open and completed), the most allowed, so "${title}" was not added. ` +
          "Tell the user; they can delete finished or unneeded items (list_todos with include_completed, then delete_todo) and ask again.",
      );
    }
    return localize(context.locale, ADDED_TEXT, { line: formatTodo(todo, context.locale, context.timezone) });
  },
});
