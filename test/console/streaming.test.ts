/**
 * The console with `STREAMING=on`: the real worker and loop streaming from the strict fake
 * Messages API; the terminal prints text deltas as they come and a status line per tool call.
 */
import { expect, it } from "vitest";
import { text, toolUse } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { ConsoleOutbound } from "../../adapters/console/index.js";
import { silentLogger } from "../../src/log.js";
import { openLiveAnswer } from "../../src/streaming.js";
import { CapturingStream, waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

it("prints the answer's deltas as they come, a status line while the tool runs, and the answer once", async () => {
  const { input, output, fake } = await start({ config: testConfig({ ROLE: "all", STREAMING: "on" }) });
  const answer = "已經幫你加入待辦：tea。還需要別的嗎？";
  fake.enqueue(toolUse("add_todo", { item: "tea" }), { ...text(answer), stream: { chunkChars: 4, totalMs: 200 } });
  input.write("add todo tea\n");
  await waitFor(() => output.lines.join("").includes(`${answer}\n`), 10_000, "the streamed answer");
  const printed = output.lines.join("");
  expect(printed).toBe(`bot> 🔧 add_todo… ✓\n${answer}\n`);
  // the answer arrived in several writes (deltas), and was not printed a second time
  expect(output.lines.length).toBeGreaterThan(4);
  expect(printed.split(answer).length).toBe(2);
});

it("a reminder that comes due while an answer streams is printed after the answer, not inside its line", async () => {
  const output = new CapturingStream();
  const outbound = new ConsoleOutbound({ output, locale: "en" });
  const conversation = { platform: "console" as const, chatId: "local" };
  const stream = openLiveAnswer(outbound.liveSurface({ conversation, chatKind: "dm", replyTo: "m1" }), {
    intervalMs: 0,
    log: silentLogger,
  });
  stream.push({ type: "text", text: "The weather in " });
  const reminder = outbound.sendReminder({
    conversation,
    chatKind: "dm",
    owner: { userId: "me", userName: "Me" },
    text: "⏰ pay the bill",
    token: "t1",
  });
  stream.push({ type: "text", text: "Taipei is fine." });
  await stream.finish("The weather in Taipei is fine.");
  await reminder;
  expect(output.lines.join("")).toBe("bot> The weather in Taipei is fine.\nbot> ⏰ pay the bill\n");
});

it("two streamed answers at once take turns: the second is printed once the first has ended", async () => {
  const output = new CapturingStream();
  const outbound = new ConsoleOutbound({ output, locale: "en" });
  const conversation = { platform: "console" as const, chatId: "local" };
  const first = openLiveAnswer(outbound.liveSurface({ conversation, chatKind: "dm", replyTo: "m1" }), {
    intervalMs: 0,
    log: silentLogger,
  });
  const second = openLiveAnswer(outbound.liveSurface({ conversation, chatKind: "dm", replyTo: "m2" }), {
    intervalMs: 0,
    log: silentLogger,
  });
  first.push({ type: "text", text: "Deleted: " });
  second.push({ type: "text", text: "You live " });
  first.push({ type: "text", text: "#1 milk." });
  second.push({ type: "text", text: "in Hsinchu." });
  const secondDone = second.finish("You live in Hsinchu.");
  await first.finish("Deleted: #1 milk.");
  await secondDone;
  expect(output.lines.join("")).toBe("bot> Deleted: #1 milk.\nbot> You live in Hsinchu.\n");
});
