/**
 * A strict local fake of the Anthropic Messages API (`POST /v1/messages`), for the real
 * `@anthropic-ai/sdk` client pointed at it with `baseURL`.
 *
 * Tests script the replies in order with {@link FakeAnthropic.enqueue}; every request body is
 * recorded in {@link FakeAnthropic.requests}. Like the real API, a request that breaks the
 * Messages API rules is answered `400 invalid_request_error` (and recorded in
 * {@link FakeAnthropic.rejections}), so a test fails when our code sends an invalid history.
 *
 * Rules enforced (source: https://docs.anthropic.com/en/api/messages and the tool-use guide,
 * https://docs.anthropic.com/en/docs/build-with-claude/tool-use):
 * - `model` is a string, `max_tokens` a positive integer, `messages` a non-empty list;
 * - the first message is a `user` turn; roles are `user` or `assistant`;
 * - every message has non-empty content (an empty final assistant message is allowed);
 * - no text block is empty or whitespace-only (messages, `system`, `tool_result` content);
 * - every `tool_use` is answered by a `tool_result` in the very next message, which is a user
 *   message whose `tool_result` blocks come first; every `tool_result` answers a `tool_use` of
 *   the message right before it; `tool_use` ids are unique;
 * - tools: a known `type` ({@link TOOL_CHECKS}: custom tools, whose names match
 *   `^[a-zA-Z0-9_-]{1,64}$` and are unique, `input_schema.type` is `"object"`, without a top-level
 *   `anyOf` / `oneOf` / `allOf`, its property keys matching `^[a-zA-Z0-9_.-]{1,64}$`; and the
 *   server tools web search, web fetch and tool search, and the memory tool (`type` and `name`
 *   only), checked field by field); deferred tools
 *   (`defer_loading`) only with a tool search tool, never all of them, never with `cache_control`;
 * - server blocks in the history (`server_tool_use`, `web_search_tool_result`,
 *   `web_fetch_tool_result`, `tool_search_tool_result`, cited text) as the API returned them:
 *   results answer a `server_tool_use` before them, encrypted fields unchanged, every
 *   `tool_reference` names a tool of the request, a deferred tool's `tool_use` comes after a
 *   `tool_reference` to it (`anthropic-server-tools.ts`);
 * - at most 4 blocks carry `cache_control` (prompt-caching docs);
 * - `image` and `document` blocks only in user turns, checked as the API does (media types, base64,
 *   5 MB per image, pixel sizes, PDF bytes and pages; `anthropic-media.ts`); bodies over 32 MB get 413;
 * - no string holds a lone UTF-16 surrogate (JavaScript's `JSON.stringify` writes one as an escape,
 *   `"\ud800"`; the API's strict JSON parser refuses it: "The request body is not valid JSON: no
 *   low surrogate in string", e.g. https://github.com/anthropics/claude-code/issues/1939).
 *
 * Error replies use the real body shape `{"type":"error","error":{"type","message"},"request_id"}`.
 *
 * A request with `"stream": true` (the SDK's `messages.stream`) is answered with server-sent
 * events exactly as the Messages API streams them
 * (https://docs.anthropic.com/en/docs/build-with-claude/streaming): `message_start` (usage with
 * the input tokens), per block `content_block_start`, `content_block_delta` (`text_delta` for
 * text, `input_json_delta` with `partial_json` pieces for a `tool_use`), `content_block_stop`,
 * then `message_delta` (stop reason and cumulative usage) and `message_stop`, with a `ping` after
 * the first block starts. {@link FakeMessageReply.stream} paces the deltas and can break the
 * stream with an `error` event (HTTP status stays 200, as it does on the real API) or stall it
 * (nothing more is sent, the connection stays open: `stallAfterChars`). A
 * `server_tool_use` streams like a `tool_use` (its input as `input_json_delta` pieces); a server
 * tool's result block comes whole in its `content_block_start` (after `serverToolMs`); a cited
 * text block gets one `citations_delta` per citation before its text.
 *
 * Server tools run as on the real API (`anthropic-server-tools.ts`): scripted search results
 * get encrypted contents the fake checks when they come back, searches beyond `max_uses` fail
 * with `max_uses_exceeded`, and a scripted call of a deferred tool comes back after the tool
 * search the model would have made to find it.
 *
 * @example
 * ```ts
 * const fake = await startFakeAnthropic();
 * const client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
 * fake.enqueue(toolUse("get_time", { timezone: "Asia/Taipei" }), text("現在是下午三點。"));
 * // ... run the code under test ...
 * expect(fake.requests).toHaveLength(2);
 * await fake.close();
 * ```
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FAKE_REQUEST_MAX_BYTES, InvalidMedia, MediaChecks } from "./anthropic-media.js";
import {
  checkDeferral,
  deferredNames,
  InvalidServerTool,
  IssuedSecrets,
  SERVER_RESULT_TYPES,
  CLIENT_TOOL_CHECKS,
  SERVER_TOOL_CHECKS,
  ServerBlockChecks,
  serverContent,
  type FakeCitation,
  type FakeSearchResult,
  type FakeServerBlock,
  type ToolCheck,
} from "./anthropic-server-tools.js";

export type { FakeCitation, FakeSearchResult, FakeServerBlock } from "./anthropic-server-tools.js";

/** The Messages API's rule for tool names. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * A content block of a scripted reply (the API's response shapes; ids, encrypted fields and the
 * citation shape are filled in by the fake, see `anthropic-server-tools.ts`).
 */
export type FakeBlock =
  | { type: "text"; text: string; citations?: FakeCitation[] }
  | { type: "tool_use"; id?: string; name: string; input: unknown }
  | FakeServerBlock;

/** A scripted successful reply: a `message` object. `usage` fields given here override the simulated ones. */
export interface FakeMessageReply {
  content: FakeBlock[];
  stop_reason: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "pause_turn" | "refusal" | string;
  usage?: Partial<FakeUsage>;
  /**
   * How a streamed answer (request with `stream: true`) is paced and whether it breaks; without
   * streaming the whole reply is sent after `firstTokenMs + totalMs` (no break).
   */
  stream?: FakeStreamPace;
}

/** Pacing of a streamed reply (see {@link FakeMessageReply.stream}). */
export interface FakeStreamPace {
  /** ms from the request to the first `content_block_delta`; default 0. */
  firstTokenMs?: number;
  /** ms over which the text deltas after the first are spread evenly; default 0 (all at once). */
  totalMs?: number;
  /** ms the API takes to run each server tool (between a `server_tool_use` and its result); default 0. */
  serverToolMs?: number;
  /** Characters (code points) per `text_delta`; default 20. */
  chunkChars?: number;
  /**
   * Breaks the stream after this many characters of text were streamed: an `event: error` with
   * `errorType` (default `overloaded_error`) is sent and the response ends, as the API does
   * when it fails mid-stream.
   */
  breakAfterChars?: number;
  /** The `error.type` of the mid-stream `error` event; default `overloaded_error`. */
  errorType?: string;
  /**
   * Holds the stream after this many characters of text were streamed (0: right after
   * `message_start`) until {@link FakeStreamPace.hold} resolves, then goes on; a client that closes
   * the connection meanwhile (a stopped answer) ends it there, recorded in `FakeAnthropic.cutOff`.
   * Injected pacing: a test decides when the model "writes on", no clock involved.
   */
  holdAfterChars?: number;
  /** What a held stream waits for (see {@link FakeStreamPace.holdAfterChars}); default: forever (until the client closes). */
  hold?: Promise<void>;
  /**
   * Stalls the stream after this many characters of text were streamed (0: right after
   * `message_start`): nothing more is sent, not even a `ping`, and the connection stays open until
   * the client gives up or the fake is closed — a response that stops arriving mid-answer.
   */
  stallAfterChars?: number;
}

/** A scripted error reply (HTTP status with the real error body). */
export interface FakeErrorReply {
  status: number;
  /** e.g. `overloaded_error`, `api_error`, `rate_limit_error`. */
  errorType: string;
  message: string;
  headers?: Record<string, string>;
}

/**
 * A model API that accepts the request and never answers: the connection stays open (no status,
 * no body) until the client gives up or the fake is closed.
 */
export interface FakeHangReply {
  hang: true;
}

/** One scripted reply, or a function of the (already validated) request that returns one. */
export type FakeReply =
  | FakeMessageReply
  | FakeErrorReply
  | FakeHangReply
  | ((request: FakeRequest) => FakeMessageReply | FakeErrorReply | FakeHangReply);

/** A reply that never comes (see {@link FakeHangReply}). */
export function hang(): FakeHangReply {
  return { hang: true };
}

/** The four token counts of `usage`, and the server tool calls billed (present when a search or fetch ran). */
export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
}

/** A request body as received (parsed JSON), loosely typed for assertions. */
export interface FakeRequest {
  model: string;
  max_tokens: number;
  system?: string | { type: string; text: string; cache_control?: unknown }[];
  /** Custom tools (`input_schema`) and server tools (`type`, their own fields), `defer_loading` on deferred ones. */
  tools?: {
    name: string;
    type?: string;
    description?: string;
    input_schema?: Record<string, unknown>;
    cache_control?: unknown;
    defer_loading?: boolean;
    [key: string]: unknown;
  }[];
  messages: { role: string; content: string | Record<string, unknown>[] }[];
  [key: string]: unknown;
}

/** A request the fake refused with 400, and why. */
export interface FakeRejection {
  message: string;
  body: unknown;
}

/** A running fake. */
export interface FakeAnthropic {
  /** Base URL for the SDK's `baseURL` (`http://127.0.0.1:port`). */
  url: string;
  /** Every request body that reached `/v1/messages` and passed validation, in order. */
  requests: FakeRequest[];
  /** Requests refused with 400 `invalid_request_error`, in order. */
  rejections: FakeRejection[];
  /**
   * Every successful reply's request, the content blocks it answered with (as sent: ids,
   * encrypted fields and citations filled in) and the `usage` it reported, in order; a streamed
   * reply also records when its first token (`content_block_delta`) was written, ms since the Unix epoch.
   */
  answered: { request: FakeRequest; content: Record<string, unknown>[]; usage: FakeUsage; firstTokenAt?: number }[];
  /**
   * Streamed replies whose client closed the connection before the last event (a stopped answer):
   * the text streamed by then, and when the fake saw the connection close (ms since the Unix epoch).
   */
  cutOff: { request: FakeRequest; streamedChars: number; at: number }[];
  /** Queues replies, answered in order, one per valid request. */
  enqueue(...replies: FakeReply[]): void;
  /** Replies still queued. */
  pending(): number;
  /** Requests held open by a {@link FakeHangReply} whose client has not given up yet. */
  hanging(): number;
  /** Empties the queue, `requests` and `rejections` (the simulated prompt cache is kept). */
  reset(): void;
  /** Stops the server. */
  close(): Promise<void>;
}

/** A text reply (`end_turn` unless `stopReason` says otherwise). */
export function text(value: string, stopReason: FakeMessageReply["stop_reason"] = "end_turn"): FakeMessageReply {
  return { content: [{ type: "text", text: value }], stop_reason: stopReason };
}

/** A reply with one `tool_use` (optionally after a text block), `stop_reason: "tool_use"`. */
export function toolUse(name: string, input: unknown, options: { id?: string; text?: string } = {}): FakeMessageReply {
  return toolUses([{ name, input, id: options.id }], options.text);
}

/** A reply with several parallel `tool_use` blocks in one turn, `stop_reason: "tool_use"`. */
export function toolUses(calls: { name: string; input: unknown; id?: string }[], leadText?: string): FakeMessageReply {
  const content: FakeBlock[] = leadText ? [{ type: "text", text: leadText }] : [];
  for (const c of calls) content.push({ type: "tool_use", name: c.name, input: c.input, id: c.id });
  return { content, stop_reason: "tool_use" };
}

/**
 * A reply that searches the web once and answers with text: `server_tool_use` (web_search with
 * `{ query }`), its `web_search_tool_result` (`results`, or `{ error }` for an error result), then
 * the answer's blocks (a string is plain text; `{ text, citations }` a cited block).
 */
export function searchReply(
  query: string,
  results:
    FakeSearchResult[] | { error: NonNullable<Extract<FakeServerBlock, { type: "web_search_tool_result" }>["error"]> },
  answer: (string | { text: string; citations: FakeCitation[] })[],
  options: { lead?: string; stopReason?: FakeMessageReply["stop_reason"] } = {},
): FakeMessageReply {
  const content: FakeBlock[] = options.lead ? [{ type: "text", text: options.lead }] : [];
  content.push({ type: "server_tool_use", name: "web_search", input: { query } });
  content.push(
    Array.isArray(results)
      ? { type: "web_search_tool_result", results }
      : { type: "web_search_tool_result", error: results.error },
  );
  for (const part of answer)
    content.push(
      typeof part === "string"
        ? { type: "text", text: part }
        : { type: "text", text: part.text, citations: part.citations },
    );
  return { content, stop_reason: options.stopReason ?? "end_turn" };
}

/** `529 overloaded_error`, as the API answers when it is overloaded. */
export function overloaded(): FakeErrorReply {
  return { status: 529, errorType: "overloaded_error", message: "Overloaded" };
}

/** `500 api_error`. */
export function serverError(): FakeErrorReply {
  return { status: 500, errorType: "api_error", message: "Internal server error" };
}

/** `429 rate_limit_error` with `retry-after` in seconds. */
export function rateLimited(retryAfterSeconds = 0): FakeErrorReply {
  return {
    status: 429,
    errorType: "rate_limit_error",
    message: "Number of request tokens has exceeded your per-minute rate limit",
    headers: { "retry-after": String(retryAfterSeconds) },
  };
}

class InvalidRequest extends Error {}

function fail(message: string): never {
  throw new InvalidRequest(message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkText(block: Record<string, unknown>, where: string): void {
  if (typeof block.text !== "string") fail(`${where}.text: Field required`);
  if (block.text.trim() === "") fail(`${where}: text content blocks must contain non-whitespace text`);
}

/** The Messages API's rule for the property keys of a custom tool's `input_schema`. */
const PROPERTY_KEY = /^[a-zA-Z0-9_.-]{1,64}$/;

/**
 * A custom tool (`type` absent or `"custom"`), checked as the API checks it: the name matches
 * `^[a-zA-Z0-9_-]{1,64}$`; `input_schema` is an object of `type: "object"` with no `anyOf`,
 * `oneOf` or `allOf` at its top level, and its top-level property keys match
 * `^[a-zA-Z0-9_.-]{1,64}$`. The API answers these with the messages used here (as reported from
 * the real API: https://github.com/anthropics/claude-code/issues/5973 for the combinators,
 * https://github.com/beautyfree/appstore-connect-mcp/issues/2 for the keys). Keys are checked in
 * `input_schema.properties` only, not in nested objects: the error names that path, and fixes
 * made against the real API rename the top-level keys alone (https://github.com/decocms/studio/pull/6874).
 * `defer_loading` is a boolean.
 */
function checkCustomTool(t: Record<string, unknown>, where: string): void {
  if (typeof t.name !== "string" || !TOOL_NAME.test(t.name))
    fail(`${where}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
  const schema = t.input_schema;
  if (!isObject(schema)) fail(`${where}.input_schema: Field required`);
  if (schema.type !== "object") fail(`${where}.input_schema.type: Input should be 'object'`);
  if (["oneOf", "allOf", "anyOf"].some((k) => k in schema))
    fail(`${where}.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level`);
  if (schema.properties !== undefined) {
    if (!isObject(schema.properties)) fail(`${where}.input_schema.properties: Input should be a valid dictionary`);
    if (Object.keys(schema.properties).some((k) => !PROPERTY_KEY.test(k)))
      fail(`${where}.input_schema.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'`);
  }
  if (t.description !== undefined && typeof t.description !== "string")
    fail(`${where}.description: Input should be a valid string`);
  if (t.defer_loading !== undefined && typeof t.defer_loading !== "boolean")
    fail(`${where}.defer_loading: Input should be a valid boolean`);
}

/**
 * The checks of each kind of tool in `tools`, by its `type` (`custom` when absent): custom tools
 * and the server tools (`anthropic-server-tools.ts`). A tool of a type not listed here is refused,
 * as the API refuses an unknown tag.
 */
const TOOL_CHECKS: Record<string, ToolCheck> = {
  custom: checkCustomTool,
  ...SERVER_TOOL_CHECKS,
  ...CLIENT_TOOL_CHECKS,
};

/** Tool types a model does not support, and tool names the organization has not enabled (see {@link FakeAnthropicOptions.refuseTools}). */
interface Refusals {
  model?: string[];
  organization?: string[];
}

/**
 * Validates a request body like the real API.
 * @returns the tools loaded by a `tool_reference` in the messages (deferred tools the model has found).
 * @throws InvalidRequest (or InvalidServerTool) with the API's style of message.
 */
function validate(
  body: unknown,
  media = new MediaChecks(),
  secrets = new IssuedSecrets(),
  refusals: Refusals = {},
): Set<string> {
  if (!isObject(body)) fail("request body must be a JSON object");
  if (typeof body.model !== "string" || body.model === "") fail("model: Field required");
  if (body.max_tokens === undefined) fail("max_tokens: Field required");
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1)
    fail("max_tokens: must be a positive integer");
  if (body.stream !== undefined && typeof body.stream !== "boolean") fail("stream: Input should be a valid boolean");
  let breakpoints = 0;
  const countCache = (b: Record<string, unknown>) => {
    if (b.cache_control !== undefined && b.cache_control !== null) {
      if (!isObject(b.cache_control) || b.cache_control.type !== "ephemeral")
        fail("cache_control.type: Input should be 'ephemeral'");
      breakpoints += 1;
    }
  };

  if (body.system !== undefined) {
    if (typeof body.system === "string") {
      if (body.system.trim() === "") fail("system: text content blocks must contain non-whitespace text");
    } else if (Array.isArray(body.system)) {
      body.system.forEach((b, i) => {
        if (!isObject(b) || b.type !== "text") fail(`system.${i}: Input should be a text block`);
        checkText(b, `system.${i}`);
        countCache(b);
      });
    } else fail("system: Input should be a valid string or list");
  }

  const tools: Record<string, unknown>[] = [];
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) fail("tools: Input should be a valid list");
    const names = new Set<string>();
    body.tools.forEach((t, i) => {
      if (!isObject(t)) fail(`tools.${i}: Input should be an object`);
      const type = t.type === undefined || t.type === null ? "custom" : t.type;
      const check = typeof type === "string" ? TOOL_CHECKS[type] : undefined;
      if (!check)
        fail(
          `tools.${i}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${Object.keys(
            TOOL_CHECKS,
          )
            .map((k) => `'${k}'`)
            .join(", ")}`,
        );
      check(t, `tools.${i}.${String(type)}`);
      if (typeof type === "string" && type !== "custom" && refusals.model?.some((r) => type.startsWith(r)))
        fail(`'${String(body.model)}' does not support tool types: ${type}.`);
      if (typeof t.name === "string" && refusals.organization?.includes(t.name))
        fail(
          `The ${t.name} tool is not enabled for this organization. An organization admin can enable it in the Claude Console.`,
        );
      if (names.has(String(t.name))) fail(`tools: Tool names must be unique.`);
      names.add(String(t.name));
      tools.push(t);
      countCache(t);
    });
    checkDeferral(tools);
  }
  const server = new ServerBlockChecks(tools, secrets);

  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) fail("messages: at least one message is required");
  const first = messages[0] as Record<string, unknown>;
  if (!isObject(first) || first.role !== "user") fail('messages: first message must use the "user" role');

  const seenIds = new Set<string>();
  let previousToolUses: string[] = [];
  messages.forEach((m, i) => {
    if (!isObject(m)) fail(`messages.${i}: Input should be an object`);
    if (m.role !== "user" && m.role !== "assistant") fail(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const isLast = i === messages.length - 1;
    let blocks: Record<string, unknown>[];
    if (typeof m.content === "string") {
      if (m.content.trim() === "" && !(isLast && m.role === "assistant" && m.content === "")) {
        fail(`messages.${i}: text content blocks must contain non-whitespace text`);
      }
      blocks = m.content === "" ? [] : [{ type: "text", text: m.content }];
    } else if (Array.isArray(m.content)) {
      blocks = m.content as Record<string, unknown>[];
      if (blocks.length === 0 && !(isLast && m.role === "assistant")) {
        fail(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
      }
    } else fail(`messages.${i}.content: Input should be a valid string or list`);

    const answered = new Set<string>();
    let sawOther = false;
    const toolUses: string[] = [];
    blocks.forEach((b, j) => {
      const where = `messages.${i}.content.${j}`;
      if (!isObject(b) || typeof b.type !== "string") fail(`${where}: Input should be a content block`);
      countCache(b);
      switch (b.type) {
        case "text":
          checkText(b, where);
          server.citations(b, where);
          sawOther = true;
          break;
        case "server_tool_use":
          server.serverToolUse(b, where, m.role);
          sawOther = true;
          break;
        case "web_search_tool_result":
        case "web_fetch_tool_result":
        case "tool_search_tool_result":
          server.serverResult(b, where, m.role);
          sawOther = true;
          break;
        case "tool_use":
          if (m.role !== "assistant") fail(`${where}: tool_use blocks are only allowed in assistant messages`);
          if (typeof b.id !== "string" || b.id === "") fail(`${where}.id: Field required`);
          if (seenIds.has(b.id)) fail(`${where}: \`tool_use\` ids must be unique`);
          if (typeof b.name !== "string" || !TOOL_NAME.test(b.name))
            fail(`${where}.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
          if (!isObject(b.input)) fail(`${where}.input: Input should be a valid dictionary`);
          server.toolUse(b, where);
          seenIds.add(b.id);
          toolUses.push(b.id);
          sawOther = true;
          break;
        case "tool_result": {
          if (m.role !== "user") fail(`${where}: tool_result blocks are only allowed in user messages`);
          if (sawOther)
            fail(
              `messages.${i}: \`tool_result\` blocks must come first in the content of a user message, before any other content`,
            );
          const id = b.tool_use_id;
          if (typeof id !== "string" || !previousToolUses.includes(id)) {
            fail(
              `${where}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(id)}. Each ` +
                `\`tool_result\` block must have a corresponding \`tool_use\` block in the previous ` +
                `message.`,
            );
          }
          if (answered.has(id)) fail(`${where}: duplicate \`tool_result\` for tool_use_id ${id}`);
          answered.add(id);
          if (Array.isArray(b.content)) {
            b.content.forEach((c, k) => {
              if (isObject(c) && c.type === "text") checkText(c, `${where}.content.${k}`);
              else if (isObject(c) && c.type === "image") {
                // tool_result images (MCP image content): base64 of one of the four media types
                const src = c.source;
                if (!isObject(src) || src.type !== "base64")
                  fail(
                    `${where}.content.${k}.source: Input tag '${String(isObject(src) ? src.type : src)}' found ` +
                      `using 'type' does not match any of the expected tags: 'base64', 'url'`,
                  );
                if (!["image/jpeg", "image/png", "image/gif", "image/webp"].includes(String(src.media_type)))
                  fail(
                    `${where}.content.${k}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`,
                  );
                if (typeof src.data !== "string" || src.data === "")
                  fail(`${where}.content.${k}.source.base64.data: Field required`);
              } else
                fail(
                  `${where}.content.${k}: Input tag '${String(isObject(c) ? c.type : c)}' found using 'type' ` +
                    `does not match any of the expected tags: 'text', 'image', 'search_result', 'document'`,
                );
            });
          } else if (b.content !== undefined && typeof b.content !== "string") {
            fail(`${where}.content: Input should be a valid string or list`);
          }
          break;
        }
        case "image":
        case "document":
          if (m.role !== "user") fail(`${where}: ${b.type} blocks are only allowed in user messages`);
          media.block(b, where);
          sawOther = true;
          break;
        default:
          sawOther = true;
      }
    });
    const missing = previousToolUses.filter((id) => !answered.has(id));
    if (missing.length > 0) {
      fail(
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately ` +
          `after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding ` +
          `\`tool_result\` block in the next message.`,
      );
    }
    previousToolUses = toolUses;
  });
  if (previousToolUses.length > 0) {
    fail(
      `messages.${messages.length - 1}: \`tool_use\` ids were found without \`tool_result\` ` +
        `blocks immediately after: ${previousToolUses.join(", ")}. Each \`tool_use\` block must ` +
        `have a corresponding \`tool_result\` block in the next message.`,
    );
  }
  if (breakpoints > 4) fail(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  return server.referenced;
}

function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("base64url")}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Writes `reply` as the Messages API's server-sent events (see the module comment). Text is cut
 * into deltas of `chunkChars` code points (never inside a surrogate pair); a `tool_use` input is
 * sent as its JSON in three `input_json_delta` pieces, as the API sends partial JSON.
 */
async function streamReply(
  res: ServerResponse,
  request: FakeRequest,
  reply: FakeMessageReply,
  content: Record<string, unknown>[],
  usage: FakeUsage,
  onFirstToken: (at: number) => void,
  onCutOff: (streamedChars: number, at: number) => void = () => {},
): Promise<void> {
  const pace = reply.stream ?? {};
  let ended = false;
  let streamedSoFar = 0;
  res.on("close", () => {
    if (!ended && !res.writableEnded) onCutOff(streamedSoFar, Date.now());
    ended = true;
  });
  const chunkChars = Math.max(1, pace.chunkChars ?? 20);
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "request-id": randomId("req_"),
  });
  const send = (event: string, data: unknown) => {
    if (event === "content_block_delta") onFirstToken(Date.now());
    if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const textDeltas = content
    .filter((b) => b.type === "text")
    .reduce((n, b) => n + Math.ceil([...String(b.text)].length / chunkChars), 0);
  const gap = textDeltas > 1 ? (pace.totalMs ?? 0) / (textDeltas - 1) : 0;
  send("message_start", {
    type: "message_start",
    message: {
      id: randomId("msg_"),
      type: "message",
      role: "assistant",
      model: request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: 1,
        service_tier: "standard",
      },
    },
  });
  let streamed = 0;
  let first = true;
  let held = false;
  const closed = new Promise<void>((resolve) =>
    res.destroyed || res.writableEnded ? resolve() : res.on("close", () => resolve()),
  );
  /** Waits for the test's `hold` once the held point is passed; false when the client went away meanwhile. */
  const holdNow = async (): Promise<boolean> => {
    streamedSoFar = streamed;
    if (held || pace.holdAfterChars === undefined || streamed < pace.holdAfterChars) return !res.destroyed;
    held = true;
    await Promise.race([pace.hold ?? new Promise<void>(() => {}), closed]);
    return !res.destroyed;
  };
  const breakNow = () => pace.breakAfterChars !== undefined && streamed >= pace.breakAfterChars;
  const stallNow = () => pace.stallAfterChars !== undefined && streamed >= pace.stallAfterChars;
  const stall = () =>
    new Promise<void>((resolve) => (res.destroyed || res.writableEnded ? resolve() : res.on("close", () => resolve())));
  if (stallNow()) return stall();
  if (!(await holdNow())) return;
  for (const [index, block] of content.entries()) {
    if (block.type === "text") {
      send("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      if (index === 0) send("ping", { type: "ping" });
      // A cited block's citations arrive as citations_delta events, one citation each.
      for (const citation of Array.isArray(block.citations) ? block.citations : []) {
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "citations_delta", citation },
        });
      }
      const chars = [...String(block.text)];
      for (let i = 0; i < chars.length; i += chunkChars) {
        await sleep(first ? (pace.firstTokenMs ?? 0) : gap);
        first = false;
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: chars.slice(i, i + chunkChars).join("") },
        });
        streamed += Math.min(chunkChars, chars.length - i);
        if (stallNow()) return stall();
        if (!(await holdNow())) return;
        if (breakNow()) break;
      }
    } else if (block.type === "tool_use" || block.type === "server_tool_use") {
      const { input, ...start } = block;
      send("content_block_start", { type: "content_block_start", index, content_block: { ...start, input: {} } });
      if (first) await sleep(pace.firstTokenMs ?? 0);
      first = false;
      const json = JSON.stringify(input);
      const third = Math.ceil(json.length / 3);
      for (let i = 0; i < json.length; i += third) {
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: json.slice(i, i + third) },
        });
      }
    } else {
      // A server tool's result arrives whole in its content_block_start, after the tool ran.
      await sleep(pace.serverToolMs ?? 0);
      send("content_block_start", { type: "content_block_start", index, content_block: block });
    }
    if (breakNow()) {
      send("error", {
        type: "error",
        error: {
          type: pace.errorType ?? "overloaded_error",
          message: pace.errorType === "api_error" ? "Internal server error" : "Overloaded",
        },
      });
      res.end();
      return;
    }
    send("content_block_stop", { type: "content_block_stop", index });
  }
  send("message_delta", {
    type: "message_delta",
    delta: { stop_reason: reply.stop_reason, stop_sequence: null },
    usage: {
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      output_tokens: usage.output_tokens,
      ...(usage.server_tool_use ? { server_tool_use: usage.server_tool_use } : {}),
    },
  });
  send("message_stop", { type: "message_stop" });
  ended = true;
  res.end();
}

const tokens = (value: unknown) => Math.max(1, Math.ceil(JSON.stringify(value ?? "").length / 4));

/** Options of {@link startFakeAnthropic}. */
export interface FakeAnthropicOptions {
  /**
   * Answers a valid request when the queue is empty (e.g. `(req) => text("ok")` for end-to-end
   * tests that do not script every call). Default: none, see {@link startFakeAnthropic}.
   */
  fallback?: FakeReply;
  /**
   * Tools the API refuses in this fake's requests, answered `400 invalid_request_error` as the real
   * API answers them: `model`, `type` prefixes the model does not support (`'<model>' does not
   * support tool types: web_search_20250305.`, the real message); `organization`, tool names the
   * organization has not enabled (a message naming the tool: the real wording is not published).
   */
  refuseTools?: { model?: string[]; organization?: string[] };
  /**
   * The only API key accepted (as `x-api-key` or `authorization: Bearer`, which this SDK sends);
   * another key is answered 401 `authentication_error`
   * "invalid x-api-key", as the real API does. Default: any key.
   */
  apiKey?: string;
  /** How the simulated prompt cache behaves (see {@link PromptCache}); default the API's: 1024 tokens at least, 5 minutes. */
  promptCache?: PromptCacheOptions;
}

/** Options of the simulated prompt cache. */
export interface PromptCacheOptions {
  /**
   * Fewest tokens a cached prefix has (the model's minimum cacheable length: 1024 for most
   * models, 2048 or 4096 for some); a shorter prefix is not cached (its breakpoint is ignored, as
   * the API ignores it). Default 1024.
   */
  minTokens?: number;
  /** How long a written or read prefix stays cached, in ms; default 300 000 (the API's 5-minute cache). */
  ttlMs?: number;
  /** The clock, ms since the Unix epoch; default `Date.now` (the cost benchmark uses a simulated one). */
  now?: () => number;
}

/** How far before a breakpoint the API looks for an earlier cached prefix, in content blocks. */
const LOOKBACK_BLOCKS = 20;

/**
 * The Messages API's prompt cache, as its documentation describes it
 * (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): a request is a sequence
 * of blocks in the order tools (the loaded ones; deferred tools are not part of the prefix), then
 * `system`, then the messages' content blocks. At each block carrying `cache_control` the prefix up
 * to and including it is written to the cache (`cache_creation_input_tokens`, billed at 1.25×)
 * when it is at least `minTokens` long; a later request whose blocks start with a cached prefix
 * (found at one of its breakpoints or up to {@link LOOKBACK_BLOCKS} blocks before one) reads it
 * (`cache_read_input_tokens`, 0.1×); the rest is `input_tokens`. An entry lives `ttlMs` after it
 * was last written or read. A prefix is identified by its content with `cache_control` left out
 * (moving a breakpoint does not change what is cached). Tokens are characters / 4 of each block's JSON.
 */
export class PromptCache {
  readonly #entries = new Map<string, number>();
  readonly #minTokens: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: PromptCacheOptions = {}) {
    this.#minTokens = options.minTokens ?? 1024;
    this.#ttlMs = options.ttlMs ?? 300_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Reads and writes the cache for `request`.
   * @returns the tokens of the request's blocks (`total`: loaded tools, system, messages) and
   *   those read from the cache and written to it.
   */
  use(request: FakeRequest, deferred: Set<string>): { total: number; read: number; written: number } {
    const now = this.#now();
    const blocks: { body: unknown; breakpoint: boolean }[] = [];
    const plain = (b: unknown): { body: unknown; breakpoint: boolean } => {
      if (!isObject(b)) return { body: b, breakpoint: false };
      const { cache_control, ...rest } = b;
      return { body: rest, breakpoint: cache_control !== undefined && cache_control !== null };
    };
    const tools = (request.tools ?? []).filter((t) => !deferred.has(t.name));
    for (const t of tools) blocks.push(plain(t));
    for (const sys of Array.isArray(request.system) ? request.system : request.system ? [request.system] : [])
      blocks.push(plain(sys));
    request.messages.forEach((m, i) => {
      const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
      for (const b of content) {
        const p = plain(b);
        blocks.push({ body: { message: i, role: m.role, block: p.body }, breakpoint: p.breakpoint });
      }
    });
    const hashes: string[] = [];
    const cumulative: number[] = [];
    let hash = "";
    let sum = 0;
    for (const b of blocks) {
      hash = createHash("sha1").update(hash).update(JSON.stringify(b.body)).digest("hex");
      sum += tokens(b.body);
      hashes.push(hash);
      cumulative.push(sum);
    }
    const alive = (i: number) => (this.#entries.get(hashes[i]!) ?? 0) > now;
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    // The longest cached prefix the request can read: at a breakpoint, or up to 20 blocks before one.
    let hit = -1;
    for (const b of breakpoints) {
      for (let i = b; i >= Math.max(0, b - LOOKBACK_BLOCKS); i -= 1) {
        if (i <= hit) break;
        if (alive(i)) {
          hit = i;
          break;
        }
      }
    }
    const read = hit >= 0 ? cumulative[hit]! : 0;
    if (hit >= 0) this.#entries.set(hashes[hit]!, now + this.#ttlMs);
    let last = -1;
    for (const b of breakpoints) {
      if (cumulative[b]! < this.#minTokens) continue;
      this.#entries.set(hashes[b]!, now + this.#ttlMs);
      last = b;
    }
    const written = last > hit ? cumulative[last]! - read : 0;
    return { total: sum, read, written };
  }
}

/**
 * Starts the fake on 127.0.0.1 with a random free port.
 *
 * With an empty queue and no `fallback`, a valid request is answered `500` with
 * `x-should-retry: false` and a message saying no reply was scripted, so a test that calls the
 * model more than it planned fails.
 *
 * Usage is simulated: tokens are characters / 4; the prompt cache works as the API's
 * ({@link PromptCache}: prefixes up to `cache_control` breakpoints anywhere in tools, system and
 * messages, written when at least 1024 tokens long, read by a later request that starts with
 * them within 5 minutes, the deferred tools not part of the prefix); `input_tokens` is the rest
 * (plus the deferred tools the conversation has loaded and the server tools' results);
 * `server_tool_use` counts the searches and fetches that ran.
 */
export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const queue: FakeReply[] = [];
  const requests: FakeRequest[] = [];
  const answered: FakeAnthropic["answered"] = [];
  const rejections: FakeRejection[] = [];
  const cutOff: FakeAnthropic["cutOff"] = [];
  const promptCache = new PromptCache(options.promptCache);
  const secrets = new IssuedSecrets();
  let hanging = 0;

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const requestId = randomId("req_");
    res.writeHead(status, { "content-type": "application/json", "request-id": requestId, ...headers });
    res.end(JSON.stringify(status >= 400 ? { ...(body as object), request_id: requestId } : body));
  };
  const sendError = (
    res: ServerResponse,
    status: number,
    type: string,
    message: string,
    headers: Record<string, string> = {},
  ) => sendJson(res, status, { type: "error", error: { type, message } }, headers);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || !req.url?.startsWith("/v1/messages")) {
      return sendError(res, 404, "not_found_error", `Not found: ${req.method} ${req.url}`);
    }
    if (!req.headers["x-api-key"] && !req.headers.authorization) {
      return sendError(res, 401, "authentication_error", "x-api-key header is required");
    }
    const sentKey = req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "");
    if (options.apiKey !== undefined && sentKey !== options.apiKey) {
      return sendError(res, 401, "authentication_error", "invalid x-api-key");
    }
    if (chunks.reduce((n, c) => n + c.length, 0) > FAKE_REQUEST_MAX_BYTES)
      return sendError(res, 413, "request_too_large", "Request exceeds the maximum allowed number of bytes.");
    let body: unknown;
    let referenced: Set<string>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"), (_key, value: unknown) => {
        if (typeof value === "string" && !value.isWellFormed())
          fail("The request body is not valid JSON: no low surrogate in string");
        return value;
      });
      const media = new MediaChecks();
      referenced = validate(body, media, secrets, {
        model: options.refuseTools?.model,
        organization: options.refuseTools?.organization,
      });
      await media.finish();
    } catch (error) {
      const known =
        error instanceof InvalidRequest || error instanceof InvalidMedia || error instanceof InvalidServerTool;
      const message = known ? error.message : `There was an error parsing the body: ${(error as Error).message}`;
      rejections.push({ message, body });
      return sendError(res, 400, "invalid_request_error", message);
    }
    const request = body as FakeRequest;
    requests.push(request);
    // A chaos mode for finding races in tests (docs/testing.md): FAKE_MODEL_JITTER_MS=N answers each valid request after 0–N ms.
    const jitter = Number(process.env.FAKE_MODEL_JITTER_MS ?? 0);
    if (jitter > 0) await new Promise((r) => setTimeout(r, Math.random() * jitter));
    const next = queue.shift() ?? options.fallback;
    if (!next) {
      return sendError(res, 500, "api_error", "fake anthropic: no scripted reply left for this request", {
        "x-should-retry": "false",
      });
    }
    const reply = typeof next === "function" ? next(request) : next;
    if ("hang" in reply) {
      hanging += 1;
      res.on("close", () => (hanging -= 1));
      return;
    }
    if ("status" in reply) return sendError(res, reply.status, reply.errorType, reply.message, reply.headers);

    // Simulated prompt caching (see PromptCache): tools, then system, then messages, up to the breakpoints.
    const tools = request.tools ?? [];
    const deferred = deferredNames(tools);
    const cache = promptCache.use(request, deferred);
    const made = serverContent(reply.content, tools, referenced, secrets);
    if (made.problem)
      return sendError(res, 500, "api_error", `fake anthropic: ${made.problem}`, { "x-should-retry": "false" });
    const content = made.content;
    // In front of the model: the loaded tools, the deferred ones the conversation (or this reply) loaded, and what server tools returned.
    const loadedTools = tools.filter(
      (t) =>
        !deferred.has(t.name) ||
        referenced.has(t.name) ||
        content.some((b) => b.type === "tool_use" && b.name === t.name),
    );
    const serverResults = content.filter((b) => SERVER_RESULT_TYPES.includes(String(b.type)));
    const loadedDeferred = loadedTools.filter((t) => deferred.has(t.name));
    const usage: FakeUsage = {
      input_tokens: Math.max(
        1,
        cache.total -
          cache.read -
          cache.written +
          (loadedDeferred.length > 0 ? tokens(loadedDeferred) : 0) +
          (serverResults.length > 0 ? tokens(serverResults) : 0),
      ),
      output_tokens: tokens(reply.content),
      cache_creation_input_tokens: cache.written,
      cache_read_input_tokens: cache.read,
      ...(made.serverToolUse ? { server_tool_use: made.serverToolUse } : {}),
      ...reply.usage,
    };
    const record: (typeof answered)[number] = { request, content, usage };
    answered.push(record);
    if (request.stream === true)
      return streamReply(
        res,
        request,
        reply,
        content,
        usage,
        (at) => (record.firstTokenAt ??= at),
        (streamedChars, at) => cutOff.push({ request, streamedChars, at }),
      );
    // A paced reply asked for without streaming arrives when the model would have finished writing it.
    if (reply.stream) await sleep((reply.stream.firstTokenMs ?? 0) + (reply.stream.totalMs ?? 0));
    sendJson(res, 200, {
      id: randomId("msg_"),
      type: "message",
      role: "assistant",
      model: request.model,
      content,
      stop_reason: reply.stop_reason,
      stop_sequence: null,
      usage: { ...usage, service_tier: "standard" },
    });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) =>
      sendError(res, 500, "api_error", `fake anthropic crashed: ${String(error)}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    rejections,
    answered,
    cutOff,
    enqueue: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    hanging: () => hanging,
    reset: () => {
      queue.length = 0;
      requests.length = 0;
      rejections.length = 0;
      cutOff.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
