/**
 * MCP tools end to end (Telegram, and one approval on Discord): the real grammy and discord.js
 * clients against the fake platforms, the worker
 * connected to two real MCP servers built with the official SDK (test/fixtures/mcp: a stdio child
 * process and a Streamable HTTP server), and the fake model calling the MCP tools by their
 * toolbox names. The secrets the config takes from `${VAR}` must appear in no log line.
 */
import path from "node:path";
import type { Chat, User } from "grammy/types";
import { afterAll, beforeAll, expect, it } from "vitest";
import { text, toolUse, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { startHttpMcpFixture, type HttpMcpFixture } from "../fixtures/mcp/http-server.js";
import { recordedCalls, stdioEntry, tempDir, writeMcpConfig } from "../mcp/support.js";
import { useStack, type Stack } from "./harness.js";
import { scriptedModel } from "./scripted-model.js";

const WAIT = 20_000;
const STDIO_SECRET = `e2e-stdio-secret-${Math.random().toString(36).slice(2, 12)}`;
const HTTP_SECRET = `e2e-http-secret-${Math.random().toString(36).slice(2, 12)}`;
const dir = tempDir();
const callsFile = path.join(dir, "calls.jsonl");
const configFile = writeMcpConfig(dir, {
  notebook: stdioEntry({
    env: { CALLS_FILE: callsFile, FIXTURE_TOKEN: "${E2E_STDIO_SECRET}" },
    include: ["echo", "add_note", "snapshot", "crash"],
    trustAnnotations: true,
  }),
  items: {
    url: "${E2E_ITEMS_URL}",
    headers: { Authorization: "Bearer ${E2E_HTTP_SECRET}" },
    include: ["delete_item"],
    trustAnnotations: true,
  },
});

/** The fake model: `mcp …` phrases call the MCP tools; everything else is the usual scripted model. */
function mcpModel(request: FakeRequest): FakeMessageReply {
  const last = request.messages[request.messages.length - 1]!;
  const said =
    typeof last.content === "string"
      ? last.content
      : last.content
          .filter((b) => b.type === "text")
          .map((b) => String(b.text))
          .join(" ");
  let m: RegExpExecArray | null;
  if ((m = /^mcp echo (.+)$/.exec(said))) return toolUse("notebook__echo", { text: m[1]! });
  if ((m = /^mcp note (.+)$/.exec(said))) return toolUse("notebook__add_note", { text: m[1]!, priority: 2 });
  if (/^mcp bad note$/.test(said)) return toolUse("notebook__add_note", { text: "", priority: "high" });
  if (/^mcp picture$/.test(said)) return toolUse("notebook__snapshot", {});
  if (/^mcp crash$/.test(said)) return toolUse("notebook__crash", {});
  if ((m = /^mcp delete (\d+)$/.exec(said))) return toolUse("items__delete_item", { id: Number(m[1]) });
  if (
    typeof last.content !== "string" &&
    last.content.some(
      (b) =>
        b.type === "tool_result" &&
        Array.isArray(b.content) &&
        (b.content as { type: string }[]).some((c) => c.type === "image"),
    )
  ) {
    return text("I can see the picture.");
  }
  return scriptedModel(request);
}

let http: HttpMcpFixture;
beforeAll(async () => {
  http = await startHttpMcpFixture({ token: HTTP_SECRET });
  process.env.E2E_ITEMS_URL = http.url;
  process.env.E2E_STDIO_SECRET = STDIO_SECRET;
  process.env.E2E_HTTP_SECRET = HTTP_SECRET;
});
afterAll(async () => {
  await http.close();
});

let stack: Stack;
useStack({ model: mcpModel, env: { MCP_CONFIG: configFile } }, (started) => {
  stack = started;
});

const dm = (id: number, name: string): { user: User; chat: Chat } => stack.telegram.dm(id, name);

const promptIn = (chatId: number): Promise<FakeSentMessage> => stack.telegram.buttonsMessage(chatId, WAIT);

async function answerIn(chatId: number, needle: string): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () => tg.sent.find((m) => m.chatId === chatId && m.text.includes(needle)),
    WAIT,
    `an answer with ${needle}`,
  );
}

it("the MCP tools are offered to the model under their names, with the server's schema", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8101, "Alice");
  tg.sendUserMessage({ chat, from: user, text: "mcp echo hello" });
  await answerIn(8101, "notebook__echo:");
  const request = stack.model.requests.find((r) =>
    r.messages.some((m) => m.role === "user" && JSON.stringify(m.content).includes("mcp echo hello")),
  )!;
  const names = (request.tools ?? []).map((t) => t.name);
  expect(names).toEqual(
    expect.arrayContaining([
      "notebook__echo",
      "notebook__add_note",
      "notebook__snapshot",
      "items__delete_item",
      "get_current_datetime",
    ]),
  );
  expect(request.tools!.find((t) => t.name === "notebook__add_note")!.input_schema).toMatchObject({
    type: "object",
    required: ["text", "priority"],
  });
});

it("a read-only MCP tool runs without a prompt", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8102, "Ben");
  tg.sendUserMessage({ chat, from: user, text: "mcp echo 你好" });
  const answer = await answerIn(8102, "notebook__echo:");
  expect(answer.text).toBe("notebook__echo: echo: 你好");
  expect(tg.sent.filter((m) => m.chatId === 8102 && tg.buttons(m).length > 0)).toEqual([]);
  expect(recordedCalls(callsFile).filter((c) => c.tool === "echo" && c.args.text === "你好")).toHaveLength(1);
});

it("a non-read-only MCP tool asks its requester, with server, tool and input; approved, it runs once", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8103, "Carol");
  tg.sendUserMessage({ chat, from: user, text: "mcp note buy milk" });
  const prompt = await promptIn(8103);
  expect(prompt.text).toContain("使用 MCP 伺服器「notebook」的工具 add_note");
  expect(prompt.text).toContain("• text: buy milk");
  expect(prompt.text).toContain("• priority: 2");
  expect(recordedCalls(callsFile).filter((c) => c.tool === "add_note")).toEqual([]);
  const approve = stack.telegram.approveData(prompt);
  tg.pressButton({ from: user, message: prompt, data: approve });
  const answer = await answerIn(8103, "notebook__add_note:");
  expect(answer.text).toBe("notebook__add_note: note added: buy milk (priority 2)");
  // a second click on the (now closed) prompt runs nothing more
  tg.pressButton({ from: user, message: prompt, data: approve });
  await new Promise((r) => setTimeout(r, 500));
  expect(recordedCalls(callsFile).filter((c) => c.tool === "add_note")).toEqual([
    expect.objectContaining({ args: { text: "buy milk", priority: 2 } }),
  ]);
});

it("input that breaks the schema gets field errors, no prompt and no call", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8104, "Dan");
  const before = recordedCalls(callsFile).length;
  tg.sendUserMessage({ chat, from: user, text: "mcp bad note" });
  const answer = await answerIn(8104, "notebook__add_note:");
  expect(answer.text).toContain('Invalid input for tool "notebook__add_note"');
  expect(answer.text).toContain("text: must be at least 1 character, got 0 characters");
  expect(answer.text).toContain('priority: expected an integer, got "high"');
  expect(tg.sent.filter((m) => m.chatId === 8104 && tg.buttons(m).length > 0)).toEqual([]);
  expect(recordedCalls(callsFile)).toHaveLength(before);
});

it("a destructive tool of the Streamable HTTP server asks first and runs once on approval", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8105, "Eve");
  tg.sendUserMessage({ chat, from: user, text: "mcp delete 42" });
  const prompt = await promptIn(8105);
  expect(prompt.text).toContain("使用 MCP 伺服器「items」的工具 delete_item");
  expect(prompt.text).toContain("• id: 42");
  expect(http.calls).toEqual([]);
  tg.pressButton({ from: user, message: prompt, data: stack.telegram.approveData(prompt) });
  const answer = await answerIn(8105, "items__delete_item:");
  expect(answer.text).toBe("items__delete_item: deleted item 42");
  expect(http.calls).toEqual([{ tool: "delete_item", args: { id: 42 } }]);
});

it("an image from an MCP tool reaches the model as an image block; the stored history keeps a placeholder", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8106, "Finn");
  tg.sendUserMessage({ chat, from: user, text: "mcp picture" });
  await answerIn(8106, "I can see the picture.");
  const sent = stack.model.requests.find((r) => JSON.stringify(r.messages).includes('"type":"image"'))!;
  const result = (sent.messages.at(-1)!.content as { type: string; content?: { type: string }[] }[])[0]!;
  expect(result.content!.map((c) => c.type)).toEqual(["text", "image"]);
  tg.sendUserMessage({ chat, from: user, text: "and tomorrow?" });
  await answerIn(8106, "Earlier you asked");
  const next = stack.model.requests.at(-1)!;
  expect(JSON.stringify(next.messages)).not.toContain('"type":"image"');
  expect(JSON.stringify(next.messages)).toContain("[an image the tool returned; not kept in the history]");
});

it("a server that exits mid-call: the model gets a tool error it can act on; the worker reconnects and the tool works again", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8108, "Hana");
  const pids = new Set(recordedCalls(callsFile).map((c) => c.pid));
  tg.sendUserMessage({ chat, from: user, text: "mcp crash" });
  const answer = await answerIn(8108, "notebook__crash:");
  expect(answer.text).toContain('The connection to MCP server "notebook" dropped during the crash call');
  const logs = () => JSON.stringify(stack.logs());
  await tg.waitFor(() => logs().includes("MCP server notebook: connected again"), WAIT, "the reconnection");
  tg.sendUserMessage({ chat, from: user, text: "mcp echo back" });
  expect((await answerIn(8108, "notebook__echo: echo: back")).text).toBe("notebook__echo: echo: back");
  const newPid = recordedCalls(callsFile).at(-1)!.pid;
  expect(pids.has(newPid)).toBe(false);
});

it("on Discord too: a destructive MCP tool asks by button and runs once on approval", async () => {
  const dc = stack.discord;
  const ivy = { id: "70300000000000001", username: "ivy", global_name: "Ivy" };
  const channel = dc.dmChannel(ivy);
  const before = http.calls.length;
  dc.sendUserMessage(ivy, "mcp delete 77", { dm: true });
  const buttonsOf = (id: string) =>
    ((dc.message(id)?.components ?? []) as { components: { custom_id: string }[] }[]).flatMap((r) => r.components);
  const prompt = await dc.waitFor(
    () => dc.sent.find((m) => m.channelId === channel && buttonsOf(m.id).length > 0),
    WAIT,
    "the approval prompt",
  );
  // Discord's prompt shows the action as it is: its Markdown characters escaped (`_` would start italics).
  expect(prompt.content).toContain("使用 MCP 伺服器「items」的工具 delete\\_item");
  expect(prompt.content).toContain("• id: 77");
  expect(http.calls.length).toBe(before);
  dc.clickButton(
    ivy,
    prompt.id,
    buttonsOf(prompt.id)
      .map((b) => b.custom_id)
      .find((c) => c.endsWith(":y"))!,
  );
  const answer = await dc.waitFor(
    () => dc.sent.find((m) => m.channelId === channel && m.content.includes("items__delete_item:")),
    WAIT,
    "the answer",
  );
  expect(answer.content).toBe("items__delete_item: deleted item 77");
  expect(http.calls.slice(before)).toEqual([{ tool: "delete_item", args: { id: 77 } }]);
});

it("/tools in the adapter lists the MCP tools the workers announced; no secret is in any log line", async () => {
  await stack.restartAdapters();
  const tg = stack.telegram;
  const { user, chat } = dm(8107, "Gus");
  tg.sendUserMessage({ chat, from: user, text: "/tools" });
  const listing = await answerIn(8107, "notebook__echo");
  expect(listing.text).toContain("items__delete_item");
  const logs = JSON.stringify(stack.logs());
  expect(logs).toContain("MCP server notebook connected");
  expect(logs).not.toContain(STDIO_SECRET);
  expect(logs).not.toContain(HTTP_SECRET);
});

it("a stop as Ctrl-C reaches the stdio server too (one process group): no lost connection, no reconnection, then stopped", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(8109, "Iris");
  tg.sendUserMessage({ chat, from: user, text: "mcp echo last" });
  await answerIn(8109, "notebook__echo: echo: last");
  const pid = recordedCalls(callsFile).at(-1)!.pid;
  const before = stack.logs().length;
  // The terminal's Ctrl-C reaches the server as it reaches the bot; the server may be gone a
  // moment before the bot's own handler begins the stop.
  process.kill(pid, "SIGINT");
  await tg.waitFor(() => !isAlive(pid), WAIT, "the server to exit");
  await new Promise((r) => setTimeout(r, 50));
  await stack.worker.stop();
  await new Promise((r) => setTimeout(r, 1500)); // past the grace and a reconnection's backoff
  const messages = stack
    .logs()
    .slice(before)
    .map((l) => String(l.msg));
  expect(messages.filter((m) => /connection lost|reconnect|connected again/.test(m))).toEqual([]);
  expect(messages).toContain("stopped");
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
