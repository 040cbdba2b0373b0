/**
 * The toolbox: the tools offered in one context, their schemas for the model, and safe execution.
 */
import { cutChars, cutUnits } from "../cut.js";
import type Anthropic from "@anthropic-ai/sdk";
import type { z } from "zod";
import { redact, silentLogger, type Logger } from "../log.js";
import { metrics } from "../metrics.js";
import { nullTracer, preview, type Tracer } from "../trace/tracer.js";
import { formatPath, getAt, got, repairScalarStrings, safeJson, TYPE_WORDS, type Parsed } from "./input-problems.js";
import { JsonSchemaInput } from "./json-input.js";
import { inputSchemaOf } from "./schema.js";
import {
  ToolError,
  type Tool,
  type ToolContext,
  type ToolImage,
  type ToolInputSchema,
  type ToolOutput,
} from "./tool.js";
import type { Locale } from "../config.js";
import { englishCount, englishNoun, localize } from "../i18n.js";

/** Longest status-line activity of a tool call, in characters (code points); see `ToolBox.activity`. */
export const MAX_ACTIVITY_CHARS = 60;

/** The outcome of one tool call. Never an exception. */
export interface ToolExecution {
  /** False when the call failed for any reason; the `tool_result` then carries `is_error: true`. */
  ok: boolean;
  /** Text for the model: the tool's answer, or what went wrong and what to do. */
  content: string;
  /** Wall time of the call, in ms. */
  durationMs: number;
  /** Images the tool returned (MCP image content); sent as image blocks in the `tool_result`, each at its `at`. */
  images?: ToolImage[];
  /** Texts for the person, never for the model (MCP content with `audience: ["user"]`); redacted. */
  forUser?: string[];
}

/**
 * Most tools one request should put in front of the model (loaded ones: deferred tools do not
 * count, the tool search tool does); more is logged as a warning (models choose worse).
 */
export const MAX_TOOLS_PER_REQUEST = 10;

/** Default limit of one tool call, in ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/**
 * Longest tool result the model reads, in UTF-16 code units (JavaScript string length). A longer
 * result is cut, and a note at its end says so; the note is included in the limit.
 */
export const MAX_TOOL_RESULT_CHARS = 20_000;

/**
 * The tool search tool a request carries when it has deferred tools (`defer_loading: true`): the
 * BM25 variant, which takes a natural-language query; never deferred itself. Source:
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */
export const TOOL_SEARCH_TOOL = { type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" } as const;

/** The `tools` of one request, split by {@link ToolBox.requestTools}. */
export interface RequestTools {
  /** In front of the model: the loaded tools, then the tool search tool when {@link deferred} is not empty. */
  loaded: Anthropic.Messages.ToolUnion[];
  /** Sent with `defer_loading: true`; the model finds them with the tool search tool. */
  deferred: Anthropic.Messages.ToolUnion[];
}

/** Options of a {@link ToolBox}. */
export interface ToolBoxOptions {
  log?: Logger;
  /** Longest tool result, in UTF-16 code units; default {@link MAX_TOOL_RESULT_CHARS}. */
  maxResultChars?: number;
}

/** Per-call options of {@link ToolBox.execute}. */
export interface ExecuteOptions {
  /** Receives `tool_call` and `tool_result` events. */
  tracer?: Tracer;
  /** The model's `tool_use` id, for the trace. */
  toolUseId?: string;
}

/** A set of tools with unique names. Filtering returns a new toolbox; the original is unchanged. */
export class ToolBox {
  readonly #tools = new Map<string, Tool>();
  readonly #log: Logger;
  readonly #maxResultChars: number;

  /** @throws {Error} when two of `tools` share a name. */
  constructor(tools: Iterable<Tool> = [], options: ToolBoxOptions = {}) {
    this.#log = options.log ?? silentLogger;
    this.#maxResultChars = options.maxResultChars ?? MAX_TOOL_RESULT_CHARS;
    for (const tool of tools) this.add(tool);
  }

  /** Adds a tool. @throws {Error} naming both sources (files, MCP servers) when the name is taken. */
  add(tool: Tool): this {
    const existing = this.#tools.get(tool.name);
    if (existing) {
      throw new Error(
        `tool name "${tool.name}" is defined twice: in ${existing.source ?? existing.file} and in ${tool.source ?? tool.file}`,
      );
    }
    this.#tools.set(tool.name, tool);
    return this;
  }

  /**
   * Removes the tool called `name` (an MCP server's tool that is gone after `tools/list_changed`).
   * Toolboxes made earlier with {@link filterByTag} keep their own copy.
   *
   * @returns true when there was such a tool.
   */
  remove(name: string): boolean {
    return this.#tools.delete(name);
  }

  /** The tool called `name`, if any. */
  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  /** Number of tools. */
  get size(): number {
    return this.#tools.size;
  }

  /** All tools, in the order they were added. */
  list(): Tool[] {
    return [...this.#tools.values()];
  }

  /** All tool names, in the order they were added. */
  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** Every tag used by at least one tool, sorted. */
  tags(): string[] {
    return [...new Set(this.list().flatMap((t) => t.tags))].sort();
  }

  /** A new toolbox with the tools that carry at least one of `tags` (all tools when none given). */
  filterByTag(...tags: string[]): ToolBox {
    const wanted = new Set(tags);
    const tools = tags.length === 0 ? this.list() : this.list().filter((t) => t.tags.some((tag) => wanted.has(tag)));
    return new ToolBox(tools, { log: this.#log, maxResultChars: this.#maxResultChars });
  }

  /**
   * The custom tool definitions of the tools of the bot (`name`, `description`, `input_schema`),
   * all of them (deferred ones too), without the server tools. What a request carries is
   * {@link requestTools}.
   */
  schemas(options: { excludeDangerous?: boolean } = {}): Anthropic.Messages.Tool[] {
    return this.list()
      .filter((t) => !t.server && !t.apiDefinition && !(options.excludeDangerous && t.dangerous))
      .map((t) => customDefinition(t));
  }

  /**
   * The `tools` of a request, for the API's tool search
   * (https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool):
   * - `loaded`: the tools in front of the model: the bot's tools that are not deferred (custom
   *   definitions), then the server tools (their own definitions), then — when any tool is
   *   deferred — the tool search tool ({@link TOOL_SEARCH_TOOL});
   * - `deferred`: the deferred tools, each with `defer_loading: true` (not in front of the model
   *   until the tool search returns a `tool_reference` to it).
   * Logs a warning when more than {@link MAX_TOOLS_PER_REQUEST} would be loaded (once per process
   * and set of tool names, so a known excess does not repeat on every model call).
   *
   * @param options.omit - names of tools to leave out (server tools the API refused).
   * @param options.load - names of deferred tools to load anyway (used in the conversation without
   *   a `tool_reference`, e.g. from before they were deferred).
   * @param options.toolSearch - false: no tool search (the API refused it), every tool is loaded.
   */
  requestTools(
    options: { omit?: ReadonlySet<string>; load?: ReadonlySet<string>; toolSearch?: boolean } = {},
  ): RequestTools {
    const split = this.#split(options);
    if (split.loaded.length > MAX_TOOLS_PER_REQUEST && firstTimeOver(split.loaded)) {
      const names = split.loaded.map((t) => ("name" in t ? t.name : "?"));
      this.#log.warn(
        { tools: split.loaded.length, limit: MAX_TOOLS_PER_REQUEST, names },
        `a request would carry ${split.loaded.length} tools (more than ${MAX_TOOLS_PER_REQUEST}): ` +
          `${names.join(", ")}; choose fewer with tags, or mark tools needed in few turns deferred: true`,
      );
    }
    return split;
  }

  /**
   * How many tools a request of this toolbox puts in front of the model: the tools not deferred
   * (server tools included) plus the tool search tool when any tool is deferred. This is the
   * count that should stay within {@link MAX_TOOLS_PER_REQUEST}.
   */
  loadedCount(): number {
    return this.#split({}).loaded.length;
  }

  #split(options: { omit?: ReadonlySet<string>; load?: ReadonlySet<string>; toolSearch?: boolean }): RequestTools {
    const search = options.toolSearch !== false;
    const tools = this.list().filter((t) => !options.omit?.has(t.name));
    const isDeferred = (t: Tool) => search && t.deferred === true && !options.load?.has(t.name);
    const loaded: Anthropic.Messages.ToolUnion[] = [
      ...tools.filter((t) => !t.server && !isDeferred(t)).map((t) => definitionOf(t)),
      ...tools.filter((t) => t.server && !isDeferred(t)).map((t) => definitionOf(t)),
    ];
    const deferred: Anthropic.Messages.ToolUnion[] = tools
      .filter(isDeferred)
      .map((t) => ({ ...definitionOf(t), defer_loading: true }));
    if (deferred.length > 0) loaded.push({ ...TOOL_SEARCH_TOOL });
    return { loaded, deferred };
  }

  /**
   * Runs a tool. Never throws.
   *
   * - unknown tool → `ok: false`, listing the available tools;
   * - input failing the schema → `ok: false`, one line per bad field (`todo_id: expected an integer, got "abc"`);
   *   a numeric string for a number field and `"true"`/`"false"` for a boolean field are accepted;
   * - {@link ToolError} → `ok: false` with its message;
   * - anything else thrown → logged with its stack; the model sees the error's type and message;
   * - slower than the tool's `timeoutMs` (default 30 s) → the context's signal is aborted, `ok: false`.
   *
   * Every result, success or error, is then passed through `redact` (registered secrets and bot
   * token shapes become `[redacted]`) and cut to {@link MAX_TOOL_RESULT_CHARS} (see
   * {@link capToolResult}) before the trace, the log or the model sees it.
   *
   * @param context - the per-call context; its `signal` is combined with the timeout.
   */
  async execute(
    name: string,
    input: unknown,
    context: ToolContext,
    options: ExecuteOptions = {},
  ): Promise<ToolExecution> {
    const started = performance.now();
    const tracer = options.tracer ?? nullTracer;
    const shown = this.#traced(name, input);
    tracer.event("tool_call", { tool: name, toolUseId: options.toolUseId, input: shown.input });
    const result = await this.#run(
      name,
      input,
      options.toolUseId ? { ...context, toolUseId: options.toolUseId } : context,
    );
    const { content, images } = boundedResult(result.content, result.images, this.#maxResultChars);
    if (content.length < result.content.length && content.includes(CUT_NOTE_START))
      context.log.warn(
        { tool: name, chars: result.content.length },
        `tool ${name} returned ${result.content.length} characters; cut for the model`,
      );
    const execution: ToolExecution = {
      ok: result.ok,
      content,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    };
    metrics.toolCall(this.#tools.has(name) ? name : undefined, execution.ok, execution.durationMs);
    if (images?.length) execution.images = images;
    if (result.forUser?.length) execution.forUser = result.forUser.map((t) => redact(t));
    tracer.event("tool_result", {
      tool: name,
      toolUseId: options.toolUseId,
      ok: execution.ok,
      durationMs: execution.durationMs,
      preview: shown.result(execution.content),
      ...(execution.images ? { images: execution.images.length } : {}),
    });
    context.log.info(
      {
        tool: name,
        ok: execution.ok,
        durationMs: execution.durationMs,
        // The model's input and the tool's result hold what people wrote: shown only with LOG_CONTENT=on.
        content: { input: shown.input, preview: shown.result(execution.content, 120) },
      },
      `tool ${name} ${execution.ok ? "ok" : "failed"} in ${execution.durationMs} ms`,
    );
    return execution;
  }

  /**
   * Checks a call before asking a person to approve it: the input must pass the tool's schema,
   * and the tool's `describe` (if any) gives the action in plain words. A `ToolError` thrown by
   * `describe` (e.g. "no todo #7 in your list") means the call cannot succeed: no prompt should be
   * shown, and `content` is the `tool_result` for the model. Never throws.
   *
   * @returns `{ ok: true, action }` (action: `describe`'s text; `name {input JSON}` when the tool
   *   has no `describe`; {@link plainAction} when `describe` failed unexpectedly or returned blank)
   *   or `{ ok: false, content }`.
   */
  async prepare(
    name: string,
    input: unknown,
    context: ToolContext,
  ): Promise<{ ok: true; action: string } | { ok: false; content: string }> {
    const tool = this.#tools.get(name);
    const failed = (content: string) => ({
      ok: false as const,
      content: capToolResult(redact(content), this.#maxResultChars),
    });
    if (!tool) return failed((await this.#run(name, input, context)).content);
    const parsed = await parseToolInput(tool.input, input);
    if (!parsed.ok) return failed(invalidInputText(name, parsed.problems));
    if (!tool.describe) return { ok: true, action: `${name} ${cutUnits(safeJson(parsed.value), 201)}` };
    const plain = () => this.plainAction(name, input, context.locale);
    try {
      const text = (await tool.describe(parsed.value as never, context)).trim();
      return { ok: true, action: text || plain() };
    } catch (error) {
      if (error instanceof ToolError) return failed(error.message);
      context.log.warn({ err: error, tool: name }, "describe failed; the prompt shows the tool's plain action instead");
      return { ok: true, action: plain() };
    }
  }

  /**
   * A call's action in plain words for an approval prompt whose tool has a `describe` that cannot
   * give it (it failed, or the input does not parse): the tool's {@link activity} for the input
   * (`刪除待辦 #1`), else its `title` in `locale`, else its name. Never the raw input, never throws.
   */
  plainAction(name: string, input: unknown, locale: Locale): string {
    const activity = this.activity(name, input, locale);
    if (activity !== name) return activity;
    const title = this.#tools.get(name)?.title;
    return title ? localize(locale, title) : name;
  }

  /**
   * The short activity shown in a streamed answer's status line while a call runs, e.g.
   * `查詢天氣：臺北市`: the tool's `activity` for the parsed input in `locale`, at most
   * {@link MAX_ACTIVITY_CHARS} characters (code points; longer text ends with `…`), on one line.
   * Falls back to the tool's name when it declares none, the input does not parse, or `activity`
   * throws or returns blank. Never throws.
   */
  activity(name: string, input: unknown, locale: Locale): string {
    const tool = this.#tools.get(name);
    if (!tool?.activity) return name;
    const parsed = shapeToolInput(tool.input, input);
    if (!parsed.ok) return name;
    try {
      const text = redact(tool.activity(parsed.value as never, locale))
        .replace(/\s+/g, " ")
        .trim();
      if (text === "") return name;
      return cutChars(text, MAX_ACTIVITY_CHARS);
    } catch {
      return name;
    }
  }

  /**
   * The icon of a tool's status line in a streamed answer: its `icon` (server tools: their
   * `server.icon`); undefined for the default `🔧` or an unknown tool.
   */
  icon(name: string): string | undefined {
    const tool = this.#tools.get(name);
    return tool?.server?.icon ?? tool?.icon;
  }

  /**
   * What the trace and the log show of a call: its input as JSON (cut), and its result's text; for
   * a tool with `traced` (its data is the user's: memory), that summary and the result's length only.
   */
  #traced(name: string, input: unknown): { input: string; result: (content: string, max?: number) => string } {
    const tool = this.#tools.get(name);
    if (!tool?.traced) return { input: preview(safeJson(input)), result: (content, max) => preview(content, max) };
    let summary: Record<string, unknown>;
    const parsed = shapeToolInput(tool.input, input);
    try {
      summary = parsed.ok ? tool.traced(parsed.value as never) : { invalid: true };
    } catch {
      summary = { invalid: true };
    }
    return { input: safeJson(summary), result: (content) => `[${englishCount(content.length, "character")}]` };
  }

  /**
   * The line said with a non-streamed final answer after a successful call of `name` (its
   * `notice`, e.g. `📝 記住了：住在新竹`), one plain line; undefined when the tool has none, the
   * input does not parse, or `notice` throws or returns blank. Never throws.
   */
  notice(name: string, input: unknown, locale: Locale): string | undefined {
    const tool = this.#tools.get(name);
    if (!tool?.notice) return undefined;
    const parsed = shapeToolInput(tool.input, input);
    if (!parsed.ok) return undefined;
    try {
      const text = tool
        .notice(parsed.value as never, locale)
        ?.replace(/\s+/g, " ")
        .trim();
      return text ? redact(text) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * What a successful call of `name` did, as one item of a streamed answer's final line of calls:
   * the tool's {@link notice} when it declares `notice` (undefined when that says none is needed,
   * e.g. a memory view), else its status line's icon and activity (`🔧 查詢天氣：臺北市`). Never throws.
   */
  done(name: string, input: unknown, locale: Locale): string | undefined {
    if (this.#tools.get(name)?.notice) return this.notice(name, input, locale);
    return `${this.icon(name) ?? "🔧"} ${this.activity(name, input, locale)}`;
  }

  async #run(name: string, input: unknown, context: ToolContext): Promise<Omit<ToolExecution, "durationMs">> {
    const tool = this.#tools.get(name);
    if (!tool) {
      const available = this.names();
      return {
        ok: false,
        content: `Unknown tool "${name}". Available tools: ${available.length ? available.join(", ") : "(none)"}.`,
      };
    }
    const parsed = await parseToolInput(tool.input, input);
    if (!parsed.ok) return { ok: false, content: invalidInputText(name, parsed.problems) };

    const timeoutMs = tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    const timeout = new AbortController();
    const signal = AbortSignal.any([context.signal, timeout.signal]);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => {
        timeout.abort(new ToolError(`timed out after ${timeoutMs} ms`));
        resolve("timeout");
      }, timeoutMs);
    });
    try {
      const running = Promise.resolve().then(() => tool.run(parsed.value as never, { ...context, signal }));
      running.catch(() => {}); // a late rejection after the timeout must not go unhandled
      const outcome = await Promise.race([running, timedOut]);
      if (outcome === "timeout")
        return { ok: false, content: timedOutText(`Tool "${name}"`, timeoutMs, tool.readOnly) };
      if (isToolOutput(outcome)) {
        return {
          ok: true,
          content: outcome.text,
          ...(outcome.images?.length ? { images: outcome.images } : {}),
          ...(outcome.forUser?.length ? { forUser: outcome.forUser } : {}),
        };
      }
      if (typeof outcome !== "string") {
        context.log.error(
          { tool: name, type: typeof outcome },
          `tool ${name} returned ${typeof outcome} instead of text`,
        );
        return { ok: false, content: `Tool "${name}" returned no text (this is a bug in the tool).` };
      }
      return { ok: true, content: outcome };
    } catch (error) {
      if (error instanceof ToolError) return { ok: false, content: error.message };
      const err = error instanceof Error ? error : new Error(String(error));
      context.log.error({ tool: name, err }, `tool ${name} threw ${err.name}`);
      return { ok: false, content: `Tool "${name}" failed with ${err.name}: ${err.message}` };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** How the note of {@link capToolResult} begins. */
const CUT_NOTE_START = "\n\n[Cut: this tool result was ";

/**
 * A tool result's text redacted and cut ({@link capToolResult}), with its images' places (`at`)
 * moved along: the text is redacted piece by piece between two places, so an image stays between
 * the same words; an image whose place was cut off goes after the text.
 */
function boundedResult(
  text: string,
  images: ToolImage[] | undefined,
  max: number,
): { content: string; images?: ToolImage[] } {
  const places = [...new Set((images ?? []).flatMap((i) => (i.at === undefined ? [] : [i.at])))].sort((a, b) => a - b);
  if (places.length === 0) return { content: capToolResult(redact(text), max), ...(images ? { images } : {}) };
  const moved = new Map<number, number>();
  let redacted = "";
  let from = 0;
  for (const at of places) {
    const to = Math.min(Math.max(at, from), text.length);
    redacted += redact(text.slice(from, to));
    moved.set(at, redacted.length);
    from = to;
  }
  redacted += redact(text.slice(from));
  const content = capToolResult(redacted, max);
  const kept = content.length < redacted.length ? content.lastIndexOf(CUT_NOTE_START) : content.length;
  return {
    content,
    images: images!.map((i) => {
      if (i.at === undefined) return i;
      const at = moved.get(i.at)!;
      return { ...i, at: at <= kept ? at : content.length };
    }),
  };
}

/**
 * `content` cut to at most `max` UTF-16 code units, never inside a surrogate pair, with a note at
 * the end saying how long it was and that the rest was left out (the note counts toward `max`).
 * Content within the limit is returned unchanged.
 */
export function capToolResult(content: string, max = MAX_TOOL_RESULT_CHARS): string {
  if (content.length <= max) return content;
  const note =
    `${CUT_NOTE_START}${content.length} characters; only the first part is ` +
    `shown. If you need more, ask the tool for less at a time (narrower input).]`;
  let cut = Math.max(0, max - note.length);
  const code = content.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1; // never keep the high half of a pair without its low half
  return `${content.slice(0, cut)}${note}`;
}

/**
 * The entry of a request's `tools` for `tool`: a server tool's or an API-defined client tool's own
 * definition (a copy), else its custom definition.
 */
function definitionOf(tool: Tool): Anthropic.Messages.ToolUnion {
  if (tool.server) return { ...tool.server.definition };
  if (tool.apiDefinition) return { ...tool.apiDefinition };
  return customDefinition(tool);
}

/** A tool of the bot as a custom tool definition of the Messages API. */
function customDefinition(tool: Tool): Anthropic.Messages.Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: inputSchemaOf(tool) as Anthropic.Messages.Tool.InputSchema,
  };
}

function isToolOutput(value: unknown): value is ToolOutput {
  return typeof value === "object" && value !== null && typeof (value as ToolOutput).text === "string";
}

const overWarned = new Set<string>();

/** True the first time this process sees this set of tool names over the limit. */
function firstTimeOver(tools: readonly Anthropic.Messages.ToolUnion[]): boolean {
  const key = tools.map((t) => ("name" in t ? t.name : t.type)).join(",");
  if (overWarned.has(key)) return false;
  if (overWarned.size < 1000) overWarned.add(key);
  return true;
}

/**
 * Parses model input with a tool's input schema before a call: {@link parseInput} for zod objects,
 * {@link JsonSchemaInput.parse} (Ajv, in the schema checker's thread) for JSON Schema inputs.
 * Never rejects.
 */
async function parseToolInput(schema: ToolInputSchema, input: unknown): Promise<Parsed<unknown>> {
  return schema instanceof JsonSchemaInput ? schema.parse(input) : parseInput(schema, input);
}

/**
 * Parses model input for showing a call (status line, notice, trace), synchronously: zod objects as
 * {@link parseToolInput}; JSON Schema inputs only shaped ({@link JsonSchemaInput.shape}), since
 * their check runs in another thread and the call itself is checked before it runs. Never throws.
 */
function shapeToolInput(schema: ToolInputSchema, input: unknown): Parsed<unknown> {
  return schema instanceof JsonSchemaInput ? schema.shape(input) : parseInput(schema, input);
}

/** What the model reads when its input failed the schema: one line per bad field. */
function invalidInputText(name: string, problems: string[]): string {
  return `Invalid input for tool "${name}":\n${problems.map((p) => `- ${p}`).join("\n")}\nFix these fields and call the tool again.`;
}

/**
 * What the model reads when a call of `what` (e.g. `Tool "x"`) did not answer within `timeoutMs`:
 * the bot stopped waiting, but cannot know whether the call's work was stopped too. A read-only
 * call may be tried again; for any other the outcome is unknown ({@link unknownEffectText}).
 */
export function timedOutText(what: string, timeoutMs: number, readOnly = false): string {
  const late = `${what} did not finish within ${formatSeconds(timeoutMs)}`;
  return readOnly
    ? `${late}, so the bot stopped waiting for it. It only reads, so nothing was changed: try again later, or tell the ` +
        `user it is not responding.`
    : unknownEffectText(late);
}

/**
 * `happened` (what cut a call short, e.g. `The connection to MCP server "x" dropped during the y
 * call`) followed by the words for a call whose outcome is unknown: it may or may not have taken
 * effect, and must not be repeated blindly.
 */
export function unknownEffectText(happened: string): string {
  return (
    `${happened}, so it is unknown whether it took effect. Do not repeat it blindly: check the current state ` +
    `first if you can, and tell the user.`
  );
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Parses model input with a tool's schema. On failure, numeric strings in number fields and
 * exactly `"true"`/`"false"` in boolean fields are converted once and the parse is retried;
 * nothing else is coerced (so `"false"` never becomes true, and `"abc"` is never a number).
 */
export function parseInput<S extends z.ZodObject>(schema: S, input: unknown): Parsed<z.output<S>> {
  const first = schema.safeParse(input);
  if (first.success) return { ok: true, value: first.data };
  let issues = first.error.issues;
  const repaired = repairScalarStrings(
    input,
    issues.flatMap((i) => (i.code === "invalid_type" ? [{ path: i.path, expected: [i.expected] }] : [])),
  );
  if (repaired) {
    const second = schema.safeParse(repaired);
    if (second.success) return { ok: true, value: second.data };
    issues = second.error.issues;
  }
  return { ok: false, problems: issues.map((i) => describeIssue(schema, input, i)) };
}

function schemaAt(schema: z.ZodType, pathParts: readonly PropertyKey[]): z.ZodType | undefined {
  let node: z.ZodType | undefined = schema;
  for (const key of pathParts) {
    node = unwrap(node);
    const def = (
      node as { _zod?: { def?: { type?: string; shape?: Record<string, z.ZodType>; element?: z.ZodType } } } | undefined
    )?._zod?.def;
    if (def?.type === "object" && typeof key === "string") node = def.shape?.[key];
    else if (def?.type === "array") node = def.element;
    else return undefined;
  }
  return unwrap(node);
}

function unwrap(node: z.ZodType | undefined): z.ZodType | undefined {
  let current = node as { _zod?: { def?: { type?: string; innerType?: z.ZodType } } } | undefined;
  while (
    current?._zod?.def &&
    ["optional", "nullable", "default", "prefault", "catch", "readonly"].includes(current._zod.def.type ?? "")
  ) {
    current = current._zod.def.innerType as typeof current;
  }
  return current as z.ZodType | undefined;
}

function describeIssue(schema: z.ZodObject, input: unknown, issue: z.core.$ZodIssue): string {
  const where = formatPath(issue.path);
  const value = getAt(input, issue.path);
  switch (issue.code) {
    case "invalid_type": {
      if (value === undefined) return `${where}: is required`;
      const target = schemaAt(schema, issue.path) as { isInt?: boolean } | undefined;
      const expected = issue.expected === "number" && target?.isInt ? "int" : issue.expected;
      return `${where}: expected ${TYPE_WORDS[expected] ?? expected}, got ${got(value)}`;
    }
    case "too_small":
    case "too_big": {
      // A tool's own words for the bound (`.min(1, { message })`) say more than ours; zod's defaults start "Too small" / "Too big".
      if (!/^Too (small|big)\b/.test(issue.message)) return `${where}: ${issue.message}`;
      const bound = issue.code === "too_small" ? issue.minimum : issue.maximum;
      const word = issue.code === "too_small" ? "at least" : "at most";
      const noun =
        issue.origin === "string" ? "character" : issue.origin === "array" || issue.origin === "set" ? "item" : "";
      const unit = noun ? ` ${englishNoun(Number(bound), noun)}` : "";
      const shown = issue.origin === "string" ? englishCount((value as string).length, "character") : got(value);
      return `${where}: must be ${word} ${String(bound)}${unit}, got ${shown}`;
    }
    case "invalid_value":
      return `${where}: must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, got ${got(value)}`;
    case "unrecognized_keys": {
      const known = Object.keys(schema.shape);
      return `${where}: unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}; the fields are ${known.join(", ") || "(none)"}`;
    }
    case "invalid_format":
      return `${where}: must be a valid ${issue.format}, got ${got(value)}`;
    default:
      return `${where}: ${issue.message}`;
  }
}
