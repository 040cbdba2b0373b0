/**
 * The memory files' shared pieces: a scripted model that calls the memory tool, and lookups of
 * the memory block in the model's requests.
 *
 * Rules of {@link memoryModel} (on the user's own text, the memory block left out):
 * - `remember <fact> as <name>`   → memory create `/memories/<name>.md` with `<fact>`
 * - `also <fact> in <name>`       → memory insert `<fact>` at line 0 of `/memories/<name>.md`
 * - `forget note <name>`          → memory delete `/memories/<name>.md`
 * - `drop <text> from <name>`     → memory str_replace of `<text>` in `/memories/<name>.md`, without `new_str`
 * - `peek <path>`                 → memory view `<path>` (a path escape when it is one)
 * - `remember big <n>`            → memory create `/memories/big.md` with `<n>` × `記`
 * - anything else                 → the shared scripted model (tool results echoed as `memory: …`)
 */
import type { FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { toolUse } from "../fakes/anthropic.js";
import { scriptedModel } from "./scripted-model.js";

/** Whether a content block is the memory block the bot puts before a run's user turn. */
function isMemoryBlock(block: Record<string, unknown>): boolean {
  return block.type === "text" && String(block.text).startsWith("<memory scope=");
}

/** `request` without its memory block (what the user typed, as the shared model reads it). */
export function withoutMemory(request: FakeRequest): FakeRequest {
  return {
    ...request,
    messages: request.messages.map((m) =>
      typeof m.content === "string" ? m : { ...m, content: m.content.filter((b) => !isMemoryBlock(b)) },
    ),
  };
}

/** The memory block of a request (the first block of a user turn that is one), or undefined. */
export function memoryBlockOf(request: FakeRequest): string | undefined {
  for (const m of request.messages) {
    if (m.role !== "user" || typeof m.content === "string") continue;
    const block = m.content.find(isMemoryBlock);
    if (block) return String(block.text);
  }
  return undefined;
}

/** The model scripted to call the memory tool (see the module comment). */
export function memoryModel(request: FakeRequest): FakeMessageReply {
  const plain = withoutMemory(request);
  const last = plain.messages.at(-1)!;
  const blocks = typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
  if (last.role === "user" && !blocks.some((b) => b.type === "tool_result")) {
    const said = blocks
      .filter((b) => b.type === "text")
      .map((b) => String(b.text))
      .join(" ")
      .replace(/^\[[^\]]{1,80}\]\s*/, "")
      .trim();
    let m: RegExpExecArray | null;
    if ((m = /^remember big (\d+)$/.exec(said)))
      return toolUse("memory", { command: "create", path: "/memories/big.md", file_text: "記".repeat(Number(m[1])) });
    if ((m = /^remember (.+) as (\S+)$/.exec(said)))
      return toolUse("memory", { command: "create", path: `/memories/${m[2]}.md`, file_text: m[1] });
    if ((m = /^also (.+) in (\S+)$/.exec(said)))
      return toolUse("memory", { command: "insert", path: `/memories/${m[2]}.md`, insert_line: 0, insert_text: m[1] });
    if ((m = /^drop (.+) from (\S+)$/.exec(said)))
      return toolUse("memory", { command: "str_replace", path: `/memories/${m[2]}.md`, old_str: m[1] });
    if ((m = /^forget note (\S+)$/.exec(said)))
      return toolUse("memory", { command: "delete", path: `/memories/${m[1]}.md` });
    if ((m = /^peek (\S+)$/.exec(said))) return toolUse("memory", { command: "view", path: m[1] });
  }
  return scriptedModel(plain);
}
