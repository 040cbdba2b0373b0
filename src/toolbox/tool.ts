/**
 * Defining a tool. A tool is one file in `tools/` whose default export is made by
 * {@link defineTool}; the loader (`registry.ts`) imports every file of `tools/` and collects those
 * values, so nothing else in the project needs to change.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { defineTool } from "../src/toolbox/tool.js";
 *
 * export default defineTool({
 *   name: "roll_dice",
 *   description: "Roll dice when the user asks for a random roll. Not for other random choices.",
 *   tags: ["util"],
 *   input: z.object({ sides: z.number().int().min(2).max(1000).default(6) }),
 *   run: ({ sides }) => `🎲 ${1 + Math.floor(Math.random() * sides)}`,
 * });
 * ```
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { RedisClient } from "../redis.js";
import type { z } from "zod";
import type { Config, Locale } from "../config.js";
import type { Localized } from "../i18n.js";
import type { Logger } from "../log.js";
import type { Platform } from "../queue/incoming.js";
import type { JsonSchemaInput } from "./json-input.js";

/**
 * Thrown by a tool for an expected failure (bad city, unknown todo id, API down). Its message
 * goes to the model as the `tool_result` text, so write it as advice the model can act on, in
 * plain words, without secrets. Anything else a tool throws is treated as a bug.
 */
export class ToolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ToolError";
  }
}

/** What a tool knows about the call it is serving. */
export interface ToolContext {
  platform: Platform;
  /** The chat the request came from. Never key personal data by chat alone. */
  chatId: string;
  chatKind: "dm" | "group";
  /**
   * The Telegram topic (`message_thread_id`) the request came from, so an answer given later (a
   * reminder) goes to the same topic; absent elsewhere (Discord threads are chats of their own).
   */
  topicId?: string;
  /** The Discord server of a server channel (its access may come from the whole server, `discord:<guildId>`); absent elsewhere. */
  guildId?: string;
  /** The person who asked; personal data (todos) is keyed by `platform` + `userId`. */
  userId: string;
  userName: string;
  /** Locale of the bot's own words; the model's language follows the user. */
  locale: Locale;
  /** IANA time zone for dates shown to the user (default `TIMEZONE`). */
  timezone: string;
  /** Aborted when the call times out or the run is cancelled; pass it to fetch and friends. */
  signal: AbortSignal;
  log: Logger;
  /**
   * Reports how far a long call has come (e.g. an MCP server's progress notifications); shown on
   * the status line of a streamed answer. Absent when nobody watches. Must be cheap; never throws.
   */
  onProgress?: (progress: ToolProgress) => void;
  /** The shared Redis connection (commands only; do not block on it). */
  redis: RedisClient;
  /** The `tool_use` id of the call being served, when the loop runs it (absent in `describe` and in tests calling tools directly). */
  toolUseId?: string;
  config: Config;
}

/**
 * The schema of a tool's input: a zod object (tools in `tools/`), or a {@link JsonSchemaInput}
 * for a schema that arrives as JSON Schema (MCP tools), validated with Ajv.
 */
export type ToolInputSchema = z.ZodObject | JsonSchemaInput;

/** The input `run` receives: the zod output type, or a plain object for JSON Schema inputs. */
export type ToolInput<S extends ToolInputSchema> = S extends z.ZodObject ? z.output<S> : Record<string, unknown>;

/** How far a long call has come: `progress` of `total` (units of the tool's choosing), and a short message. */
export interface ToolProgress {
  progress: number;
  total?: number;
  /** One short plain line (the tool cleans and cuts it). */
  message?: string;
}

/** An image a tool returns to the model (an image block inside the `tool_result`). */
export interface ToolImage {
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp` (the Messages API's image types). */
  mediaType: "image/png" | "image/jpeg" | "image/gif" | "image/webp";
  /** The image, base64-encoded. */
  data: string;
  /**
   * Where the image stands in the text: the number of UTF-16 units of the text before it (the
   * `tool_result` then holds text, image, text in that order). Default: after the whole text.
   */
  at?: number;
}

/**
 * A tool's answer with images: `text` for the model, plus image blocks (placed by their `at`), and
 * text meant for the person only (MCP content with `audience: ["user"]`): shown with the answer,
 * never sent to the model.
 */
export interface ToolOutput {
  text: string;
  images?: ToolImage[];
  /** Texts for the person, not the model (each a few lines at most; cleaned and bounded by the tool). */
  forUser?: string[];
}

/** What a tool file declares. */
export interface ToolDefinition<S extends ToolInputSchema = ToolInputSchema> {
  /** Unique name, `^[a-zA-Z0-9_-]{1,64}$` (the Messages API's rule for tool names). */
  name: string;
  /** Written for the model: what the tool does, when to use it and when not. */
  description: string;
  /** Input schema; its JSON Schema (`z.toJSONSchema`) is the tool's `input_schema`. */
  input: S;
  /** Tags that choose the contexts the tool is offered in, e.g. `info`, `todo`, `write`. */
  tags: readonly string[];
  /** True when the tool may destroy something: it never runs before the requester approves. */
  dangerous?: boolean;
  /**
   * True when the tool only reads (time, weather, a listing, a calculation): it may run again when
   * a job is retried. A tool that does not say so is treated as a write: each of its calls runs at
   * most once per `tool_use` id across job retries, and a retry gets the recorded result.
   */
  readOnly?: boolean;
  /**
   * True when the tool is needed in few turns (completing or deleting a todo, cancelling a
   * reminder): it is not in front of the model in every request but sent with `defer_loading:
   * true`, and the model finds it through the API's tool search when it needs it (so it does not
   * count toward the ten tools of a request). Default `false`: loaded in every request. MCP tools
   * are deferred unless their server says otherwise. Source:
   * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
   */
  deferred?: boolean;
  /**
   * For dangerous tools: whether the approval prompt may offer "always allow" (a grant that lets
   * later calls of this tool by the same requester in the same conversation run without asking).
   * Default `true`; `false` = the prompt never offers "always allow" for this tool, and a grant is
   * never recorded or used for it (every call is confirmed). Read it as `tool.alwaysAllow !== false`.
   */
  alwaysAllow?: boolean;
  /**
   * True when the tool's results are content from outside the conversation (web pages, files,
   * another service's answers: web search and fetch, MCP tools): a memory write in a run that
   * called it is shown to the person with an undo button (`src/memory/undo.ts`, issue 39).
   */
  outside?: boolean;
  /** Longest run, in ms, before the call is aborted and reported as failed. Default 30 000. */
  timeoutMs?: number;
  /**
   * Optional start-up check, e.g. that an API key is configured. Throwing leaves the tool out
   * with one warning naming the reason; the bot still starts.
   */
  setup?: (config: Config) => void | Promise<void>;
  /**
   * Runs the tool. Returns the text the model reads. Throw {@link ToolError} for expected failures.
   */
  run: (input: ToolInput<S>, context: ToolContext) => string | ToolOutput | Promise<string | ToolOutput>;
  /**
   * For dangerous tools: the action in plain words of `context.locale`, shown on the approval
   * prompt (e.g. `刪除待辦 #3「買牛奶」`). May read Redis; must not change anything. Default:
   * the tool name and its input as JSON. Throw {@link ToolError} when the call cannot succeed
   * (e.g. no such todo): the model gets that message at once and nobody is asked to approve.
   */
  describe?: (input: ToolInput<S>, context: ToolContext) => string | Promise<string>;
  /**
   * What a call is doing, in a few words of `locale` with its input in human words (e.g.
   * `查詢天氣：臺北市`), shown on the status line of a streamed answer while it runs (at most 60
   * characters are shown). Must be quick and pure. Default: the tool's name.
   */
  activity?: (input: ToolInput<S>, locale: Locale) => string;
  /**
   * For people, not the model: a short name of the tool in each of the bot's locales, e.g.
   * `{ "zh-TW": "天氣預報", en: "Weather forecast" }` (at most {@link MAX_TOOL_TITLE_CHARS} characters).
   * `/help` and `/tools` show it (with the tool's name beside it in `/tools`). Default: the name.
   */
  title?: Localized;
  /**
   * For people: what the tool does, one line in each locale (at most {@link MAX_TOOL_SUMMARY_CHARS}
   * characters), shown by `/tools` and `npm run tools` in place of the model-facing `description`,
   * which stays as it is. Default: the first sentence of `description`.
   */
  summary?: Localized;
  /**
   * Where the tool comes from, for listings and errors, when it is not a file of `tools/`:
   * e.g. `MCP server "files"`. Default: its file.
   */
  source?: string;
  /**
   * Present on a server tool (the Messages API's web search and web fetch): the API runs it, never
   * the bot. Its calls arrive as `server_tool_use` blocks and its results as `*_tool_result`
   * blocks of the model's own response; `run` only answers a `tool_use` of it, which the API
   * never sends. See `server-tools.ts`.
   */
  server?: ServerToolSpec;
  /**
   * Present on a client tool whose definition the Messages API fixes (the memory tool,
   * `memory_20250818`): the request carries this definition (its `type` and `name`) instead of a
   * custom tool's `description` and `input_schema`, and the bot runs its calls like any tool's.
   * `input` still validates what the model sends.
   */
  apiDefinition?: Anthropic.Messages.ToolUnion;
  /** The icon of its status line in a streamed answer (default `🔧`), e.g. `📝` for the memory tool. */
  icon?: string;
  /**
   * When the tool's input and results are the user's own data (memory): what the trace and the
   * log line show of a call instead of its input (e.g. the command, the path and sizes), and its
   * result is shown there only by its length. Must be quick and pure.
   */
  traced?: (input: ToolInput<S>) => Record<string, unknown>;
  /**
   * A short line said with the final answer after each successful call, when the answer is not
   * streamed (a streamed answer shows the call's status line instead), e.g. `📝 記住了：住在新竹`
   * for a memory write; undefined for a call that needs none (a memory view). Must be quick and pure.
   */
  notice?: (input: ToolInput<S>, locale: Locale) => string | undefined;
}

/** How a server tool is offered (see {@link ToolDefinition.server}). */
export interface ServerToolSpec {
  /** The entry of the request's `tools` (its `type`, `name` and options; `defer_loading` and `cache_control` are added per request). */
  definition: Anthropic.Messages.ToolUnion;
  /** The icon of its status line in a streamed answer, e.g. `🔎` (tools of the bot show `🔧`). */
  icon: string;
}

/** Longest {@link ToolDefinition.title} in any locale, in characters (UTF-16 code units). */
export const MAX_TOOL_TITLE_CHARS = 40;

/** Longest {@link ToolDefinition.summary} in any locale, in characters (UTF-16 code units). */
export const MAX_TOOL_SUMMARY_CHARS = 140;

/** A defined tool: its definition, normalised, plus the file it was loaded from. */
export interface Tool<S extends ToolInputSchema = ToolInputSchema> extends ToolDefinition<S> {
  readonly tags: readonly string[];
  readonly dangerous: boolean;
  /** See {@link ToolDefinition.readOnly}; false unless the definition says `true`. */
  readonly readOnly: boolean;
  /**
   * Absolute path of the file the loader found the tool in; `<unknown>` for a tool that did not
   * come through the loader (one made in a test and added to a toolbox directly).
   */
  readonly file: string;
}

/** Marks the values {@link defineTool} made; `Symbol.for`, so a second copy of this module agrees. */
const DEFINED = Symbol.for("toolbox.defineTool");

/**
 * Defines a tool: returns it as a plain value, with its defaults filled in (`tags` copied,
 * `dangerous` and `readOnly` false unless `true`). Nothing is registered: a file of `tools/`
 * makes the tool its default export, and the loader collects it from there. Never throws:
 * problems (bad name, empty description, a schema that is not a zod object) are reported by the
 * loader with the file name.
 */
export function defineTool<S extends ToolInputSchema>(definition: ToolDefinition<S>): Tool<S> {
  const tool: Tool<S> = {
    ...definition,
    tags: [...(definition.tags ?? [])],
    dangerous: definition.dangerous === true,
    readOnly: definition.readOnly === true,
    file: "<unknown>",
  };
  Object.defineProperty(tool, DEFINED, { value: true });
  return tool;
}

/** True when `value` was made by {@link defineTool} (how the loader tells a tool from a helper's export). */
export function isDefinedTool(value: unknown): value is Tool {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[DEFINED] === true;
}
