/**
 * A slow MCP server never holds back the worker (issue 38 item 7), end to end: the worker starts
 * while its MCP server (the stdio fixture, a real MCP server built with the official SDK) has not
 * answered yet; a chat is answered meanwhile with the tools that are ready; the server's tools join
 * when it is up, with one log line. A long call's progress notifications show on the live status
 * line of the answer (the fake Telegram's drafts), and the call carries a progress token.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { stdioEntry, tempDir, writeMcpConfig } from "../mcp/support.js";
import { useStack, type Stack } from "./harness.js";
import { answerIn as answerInChat, callingModel, telegramDm } from "./mcp-helpers.js";

const WAIT = 20_000;
const dir = tempDir();
const startGate = path.join(dir, "start");
const stepGate = path.join(dir, "step");
const configFile = writeMcpConfig(dir, {
  notebook: stdioEntry({
    env: { START_GATE: startGate, STEP_GATE: stepGate },
    include: ["echo", "slow_steps"],
    safe: ["echo", "slow_steps"],
  }),
});

let stack: Stack;
useStack(
  {
    model: callingModel,
    env: { MCP_CONFIG: configFile, STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" },
    awaitMcp: false,
  },
  (started) => {
    stack = started;
  },
);
const dm = (id: number, name: string) => telegramDm(stack, id, name);

const answerIn = (chatId: number, needle: string) => answerInChat(stack, chatId, needle, WAIT);

const connectedLines = () =>
  stack.logs().filter((l) => typeof l.msg === "string" && l.msg.startsWith("MCP server notebook connected"));

it("the worker answers while its MCP server has not started; the server's tools join when it is up, with one log line", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8401, "Ann");
  tg.sendUserMessage({ chat, from: user, text: "what time is it?" });
  await answerIn(8401, "get_current_datetime:");
  const asked = stack.model.requests.at(-1)!;
  expect((asked.tools ?? []).map((t) => t.name)).not.toContain("notebook__echo");
  expect(connectedLines()).toEqual([]);

  writeFileSync(startGate, "go"); // the server starts now
  await tg.waitFor(() => connectedLines().length > 0, WAIT, "the server's log line");
  expect(connectedLines()).toEqual([expect.objectContaining({ tools: ["notebook__echo", "notebook__slow_steps"] })]);
  tg.sendUserMessage({ chat, from: user, text: 'call notebook__echo {"text":"up"}' });
  expect((await answerIn(8401, "notebook__echo:")).text).toBe("notebook__echo: echo: up\n\n🔧 notebook：echo");
});

it("a long MCP call shows the server's progress on the status line of the live answer", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8402, "Ben");
  writeFileSync(startGate, "go");
  await tg.waitFor(() => connectedLines().length > 0, WAIT, "the server");
  tg.sendUserMessage({ chat, from: user, text: "call notebook__slow_steps {}" });
  await tg.waitFor(
    () => tg.drafts.find((d) => d.chatId === chat.id && d.text.includes("(1/2 · halfway)")),
    WAIT,
    "the progress on the status line",
  );
  writeFileSync(stepGate, "go"); // the call goes on to its end
  const draft = tg.drafts.find((d) => d.chatId === chat.id && d.text.includes("(1/2 · halfway)"))!;
  expect(draft.text).toMatch(/^🔧 notebook：slow_steps… \(1\/2 · halfway\)/);
  const answer = await answerIn(8402, "notebook__slow_steps:");
  expect(answer.text).toBe("notebook__slow_steps: slow steps done (progress token: sent)\n\n🔧 notebook：slow_steps");
});
