/**
 * Issue 42 (Stop) in the terminal: `/stop` typed while an answer streams stops it at once (it does
 * not wait behind the answer as other commands do), through the real console adapter, queue,
 * worker and the strict fake Messages API holding its stream mid-way (injected pacing).
 */
import { describe, expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const WRITTEN = "The weather in Taipei today: ";
const REST = "sunny, later some showers, 22 to 28 degrees.";

describe("Stop in the console", () => {
  const startStack = useConsoleBot();

  it("/stop while the answer streams ends it within 1 s, marked; the next line is answered; /stop with nothing running says so", async () => {
    const { output, type, fake } = await startStack({
      config: testConfig({ ROLE: "all", STREAMING: "on", BOT_LOCALE: "en" }),
    });
    let release = () => {};
    const hold = new Promise<void>((resolve) => (release = resolve));
    fake.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: WRITTEN.length, holdAfterChars: WRITTEN.length, hold },
    });
    type("how is the weather?");
    await waitFor(() => output.lines.join("").includes(WRITTEN.trim()), 10_000, "the streamed beginning");
    const typedAt = Date.now();
    type("/stop");
    await waitFor(() => fake.cutOff.length === 1, 10_000, "the model stream closed");
    expect(fake.cutOff[0]!.at - typedAt).toBeLessThan(1000);
    await waitFor(() => output.lines.join("").includes("⏹ Stopped"), 10_000, "the stop mark");
    expect(output.lines.join("")).not.toContain(REST.slice(0, 10));
    expect(output.lines.join("")).not.toContain("Stopping this answer."); // the mark is the reply

    fake.enqueue(text("Still here."));
    type("are you there?");
    await waitFor(() => output.lines.join("").includes("Still here."), 10_000, "the next answer");
    const history = JSON.stringify(fake.requests[fake.requests.length - 1]!.messages);
    expect(history).toContain(WRITTEN.trim());
    expect(history).toContain("⏹ Stopped");
    type("/stop");
    await waitFor(
      () => output.lines.join("").includes("No answer is being written here right now: nothing to stop."),
      10_000,
      "/stop with nothing running",
    );
    expect(fake.rejections).toEqual([]);
    release();
  });
});
