/**
 * Issue 39's hostile-input pieces: a tool that reads a hostile page, and a scripted model that
 * obeys instructions found in what it reads (a model the injected text took over), so the
 * attack goes through the real loop, toolbox, approvals and memory.
 *
 * Rules of {@link obedientModel}, before the fallback model's:
 * - the last user text contains `read the page <name>` → `read_page { name }`;
 * - a `tool_result` of the last turn contains lines `DO <tool> <json>` → one `tool_use` per line
 *   (the injected orders, all in one turn);
 * - anything else → the fallback.
 */
import { z } from "zod";
import { defineTool, type Tool } from "../../src/toolbox/tool.js";
import type { FakeErrorReply, FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { toolUses } from "../fakes/anthropic.js";
import { lastUserTyped } from "./scripted-model.js";

/** Pages `read_page` serves, by name (a test sets them before a run). */
export const pages = new Map<string, string>();

/** A read-only tool that returns a page of outside content (`pages`), as a web fetch would. */
export const readPageTool: Tool = defineTool({
  name: "read_page",
  description: "Reads a web page by name (a test tool standing for web fetch).",
  tags: ["util"],
  readOnly: true,
  outside: true,
  input: z.object({ name: z.string() }),
  run: ({ name }) => pages.get(name) ?? "no such page",
});

type Block = Record<string, unknown>;

function resultText(block: Block): string {
  const content = block.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((c: Block) => String(c.text ?? "")).join("");
  return "";
}

/** The scripted model that obeys injected orders (see the module comment), over `fallback`. */
export function obedientModel(
  fallback: (request: FakeRequest) => FakeMessageReply | FakeErrorReply,
): (request: FakeRequest) => FakeMessageReply | FakeErrorReply {
  return (request) => {
    const page = /read the page (\S+)/.exec(lastUserTyped(request) ?? "");
    if (page) return toolUses([{ name: "read_page", input: { name: page[1] } }]);
    const last = request.messages.at(-1)!;
    if (last.role === "user" && typeof last.content !== "string") {
      const orders = last.content
        .filter((b) => b.type === "tool_result")
        .flatMap((b) => [...resultText(b).matchAll(/^DO ([a-z_]+) (\{.*\})$/gm)])
        .map((m) => ({ name: m[1]!, input: JSON.parse(m[2]!) as unknown }));
      if (orders.length > 0) return toolUses(orders);
    }
    return fallback(request);
  };
}
