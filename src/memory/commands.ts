/**
 * The memory tool's commands (`view`, `create`, `str_replace`, `insert`, `delete`, `rename`) over
 * one scope's files, as pure functions of the files (path → text): each returns the text for the
 * model and, for a write, the new files; a command that cannot be done throws a {@link ToolError}.
 * Directories are implied by the paths of their files (`/memories/家人/媽媽.md` is inside
 * `/memories/家人`); `/memories` always exists.
 *
 * `str_replace` without `new_str` deletes `old_str` (the tool's spec: the replacement is optional).
 *
 * The answer texts are those the Messages API docs suggest, as in the SDK's own filesystem memory
 * tool (`@anthropic-ai/sdk/tools/memory/node`). Source:
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
 */
import { englishCount } from "../i18n.js";
import { ToolError } from "../toolbox/tool.js";
import { isWithin, MEMORY_ROOT, normaliseMemoryPath } from "./paths.js";
import { MAX_MEMORY_FILES, totalBytes, type MemoryChange } from "./store.js";

/** The commands of `memory_20250818`. */
export const MEMORY_COMMANDS = ["view", "create", "str_replace", "insert", "delete", "rename"] as const;

/** One command of the memory tool, as the model sends it (fields of the other commands absent). */
export interface MemoryCommandInput {
  command: (typeof MEMORY_COMMANDS)[number];
  path?: string | undefined;
  view_range?: number[] | undefined;
  file_text?: string | undefined;
  old_str?: string | undefined;
  new_str?: string | undefined;
  insert_line?: number | undefined;
  insert_text?: string | undefined;
  old_path?: string | undefined;
  new_path?: string | undefined;
}

/** Commands that change the files. */
export function isMemoryWrite(command: string): boolean {
  return command !== "view";
}

/** Width of the line numbers of `view` (as the docs' examples: six columns, right-aligned). */
const LINE_NUMBER_WIDTH = 6;

function numbered(lines: string[], first: number): string {
  return lines.map((line, i) => `${String(first + i).padStart(LINE_NUMBER_WIDTH, " ")}\t${line}`).join("\n");
}

/** `1.5K`-style size, as `view` lists files. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  const k = bytes / 1024;
  return `${k % 1 === 0 ? k : k.toFixed(1)}K`;
}

function required(input: MemoryCommandInput, field: keyof MemoryCommandInput): string {
  const value = input[field];
  if (typeof value !== "string") throw new ToolError(`The ${input.command} command needs ${field} (a string).`);
  return value;
}

function isDirectory(files: ReadonlyMap<string, string>, path: string): boolean {
  if (path === MEMORY_ROOT) return true;
  for (const file of files.keys()) if (file !== path && isWithin(file, path)) return true;
  return false;
}

/** A file may not sit where a directory is, nor below a file. */
function checkPlace(files: ReadonlyMap<string, string>, path: string): void {
  if (path === MEMORY_ROOT || isDirectory(files, path))
    throw new ToolError(`${path} is a directory; give a file name inside it, e.g. ${path}/notes.md.`);
  for (const file of files.keys()) {
    if (isWithin(path, file) && file !== path)
      throw new ToolError(`${file} is a file, so ${path} cannot be created below it; choose another path.`);
  }
}

function notFound(path: string): never {
  throw new ToolError(`The path ${path} does not exist. Please provide a valid path.`);
}

/**
 * Runs one command on `files` (see the module comment).
 *
 * @param limits.maxBytes - `MEMORY_MAX_BYTES`: a write whose result would hold more is refused,
 *   saying how much room is left.
 * @returns the text for the model, and the new files when the command wrote.
 * @throws {ToolError} when the command cannot be done (bad path, missing file, ambiguous
 *   `old_str`, over the limit…), in words the model can act on.
 */
export function runMemoryCommand(
  files: ReadonlyMap<string, string>,
  input: MemoryCommandInput,
  limits: { maxBytes: number },
): MemoryChange<string> {
  const write = (next: Map<string, string>, result: string): MemoryChange<string> => {
    const bytes = totalBytes([...next].map(([path, text]) => ({ path, text })));
    if (bytes > limits.maxBytes) {
      const now = totalBytes([...files].map(([path, text]) => ({ path, text })));
      const left = Math.max(0, limits.maxBytes - now);
      throw new ToolError(
        `Not saved: the memory is limited to ${englishCount(limits.maxBytes, "byte")}; it holds ${englishCount(now, "byte")} now, ` +
          `so ${englishCount(left, "byte")} ${left === 1 ? "is" : "are"} left, and this write would make it ${englishCount(bytes, "byte")}. ` +
          "Save something shorter, or first shorten or delete notes that are no longer needed (str_replace or delete), then try again.",
      );
    }
    if (next.size > MAX_MEMORY_FILES) {
      throw new ToolError(
        `Not saved: the memory holds at most ${MAX_MEMORY_FILES} files and has ${files.size}. Add this to an existing file (str_replace or insert) instead.`,
      );
    }
    return { files: next, result };
  };

  switch (input.command) {
    case "view": {
      const path = normaliseMemoryPath(input.path);
      const text = files.get(path);
      if (text !== undefined) {
        const lines = text.split("\n");
        let shown = lines;
        let first = 1;
        const range = input.view_range;
        if (range && range.length === 2) {
          const start = Math.max(1, range[0]!);
          const end = range[1] === -1 ? lines.length : Math.min(lines.length, range[1]!);
          if (start > lines.length || end < start)
            throw new ToolError(`Invalid view_range [${range.join(", ")}]: ${path} has ${lines.length} lines.`);
          shown = lines.slice(start - 1, end);
          first = start;
        }
        return { result: `Here's the content of ${path} with line numbers:\n${numbered(shown, first)}` };
      }
      if (!isDirectory(files, path)) notFound(path);
      const inside = [...files].filter(([file]) => isWithin(file, path));
      const rows = [`${formatSize(totalBytes(inside.map(([p, t]) => ({ path: p, text: t }))))}\t${path}`];
      const depthOf = (p: string) => p.split("/").length - path.split("/").length;
      const dirs = new Map<string, number>();
      for (const [file, text] of inside) {
        const parts = file.split("/");
        for (let end = path.split("/").length + 1; end < parts.length; end += 1) {
          const dir = parts.slice(0, end).join("/");
          dirs.set(dir, (dirs.get(dir) ?? 0) + totalBytes([{ path: file, text }]));
        }
      }
      const entries = [
        ...[...dirs].map(([dir, bytes]) => ({ path: dir, shown: `${dir}/`, bytes })),
        ...inside.map(([file, text]) => ({ path: file, shown: file, bytes: totalBytes([{ path: file, text }]) })),
      ]
        .filter((e) => depthOf(e.path) <= 2)
        .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      for (const e of entries) rows.push(`${formatSize(e.bytes)}\t${e.shown}`);
      return {
        result: `Here're the files and directories up to 2 levels deep in ${path}, excluding hidden items and node_modules:\n${rows.join("\n")}`,
      };
    }
    case "create": {
      const path = normaliseMemoryPath(input.path);
      const text = required(input, "file_text");
      if (files.has(path))
        throw new ToolError(
          `File ${path} already exists. To change it use str_replace or insert; to replace it entirely, delete it first.`,
        );
      checkPlace(files, path);
      const next = new Map(files);
      next.set(path, text);
      return write(next, `File created successfully at: ${path}`);
    }
    case "str_replace": {
      const path = normaliseMemoryPath(input.path);
      const oldStr = required(input, "old_str");
      // Without new_str the text is deleted, as the memory tool's spec has it (and the text editor tool's).
      const newStr = input.new_str ?? "";
      const text = files.get(path);
      if (text === undefined) {
        if (isDirectory(files, path)) throw new ToolError(`The path ${path} is not a file.`);
        notFound(path);
      }
      if (oldStr === "") throw new ToolError("old_str is empty: give the exact text to replace.");
      const at: number[] = [];
      for (let i = text.indexOf(oldStr); i !== -1; i = text.indexOf(oldStr, i + 1)) at.push(i);
      if (at.length === 0)
        throw new ToolError(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${path}.`);
      const lineOf = (index: number) => text.slice(0, index).split("\n").length;
      if (at.length > 1)
        throw new ToolError(
          `No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines: ` +
            `${[...new Set(at.map(lineOf))].join(", ")}. Please ensure it is unique`,
        );
      const edited = text.slice(0, at[0]) + newStr + text.slice(at[0]! + oldStr.length);
      const line = lineOf(at[0]!) - 1;
      const lines = edited.split("\n");
      const from = Math.max(0, line - 2);
      const snippet = numbered(
        lines.slice(from, Math.min(lines.length, line + 3 + newStr.split("\n").length - 1)),
        from + 1,
      );
      const next = new Map(files);
      next.set(path, edited);
      return write(
        next,
        `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${snippet}`,
      );
    }
    case "insert": {
      const path = normaliseMemoryPath(input.path);
      const insertText = required(input, "insert_text");
      const line = input.insert_line;
      const text = files.get(path);
      if (text === undefined) {
        if (isDirectory(files, path)) throw new ToolError(`The path ${path} is not a file.`);
        notFound(path);
      }
      const lines = text.split("\n");
      if (typeof line !== "number" || !Number.isInteger(line) || line < 0 || line > lines.length) {
        throw new ToolError(
          `Invalid \`insert_line\` parameter: ${String(line)}. It should be within the range of lines of the file: [0, ${lines.length}]`,
        );
      }
      lines.splice(line, 0, insertText.replace(/\n$/, ""));
      const next = new Map(files);
      next.set(path, lines.join("\n"));
      return write(next, `The file ${path} has been edited.`);
    }
    case "delete": {
      const path = normaliseMemoryPath(input.path);
      if (path === MEMORY_ROOT)
        throw new ToolError(
          `Cannot delete the ${MEMORY_ROOT} directory itself. Delete its files one by one, or ask the user to use /forget.`,
        );
      const doomed = [...files.keys()].filter((file) => isWithin(file, path));
      if (doomed.length === 0) throw new ToolError(`The path ${path} does not exist`);
      const next = new Map(files);
      for (const file of doomed) next.delete(file);
      return { files: next, result: `Successfully deleted ${path}` };
    }
    case "rename": {
      const from = normaliseMemoryPath(input.old_path, "old_path");
      const to = normaliseMemoryPath(input.new_path, "new_path");
      if (from === MEMORY_ROOT) throw new ToolError(`Cannot rename the ${MEMORY_ROOT} directory itself.`);
      const moving = [...files.keys()].filter((file) => isWithin(file, from));
      if (moving.length === 0) throw new ToolError(`The path ${from} does not exist`);
      if (files.has(to) || isDirectory(files, to)) throw new ToolError(`The destination ${to} already exists`);
      if (isWithin(to, from)) throw new ToolError(`Cannot move ${from} into itself (${to}).`);
      const next = new Map(files);
      for (const file of moving) next.delete(file);
      checkPlace(next, to);
      // Each moved file's new path must be a valid path itself (depth, length).
      for (const file of moving)
        next.set(normaliseMemoryPath(to + file.slice(from.length), "new_path"), files.get(file)!);
      return write(next, `Successfully renamed ${from} to ${to}`);
    }
  }
}
