/**
 * Lines in order (piped input): a command, or a `y` typed before its prompt is shown, waits until
 * the messages typed before it are answered, and its reply never lands inside a streamed answer.
 * All lines are written at once, as a pipe delivers them, into the real console adapter, queue,
 * worker and history on a real Redis and the strict fake Messages API.
 */
import { expect, it } from "vitest";
import { text, toolUse } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { todoModel, waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

it("piped `add todo a`, `add todo b`, `/context`: both streamed answers whole, then /context counting their 8 messages", async () => {
  const { input, output, fake } = await start({ config: testConfig({ ROLE: "all", STREAMING: "on" }) });
  const answerA = "Added a to your todo list; it is number 1.";
  const answerB = "Added b to your todo list; it is number 2.";
  fake.enqueue(
    toolUse("add_todo", { item: "a" }),
    { ...text(answerA), stream: { chunkChars: 3, totalMs: 300 } },
    toolUse("add_todo", { item: "b" }),
    { ...text(answerB), stream: { chunkChars: 3, totalMs: 300 } },
  );
  input.write("add todo a\nadd todo b\n/context\n");
  await waitFor(() => output.lines.join("").includes("則訊息"), 15_000, "the /context reply");
  expect(output.lines.join("")).toBe(
    `bot> 🔧 add_todo… ✓\n${answerA}\nbot> 🔧 add_todo… ✓\n${answerB}\nbot> ${output.answers().at(-1)}\n`,
  );
  expect(output.answers().at(-1)).toContain("目前保留全部 8 則訊息的原文");
});

it("piped `add todo tea`, `delete todo 1`, `y`, `/context`: the y answers the prompt shown for the line before it", async () => {
  const { input, output } = await start({ config: testConfig({ ROLE: "all" }), fake: { fallback: todoModel } });
  input.write("add todo tea\ndelete todo 1\ny\n/context\n");
  await waitFor(() => output.answers().some((a) => a.includes("則訊息")), 15_000, "the /context reply");
  await waitFor(() => output.answers().includes("ok: deleted #1: tea"), 15_000, "the approved call's answer");
  const answers = output.answers();
  expect(answers.slice(0, 2)).toEqual([
    "ok: added #1: tea",
    expect.stringMatching(/^⚠️ 需要確認：delete_todo \{"number":1\}\n {5}要執行嗎？/),
  ]);
  expect(answers).toContain("已確認，處理中…");
  expect(answers).not.toContain("目前沒有等待確認的動作。");
  // The prompt was decided the moment it appeared (closed by its run and by the decision): its outcome is written once.
  expect(answers.filter((a) => a === '✅ 已確認：delete_todo {"number":1}')).toHaveLength(1);
});

it("piped `add todo tea`, `delete todo 1`, `a`, `/permissions`: the command waits for the resumed run, and lists the new grant after its answer", async () => {
  const { input, output } = await start({ config: testConfig({ ROLE: "all" }), fake: { fallback: todoModel } });
  input.write("add todo tea\ndelete todo 1\na\n/permissions\n");
  await waitFor(
    () => output.answers().some((a) => a.includes("delete_todo") && !a.startsWith("⚠️") && !a.startsWith("✅")),
    15_000,
    "the /permissions reply",
  );
  const answers = output.answers();
  const deleted = answers.indexOf("ok: deleted #1: tea");
  const listing = answers.findIndex((a) => a.includes("delete_todo") && !a.startsWith("⚠️") && !a.startsWith("✅"));
  expect(deleted).toBeGreaterThan(-1);
  // The listing comes after the resumed run's answer, and shows the grant the `a` recorded.
  expect(listing).toBeGreaterThan(deleted);
  expect(answers[listing]).not.toContain("沒有");
});
