/**
 * Issue 42 (voice replies) in the terminal chat: the real console adapter and worker, the strict
 * fake speech API (real MP3) and the strict fake Messages API. `/settings voice always` (typed: the
 * console has no buttons) makes the next answer saved as an MP3 file under the voice folder, its
 * path printed before the text answer.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { VOICE_FAILED } from "../../src/worker/voice-reply.js";
import { text } from "../fakes/anthropic.js";
import { speechFixture, startFakeSpeech, type FakeSpeech } from "../fakes/speech.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();
let tts: FakeSpeech;
let voiceDir: string;
beforeAll(async () => {
  tts = await startFakeSpeech();
  voiceDir = mkdtempSync(path.join(tmpdir(), "voice-replies-"));
});
afterAll(async () => {
  await tts.close();
  rmSync(voiceDir, { recursive: true, force: true });
});

it("/settings voice always: the answer is saved as MP3 under the voice folder and its path printed before the text; a failure adds one line", async () => {
  const { output, type, fake } = await start({
    config: testConfig({ ROLE: "all", STREAMING: "on", TTS_BASE_URL: tts.base, TTS_API_KEY: tts.key }),
    voiceDir,
  });
  const answers = () => output.answers();
  type("/settings");
  await waitFor(() => answers().some((a) => a.includes("• 語音回覆：關")), 10_000, "the voice line of the listing");
  type("/settings voice always");
  await waitFor(() => answers().some((a) => a.startsWith("好的，語音回覆：每則回答")), 10_000, "the change confirmed");

  fake.enqueue(text("今天天氣晴朗，適合出門。"));
  type("今天天氣如何");
  await waitFor(() => answers().some((a) => a === "今天天氣晴朗，適合出門。"), 15_000, "the text answer");
  const all = answers();
  const voiceLine = all.findIndex((a) => a.startsWith("🔊 語音回覆（0:03）："));
  expect(voiceLine).toBeGreaterThanOrEqual(0);
  expect(voiceLine).toBeLessThan(all.indexOf("今天天氣晴朗，適合出門。"));
  const printed = all[voiceLine]!.slice("🔊 語音回覆（0:03）：".length);
  expect(path.dirname(printed)).toBe(voiceDir);
  expect(readdirSync(voiceDir)).toEqual([path.basename(printed)]);
  expect(printed).toMatch(/\.mp3$/);
  expect(readFileSync(printed).equals(speechFixture("speech.mp3"))).toBe(true);
  expect(statSync(printed).mode & 0o777).toBe(0o600);
  expect(tts.requests.at(-1)!.body).toEqual({
    model: "tts-1",
    voice: "alloy",
    input: "今天天氣晴朗，適合出門。",
    response_format: "mp3",
  });

  // A rejected key: not retried; the text with one line, no file.
  tts.failNext({ status: 401 });
  fake.enqueue(text("第二個回答。"));
  type("再問一次");
  await waitFor(
    () => answers().some((a) => a.startsWith("第二個回答。")),
    15_000,
    "the text answer after the failed voice reply",
  );
  expect(answers().find((a) => a.startsWith("第二個回答。"))).toBe(`第二個回答。\n\n${VOICE_FAILED["zh-TW"]}`);
  expect(readdirSync(voiceDir)).toHaveLength(1);
}, 40_000);
