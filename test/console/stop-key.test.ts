/**
 * Issue 42 in `npm run chat` in a real terminal (a pseudo-terminal): Ctrl-G stops the answer being
 * streamed — the model's stream ends within 1 s, the text written so far stays on screen followed
 * by `⏹ 已停止`, and the prompt comes back. The fake Messages API holds its stream mid-way
 * (injected pacing), so only the stop can end it.
 */
import { expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { waitFor } from "../worker/harness.js";
import { useTerminalChat } from "./terminal.js";

const started = useTerminalChat({ cols: 60 });

it("Ctrl-G stops the streamed answer: the stream ends within 1 s, the partial text stays, marked", async () => {
  const written = "臺北市今天晴時多雲，";
  let release = () => {};
  const hold = new Promise<void>((resolve) => (release = resolve));
  started.fake.enqueue({
    ...text(`${written}午後有局部短暫陣雨。`),
    stream: { chunkChars: [...written].length, holdAfterChars: [...written].length, hold },
  });
  started.chat.type("天氣如何？");
  await started.chat.waitForScreen((rows) => rows.some((r) => r.includes(written)), "the streamed beginning");
  const pressedAt = Date.now();
  started.chat.keys("\x07"); // Ctrl-G
  await waitFor(() => started.fake.cutOff.length === 1, 10_000, "the model stream closed");
  expect(started.fake.cutOff[0]!.at - pressedAt).toBeLessThan(1000);
  await started.chat.waitForScreen(
    (rows) => rows.some((r) => r.includes("⏹ 已停止")) && rows[rows.length - 1] === "> ",
    "the stop mark and the prompt",
  );
  expect(started.chat.lines().join("\n")).not.toContain("午後");
  // The text so far is printed once, then the notice and the mark.
  const lines = started.chat.lines();
  expect(lines.filter((l) => l.includes(written))).toHaveLength(1);
  const at = lines.findIndex((l) => l.includes(written));
  expect(lines.slice(at, at + 3)).toEqual([`bot> ${written}`, "⏹ 正在停止…", "⏹ 已停止"]);
  release();
}, 60_000);

it("/stop typed while a many-line answer streams: the text so far is printed once, the `> /stop` line before the notice", async () => {
  const written = "第 1 行：開頭\n第 2 行：整段";
  let release = () => {};
  const hold = new Promise<void>((resolve) => (release = resolve));
  started.fake.enqueue({
    ...text(`${written}之後還有很多\n第 3 行：不會出現`),
    stream: { chunkChars: [...written].length, holdAfterChars: [...written].length, hold },
  });
  started.chat.type("寫幾行字");
  await started.chat.waitForScreen((rows) => rows.some((r) => r.includes("第 2 行：整段")), "the streamed beginning");
  started.chat.type("/stop");
  await waitFor(() => started.fake.cutOff.length === 2, 10_000, "the model stream closed");
  await started.chat.waitForScreen(
    (rows) => rows.filter((r) => r.includes("⏹ 已停止")).length === 2 && rows[rows.length - 1] === "> ",
    "the stop mark and the prompt",
  );
  const lines = started.chat.lines();
  expect(lines.filter((l) => l.includes("第 1 行"))).toHaveLength(1);
  expect(lines.filter((l) => l.includes("第 2 行"))).toHaveLength(1);
  expect(lines.join("\n")).not.toContain("第 3 行");
  const at = lines.findIndex((l) => l.includes("第 1 行"));
  expect(lines.slice(at, at + 6)).toEqual([
    "bot> 第 1 行：開頭",
    "第 2 行：整段",
    "> /stop",
    "⏹ 正在停止…",
    "⏹ 已停止",
    "> ",
  ]);
  release();
}, 60_000);
