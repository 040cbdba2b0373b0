/**
 * list_todos: shows the requester's personal todo list, open items by default.
 */
import { z } from "zod";
import { localize, type Localized } from "../src/i18n.js";
import { defineTool } from "../src/toolbox/tool.js";
import { formatTodo, listTodos } from "./todo/store.js";

/**
 * What list_todos answers, above its lines ({@link formatTodo}): an empty list, no open todo (`{done}`
 * completed), all of them (`{open}` and `{done}`), the open ones (`{open}`).
 */
export const LIST_TEXT = {
  empty: { "zh-TW": "你的待辦清單是空的。", en: "Your todo list is empty." },
  noneOpen: {
    "zh-TW": "沒有未完成的待辦（已完成 {done} 項；要看全部請設 include_completed）。",
    en: "No open todos ({done} completed; set include_completed to see them).",
  },
  all: {
    "zh-TW": "你的全部待辦（{open} 項未完成，{done} 項已完成）：",
    en: "All your todos ({open} open, {done} done):",
  },
  open: { "zh-TW": "你的待辦（{open} 項未完成）：", en: "Your open todos ({open}):" },
} satisfies Record<string, Localized>;

/** The list_todos tool: `{ include_completed? }` → a header line and one `#id title（…）` line per todo. */
export default defineTool({
  name: "list_todos",
  title: { "zh-TW": "查看待辦", en: "List todos" },
  summary: {
    "zh-TW": "列出你的待辦清單（也可以包含已完成的）。",
    en: "Lists your todo list (finished items too, if you ask).",
  },
  description: [
    "List the user's personal todo list with each item's number (#id), title and due date.",
    "Use it when the user asks what is on their list, and before complete_todo or delete_todo when you do not know the item's number.",
    "Shows open items only unless include_completed is true (use that when the user asks for finished items or everything).",
  ].join(" "),
  tags: ["todo"],
  readOnly: true,
  input: z.object({
    include_completed: z
      .boolean()
      .default(false)
      .describe("true to also show completed items; default false (open items only)"),
  }),
  activity: (_input, locale) => localize(locale, { "zh-TW": "讀取待辦清單", en: "Reading the todo list" }),
  async run({ include_completed }, context) {
    const { locale } = context;
    const all = await listTodos(context.redis, context);
    const open = all.filter((t) => !t.completedAt);
    const shown = include_completed ? all : open;
    if (shown.length === 0) {
      if (all.length === 0) return localize(locale, LIST_TEXT.empty);
      return localize(locale, LIST_TEXT.noneOpen, { done: all.length });
    }
    const header = include_completed
      ? localize(locale, LIST_TEXT.all, { open: open.length, done: all.length - open.length })
      : localize(locale, LIST_TEXT.open, { open: open.length });
    return [header, ...shown.map((t) => formatTodo(t, locale, context.timezone))].join("\n");
  },
});
