/**
 * Paths of the memory tool. The model names files as `/memories/…` (the memory tool's own
 * directory); the bot decides whose files those are (see `scope.ts`), never the path. A path is
 * accepted only in one plain spelling, so two spellings never name one file and nothing reaches
 * outside `/memories`:
 * - it is `/memories` or starts with `/memories/`;
 * - its parts (between slashes) are 1-{@link MAX_PART_CHARS} letters, digits, marks, `_`, `-`,
 *   `.` and spaces, not starting with `.` (so no `.` / `..` part and no hidden file) nor ending
 *   with a space or `.`; no empty part (`//`), no backslash, `%`, quotes or angle brackets;
 * - no control, format or invisible character anywhere (line breaks, NUL, bidi overrides,
 *   zero-width characters); at most {@link MAX_DEPTH} parts below `/memories` and
 *   {@link MAX_PATH_CHARS} characters; one trailing slash is dropped (`/memories/notes/`).
 * Anything else is refused with a {@link ToolError} the model can act on.
 *
 * Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool (paths are
 * under `/memories`; the docs ask clients to refuse traversal such as `../` and encoded forms).
 */
import { INVISIBLE, plainLine } from "../plain-text.js";
import { ToolError } from "../toolbox/tool.js";

/** The memory tool's directory: every path starts here. */
export const MEMORY_ROOT = "/memories";

/** Longest path, in characters (UTF-16 code units). */
export const MAX_PATH_CHARS = 200;

/** Longest part of a path (a file or directory name), in characters (code points). */
export const MAX_PART_CHARS = 64;

/** Most parts below `/memories` (`/memories/a/b/c.md` has 3). */
export const MAX_DEPTH = 4;

/** A part of a path: letters, digits, marks, `_`, `-`, `.`, spaces; not starting with `.`, not ending with a space or `.`. */
const PART = /^(?![.])[\p{L}\p{N}\p{M}_\-. ]+(?<![ .])$/u;

/** Control characters and line or paragraph separators. */
const CONTROL = /[\p{Cc}\p{Zl}\p{Zp}]/u;

/** How a refused path is quoted back to the model: one plain line, at most 80 characters. */
function shown(path: string): string {
  return JSON.stringify(plainLine(path, 80));
}

/**
 * The one spelling of `path` (see the module comment): `/memories` for the directory itself,
 * else `/memories/<part>/…` without a trailing slash, NFC-normalised.
 *
 * @param field - the input field it came from (`path`, `old_path`, `new_path`), for the error.
 * @throws {ToolError} saying what is wrong and what a valid path looks like.
 */
export function normaliseMemoryPath(path: unknown, field = "path"): string {
  if (typeof path !== "string" || path === "")
    throw new ToolError(`${field} is required: a path under ${MEMORY_ROOT}, e.g. ${MEMORY_ROOT}/profile.md.`);
  INVISIBLE.lastIndex = 0;
  if (CONTROL.test(path) || INVISIBLE.test(path)) {
    throw new ToolError(
      `${field} ${shown(path)} contains control or invisible characters; use a plain path under ${MEMORY_ROOT}, e.g. ${MEMORY_ROOT}/profile.md.`,
    );
  }
  const text = path.normalize("NFC");
  if (text.length > MAX_PATH_CHARS)
    throw new ToolError(`${field} is ${text.length} characters long; a memory path has at most ${MAX_PATH_CHARS}.`);
  if (text !== MEMORY_ROOT && !text.startsWith(`${MEMORY_ROOT}/`)) {
    throw new ToolError(
      `${field} ${shown(path)} is outside ${MEMORY_ROOT}: every memory file is under ` +
        `${MEMORY_ROOT}, e.g. ${MEMORY_ROOT}/profile.md. Nothing else can be read or written.`,
    );
  }
  const rest = text.slice(MEMORY_ROOT.length + 1).replace(/\/$/, "");
  if (rest === "") return MEMORY_ROOT;
  const parts = rest.split("/");
  if (parts.length > MAX_DEPTH)
    throw new ToolError(
      `${field} ${shown(path)} is ${parts.length} levels deep; use at most ${MAX_DEPTH} below ${MEMORY_ROOT}.`,
    );
  for (const part of parts) {
    if (part === "." || part === "..")
      throw new ToolError(
        `${field} ${shown(path)} contains "${part}": paths may not move up or around; name the file directly, e.g. ${MEMORY_ROOT}/profile.md.`,
      );
    if (part === "")
      throw new ToolError(
        `${field} ${shown(path)} has an empty part (two slashes in a row); write it with single slashes.`,
      );
    if ([...part].length > MAX_PART_CHARS)
      throw new ToolError(`${field} ${shown(path)} has a name longer than ${MAX_PART_CHARS} characters; shorten it.`);
    if (!PART.test(part)) {
      throw new ToolError(
        `${field} ${shown(path)}: the name ${shown(part)} may use only letters, digits, spaces, ` +
          `"_", "-" and "." (not first, not last); e.g. ${MEMORY_ROOT}/家人.md.`,
      );
    }
  }
  return `${MEMORY_ROOT}/${parts.join("/")}`;
}

/** True when `path` is `dir` or lies below it (both normalised). */
export function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === MEMORY_ROOT ? `${MEMORY_ROOT}/` : `${dir}/`);
}
