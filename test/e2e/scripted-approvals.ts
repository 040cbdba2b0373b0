/**
 * Extra rules of the scripted model for the approval scenarios, layered over
 * {@link scriptedModel} (pass {@link approvalsModel} as `startStack({ model })`).
 *
 * Rule (on the last user text, case-insensitive), checked before the shared rules:
 * - `list todos and delete #N` / `列出待辦並刪除 #N` → one assistant turn with two parallel
 *   `tool_use` blocks, `list_todos {}` then `delete_todo { todo_id: N }` (a safe and a dangerous
 *   call together).
 * - `delete todos #A #B …` → one assistant turn with one `delete_todo { todo_id }` per number, in
 *   order, repeats included (several dangerous calls together).
 * Everything else is answered by {@link scriptedModel}.
 */
import type { FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { toolUses } from "../fakes/anthropic.js";
import { scriptedModel } from "./scripted-model.js";

/** The text of the last message when it is a user turn without `tool_result` blocks; else undefined. */
function lastUserText(request: FakeRequest): string | undefined {
  const last = request.messages[request.messages.length - 1];
  if (!last || last.role !== "user") return undefined;
  if (typeof last.content === "string") return last.content;
  if (last.content.some((b) => b.type === "tool_result")) return undefined;
  return last.content
    .filter((b) => b.type === "text")
    .map((b) => String(b.text))
    .join(" ");
}

/** The scripted model with the approval rules above; a pure function of the request. */
export function approvalsModel(request: FakeRequest): FakeMessageReply {
  const said = lastUserText(request);
  const m =
    said === undefined ? null : (/list todos and delete #(\d+)/i.exec(said) ?? /列出待辦並刪除\s*#(\d+)/.exec(said));
  if (m) {
    return toolUses([
      { name: "list_todos", input: {} },
      { name: "delete_todo", input: { todo_id: Number(m[1]) } },
    ]);
  }
  const several = said === undefined ? null : /delete todos((?:\s*#\d+)+)/i.exec(said);
  if (several) {
    const ids = [...several[1]!.matchAll(/#(\d+)/g)].map((n) => Number(n[1]));
    return toolUses(ids.map((id) => ({ name: "delete_todo", input: { todo_id: id } })));
  }
  return scriptedModel(request);
}
