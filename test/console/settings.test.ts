/**
 * Settings in the terminal chat (issue 31): the console has no buttons, so settings are typed
 * (`/settings <name> <value>`); with `STREAMING=on`, `/settings streaming off` makes this
 * conversation's answers arrive whole (the model is asked without `stream`) from the next message.
 */
import { expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { MAX_INCOMING_TEXT } from "../../src/queue/incoming.js";
import { todoModel, waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

it("/settings streaming off: the next answer is asked for and printed whole; on again streams again", async () => {
  const { input, output, fake } = await start({ config: testConfig({ ROLE: "all", STREAMING: "on" }) });
  input.write("/settings\n");
  await waitFor(
    () => output.lines.join("").includes("/settings <項目> <值>"),
    10_000,
    "the settings listing with the typing hint",
  );
  expect(output.lines.join("")).toContain("• 邊寫邊顯示回答：開");

  input.write("/settings streaming off\n");
  await waitFor(() => output.lines.join("").includes("邊寫邊顯示回答：關。"), 10_000, "the change confirmed");
  const whole = "這是一次完整送出的回答。";
  fake.enqueue({ ...text(whole), stream: { chunkChars: 2, totalMs: 100 } });
  const before = output.lines.length;
  input.write("answer whole please\n");
  await waitFor(() => output.lines.join("").includes(whole), 10_000, "the answer");
  // every call is read as a stream (its idle bound); with streaming off the answer is printed once, whole
  expect(output.lines.slice(before).filter((l) => l.includes("完整")).length).toBe(1);

  input.write("/settings streaming on\n");
  await waitFor(() => output.lines.join("").includes("邊寫邊顯示回答：開。"), 10_000, "streaming on again");
  const streamed = "這一次又是一段一段出現的回答。";
  fake.enqueue({ ...text(streamed), stream: { chunkChars: 2, totalMs: 100 } });
  input.write("answer streamed please\n");
  await waitFor(() => output.lines.join("").includes(`${streamed}\n`), 10_000, "the streamed answer");
  expect(fake.requests.at(-1)!.stream).toBe(true);
});

it("/settings language en (BOT_LOCALE zh-TW): the console's own texts are in English from the next line, approval prompt and acks included", async () => {
  const { output, type } = await start({
    config: testConfig({ ROLE: "all", BOT_LOCALE: "zh-TW" }),
    fake: { fallback: todoModel },
  });
  const answers = () => output.answers();
  const said = (check: (a: string) => boolean, what: string) => waitFor(() => answers().some(check), 15_000, what);
  type("/settings language en");
  await said((a) => a === "Done: my own messages are in English from now on.", "the change confirmed");
  type("/nope");
  await said(
    (a) => a.startsWith("Unknown command /nope. Commands: /help /tools"),
    "the unknown-command list in English",
  );
  expect(answers().at(-1)).toMatch(/ \/quit$/);
  type("/reminders");
  await said((a) => a === "You have no reminders set here.", "the empty /reminders in English");
  type("y");
  await said((a) => a === "Nothing is waiting for confirmation.", "no pending approval, in English");
  type("x".repeat(MAX_INCOMING_TEXT + 1));
  await said(
    (a) => a === `That message is too long (at most ${MAX_INCOMING_TEXT} characters). Please shorten it.`,
    "too long, in English",
  );
  type("/help");
  await said(
    (a) =>
      a.endsWith(
        "\n\nIn this terminal: /quit leaves; answer a confirmation with y (yes), n (no), or a (always allow, when the prompt offers it).",
      ),
    "the /help footer in English",
  );

  type("add todo tea");
  await said((a) => a === "ok: added #1: tea", "the todo added");
  const prompts = () => answers().filter((a) => a.startsWith("⚠️"));
  type("delete todo 1");
  await waitFor(() => prompts().length === 1, 15_000, "the prompt");
  expect(prompts()[0]).toMatch(
    /^⚠️ Confirmation needed: .+\n {5}Go ahead\? Type y \(yes\), n \(no\) or a \(always allow: do not ask again for this tool here\) within \d+ s\.$/,
  );
  type("n");
  await said((a) => a === "Cancelled.", "the cancel ack in English");
  await said((a) => a.startsWith("ok:") && a.includes("declined"), "the answer after cancel");
  type("delete todo 1");
  await waitFor(() => prompts().length === 2, 15_000, "the second prompt");
  type("a");
  await said(
    (a) =>
      a ===
      "Confirmed, working on it…\n     For the next 30 days you will not be asked again for this tool here (/permissions to revoke).",
    "the always-allow ack, on two lines",
  );
  await said((a) => a === "ok: deleted #1: tea", "the todo deleted");
  expect(answers().join("\n")).not.toMatch(/[\u4e00-\u9fff]/);
}, 60_000);

it("/help names every setting on its /settings line, voice replies included, in zh-TW and English", async () => {
  const { output, type } = await start({ config: testConfig({ ROLE: "all", BOT_LOCALE: "zh-TW" }) });
  const answers = () => output.answers();
  type("/help");
  await waitFor(() => answers().some((a) => a.includes("在這個終端機")), 10_000, "the /help in zh-TW");
  expect(answers().at(-1)).toMatch(/^- \/settings\b.* — 這個聊天的設定：角色、模型、語言、串流、群組回覆、語音回覆$/m);
  type("/settings language en");
  type("/help");
  await waitFor(() => answers().some((a) => a.includes("In this terminal")), 10_000, "the /help in English");
  expect(answers().at(-1)).toMatch(
    /^- \/settings\b.* — This chat's settings: persona, model, language, streaming, group replies, voice replies$/m,
  );
});
