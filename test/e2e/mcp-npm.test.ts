/**
 * Real MCP servers from npm, end to end (issue 38 items 4–6): `@modelcontextprotocol/server-filesystem`
 * and `@modelcontextprotocol/server-everything` as stdio child processes of the worker, the real
 * grammy client against the fake Telegram, and the strict fake Messages API (the scripted model
 * calls a tool on `call <tool> <json>` and then repeats each `tool_result` as its answer).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, expect, it } from "vitest";
import { tempDir, writeMcpConfig } from "../mcp/support.js";
import { useStack, type Stack } from "./harness.js";
import { answerIn as answerInChat, callingModel, telegramDm } from "./mcp-helpers.js";

const WAIT = 20_000;
const require = createRequire(import.meta.url);
/** The servers' entry points, run with this node (no npx, no network). */
const FILESYSTEM = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");
const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const dir = tempDir();
const files = path.join(dir, "files");
/** A text file of 15 150 characters, as in the issue (a line number on each line, so a cut would show). */
const LONG_TEXT = Array.from({ length: 310 }, (_, i) => `line ${String(i).padStart(3, "0")} ${"x".repeat(40)}`)
  .join("\n")
  .slice(0, 15_150);

const configFile = writeMcpConfig(dir, {
  files: {
    command: process.execPath,
    args: [FILESYSTEM, files],
    safe: ["read_text_file", "read_media_file"],
    include: ["read_text_file", "read_media_file", "write_file"],
  },
  everything: {
    command: process.execPath,
    args: [EVERYTHING, "stdio"],
    safe: ["get-tiny-image", "get-annotated-message", "get-structured-content", "trigger-long-running-operation"],
    timeoutMs: 1000,
  },
});

let stack: Stack;
beforeAll(async () => {
  mkdirSync(files, { recursive: true });
  writeFileSync(path.join(files, "long.txt"), LONG_TEXT);
  const png = await sharp(randomBytes(64 * 64 * 3), { raw: { width: 64, height: 64, channels: 3 } })
    .png()
    .toBuffer();
  writeFileSync(path.join(files, "photo.png"), png);
});
useStack({ model: callingModel, env: { MCP_CONFIG: configFile } }, (started) => {
  stack = started;
});

const dm = (id: number, name: string) => telegramDm(stack, id, name);

const answerIn = (chatId: number, needle: string) => answerInChat(stack, chatId, needle, WAIT);

type Block = { type: string; text?: string; content?: string | Block[]; source?: { data: string } };

/** The `tool_result` the model was sent for the call of `tool` (the last message of the request after its `tool_use`). */
async function toolResultFor(tool: string): Promise<Block> {
  const request = await stack.telegram.waitFor(
    () =>
      stack.model.requests.find((r) => {
        const [before, last] = r.messages.slice(-2);
        return (
          before?.role === "assistant" &&
          Array.isArray(before.content) &&
          (before.content as { type: string; name?: string }[]).some((b) => b.type === "tool_use" && b.name === tool) &&
          Array.isArray(last?.content)
        );
      }),
    WAIT,
    `the tool_result of ${tool}`,
  );
  return (request.messages.at(-1)!.content as Block[]).find((b) => b.type === "tool_result")!;
}

it("a text file read by server-filesystem reaches the model once: its text, not its text and the same as JSON", async () => {
  const { user, chat } = dm(8301, "Amy");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: `call files__read_text_file ${JSON.stringify({ path: path.join(files, "long.txt") })}`,
  });
  const result = await toolResultFor("files__read_text_file");
  expect(result.content).toBe(LONG_TEXT);
  expect(LONG_TEXT).toHaveLength(15_150);
});

it("an image read by server-filesystem reaches the model as one image, without its base64 as text beside it", async () => {
  const { user, chat } = dm(8302, "Bob");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: `call files__read_media_file ${JSON.stringify({ path: path.join(files, "photo.png") })}`,
  });
  const result = await toolResultFor("files__read_media_file");
  const blocks = result.content as Block[];
  expect(blocks.map((b) => b.type)).toEqual(["text", "image"]);
  expect(blocks[0]!.text).toBe("(the tool returned the image below)");
  expect(JSON.stringify(blocks).length).toBeLessThan(blocks[1]!.source!.data.length + 300);
});

it("text, image, text of server-everything keep their order in the tool_result", async () => {
  const { user, chat } = dm(8303, "Cat");
  stack.telegram.sendUserMessage({ chat, from: user, text: "call everything__get-tiny-image {}" });
  const result = await toolResultFor("everything__get-tiny-image");
  const blocks = result.content as Block[];
  expect(blocks.map((b) => b.type)).toEqual(["text", "image", "text"]);
  expect(blocks[0]!.text).toBe("Here's the image you requested:");
  expect(blocks[2]!.text).toBe("The image above is the MCP logo.");
});

it("content meant for the user only is shown to the user and not sent to the model", async () => {
  const { user, chat } = dm(8304, "Dee");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: 'call everything__get-annotated-message {"messageType":"success","includeImage":true}',
  });
  const result = await toolResultFor("everything__get-annotated-message");
  const sent = JSON.stringify(result);
  expect(sent).not.toContain("Operation completed successfully");
  expect(sent).not.toContain('"type":"image"');
  expect(sent).toContain("it was shown to them directly");
  const answer = await answerIn(8304, "🔧 everything:");
  expect(answer.text).toContain("🔧 everything: Operation completed successfully");
  expect(answer.text).toContain("（工具傳回 1 張給你的圖片，這裡無法顯示）");
});

it("structuredContent is left out when the text content already carries the result", async () => {
  const { user, chat } = dm(8305, "Eli");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: 'call everything__get-structured-content {"location":"Chicago"}',
  });
  const result = await toolResultFor("everything__get-structured-content");
  expect(result.content).toBe('{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}');
});

it("a call that times out: the model is told it is unknown whether it took effect, not that it was stopped", async () => {
  const { user, chat } = dm(8306, "Fay");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: 'call everything__trigger-long-running-operation {"duration":3,"steps":3}',
  });
  const answer = await answerIn(8306, "everything__trigger-long-running-operation:");
  expect(answer.text).toContain("did not finish within 1 s, so it is unknown whether it took effect");
  expect(answer.text).toContain("Do not repeat it blindly");
  expect(answer.text).not.toContain("was stopped");
});

it("the approval prompt shows a multi-line value as a quoted block, cut with …(N more characters)", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8307, "Gil");
  const content = ["# Notes", "", "first line", "second line", "x".repeat(900)].join("\n");
  tg.sendUserMessage({
    chat,
    from: user,
    text: `call files__write_file ${JSON.stringify({ path: path.join(files, "notes.md"), content })}`,
  });
  const prompt = await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 8307 && tg.buttons(m).length > 0),
    WAIT,
    "the approval prompt",
  );
  const quote = prompt.entities.find((e) => e.type === "blockquote")!;
  expect(quote).toBeDefined();
  const quoted = prompt.text.slice(quote.offset, quote.offset + quote.length);
  expect(quoted.startsWith("# Notes\n\nfirst line\nsecond line\nxxx")).toBe(true);
  const shown = 800 - "# Notes\n\nfirst line\nsecond line\n".length;
  expect(quoted.endsWith(`x…(${900 - shown} more characters)`)).toBe(true);
  expect(prompt.text).toContain(`• content:\n# Notes`);
});
