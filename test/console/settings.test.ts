/**
 * Settings in the terminal chat (issue 31): the console has no buttons, so settings are typed
 * (`/settings <name> <value>`); with `STREAMING=on`, `/settings streaming off` makes this
 * conversation's answers arrive whole (the model is asked without `stream`) from the next message.
 */
import { expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

it("/settings streaming off: the next answer is asked for and printed whole; on again streams again", async () => {
  const { input, output, fake } = await start({ config: testConfig({ ROLE: "all", STREAMING: "on" }) });
  input.write("/settings\n");
  await waitFor(() => output.lines.join("").includes("/settings <項目> <值>"), 10_000, "the settings listing with the typing hint");
  expect(output.lines.join("")).toContain("• 邊寫邊顯示回答：開");

  input.write("/settings streaming off\n");
  await waitFor(() => output.lines.join("").includes("邊寫邊顯示回答：關。"), 10_000, "the change confirmed");
  const whole = "這是一次完整送出的回答。";
  fake.enqueue({ ...text(whole), stream: { chunkChars: 2, totalMs: 100 } });
  const before = output.lines.length;
  input.write("answer whole please\n");
  await waitFor(() => output.lines.join("").includes(whole), 10_000, "the answer");
  expect(fake.requests.at(-1)!.stream).toBeUndefined();
  expect(output.lines.slice(before).filter((l) => l.includes("完整")).length).toBe(1);

  input.write("/settings streaming on\n");
  await waitFor(() => output.lines.join("").includes("邊寫邊顯示回答：開。"), 10_000, "streaming on again");
  const streamed = "這一次又是一段一段出現的回答。";
  fake.enqueue({ ...text(streamed), stream: { chunkChars: 2, totalMs: 100 } });
  input.write("answer streamed please\n");
  await waitFor(() => output.lines.join("").includes(`${streamed}\n`), 10_000, "the streamed answer");
  expect(fake.requests.at(-1)!.stream).toBe(true);
});
