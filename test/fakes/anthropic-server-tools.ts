/**
 * The fake Messages API's server tools, emulated as the real API runs them: web search
 * (`web_search_20250305` and newer), web fetch (`web_fetch_20250910` and newer) and the tool
 * search tool (`tool_search_tool_bm25_20251119` / `_regex_`) with deferred tools
 * (`defer_loading: true`).
 *
 * - Definitions are checked field by field ({@link SERVER_TOOL_CHECKS}, entries of the fake's
 *   `TOOL_CHECKS`), unknown fields refused as the API refuses them ("Extra inputs are not permitted").
 * - Deferral ({@link checkDeferral}): `defer_loading` needs a tool search tool; not every tool may
 *   be deferred; a deferred tool may not carry `cache_control`; the tool search tool is never deferred.
 * - History ({@link ServerBlockChecks}): `server_tool_use` ids match `^srvtoolu_`, every result
 *   block answers one of them; `encrypted_content` and `encrypted_index` must be strings this
 *   fake issued, byte for byte (the API refuses altered ones); a `tool_reference` must name a
 *   tool of the request; a `tool_use` of a deferred tool (or a `server_tool_use` of a deferred
 *   server tool, e.g. web fetch) needs a `tool_reference` before it.
 * - Replies ({@link serverContent}): scripted `server_tool_use` / result / cited text blocks get
 *   the API's ids, encrypted fields and citation shape; searches beyond `max_uses` come back as
 *   `max_uses_exceeded`; a scripted call of a deferred tool (a server tool's too) the conversation has not loaded comes
 *   back after a `server_tool_use` of the tool search tool and its `tool_search_tool_result`
 *   with a `tool_reference`, as the model discovers it; `usage.server_tool_use` counts the billed
 *   searches and fetches (failed ones are not billed).
 *
 * Sources: https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool ,
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool ,
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool (the 400 texts
 * "All tools have defer_loading set. At least one tool must be non-deferred." and "Tool reference
 * '…' has no corresponding tool definition"), and the API's reply to `cache_control` on a deferred
 * tool as reported from the real API ("Tool '…' cannot have both defer_loading=true and
 * cache_control set. Tools with defer_loading cannot use prompt caching.",
 * https://github.com/Wei-Shaw/sub2api/issues/4990).
 */
import { randomBytes } from "node:crypto";

/** A request the API would refuse: the message is the API's style. */
export class InvalidServerTool extends Error {}

function fail(message: string): never {
  throw new InvalidServerTool(message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A check of one tool definition of a `type`: throws with the API's message. */
export type ToolCheck = (tool: Record<string, unknown>, where: string) => void;

/** Fields every tool definition may have besides its own. */
const COMMON = ["type", "name", "cache_control", "defer_loading", "allowed_callers", "strict"];

function onlyKeys(tool: Record<string, unknown>, where: string, allowed: readonly string[]): void {
  for (const key of Object.keys(tool))
    if (!allowed.includes(key)) fail(`${where}.${key}: Extra inputs are not permitted`);
}

function checkName(tool: Record<string, unknown>, where: string, name: string): void {
  if (tool.name !== name) fail(`${where}.name: Input should be '${name}'`);
}

function checkMaxUses(tool: Record<string, unknown>, where: string): void {
  const v = tool.max_uses;
  if (v !== undefined && v !== null && (!Number.isInteger(v) || (v as number) < 1))
    fail(`${where}.max_uses: Input should be greater than 0`);
}

function checkDomains(tool: Record<string, unknown>, where: string): void {
  for (const key of ["allowed_domains", "blocked_domains"]) {
    const v = tool[key];
    if (v !== undefined && v !== null && (!Array.isArray(v) || v.some((d) => typeof d !== "string" || d === "")))
      fail(`${where}.${key}: Input should be a valid list of domains`);
  }
  if (Array.isArray(tool.allowed_domains) && Array.isArray(tool.blocked_domains))
    fail(`${where}: Cannot specify both allowed_domains and blocked_domains`);
}

function checkCommon(tool: Record<string, unknown>, where: string): void {
  if (tool.defer_loading !== undefined && typeof tool.defer_loading !== "boolean")
    fail(`${where}.defer_loading: Input should be a valid boolean`);
}

/** `user_location` of web search: `approximate`, with strings, a two-letter country and an IANA time zone. */
function checkLocation(value: unknown, where: string): void {
  if (value === undefined || value === null) return;
  if (!isObject(value)) fail(`${where}: Input should be an object`);
  onlyKeys(value, where, ["type", "city", "region", "country", "timezone"]);
  if (value.type !== "approximate") fail(`${where}.type: Input should be 'approximate'`);
  for (const key of ["city", "region", "country", "timezone"]) {
    if (value[key] !== undefined && value[key] !== null && (typeof value[key] !== "string" || value[key] === ""))
      fail(`${where}.${key}: Input should be a valid string`);
  }
  if (typeof value.country === "string" && !/^[A-Z]{2}$/.test(value.country))
    fail(`${where}.country: String should have at most 2 characters (ISO 3166-1 alpha-2)`);
  if (typeof value.timezone === "string") {
    try {
      new Intl.DateTimeFormat("en", { timeZone: value.timezone });
    } catch {
      fail(`${where}.timezone: Invalid IANA time zone: ${value.timezone}`);
    }
  }
}

function webSearchCheck(extra: readonly string[]): ToolCheck {
  return (tool, where) => {
    onlyKeys(tool, where, [...COMMON, "max_uses", "allowed_domains", "blocked_domains", "user_location", ...extra]);
    checkName(tool, where, "web_search");
    checkCommon(tool, where);
    checkMaxUses(tool, where);
    checkDomains(tool, where);
    checkLocation(tool.user_location, `${where}.user_location`);
  };
}

function webFetchCheck(extra: readonly string[]): ToolCheck {
  return (tool, where) => {
    onlyKeys(tool, where, [
      ...COMMON,
      "max_uses",
      "allowed_domains",
      "blocked_domains",
      "citations",
      "max_content_tokens",
      ...extra,
    ]);
    checkName(tool, where, "web_fetch");
    checkCommon(tool, where);
    checkMaxUses(tool, where);
    checkDomains(tool, where);
    const citations = tool.citations;
    if (
      citations !== undefined &&
      citations !== null &&
      (!isObject(citations) || (citations.enabled !== undefined && typeof citations.enabled !== "boolean"))
    ) {
      fail(`${where}.citations: Input should be an object with a boolean enabled`);
    }
    const max = tool.max_content_tokens;
    if (max !== undefined && max !== null && (!Number.isInteger(max) || (max as number) < 1))
      fail(`${where}.max_content_tokens: Input should be greater than 0`);
  };
}

function toolSearchCheck(name: string): ToolCheck {
  return (tool, where) => {
    onlyKeys(tool, where, COMMON);
    checkName(tool, where, name);
    checkCommon(tool, where);
  };
}

/** The server tools' entries of the fake's `TOOL_CHECKS`, by `type`. */
export const SERVER_TOOL_CHECKS: Record<string, ToolCheck> = {
  web_search_20250305: webSearchCheck([]),
  web_search_20260209: webSearchCheck([]),
  web_search_20260318: webSearchCheck(["response_inclusion"]),
  web_fetch_20250910: webFetchCheck([]),
  web_fetch_20260209: webFetchCheck(["use_cache"]),
  web_fetch_20260309: webFetchCheck(["use_cache", "url_sources"]),
  web_fetch_20260318: webFetchCheck(["use_cache", "url_sources"]),
  tool_search_tool_bm25_20251119: toolSearchCheck("tool_search_tool_bm25"),
  tool_search_tool_bm25: toolSearchCheck("tool_search_tool_bm25"),
  tool_search_tool_regex_20251119: toolSearchCheck("tool_search_tool_regex"),
  tool_search_tool_regex: toolSearchCheck("tool_search_tool_regex"),
};

/**
 * The memory tool (`memory_20250818`): client-side, but its schema is the API's, so the request
 * names only its `type` and `name` (which must be `memory`); a `description` or `input_schema`
 * is refused like any field the API does not know. Source:
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
 */
function memoryCheck(tool: Record<string, unknown>, where: string): void {
  onlyKeys(tool, where, [...COMMON, "input_examples"]);
  checkName(tool, where, "memory");
  checkCommon(tool, where);
  if (tool.input_examples !== undefined && !Array.isArray(tool.input_examples))
    fail(`${where}.input_examples: Input should be a valid list`);
}

/** The API-defined client tools' entries of the fake's `TOOL_CHECKS`, by `type`. */
export const CLIENT_TOOL_CHECKS: Record<string, ToolCheck> = {
  memory_20250818: memoryCheck,
};

/** Whether a tool definition is a tool search tool. */
function isToolSearch(tool: Record<string, unknown>): boolean {
  return typeof tool.type === "string" && tool.type.startsWith("tool_search_tool_");
}

/** The tool's name as the model calls it. */
function nameOf(tool: Record<string, unknown>): string {
  return String(tool.name);
}

/**
 * The request-level rules of deferred tools (see the module comment).
 * @throws InvalidServerTool with the API's message.
 */
export function checkDeferral(tools: Record<string, unknown>[]): void {
  if (tools.length === 0) return;
  for (const tool of tools) {
    if (tool.defer_loading === true && tool.cache_control !== undefined && tool.cache_control !== null) {
      fail(
        `Tool '${nameOf(tool)}' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching.`,
      );
    }
  }
  if (tools.every((t) => t.defer_loading === true))
    fail("All tools have defer_loading set. At least one tool must be non-deferred.");
  const search = tools.find(isToolSearch);
  if (search?.defer_loading === true) fail(`The tool search tool '${nameOf(search)}' cannot have defer_loading set.`);
  if (!search && tools.some((t) => t.defer_loading === true))
    fail(
      "Tools with defer_loading require a tool search tool (tool_search_tool_regex or tool_search_tool_bm25) in tools.",
    );
}

/** The names of the request's tools with `defer_loading: true`. */
export function deferredNames(tools: Record<string, unknown>[]): Set<string> {
  return new Set(tools.filter((t) => t.defer_loading === true).map(nameOf));
}

/**
 * Strings the fake issued as `encrypted_content` (search results) and `encrypted_index`
 * (citations), across the requests one fake answers: a request may only send back these.
 */
export class IssuedSecrets {
  readonly #issued = new Set<string>();

  /**
   * A new opaque base64 string of a protobuf-like field of `bytes` bytes, as the API's look
   * (`Eqgf…` is a 4,008-byte field, the size of the docs' example result; `Eo8B…` 143 bytes, an index).
   */
  issue(bytes: number): string {
    const length: number[] = [];
    let n = bytes;
    do {
      length.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      n >>= 7;
    } while (n > 0);
    const value = Buffer.concat([Buffer.from([0x12, ...length]), randomBytes(bytes)]).toString("base64");
    this.#issued.add(value);
    return value;
  }

  /** True when `value` is a string this fake issued. */
  has(value: unknown): boolean {
    return typeof value === "string" && this.#issued.has(value);
  }
}

/** Bytes of one search result's `encrypted_content` (the docs' example starts `Eqgf`: 4,008 bytes). */
export const FAKE_ENCRYPTED_CONTENT_BYTES = 4008;
/** Bytes of one citation's `encrypted_index` (the docs' example starts `Eo8B`: 143 bytes). */
export const FAKE_ENCRYPTED_INDEX_BYTES = 143;

/** The error codes of a `web_search_tool_result_error` (SDK `WebSearchToolResultErrorCode`). */
export const WEB_SEARCH_ERRORS = [
  "invalid_tool_input",
  "unavailable",
  "max_uses_exceeded",
  "too_many_requests",
  "query_too_long",
  "request_too_large",
] as const;
/** The error codes of a `web_fetch_tool_result_error` (SDK `WebFetchToolResultErrorCode`). */
export const WEB_FETCH_ERRORS = [
  "invalid_tool_input",
  "url_too_long",
  "url_not_allowed",
  "url_not_in_prior_context",
  "url_not_accessible",
  "unsupported_content_type",
  "too_many_requests",
  "max_uses_exceeded",
  "unavailable",
  "content_too_large",
] as const;
const TOOL_SEARCH_ERRORS = [
  "invalid_tool_input",
  "unavailable",
  "too_many_requests",
  "execution_time_exceeded",
  "invalid_pattern",
  "pattern_too_long",
];

/** Server tool names a `server_tool_use` may carry (SDK `ServerToolUseBlock.name`). */
const SERVER_NAMES = [
  "web_search",
  "web_fetch",
  "code_execution",
  "bash_code_execution",
  "text_editor_code_execution",
  "tool_search_tool_regex",
  "tool_search_tool_bm25",
];

/** Which server tool a result block type answers. */
const RESULT_OF: Record<string, readonly string[]> = {
  web_search_tool_result: ["web_search"],
  web_fetch_tool_result: ["web_fetch"],
  tool_search_tool_result: ["tool_search_tool_regex", "tool_search_tool_bm25"],
};

/** The result block types of server tools. */
export const SERVER_RESULT_TYPES = Object.keys(RESULT_OF);

/**
 * The history checks of server blocks for one request, fed block by block in order (see the
 * module comment). Create one per request.
 */
export class ServerBlockChecks {
  readonly #tools: Set<string>;
  readonly #deferred: Set<string>;
  readonly #secrets: IssuedSecrets;
  /** `server_tool_use` ids seen so far, with their tool name; removed once answered. */
  readonly #open = new Map<string, string>();
  readonly #seen = new Set<string>();
  /** Tools loaded by a `tool_reference` so far. */
  readonly referenced = new Set<string>();

  constructor(tools: Record<string, unknown>[], secrets: IssuedSecrets) {
    this.#tools = new Set(tools.map(nameOf));
    this.#deferred = deferredNames(tools);
    this.#secrets = secrets;
  }

  /** A `server_tool_use` block. */
  serverToolUse(b: Record<string, unknown>, where: string, role: unknown): void {
    if (role !== "assistant") fail(`${where}: server_tool_use blocks are only allowed in assistant messages`);
    if (typeof b.id !== "string" || !/^srvtoolu_[A-Za-z0-9_-]+$/.test(b.id))
      fail(`${where}.id: String should match pattern '^srvtoolu_[a-zA-Z0-9_]+$'`);
    if (this.#seen.has(b.id)) fail(`${where}: \`server_tool_use\` ids must be unique`);
    if (typeof b.name !== "string" || !SERVER_NAMES.includes(b.name))
      fail(`${where}.name: Input should be ${SERVER_NAMES.map((n) => `'${n}'`).join(", ")}`);
    if (!isObject(b.input)) fail(`${where}.input: Input should be a valid dictionary`);
    if (this.#deferred.has(b.name) && !this.referenced.has(b.name))
      fail(
        `${where}: server_tool_use of '${b.name}', a tool with defer_loading set that no tool_reference before it loaded`,
      );
    this.#seen.add(b.id);
    this.#open.set(b.id, b.name);
  }

  /** A `web_search_tool_result`, `web_fetch_tool_result` or `tool_search_tool_result` block. */
  serverResult(b: Record<string, unknown>, where: string, role: unknown): void {
    const type = String(b.type);
    if (role !== "assistant") fail(`${where}: ${type} blocks are only allowed in assistant messages`);
    const id = b.tool_use_id;
    const name = typeof id === "string" ? this.#open.get(id) : undefined;
    if (typeof id !== "string" || !name || !RESULT_OF[type]!.includes(name)) {
      fail(
        `${where}: unexpected \`tool_use_id\` found in \`${type}\` blocks: ${String(id)}. Each \`` +
          `${type}\` block must have a corresponding \`server_tool_use\` block before it.`,
      );
    }
    this.#open.delete(id);
    const content = b.content;
    if (type === "web_search_tool_result") this.#webSearch(content, `${where}.content`);
    else if (type === "web_fetch_tool_result") this.#webFetch(content, `${where}.content`);
    else this.#toolSearch(content, `${where}.content`);
  }

  #webSearch(content: unknown, where: string): void {
    if (Array.isArray(content)) {
      content.forEach((r, k) => {
        if (!isObject(r) || r.type !== "web_search_result")
          fail(`${where}.${k}.type: Input should be 'web_search_result'`);
        if (typeof r.url !== "string" || !/^https?:\/\//.test(r.url)) fail(`${where}.${k}.url: Field required`);
        if (typeof r.title !== "string") fail(`${where}.${k}.title: Field required`);
        if (!this.#secrets.has(r.encrypted_content))
          fail(
            `${where}.${k}.encrypted_content: Invalid encrypted content; pass back the search results exactly as they were returned`,
          );
      });
      return;
    }
    if (!isObject(content) || content.type !== "web_search_tool_result_error")
      fail(`${where}: Input should be a list of web_search_result blocks or a web_search_tool_result_error`);
    if (!(WEB_SEARCH_ERRORS as readonly string[]).includes(String(content.error_code)))
      fail(`${where}.error_code: Input should be ${WEB_SEARCH_ERRORS.map((c) => `'${c}'`).join(", ")}`);
  }

  #webFetch(content: unknown, where: string): void {
    if (!isObject(content)) fail(`${where}: Input should be a web_fetch_result or a web_fetch_tool_result_error`);
    if (content.type === "web_fetch_tool_result_error") {
      if (!(WEB_FETCH_ERRORS as readonly string[]).includes(String(content.error_code)))
        fail(`${where}.error_code: Input should be ${WEB_FETCH_ERRORS.map((c) => `'${c}'`).join(", ")}`);
      return;
    }
    if (content.type !== "web_fetch_result")
      fail(`${where}.type: Input should be 'web_fetch_result' or 'web_fetch_tool_result_error'`);
    if (typeof content.url !== "string" || !/^https?:\/\//.test(content.url)) fail(`${where}.url: Field required`);
    const doc = content.content;
    if (!isObject(doc) || doc.type !== "document" || !isObject(doc.source))
      fail(`${where}.content: Input should be a document block`);
  }

  #toolSearch(content: unknown, where: string): void {
    if (!isObject(content))
      fail(`${where}: Input should be a tool_search_tool_search_result or a tool_search_tool_result_error`);
    if (content.type === "tool_search_tool_result_error") {
      if (!TOOL_SEARCH_ERRORS.includes(String(content.error_code)))
        fail(`${where}.error_code: Input should be ${TOOL_SEARCH_ERRORS.map((c) => `'${c}'`).join(", ")}`);
      return;
    }
    if (content.type !== "tool_search_tool_search_result" || !Array.isArray(content.tool_references))
      fail(`${where}.tool_references: Field required`);
    for (const ref of content.tool_references) {
      if (!isObject(ref) || ref.type !== "tool_reference" || typeof ref.tool_name !== "string")
        fail(`${where}.tool_references: Input should be a list of tool_reference blocks`);
      if (!this.#tools.has(ref.tool_name))
        fail(`Tool reference '${ref.tool_name}' has no corresponding tool definition`);
      this.referenced.add(ref.tool_name);
    }
  }

  /** The `citations` of a text block: web search citations must carry an index this fake issued. */
  citations(b: Record<string, unknown>, where: string): void {
    const citations = b.citations;
    if (citations === undefined || citations === null) return;
    if (!Array.isArray(citations)) fail(`${where}.citations: Input should be a valid list`);
    citations.forEach((c, k) => {
      if (!isObject(c) || typeof c.type !== "string") fail(`${where}.citations.${k}: Input should be a citation`);
      if (c.type !== "web_search_result_location") return;
      if (typeof c.url !== "string" || typeof c.cited_text !== "string")
        fail(`${where}.citations.${k}: url and cited_text are required`);
      if (!this.#secrets.has(c.encrypted_index))
        fail(
          `${where}.citations.${k}.encrypted_index: Invalid encrypted index; pass back citations exactly as they were returned`,
        );
    });
  }

  /** A `tool_use` block: a deferred tool needs a `tool_reference` before it. */
  toolUse(b: Record<string, unknown>, where: string): void {
    const name = String(b.name);
    if (this.#deferred.has(name) && !this.referenced.has(name)) {
      fail(`${where}: tool_use of '${name}', a tool with defer_loading set that no tool_reference before it loaded`);
    }
  }
}

/** A search result of a scripted reply (the fake adds `encrypted_content`). */
export interface FakeSearchResult {
  url: string;
  title: string;
  /** e.g. `April 30, 2025`; default null. */
  page_age?: string | null;
}

/** A citation of a scripted text block (the fake makes it a `web_search_result_location` with an `encrypted_index`). */
export interface FakeCitation {
  url: string;
  title: string | null;
  /** Up to 150 characters of the cited page. */
  cited_text: string;
}

/** The server blocks a scripted reply may hold (the API's response shapes, minus what the fake fills in). */
export type FakeServerBlock =
  | { type: "server_tool_use"; id?: string; name: "web_search" | "web_fetch"; input: Record<string, unknown> }
  | {
      type: "web_search_tool_result";
      tool_use_id?: string;
      results?: FakeSearchResult[];
      error?: (typeof WEB_SEARCH_ERRORS)[number];
    }
  | {
      type: "web_fetch_tool_result";
      tool_use_id?: string;
      url?: string;
      title?: string;
      text?: string;
      error?: (typeof WEB_FETCH_ERRORS)[number];
    };

/** What {@link serverContent} makes of a reply. */
export interface ServerContent {
  /** The response's content blocks. */
  content: Record<string, unknown>[];
  /** `usage.server_tool_use`, when a search or fetch ran. */
  serverToolUse?: { web_search_requests: number; web_fetch_requests: number };
  /** Why the reply cannot be sent (a scripted server tool the request does not offer). */
  problem?: string;
}

function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("base64url").replace(/-/g, "_")}`;
}

/**
 * The response content of a scripted reply's blocks for `tools` (the request's) and the tools the
 * conversation has loaded by reference (`referenced`), see the module comment.
 */
export function serverContent(
  blocks: readonly Record<string, unknown>[],
  tools: Record<string, unknown>[],
  referenced: ReadonlySet<string>,
  secrets: IssuedSecrets,
): ServerContent {
  const byName = new Map(tools.map((t) => [nameOf(t), t]));
  const deferred = deferredNames(tools);
  const search = tools.find(isToolSearch);
  const loaded = new Set(referenced);
  const content: Record<string, unknown>[] = [];
  const uses: Record<string, number> = {};
  const billed = { web_search_requests: 0, web_fetch_requests: 0 };
  let lastServerUse: { id: string; name: string; over: boolean } | undefined;
  for (const block of blocks) {
    const name = String(block.name);
    // A deferred tool (of the bot, or a server tool such as web fetch) is found first, as the model does.
    if (
      (block.type === "tool_use" || block.type === "server_tool_use") &&
      deferred.has(name) &&
      !loaded.has(name) &&
      search
    ) {
      const id = randomId("srvtoolu_");
      const query = search.name === "tool_search_tool_regex" ? name : name.replace(/_/g, " ");
      content.push({
        type: "server_tool_use",
        id,
        name: search.name,
        input: { query },
        caller: { type: "direct" },
      });
      content.push({
        type: "tool_search_tool_result",
        tool_use_id: id,
        content: {
          type: "tool_search_tool_search_result",
          tool_references: [{ type: "tool_reference", tool_name: name }],
        },
      });
      loaded.add(name);
    }
    switch (block.type) {
      case "tool_use": {
        content.push({ type: "tool_use", id: block.id ?? randomId("toolu_"), name, input: block.input });
        break;
      }
      case "server_tool_use": {
        const tool = byName.get(name);
        if (!tool || !String(tool.type).startsWith(`${name}_`))
          return {
            content: [],
            problem: `the scripted reply calls the server tool ${name}, which the request does not offer`,
          };
        uses[name] = (uses[name] ?? 0) + 1;
        const max = typeof tool.max_uses === "number" ? tool.max_uses : Infinity;
        const id = typeof block.id === "string" ? block.id : randomId("srvtoolu_");
        lastServerUse = { id, name, over: uses[name]! > max };
        content.push({ type: "server_tool_use", id, name, input: block.input ?? {}, caller: { type: "direct" } });
        break;
      }
      case "web_search_tool_result": {
        const id = typeof block.tool_use_id === "string" ? block.tool_use_id : lastServerUse?.id;
        const error = lastServerUse?.over ? "max_uses_exceeded" : (block.error as string | undefined);
        const results = (block.results as FakeSearchResult[] | undefined) ?? [];
        if (!error) billed.web_search_requests += 1;
        content.push({
          type: "web_search_tool_result",
          tool_use_id: id,
          caller: { type: "direct" },
          content: error
            ? { type: "web_search_tool_result_error", error_code: error }
            : results.map((r) => ({
                type: "web_search_result",
                url: r.url,
                title: r.title,
                encrypted_content: secrets.issue(FAKE_ENCRYPTED_CONTENT_BYTES),
                page_age: r.page_age ?? null,
              })),
        });
        break;
      }
      case "web_fetch_tool_result": {
        const id = typeof block.tool_use_id === "string" ? block.tool_use_id : lastServerUse?.id;
        const error = lastServerUse?.over ? "max_uses_exceeded" : (block.error as string | undefined);
        if (!error) billed.web_fetch_requests += 1;
        const url = String(block.url ?? "");
        content.push({
          type: "web_fetch_tool_result",
          tool_use_id: id,
          caller: { type: "direct" },
          content: error
            ? { type: "web_fetch_tool_result_error", error_code: error }
            : {
                type: "web_fetch_result",
                url,
                retrieved_at: new Date().toISOString(),
                content: {
                  type: "document",
                  source: { type: "text", media_type: "text/plain", data: String(block.text ?? "") },
                  title: block.title ?? null,
                  citations: { enabled: true },
                },
              },
        });
        break;
      }
      case "text": {
        const citations = block.citations as FakeCitation[] | undefined;
        content.push({
          type: "text",
          text: block.text,
          citations: citations?.length
            ? citations.map((c) => ({
                type: "web_search_result_location",
                url: c.url,
                title: c.title,
                cited_text: c.cited_text,
                encrypted_index: secrets.issue(FAKE_ENCRYPTED_INDEX_BYTES),
              }))
            : null,
        });
        break;
      }
      default:
        content.push({ ...block });
    }
  }
  const used = billed.web_search_requests + billed.web_fetch_requests > 0 || Object.keys(uses).length > 0;
  return { content, ...(used ? { serverToolUse: billed } : {}) };
}
