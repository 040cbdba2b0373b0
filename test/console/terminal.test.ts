/**
 * `npm run chat` in a real terminal (a pseudo-terminal, read as a terminal emulator shows it):
 * with `STREAMING=on` (the default) the whole streamed answer stays on the screen, the tools'
 * status lines are replaced by their outcome, and the input prompt comes back after the answer.
 * One chat (zh-TW, a narrow 40-column terminal, so lines wrap) for both exchanges.
 */
import { expect, it } from "vitest";
import { text, toolUse, toolUses } from "../fakes/anthropic.js";
import { useTerminalChat } from "./terminal.js";

const started = useTerminalChat({ cols: 40 });
/** Types `line`, waits for `last` and the prompt after it, and returns the screen's lines after the typed line. */
async function exchange(line: string, last: string): Promise<string[]> {
  started.chat.type(line);
  await started.chat.waitForScreen(
    (rows) => rows[rows.length - 1] === "> " && started.chat.lines().some((l) => l.includes(last)),
    `the answer to "${line}" and the prompt after it`,
  );
  const lines = started.chat.lines();
  return lines.slice(lines.findLastIndex((l) => l.endsWith(`> ${line}`)) + 1);
}

it(
  "a streamed answer after a tool call stays whole (in pieces of 3 characters, over several " +
    "rows); the status line shows the outcome; the prompt comes back",
  async () => {
    const answer = "I added tea to your todo list. It is number 1, and you can ask me to list or complete it any time.";
    started.fake.enqueue(toolUse("add_todo", { title: "tea" }), {
      ...text(answer),
      stream: { chunkChars: 3, totalMs: 600 },
    });
    expect(await exchange("add tea", "any time.")).toEqual(["bot> 🔧 新增待辦：tea ✓", answer, "> "]);
  },
  60_000,
);

it(
  "the two tool calls of one turn end as one final line each, a status line wider than the " +
    "screen leaves nothing behind, a long zh-TW answer stays whole",
  async () => {
    const expression = "(1200 + 800) * 0.05 + 123456789 * 987654321 - 42";
    const answer =
      "算好了：結果是 121932631112635269 加上 58，也就是 121932631112635327。現在的時間也查到了，還有什麼想算的嗎？";
    started.fake.enqueue(
      {
        ...toolUses(
          [
            { name: "calculate", input: { expression } },
            { name: "get_current_datetime", input: {} },
          ],
          "讓我算一下。",
        ),
        stream: { chunkChars: 2, totalMs: 100 },
      },
      { ...text(answer), stream: { chunkChars: 2, totalMs: 800 } },
    );
    expect(await exchange("幫我算", "還有什麼想算的嗎")).toEqual([
      "bot> 讓我算一下。",
      `🔧 計算：${expression} ✓`,
      "🔧 查詢時間 ✓",
      answer,
      "> ",
    ]);
    // No streamed piece was erased by the prompt's clearing (the bug: `\r\x1b[K` before every delta).
    expect(
      started.chat
        .raw()
        .split("\n")
        .filter((l) => l.split("\x1b[K").length > 2),
    ).toEqual([]);
  },
  60_000,
);
