/**
 * Choosing the tools a context gets. Tools carry tags; each context asks for the tags it needs,
 * so a request carries only relevant tools. Of those, at most {@link MAX_TOOLS_PER_REQUEST} are
 * in front of the model: tools needed in few turns are deferred (`deferred: true`, found through
 * the API's tool search), see `ToolBox.requestTools`; {@link warnCrowdedChats} says at start-up
 * when a chat would still get more. {@link unofferedTools} finds loaded tools that no chat would
 * ever offer (their tags match none).
 */
import path from "node:path";
import type { Logger } from "../log.js";
import { PLATFORMS, type Platform } from "../queue/incoming.js";
import type { Tool } from "./tool.js";
import { MAX_TOOLS_PER_REQUEST, type ToolBox } from "./toolbox.js";

export { MAX_TOOLS_PER_REQUEST };

/** Tags offered in every chat: information, daily helpers, the personal todo list, utilities, the web (search and fetch), memory. */
export const CHAT_TAGS = ["info", "daily", "todo", "util", "web", "memory"] as const;

/** The kinds of chat {@link toolboxFor} distinguishes. */
const CHAT_KINDS = ["dm", "group"] as const;

/**
 * Tools a scheduled task's own run never gets: a task cannot schedule another task (issue 39: text
 * the run reads cannot make the bot act again on its own later; only a person schedules tasks).
 */
export const NOT_IN_TASK_RUNS = ["schedule_task"] as const;

/**
 * The toolbox for a chat of the given kind: the tools tagged with {@link CHAT_TAGS}; for the run of
 * a scheduled task's occurrence (`scheduled` set on its message) without {@link NOT_IN_TASK_RUNS}.
 * Dangerous tools stay in: they are guarded by approval, not hidden.
 */
export function toolboxFor(
  toolbox: ToolBox,
  chat: { platform: Platform; chatKind: "dm" | "group"; scheduled?: unknown },
): ToolBox {
  const offered = toolbox.filterByTag(...CHAT_TAGS);
  if (chat.scheduled !== undefined) for (const name of NOT_IN_TASK_RUNS) offered.remove(name);
  return offered;
}

/**
 * The tools of `toolbox` that {@link toolboxFor} offers in no chat (no platform, neither a DM nor
 * a group): they load, but the model never sees them. Usually a tag typo or a tag no chat uses.
 *
 * @returns those tools, in the toolbox's order; empty when every tool is offered somewhere.
 */
export function unofferedTools(toolbox: ToolBox): Tool[] {
  const offered = new Set<string>();
  for (const platform of PLATFORMS) {
    for (const chatKind of CHAT_KINDS)
      for (const name of toolboxFor(toolbox, { platform, chatKind }).names()) offered.add(name);
  }
  return toolbox.list().filter((t) => !offered.has(t.name));
}

/**
 * Why {@link unofferedTools} lists `tool`, as one English sentence for operators:
 * `none of its tags (x, y) is offered in chats: info, daily, todo, util`.
 */
export function unofferedReason(tool: Pick<Tool, "tags">): string {
  const offered = CHAT_TAGS.join(", ");
  if (tool.tags.length === 0) return `it has no tags; chats offer tools tagged: ${offered}`;
  return `none of its tags (${tool.tags.join(", ")}) is offered in chats: ${offered}`;
}

/**
 * Logs one warning per tool of `toolbox` that no chat offers (see {@link unofferedTools}), with
 * the tool's name, file, tags and {@link unofferedReason}. Call it once at start-up, after
 * `loadTools`.
 *
 * @returns the tools warned about.
 */
export function warnUnofferedTools(toolbox: ToolBox, log: Logger): Tool[] {
  const tools = unofferedTools(toolbox);
  for (const tool of tools) {
    const reason = unofferedReason(tool);
    log.warn(
      { tool: tool.name, file: path.relative(process.cwd(), tool.file) || tool.file, tags: [...tool.tags], reason },
      `tool ${tool.name} is loaded but never offered to the model: ${reason}`,
    );
  }
  return tools;
}

/**
 * The kinds of chat (platform and DM or group) whose requests would put more than
 * {@link MAX_TOOLS_PER_REQUEST} tools in front of the model (`ToolBox.loadedCount`: deferred tools
 * do not count, the tool search tool does), with their toolbox.
 */
export function crowdedChats(toolbox: ToolBox): { platform: Platform; chatKind: "dm" | "group"; offered: ToolBox }[] {
  const crowded: { platform: Platform; chatKind: "dm" | "group"; offered: ToolBox }[] = [];
  for (const platform of PLATFORMS) {
    for (const chatKind of CHAT_KINDS) {
      const offered = toolboxFor(toolbox, { platform, chatKind });
      if (offered.loadedCount() > MAX_TOOLS_PER_REQUEST) crowded.push({ platform, chatKind, offered });
    }
  }
  return crowded;
}

/**
 * The switch of each built-in tool (a tool the bot adds itself, not a file of `tools/`), named in
 * {@link countedTools} so an operator knows how to turn it off.
 */
export const BUILT_IN_SWITCHES: Readonly<Record<string, string>> = {
  web_search: "WEB_SEARCH",
  web_fetch: "WEB_FETCH",
  memory: "MEMORY",
};

/** True for a tool the bot adds itself (a server tool, the memory tool), not a file of `tools/` or an MCP tool. */
function isBuiltIn(tool: Tool): boolean {
  return tool.server !== undefined || tool.apiDefinition !== undefined;
}

/**
 * The tools a request of `offered` puts in front of the model, for a warning: the names of the
 * loaded tools of `tools/` (and of MCP servers), then the built-in ones with the switch that turns
 * each off, then the tool search tool when any tool is deferred. E.g. `add_todo, calculate;
 * built in: web_search (WEB_SEARCH=off removes it), memory (MEMORY=off removes it); and the tool
 * search tool (it finds the 7 deferred tools)`. Never throws.
 */
export function countedTools(offered: ToolBox): string {
  const loaded = offered.list().filter((t) => !t.deferred);
  const own = loaded.filter((t) => !isBuiltIn(t)).map((t) => t.name);
  const builtIn = loaded
    .filter(isBuiltIn)
    .map((t) => (BUILT_IN_SWITCHES[t.name] ? `${t.name} (${BUILT_IN_SWITCHES[t.name]}=off removes it)` : t.name));
  const deferred = offered.list().length - loaded.length;
  const parts = [own.join(", ")];
  if (builtIn.length > 0) parts.push(`built in: ${builtIn.join(", ")}`);
  if (deferred > 0)
    parts.push(`and the tool search tool (it finds the ${deferred} deferred tool${deferred === 1 ? "" : "s"})`);
  return parts.filter((p) => p !== "").join("; ");
}

/**
 * Logs one warning per distinct crowded set of tools ({@link crowdedChats}): how many tools a chat
 * would have in front of the model, which ones ({@link countedTools}), and how to bring it down.
 * Call at start-up, after `loadTools` (MCP tools are checked again once their servers are connected).
 *
 * @returns the warnings logged (English sentences).
 */
export function warnCrowdedChats(toolbox: ToolBox, log: Logger): string[] {
  const warnings = new Set<string>();
  for (const { offered } of crowdedChats(toolbox)) {
    warnings.add(
      `a chat would have ${offered.loadedCount()} tools in front of the model (more than ` +
        `${MAX_TOOLS_PER_REQUEST}; models choose worse with more): ${countedTools(offered)}. ` +
        CROWDED_ADVICE,
    );
  }
  for (const w of warnings) log.warn(w);
  return [...warnings];
}

/** What {@link warnCrowdedChats} advises (one sentence, no final period). */
export const CROWDED_ADVICE =
  "Mark tools of tools/ needed in few turns deferred: true (the model finds them with tool search), " +
  "give some tools tags that chats do not offer, or turn off a built-in tool you do not need";
