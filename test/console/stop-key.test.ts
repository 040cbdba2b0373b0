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
  release();
}, 60_000);
