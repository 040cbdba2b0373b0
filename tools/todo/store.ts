/**
 * The personal todo list in Redis, shared by add_todo, list_todos, complete_todo and delete_todo.
 *
 * Keys are per person, never per chat (a person's todos follow them between DMs and groups):
 * - `todo:{<platform>:<userId>}:items`: a hash, field = id, value = the todo as JSON;
 * - `todo:{<platform>:<userId>}:seq`: the last id given out (INCR), so ids are never reused.
 * The `{…}` hash tag keeps both keys of one person in one Redis Cluster slot.
 * No side effects: the tool loader imports this module.
 */
import type { RedisClient } from "../../src/redis.js";
import { z } from "zod";
import type { Locale } from "../../src/config.js";
import { localize, type Localized } from "../../src/i18n.js";
import type { ToolContext } from "../../src/toolbox/tool.js";
import { plainLine } from "../../src/plain-text.js";

/** Most todos one person may keep (open and completed together); one more is refused with a tool error. */
export const MAX_TODOS_PER_USER = 200;

/** Longest title, in characters (Unicode code points, so an emoji counts as one). */
export const MAX_TITLE_CHARS = 200;

/** One todo as stored. Times are ISO 8601 UTC strings. */
export interface Todo {
  /** Small integer, per person, never reused. */
  id: number;
  title: string;
  /** `YYYY-MM-DD`, when given. */
  due?: string;
  createdAt: string;
  completedAt?: string;
}

const StoredTodo = z.object({
  id: z.number().int().positive(),
  title: z.string(),
  due: z.string().optional(),
  createdAt: z.string(),
  completedAt: z.string().optional(),
});

/** Whose list: the platform and the user id from the tool context. */
export type Owner = Pick<ToolContext, "platform" | "userId">;

/** The Redis keys of one person's list. */
export function todoKeys(owner: Owner): { items: string; seq: string } {
  const tag = `{${owner.platform}:${owner.userId}}`;
  return { items: `todo:${tag}:items`, seq: `todo:${tag}:seq` };
}

/** True when `text` is `YYYY-MM-DD` and a real calendar date (no 2026-02-30). */
export function isRealDate(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/**
 * Zod field for a todo title: made one plain line (`plainLine`: controls and line breaks → spaces, invisible and bidi
 * characters removed, trimmed), then 1–200 characters.
 */
export const titleField = z
  .string()
  // One plain line: controls (ESC, BEL, NUL, line breaks), bidi overrides and zero-width characters never reach a list or a terminal.
  .transform((t) => plainLine(t))
  .refine((t) => t.length > 0, { message: "the title is empty: give the todo a short title" })
  .refine((t) => [...t].length <= MAX_TITLE_CHARS, {
    message: `the title is longer than ${MAX_TITLE_CHARS} characters: shorten it`,
  })
  .describe(`What to do, 1-${MAX_TITLE_CHARS} characters, e.g. 買牛奶`);

/** Zod field for an optional due date `YYYY-MM-DD` that must exist on the calendar; an empty string means none. */
export const dueField = z
  .string()
  .trim()
  .refine((d) => d === "" || isRealDate(d), { message: "expected a real date written YYYY-MM-DD, e.g. 2026-12-01" })
  .transform((d) => (d === "" ? undefined : d))
  .optional()
  .describe(
    "Due date YYYY-MM-DD in the user's time zone (resolve words like 'tomorrow' with get_current_datetime first). Omit when none.",
  );

/** Zod field for a todo id. */
export const idField = z.number().int().positive().describe("The todo's number as shown by list_todos, e.g. 3 for #3");

/**
 * KEYS: items, seq. ARGV: [1] the most todos allowed, [2] the todo JSON with `"id":0` as a placeholder.
 * Returns the new id, or 0 when the list already holds the most allowed (nothing is written).
 */
const ADD_TODO = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
local id = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], tostring(id), (string.gsub(ARGV[2], '"id":0', '"id":' .. id, 1)))
return id`;

/**
 * Adds a todo and returns it, or `undefined` when the person already has `max` todos
 * (default {@link MAX_TODOS_PER_USER}; nothing is written then). One script: the count check, the
 * id (INCR, so parallel adds get distinct ids) and the write are atomic.
 */
export async function addTodo(
  redis: RedisClient,
  owner: Owner,
  title: string,
  due?: string,
  now = new Date(),
  max = MAX_TODOS_PER_USER,
): Promise<Todo | undefined> {
  const keys = todoKeys(owner);
  const draft: Todo = { id: 0, title, ...(due ? { due } : {}), createdAt: now.toISOString() };
  const id = Number(await redis.eval(ADD_TODO, 2, keys.items, keys.seq, max, JSON.stringify(draft)));
  return id === 0 ? undefined : { ...draft, id };
}

/** The person's todos sorted by id. Entries that are not valid todo JSON are skipped. */
export async function listTodos(redis: RedisClient, owner: Owner): Promise<Todo[]> {
  const all = await redis.hgetall(todoKeys(owner).items);
  return Object.values(all)
    .map(decode)
    .filter((t): t is Todo => t !== undefined)
    .sort((a, b) => a.id - b.id);
}

/** One todo of the person, or undefined when the id is not in their list. */
export async function getTodo(redis: RedisClient, owner: Owner, id: number): Promise<Todo | undefined> {
  const raw = await redis.hget(todoKeys(owner).items, String(id));
  return raw === null ? undefined : decode(raw);
}

/** Replaces the value only if it is still `expected` (a concurrent delete or edit wins). */
const COMPARE_AND_SET = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0`;

/** The outcome of {@link completeTodo}. */
export type CompleteResult = { status: "completed" | "already"; todo: Todo } | { status: "missing" };

/**
 * Marks a todo done (sets `completedAt`). An already completed todo is left as it is.
 * Atomic against a concurrent delete: a deleted todo is never written back.
 */
export async function completeTodo(
  redis: RedisClient,
  owner: Owner,
  id: number,
  now = new Date(),
): Promise<CompleteResult> {
  const keys = todoKeys(owner);
  for (let attempt = 0; attempt < 5; attempt++) {
    const raw = await redis.hget(keys.items, String(id));
    const todo = raw === null ? undefined : decode(raw);
    if (!raw || !todo) return { status: "missing" };
    if (todo.completedAt) return { status: "already", todo };
    const done: Todo = { ...todo, completedAt: now.toISOString() };
    const set = await redis.eval(COMPARE_AND_SET, 1, keys.items, String(id), raw, JSON.stringify(done));
    if (set === 1) return { status: "completed", todo: done };
  }
  return { status: "missing" };
}

/** Deletes a todo. Returns it, or undefined when the id is not in the person's list. */
export async function deleteTodo(redis: RedisClient, owner: Owner, id: number): Promise<Todo | undefined> {
  const keys = todoKeys(owner);
  const raw = await redis.hget(keys.items, String(id));
  if (raw === null) return undefined;
  const removed = await redis.hdel(keys.items, String(id));
  return removed === 1 ? decode(raw) : undefined;
}

function decode(raw: string): Todo | undefined {
  try {
    const parsed = StoredTodo.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The date part (`YYYY-MM-DD`) of an ISO time in `timeZone`. */
export function localDate(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(
    new Date(iso),
  );
}

/** The notes of a todo's line ({@link formatTodo}): its due date, the date it was completed. */
export const TODO_NOTE_TEXT = {
  due: { "zh-TW": "到期 {due}", en: "due {due}" },
  done: { "zh-TW": "已完成 {date}", en: "done {date}" },
} satisfies Record<string, Localized>;

/**
 * One todo as a line: `#3 買牛奶（到期 2026-12-01）`, `#2 寄信（已完成 2026-11-29）`;
 * en `#3 Buy milk (due 2026-12-01)`.
 */
export function formatTodo(todo: Todo, locale: Locale, timeZone: string): string {
  const notes: string[] = [];
  if (todo.due) notes.push(localize(locale, TODO_NOTE_TEXT.due, { due: todo.due }));
  if (todo.completedAt)
    notes.push(localize(locale, TODO_NOTE_TEXT.done, { date: localDate(todo.completedAt, timeZone) }));
  if (notes.length === 0) return `#${todo.id} ${todo.title}`;
  return locale === "en"
    ? `#${todo.id} ${todo.title} (${notes.join(", ")})`
    : `#${todo.id} ${todo.title}（${notes.join("，")}）`;
}

/** The ToolError text for an id that is not in the person's list. */
export function noSuchTodo(id: number, locale: Locale): string {
  return localize(
    locale,
    {
      "zh-TW": "你的待辦清單裡沒有 #{id}。請先用 list_todos 查看正確的編號。",
      en: "There is no todo #{id} in your list. Check the numbers with list_todos first.",
    },
    { id },
  );
}
