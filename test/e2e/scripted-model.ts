/**
 * A scripted "model" for the end-to-end suite: a function of the request, answered by the strict
 * fake Messages API. It reads the conversation the way a model would (the last user turn, the
 * tool results, earlier turns) and answers with `tool_use` blocks for the shipped tools or text,
 * so every scenario goes through the real loop, toolbox, tools and history.
 *
 * Rules (on the last user text, case-insensitive):
 * - `what time` / `幾點`               → get_current_datetime
 * - `weather in X` / `X天氣`           → get_weather { city: X }
 * - `add todo X` / `新增待辦 X`        → add_todo { title: X }
 * - `list todos` / `待辦清單`          → list_todos
 * - `list all todos` / `全部待辦`      → list_todos { include_completed: true }
 * - `complete #N` / `完成 #N`          → complete_todo { todo_id: N }
 * - `delete #N` / `刪除 #N`            → delete_todo { todo_id: N }
 * - `calc E` / `計算 E`                → calculate { expression: E }
 * - `and tomorrow?` / `明天呢`         → a text that quotes the previous user turn it found in the history
 * After tool results, the answer is `tool_name: <result text>` for each result, one per line.
 */
import type { FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { text, toolUse } from "../fakes/anthropic.js";

type Block = Record<string, unknown>;

function blocks(content: FakeRequest["messages"][number]["content"]): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

function userTexts(request: FakeRequest): string[] {
  return request.messages
    .filter((m) => m.role === "user")
    .flatMap((m) =>
      blocks(m.content)
        .filter((b) => b.type === "text")
        .map((b) => String(b.text)),
    );
}

/**
 * What the user typed in `request`'s last message: its text blocks joined by spaces (untrimmed,
 * speaker label kept). `undefined` when the last message is the assistant's or carries tool_result blocks.
 */
export function lastUserTyped(request: FakeRequest): string | undefined {
  const last = request.messages[request.messages.length - 1]!;
  const lastBlocks = blocks(last.content);
  if (last.role !== "user" || lastBlocks.some((b) => b.type === "tool_result")) return undefined;
  return lastBlocks
    .filter((b) => b.type === "text")
    .map((b) => String(b.text))
    .join(" ");
}

/** The name of each `tool_use` by id, across the conversation. */
function toolNames(request: FakeRequest): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of request.messages) {
    if (m.role !== "assistant") continue;
    for (const b of blocks(m.content)) if (b.type === "tool_use") names.set(String(b.id), String(b.name));
  }
  return names;
}

function resultText(block: Block): string {
  const content = block.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((c: Block) => String(c.text ?? "")).join("");
  return "";
}

/** Strips the `[Name #code] ` speaker label the worker adds in groups (`speakerLabel`). */
function withoutSpeaker(value: string): string {
  return value.replace(/^\[[^\]]{1,80}\]\s*/, "");
}

/** The reply of the scripted model to `request`. */
export function scriptedModel(request: FakeRequest): FakeMessageReply {
  const last = request.messages[request.messages.length - 1]!;
  const lastBlocks = blocks(last.content);
  const results = lastBlocks.filter((b) => b.type === "tool_result");
  if (results.length > 0) {
    const names = toolNames(request);
    return text(results.map((r) => `${names.get(String(r.tool_use_id)) ?? "tool"}: ${resultText(r)}`).join("\n"));
  }
  const said = withoutSpeaker(
    lastBlocks
      .filter((b) => b.type === "text")
      .map((b) => String(b.text))
      .join(" ")
      .trim(),
  );
  let m: RegExpExecArray | null;
  if (/what time|幾點/i.test(said)) return toolUse("get_current_datetime", {});
  if ((m = /weather in (.+)$/i.exec(said)) || (m = /^(.+?)天氣/.exec(said)))
    return toolUse("get_weather", { city: m[1]!.trim() });
  if ((m = /add todo (.+)$/i.exec(said)) || (m = /新增待辦\s*(.+)$/.exec(said)))
    return toolUse("add_todo", { title: m[1]!.trim() });
  if (/list todos|待辦清單/i.test(said)) return toolUse("list_todos", {});
  if ((m = /complete #(\d+)/i.exec(said)) || (m = /完成\s*#(\d+)/.exec(said)))
    return toolUse("complete_todo", { todo_id: Number(m[1]) });
  if ((m = /delete #(\d+)/i.exec(said)) || (m = /刪除\s*#(\d+)/.exec(said)))
    return toolUse("delete_todo", { todo_id: Number(m[1]) });
  if ((m = /calc (.+)$/i.exec(said)) || (m = /計算\s*(.+)$/.exec(said)))
    return toolUse("calculate", { expression: m[1]!.trim() });
  if (/and tomorrow\?|明天呢/i.test(said)) {
    const earlier = userTexts(request).slice(0, -1).map(withoutSpeaker);
    return text(
      earlier.length > 0 ? `Earlier you asked: ${earlier[earlier.length - 1]}` : "I have no earlier question from you.",
    );
  }
  if (/list all todos|全部待辦/i.test(said)) return toolUse("list_todos", { include_completed: true });
  return text(`You said: ${said}`);
}
