/**
 * Choosing the tools a context gets. Tools carry tags; each context asks for the tags it needs,
 * so a request carries only relevant tools (at most {@link MAX_TOOLS_PER_REQUEST}).
 * {@link unofferedTools} finds loaded tools that no chat would ever offer (their tags match none).
 */
import path from "node:path";
import type { Logger } from "../log.js";
import { PLATFORMS, type Platform } from "../queue/incoming.js";
import type { Tool } from "./tool.js";
import { MAX_TOOLS_PER_REQUEST, type ToolBox } from "./toolbox.js";

export { MAX_TOOLS_PER_REQUEST };

/** Tags offered in every chat: information, daily helpers, the personal todo list, utilities. */
export const CHAT_TAGS = ["info", "daily", "todo", "util"] as const;

/** The kinds of chat {@link toolboxFor} distinguishes. */
const CHAT_KINDS = ["dm", "group"] as const;

/**
 * The toolbox for a chat of the given kind: the tools tagged with {@link CHAT_TAGS}.
 * Dangerous tools stay in: they are guarded by approval, not hidden.
 */
export function toolboxFor(toolbox: ToolBox, _chat: { platform: Platform; chatKind: "dm" | "group" }): ToolBox {
  return toolbox.filterByTag(...CHAT_TAGS);
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
    for (const chatKind of CHAT_KINDS) for (const name of toolboxFor(toolbox, { platform, chatKind }).names()) offered.add(name);
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
    log.warn({ tool: tool.name, file: path.relative(process.cwd(), tool.file) || tool.file, tags: [...tool.tags], reason }, `tool ${tool.name} is loaded but never offered to the model: ${reason}`);
  }
  return tools;
}
