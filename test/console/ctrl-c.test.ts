/**
 * Ctrl-C in `npm run chat` in a real terminal (a pseudo-terminal) while a many-line answer
 * streams: its notice comes after the whole answer, never between its lines, and in the chat's
 * language (zh-TW here). The fake Messages API holds its stream after a whole line (injected
 * pacing, no clock) until the chat's log shows that the Ctrl-C was handled.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { waitFor } from "../worker/harness.js";
import { useTerminalChat } from "./terminal.js";

const started = useTerminalChat({ cols: 80 });

it("Ctrl-C while a many-line answer streams: the notice, in zh-TW, comes after the answer's last line", async () => {
  const lines = Array.from({ length: 12 }, (_, i) => `第 ${i + 1} 行：慢慢寫出來的回答。`);
  const first = `${lines.slice(0, 4).join("\n")}\n`;
  let release = () => {};
  const hold = new Promise<void>((resolve) => (release = resolve));
  started.fake.enqueue({
    ...text(lines.join("\n")),
    stream: { chunkChars: [...first].length, holdAfterChars: [...first].length, hold },
  });
  started.chat.type("寫十二行");
  await started.chat.waitForScreen((rows) => rows.some((r) => r.startsWith("第 4 行")), "the first four lines");
  started.chat.keys("\x03"); // Ctrl-C
  const log = path.join(started.chat.cwd, ".data", "chat.log");
  await waitFor(
    async () => (await readFile(log, "utf8").catch(() => "")).includes("SIGINT: stopping"),
    10_000,
    "the Ctrl-C handled",
  );
  release();
  expect(await started.chat.exited).toBe(0);
  const screen = started.chat.lines();
  const at = screen.findIndex((l) => l.includes("第 1 行"));
  expect(screen.slice(at, at + 13)).toEqual([
    `bot> ${lines[0]}`,
    ...lines.slice(1),
    "正在結束對話（會等正在寫的回答寫完；再按一次 Ctrl-C 立即結束）。",
  ]);
  expect(screen.join("\n")).not.toContain("SIGINT");
}, 60_000);
