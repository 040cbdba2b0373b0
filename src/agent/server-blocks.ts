/**
 * The agent loop's side of server tools (web search, web fetch, tool search): the API runs them
 * inside one model call and returns their calls and results as blocks of the response
 * (`server_tool_use`, `web_search_tool_result`, `web_fetch_tool_result`, `tool_search_tool_result`),
 * which the loop must send back as they came for the rest of the run. This module builds the
 * request's `tools` (deferred tools, the tool search tool, the cache breakpoint), turns a refusal
 * of a server tool into "off for this client and model", finds the answer's text among the blocks
 * and makes a finished run's messages small for the history.
 *
 * Sources: https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools ,
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool ,
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool .
 */
import Anthropic from "@anthropic-ai/sdk";
import { TOOL_SEARCH_TOOL, type ToolBox } from "../toolbox/toolbox.js";
import type { MessageParam } from "./contract.js";
import { markedText, sourcesNote, sourcesOf } from "./sources.js";

type ContentBlockParam = Anthropic.Messages.ContentBlockParam;

/** Block types of server tools' results. */
const RESULT_TYPES = new Set(["web_search_tool_result", "web_fetch_tool_result", "tool_search_tool_result"]);

/** Server tools whose blocks a finished run's history leaves out (results are large; the answer's text stays). */
const WEB_TOOLS = new Set(["web_search", "web_fetch"]);

/** Whether `block` is a server tool's call or result. */
export function isServerBlock(block: { type: string }): boolean {
  return block.type === "server_tool_use" || RESULT_TYPES.has(block.type);
}

/** Whether a server tool's result block reports an error (`*_tool_result_error`) rather than a result. */
export function isServerError(block: { type: string; content?: unknown }): boolean {
  const content = block.content as { type?: unknown } | undefined;
  return (
    typeof content === "object" &&
    content !== null &&
    !Array.isArray(content) &&
    typeof content.type === "string" &&
    content.type.endsWith("_error")
  );
}

function blocksOf(message: MessageParam): ContentBlockParam[] {
  return typeof message.content === "string" ? [] : message.content;
}

/** Names of the tools a `tool_reference` of a tool search result in `messages` loaded. */
export function referencedTools(messages: readonly MessageParam[]): Set<string> {
  const names = new Set<string>();
  for (const message of messages) {
    for (const block of blocksOf(message)) {
      if (block.type !== "tool_search_tool_result" || block.content.type !== "tool_search_tool_search_result") continue;
      for (const ref of block.content.tool_references) names.add(ref.tool_name);
    }
  }
  return names;
}

/**
 * Names of the tools a `tool_use` of `messages` called, and of the server tools (a deferred web
 * fetch) a `server_tool_use` called; the tool search tool's own calls are not counted.
 */
export function calledTools(messages: readonly MessageParam[]): Set<string> {
  const names = new Set<string>();
  for (const message of messages)
    for (const block of blocksOf(message)) {
      if (block.type === "tool_use") names.add(block.name);
      else if (block.type === "server_tool_use" && !block.name.startsWith("tool_search_tool_")) names.add(block.name);
    }
  return names;
}

/** What one request offers: the `tools` and the server tools among them (by name, with their `type`). */
export interface OfferedTools {
  tools: Anthropic.Messages.ToolUnion[];
  /** Server tools (web search, web fetch, the tool search tool) of `tools`. */
  servers: { name: string; type: string }[];
  /** The messages to send: the run's, minus what the offered tools cannot accept (see {@link offerTools}). */
  messages: MessageParam[];
}

/**
 * The `tools` of a request of `toolbox` for `messages` (history and run so far), with server tools
 * `off` (refused by the API for this client and model) left out:
 * - the loaded tools, then the tool search tool when any tool is deferred, then the deferred tools
 *   with `defer_loading: true`; a deferred tool that `messages` called without a `tool_reference`
 *   to it (from before it was deferred, or while tool search was off) is loaded instead, since the
 *   API accepts a `tool_use` of a deferred tool only after its reference;
 * - one cache breakpoint, on the last loaded tool: deferred tools are not part of the cached
 *   prefix, and the API refuses `cache_control` on them;
 * - `messages` keep their `tool_reference`s only to tools of this request (a tool gone since,
 *   e.g. an MCP server removed, would make the API refuse the whole request), and lose the tool
 *   search blocks when tool search is off. The originals are not changed.
 */
export function offerTools(
  toolbox: ToolBox,
  messages: readonly MessageParam[],
  off: ReadonlySet<string>,
): OfferedTools {
  const toolSearch = !off.has(TOOL_SEARCH_TOOL.name);
  const referenced = referencedTools(messages);
  const load = new Set([...calledTools(messages)].filter((name) => !referenced.has(name)));
  const { loaded, deferred } = toolbox.requestTools({ omit: off, load, toolSearch });
  const last = loaded.length - 1;
  const tools = [
    ...loaded.map((t, i) =>
      i === last ? ({ ...t, cache_control: { type: "ephemeral" } } as Anthropic.Messages.ToolUnion) : t,
    ),
    ...deferred,
  ];
  const servers = tools
    .filter(
      (t): t is Anthropic.Messages.ToolUnion & { name: string; type: string } =>
        "type" in t && typeof t.type === "string" && t.type !== "custom" && "name" in t,
    )
    .map((t) => ({ name: t.name, type: t.type }));
  const names = new Set(tools.flatMap((t) => ("name" in t ? [t.name] : [])));
  return { tools, servers, messages: forRequest(messages, names, toolSearch) };
}

/** `messages` with `tool_reference`s to tools not in `names` removed, and without tool search blocks unless `toolSearch`. */
function forRequest(
  messages: readonly MessageParam[],
  names: ReadonlySet<string>,
  toolSearch: boolean,
): MessageParam[] {
  return messages
    .map((message) => {
      if (
        typeof message.content === "string" ||
        !message.content.some(
          (b) =>
            b.type === "tool_search_tool_result" ||
            (b.type === "server_tool_use" && b.name.startsWith("tool_search_tool_")),
        )
      )
        return message;
      const content: ContentBlockParam[] = [];
      for (const block of message.content) {
        const isSearch =
          block.type === "tool_search_tool_result" ||
          (block.type === "server_tool_use" && block.name.startsWith("tool_search_tool_"));
        if (isSearch && !toolSearch) continue;
        if (block.type === "tool_search_tool_result" && block.content.type === "tool_search_tool_search_result") {
          const refs = block.content.tool_references.filter((r) => names.has(r.tool_name));
          content.push(
            refs.length === block.content.tool_references.length
              ? block
              : { ...block, content: { ...block.content, tool_references: refs } },
          );
        } else content.push(block);
      }
      return { ...message, content } as MessageParam;
    })
    .filter((m) => typeof m.content === "string" || m.content.length > 0);
}

/** Server tools the API refused, per client (its key) and model: tool name → the API's reason. */
const refusals = new WeakMap<Anthropic, Map<string, Map<string, string>>>();

/** The server tools the API refused for `client` and `model` since the process started (name → the API's message). */
export function refusedTools(client: Anthropic, model: string): ReadonlyMap<string, string> {
  return refusals.get(client)?.get(model) ?? new Map();
}

/** Records that the API refused server tool `name` for `client` and `model`; later requests leave it out. */
export function refuseTool(client: Anthropic, model: string, name: string, reason: string): void {
  let byModel = refusals.get(client);
  if (!byModel) refusals.set(client, (byModel = new Map()));
  let tools = byModel.get(model);
  if (!tools) byModel.set(model, (tools = new Map()));
  tools.set(name, reason);
}

/** The words by which an API error names a server tool of a request. */
function namesOf(tool: { name: string; type: string }): string[] {
  const words = [tool.type, tool.name, tool.name.replace(/_/g, " ")];
  if (tool.name.startsWith("tool_search_tool_")) words.push("tool search", "defer_loading", "tool_reference");
  return words.map((w) => w.toLowerCase());
}

/**
 * The server tools of a request that the API refused with `error`: a 400 or 403 whose message
 * names the tool (its `type`, its name, or its name in words) and is not about the messages
 * (`messages.…`, a history problem). Covers a model without the tool (`'<model>' does not
 * support tool types: web_search_20250305.`) and an organization that has not enabled it.
 *
 * @returns their names; empty when the error is something else.
 */
export function refusedServerTools(
  error: unknown,
  servers: readonly { name: string; type: string }[],
): { names: string[]; reason: string } {
  if (!(error instanceof Anthropic.APIError) || (error.status !== 400 && error.status !== 403))
    return { names: [], reason: "" };
  const body = error.error as { error?: { message?: unknown } } | undefined;
  const reason = typeof body?.error?.message === "string" ? body.error.message : error.message;
  const text = reason.toLowerCase();
  if (/^messages\b/.test(text)) return { names: [], reason };
  return { names: servers.filter((s) => namesOf(s).some((w) => text.includes(w))).map((s) => s.name), reason };
}

/** The answer of a model response: its text blocks, and how the API means them to be joined. */
export interface Answer {
  blocks: Anthropic.Messages.TextBlockParam[];
  /**
   * `""` when the response used server tools or cites (the API splits one text into blocks at
   * citation boundaries, so they are parts of one text), else a line break.
   */
  joiner: string;
}

/**
 * The answer in `content`, the blocks of the last model call: its text blocks after its last
 * server block (text before a search is a lead-in such as "let me search", as text before a
 * `tool_use` is). When the call has no text there (it only finished the search of a paused
 * turn), the same in `turn`, the whole turn's blocks (the paused ones and the call's).
 */
export function answerOf(content: readonly ContentBlockParam[], turn: readonly ContentBlockParam[] = content): Answer {
  const own = answerBlocks(content);
  const blocks = own.some((b) => b.text.trim() !== "") ? own : answerBlocks(turn);
  const joiner = turn.some(
    (b) => isServerBlock(b) || (b.type === "text" && Array.isArray(b.citations) && b.citations.length > 0),
  )
    ? ""
    : "\n";
  return { blocks, joiner };
}

/** The answer's text: its blocks joined, trimmed. */
export function answerText(answer: Answer): string {
  return answer.blocks
    .map((b) => b.text)
    .join(answer.joiner)
    .trim();
}

/** The text blocks after the last server block of `content` (all of them when none follows it). */
function answerBlocks(content: readonly ContentBlockParam[]): Anthropic.Messages.TextBlockParam[] {
  let last = -1;
  content.forEach((b, i) => {
    if (isServerBlock(b)) last = i;
  });
  const texts = (from: number) =>
    content.slice(from).filter((b): b is Anthropic.Messages.TextBlockParam => b.type === "text");
  const tail = texts(last + 1);
  return tail.some((b) => b.text.trim() !== "") ? tail : texts(0);
}

/**
 * A finished run's messages as the history keeps them: web search and web fetch calls and their
 * results left out (their encrypted results are large and are sent again, as input tokens, with
 * every later request), and text blocks without `citations` (which point into those results).
 * Tool search blocks stay (small, and a deferred tool's `tool_use` needs its `tool_reference`).
 * An answer that cited web pages keeps what the person saw of them: the numbers after the cited
 * parts (`[1][2]`) and, as its last text block, the compact sources note (`sourcesNote` of
 * `sources.ts`: title and URL per source, numbered as shown, no page content), so a later turn can
 * say which site said what. An assistant message left empty is dropped (its neighbours stay
 * valid: the API joins consecutive turns of one role). The given messages are not changed.
 */
export function forHistory(messages: readonly MessageParam[]): MessageParam[] {
  const out: MessageParam[] = [];
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") {
      out.push(message);
      continue;
    }
    // Sources as the answer showed them; a message leading into a tool call keeps none (it is not an answer).
    const sources = message.content.some((b) => b.type === "tool_use")
      ? []
      : sourcesOf(answerOf(message.content).blocks);
    const number = new Map(sources.map((s, i) => [s.url, i + 1]));
    const content: ContentBlockParam[] = [];
    for (const block of message.content) {
      if (block.type === "server_tool_use" && WEB_TOOLS.has(block.name)) continue;
      if (block.type === "web_search_tool_result" || block.type === "web_fetch_tool_result") continue;
      if (block.type === "text" && block.citations) {
        const { citations: _citations, ...plain } = block;
        content.push(sources.length > 0 ? { ...plain, text: markedText(block, number) } : plain);
      } else content.push(block);
    }
    const note = sourcesNote(sources);
    if (note !== undefined) content.push({ type: "text", text: note });
    if (content.length > 0) out.push({ ...message, content });
  }
  return out;
}
