/**
 * The tool registry: folders are the registry. {@link loadTools} imports every module under
 * `tools/` and collects each one's default export made by `defineTool` (a module without one is a
 * helper); it knows each tool's file because it imported it. A duplicate name, a missing name or
 * description, or an input schema that is not a zod object stops start-up with an error that
 * names the file(s). Unlike Sapphire's stores, which silently replace a same-name piece, we refuse it.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { z } from "zod";
import { LOCALES, type Config } from "../config.js";
import { silentLogger, type Logger } from "../log.js";
import { JsonSchemaInput } from "./json-input.js";
import { isDefinedTool, MAX_TOOL_SUMMARY_CHARS, MAX_TOOL_TITLE_CHARS, type Tool } from "./tool.js";
import { inputSchemaOf } from "./schema.js";
import { FEATURES } from "../features.js";
import { serverTools } from "./server-tools.js";
import { ToolBox } from "./toolbox.js";

/** The Messages API's rule for tool names. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** The shipped tools folder: `tools/` at the project root, from the sources and from `dist/`. */
export const DEFAULT_TOOLS_DIR = fileURLToPath(new URL("../../tools/", import.meta.url));

/** Start-up stops with this. `problems` has one line per problem, each naming its file(s). */
export class ToolRegistryError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`The toolbox could not be loaded:\n  - ${problems.join("\n  - ")}`);
    this.name = "ToolRegistryError";
    this.problems = problems;
  }
}

/** A tool left out at start-up because its `setup` threw (for example: no API key). */
export interface SkippedTool {
  name: string;
  file: string;
  reason: string;
}

/** The result of {@link loadTools}. */
export interface LoadedTools {
  toolbox: ToolBox;
  skipped: SkippedTool[];
}

/** Options of {@link loadTools}. */
export interface LoadToolsOptions {
  /**
   * Folders to load, each searched recursively. Default: {@link DEFAULT_TOOLS_DIR}, plus the
   * server tools the configuration turns on (`serverTools`: web search, web fetch) and the tools
   * the features add (`Feature.tools`: the memory tool when `MEMORY=on`); folders given
   * here give exactly their own tools.
   */
  dirs?: string[];
  /** Passed to each tool's `setup`. */
  config: Config;
  log?: Logger;
}

const MODULE_FILE = /\.(?:[cm]?js|[cm]?ts)$/;
const NOT_A_MODULE = /(?:\.d\.[cm]?ts|\.(?:test|spec)\.[cm]?[jt]s|\.map)$/;

async function listModules(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && MODULE_FILE.test(e.name) && !NOT_A_MODULE.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/**
 * Checks one tool's declaration. Returns problems as sentences naming the file; empty when valid.
 */
export function validateTool(tool: Tool): string[] {
  const where = tool.source ?? displayPath(tool.file);
  const problems: string[] = [];
  const name = (tool as { name?: unknown }).name;
  if (typeof name !== "string" || name.trim() === "") {
    problems.push(`${where}: a tool has no name (set \`name\`, e.g. "get_weather")`);
  } else if (!TOOL_NAME_PATTERN.test(name)) {
    problems.push(
      `${where}: tool name ${JSON.stringify(name)} is not allowed by the Messages API (use 1-64 of a-z, A-Z, 0-9, _ and -)`,
    );
  }
  const label = typeof name === "string" && name ? `tool "${name}"` : "a tool";
  if (typeof tool.description !== "string" || tool.description.trim() === "") {
    problems.push(`${where}: ${label} has an empty description (tell the model when to use it and when not)`);
  }
  const input = tool.input as unknown;
  if (input instanceof JsonSchemaInput) {
    // compiled (and checked to be an object schema) when it was made
  } else if (!(input instanceof z.ZodObject)) {
    problems.push(`${where}: ${label} has an input schema that is not a zod object (use z.object({...}))`);
  } else {
    try {
      const schema = inputSchemaOf(tool);
      if (schema.type !== "object") problems.push(`${where}: ${label}'s JSON Schema is not of type "object"`);
    } catch (error) {
      problems.push(`${where}: ${label}'s input schema cannot be turned into JSON Schema: ${(error as Error).message}`);
    }
  }
  if (!Array.isArray(tool.tags) || tool.tags.some((t) => typeof t !== "string" || t.trim() === "")) {
    problems.push(`${where}: ${label} has tags that are not a list of words`);
  }
  if (typeof tool.run !== "function") problems.push(`${where}: ${label} has no run function`);
  for (const [field, max] of [
    ["title", MAX_TOOL_TITLE_CHARS],
    ["summary", MAX_TOOL_SUMMARY_CHARS],
  ] as const) {
    const problem = tool[field] === undefined ? undefined : localizedProblem(tool[field], max);
    if (problem) problems.push(`${where}: ${label}'s ${field} ${problem}`);
  }
  return problems;
}

/** What is wrong with a per-locale text of a tool (`title`, `summary`), or undefined when it is fine. */
function localizedProblem(texts: unknown, max: number): string | undefined {
  const text = (locale: string) =>
    typeof texts === "object" && texts !== null ? (texts as Record<string, unknown>)[locale] : undefined;
  const missing = LOCALES.filter(
    (locale) => typeof text(locale) !== "string" || (text(locale) as string).trim() === "",
  );
  if (missing.length > 0)
    return `needs a text in every locale (missing: ${missing.join(", ")}), e.g. { "zh-TW": "…", en: "…" }`;
  const long = LOCALES.filter((locale) => (text(locale) as string).length > max);
  return long.length > 0 ? `is longer than ${max} characters in ${long.join(", ")}` : undefined;
}

/**
 * The tool a module of `tools/` exports: its default export when `defineTool` made it, with the
 * module's file. A module without one is a helper (no tool, no problem). A tool exported under
 * another name is a problem: a file holds one tool, as its default export.
 */
function toolOfModule(module: Record<string, unknown>, file: string): { tool?: Tool; problems: string[] } {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(module)) {
    if (key === "default" || !isDefinedTool(value) || value === module.default) continue;
    const label = typeof value.name === "string" && value.name ? `tool "${value.name}"` : "a tool";
    problems.push(
      `${displayPath(file)}: ${label} is exported as \`${key}\`; a tool file exports its one tool as default (\`export default defineTool({...})\`)`,
    );
  }
  const exported = module.default;
  return { tool: isDefinedTool(exported) ? { ...exported, file } : undefined, problems };
}

function displayPath(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith("..") ? rel : file;
}

/**
 * Imports every module under the given folders and returns the toolbox of the tools they export
 * (each module's default export made by `defineTool`; other modules are helpers).
 *
 * @throws {ToolRegistryError} naming the file(s) when a module fails to import, a tool is invalid
 *   (see {@link validateTool}) or two tools share a name. A tool whose `setup` throws is not an
 *   error: it is returned in `skipped` and logged once as a warning.
 */
export async function loadTools(options: LoadToolsOptions): Promise<LoadedTools> {
  const dirs = (options.dirs ?? [DEFAULT_TOOLS_DIR]).map((d) => path.resolve(d));
  // The Messages API's tools the configuration turns on (web search, web fetch) and the features' (memory) join the default folder's.
  const servers =
    options.dirs === undefined
      ? [...serverTools(options.config), ...FEATURES.flatMap((f) => f.tools?.(options.config) ?? [])]
      : [];
  const log = options.log ?? silentLogger;
  const problems: string[] = [];

  const files = new Set<string>();
  for (const dir of dirs) {
    try {
      for (const file of await listModules(dir)) files.add(file);
    } catch (error) {
      problems.push(
        `${displayPath(dir)}: cannot read the tools folder (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
  const mine: Tool[] = [];
  for (const file of files) {
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (error) {
      problems.push(`${displayPath(file)}: failed to load: ${(error as Error).message}`);
      continue;
    }
    const { tool, problems: own } = toolOfModule(module, file);
    problems.push(...own);
    if (tool) mine.push(tool);
  }

  const byName = new Map<string, Tool>();
  const valid: Tool[] = [];
  for (const tool of mine) {
    const own = validateTool(tool);
    problems.push(...own);
    if (own.length > 0) continue;
    const first = byName.get(tool.name);
    if (first) {
      problems.push(
        `tool name "${tool.name}" is defined twice: in ${displayPath(first.file)} and in ${displayPath(tool.file)} (rename one of them)`,
      );
      continue;
    }
    byName.set(tool.name, tool);
    valid.push(tool);
  }
  if (problems.length > 0) throw new ToolRegistryError(problems);

  const skipped: SkippedTool[] = [];
  const ready: Tool[] = [];
  for (const tool of valid) {
    try {
      await tool.setup?.(options.config);
      ready.push(tool);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      skipped.push({ name: tool.name, file: displayPath(tool.file), reason });
      log.warn({ tool: tool.name, file: displayPath(tool.file), reason }, `tool ${tool.name} skipped: ${reason}`);
    }
  }
  // The server tools the configuration turns on (web search, web fetch) sit beside the files' tools.
  return { toolbox: new ToolBox([...ready, ...servers], { log }), skipped };
}
