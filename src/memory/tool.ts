/**
 * The memory tool: the Messages API's client-side `memory_20250818` (`{ "type": "memory_20250818",
 * "name": "memory" }` in the request; the model calls it with `view`, `create`, `str_replace`,
 * `insert`, `delete` or `rename` on paths under `/memories`), run by the bot on the scope of the
 * message being answered (`memoryScopeOf`: the speaker's personal memory in a private chat, the
 * group's in a group) — never a scope the model or a path could choose.
 *
 * It is a toolbox tool like any other (input validation, tracing, the ten-tool count), tagged
 * {@link MEMORY_TAG}, and not read-only: each call runs at most once per `tool_use` id (the
 * worker's exactly-once ledger), so a write retried after a crash is applied once. The trace and
 * the log show its command, path and sizes, never the text. Its status line is `📝 記住了：…`.
 *
 * Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
 */
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { Config, Locale } from "../config.js";
import { localize } from "../i18n.js";
import { plainLine } from "../plain-text.js";
import { defineTool, type Tool } from "../toolbox/tool.js";
import { isMemoryWrite, MEMORY_COMMANDS, runMemoryCommand, type MemoryCommandInput } from "./commands.js";
import { MemoryStore, memoryScopeOf } from "./store.js";
import { memoryDiff, undoHandle, type MemoryFileChange } from "./undo-record.js";

/** The tag of the memory tool; chats get it (see `select.ts`). */
export const MEMORY_TAG = "memory";

/** The memory tool's name (fixed by the API). */
export const MEMORY_TOOL_NAME = "memory";

/** The icon of its status line and of the notice of a write. */
export const MEMORY_ICON = "📝";

/** The request's definition of the memory tool (the API fixes its description and input schema). */
export const MEMORY_TOOL_DEFINITION = { type: "memory_20250818", name: MEMORY_TOOL_NAME } as const;

const FILE = fileURLToPath(import.meta.url);

/** The input of a memory call: every command's fields, each checked by its command. */
const MemoryInput = z.object({
  command: z.enum(MEMORY_COMMANDS),
  path: z.string().optional(),
  view_range: z.array(z.number().int()).length(2).optional(),
  file_text: z.string().optional(),
  old_str: z.string().optional(),
  new_str: z.string().optional(),
  insert_line: z.number().int().optional(),
  insert_text: z.string().optional(),
  old_path: z.string().optional(),
  new_path: z.string().optional(),
});

/** `text` on one line, without Markdown list and heading marks, at most `max` code points (ending with `…` when cut). */
function gist(text: string, max = 40): string {
  const lines = text
    .split("\n")
    .map((l) => l.replace(/^\s*(?:[#>*+-]+|\d+[.)])\s*/, "").trim())
    .filter((l) => l !== "");
  const chars = [...plainLine(lines.join(" / "))];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
}

/** The name of a memory path as people read it: `/memories/家人.md` → `家人.md`. */
function nameOf(path: string | undefined): string {
  return plainLine((path ?? "").replace(/^\/memories\/?/, ""), 40) || "/memories";
}

/**
 * What a memory call does, in a few words of `locale`. `tense` `doing` is the status line of a
 * streamed answer, which then ends in ✓ or ✗ (`記住：住在新竹`, `忘記：家人.md`), so a refused write
 * never reads as done; `done` is the notice after a non-streamed answer, said only for successful
 * calls (`記住了：住在新竹`, `忘記了：家人.md`; a `str_replace` that deletes its text:
 * `忘記了：住在新竹`). A rename is `整理記憶：a.md → b.md`, a view `查看記憶`.
 */
export function memoryActivity(input: MemoryCommandInput, locale: Locale, tense: "doing" | "done" = "done"): string {
  const saved =
    tense === "done"
      ? { "zh-TW": "記住了：{what}", en: "Remembered: {what}" }
      : { "zh-TW": "記住：{what}", en: "Remembering: {what}" };
  const forgot =
    tense === "done"
      ? { "zh-TW": "忘記了：{what}", en: "Forgot: {what}" }
      : { "zh-TW": "忘記：{what}", en: "Forgetting: {what}" };
  switch (input.command) {
    case "create":
      return localize(locale, saved, { what: gist(input.file_text ?? "") || nameOf(input.path) });
    case "str_replace":
      // Without new_str (or with an empty one) the text is deleted: said as forgetting it.
      return input.new_str
        ? localize(locale, saved, { what: gist(input.new_str) || nameOf(input.path) })
        : localize(locale, forgot, { what: gist(input.old_str ?? "") || nameOf(input.path) });
    case "insert":
      return localize(locale, saved, { what: gist(input.insert_text ?? "") || nameOf(input.path) });
    case "delete":
      return localize(locale, forgot, { what: nameOf(input.path) });
    case "rename":
      return localize(
        locale,
        tense === "done"
          ? { "zh-TW": "整理記憶：{from} → {to}", en: "Reorganised memory: {from} → {to}" }
          : { "zh-TW": "整理記憶：{from} → {to}", en: "Reorganising memory: {from} → {to}" },
        { from: nameOf(input.old_path), to: nameOf(input.new_path) },
      );
    case "view":
      return localize(locale, { "zh-TW": "查看記憶", en: "Reading memory" });
  }
}

/** What the trace shows of a memory call: the command, the path(s), and the sizes of its texts (UTF-8 bytes), never the texts. */
export function tracedMemoryCall(input: MemoryCommandInput): Record<string, unknown> {
  const bytes = (text: string | undefined) => (text === undefined ? undefined : Buffer.byteLength(text, "utf8"));
  const fields: Record<string, unknown> = {
    command: input.command,
    path: input.path,
    old_path: input.old_path,
    new_path: input.new_path,
    file_text_bytes: bytes(input.file_text),
    old_str_bytes: bytes(input.old_str),
    new_str_bytes: bytes(input.new_str),
    insert_text_bytes: bytes(input.insert_text),
    insert_line: input.insert_line,
  };
  // Paths are the model's words too, but short and needed to follow a run; they are one plain line.
  for (const key of ["path", "old_path", "new_path"])
    if (typeof fields[key] === "string") fields[key] = plainLine(fields[key], 100);
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/**
 * The memory tool, when `MEMORY=on`; none when off (requests then offer no memory tool).
 * The memory feature's tools (`Feature.tools`, `feature.ts`): `loadTools` adds them beside the tools of `tools/`.
 */
export function memoryTools(config: Config): Tool[] {
  if (config.MEMORY !== "on") return [];
  const tool = {
    ...defineTool({
      name: MEMORY_TOOL_NAME,
      description:
        "Your memory: files under /memories that persist across conversations (the person's own in " +
        "a private chat, the group's shared memory in a group). Save lasting facts the user wants " +
        "kept; your current notes are already given in each request.",
      tags: [MEMORY_TAG],
      title: { "zh-TW": "記憶", en: "Memory" },
      summary: {
        "zh-TW": "記住你希望我長期記得的事（私訊記你的，群組記群組的）；/memory 查看、/forget 清除。",
        en: "Remembers lasting facts you want kept (yours in private chats, the group's in groups); see /memory, erase with /forget.",
      },
      input: MemoryInput,
      source: "the Messages API's memory tool (run by the bot)",
      apiDefinition: MEMORY_TOOL_DEFINITION,
      icon: MEMORY_ICON,
      activity: (input, locale) => memoryActivity(input, locale, "doing"),
      traced: (input) => tracedMemoryCall(input),
      notice: (input, locale) =>
        isMemoryWrite(input.command) ? `${MEMORY_ICON} ${memoryActivity(input, locale)}` : undefined,
      async run(input, context) {
        const store = new MemoryStore(context.redis, { log: context.log });
        const scope = memoryScopeOf(context);
        const maxBytes = context.config.MEMORY_MAX_BYTES;
        if (!isMemoryWrite(input.command)) {
          const files = new Map((await store.read(scope)).map((f) => [f.path, f.text]));
          return runMemoryCommand(files, input, { maxBytes }).result;
        }
        let changes: MemoryFileChange[] = [];
        const result = await store.update(scope, (files) => {
          const change = runMemoryCommand(files, input, { maxBytes });
          changes = change.files ? memoryDiff(files, change.files) : [];
          return change;
        });
        context.log.info({ scope: scope.kind, command: input.command }, `memory ${input.command}`);
        // Every write can be undone for a while (src/memory/undo.ts); the worker offers it when outside content was read.
        if (context.toolUseId && changes.length > 0)
          await store
            .recordUndo(scope, undoHandle(context.toolUseId), { userId: context.userId, changes })
            .catch((err: unknown) => context.log.warn({ err }, "could not record how to undo a memory write"));
        return result;
      },
    }),
    file: FILE,
  };
  return [tool as unknown as Tool];
}
