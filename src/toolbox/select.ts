/**
 * Choosing the tools a context gets. Tools carry tags; each context asks for the tags it needs,
 * so a request carries only relevant tools (at most {@link MAX_TOOLS_PER_REQUEST}).
 */
import type { Platform } from "../queue/incoming.js";
import { MAX_TOOLS_PER_REQUEST, type ToolBox } from "./toolbox.js";

export { MAX_TOOLS_PER_REQUEST };

/** Tags offered in every chat: information, daily helpers, the personal todo list, utilities. */
export const CHAT_TAGS = ["info", "daily", "todo", "util"] as const;

/**
 * The toolbox for a chat of the given kind: the tools tagged with {@link CHAT_TAGS}.
 * Dangerous tools stay in: they are guarded by approval, not hidden.
 */
export function toolboxFor(toolbox: ToolBox, _chat: { platform: Platform; chatKind: "dm" | "group" }): ToolBox {
  return toolbox.filterByTag(...CHAT_TAGS);
}
