/**
 * MCP servers that hand the bot what real servers ship and the Messages API refuses, or what a
 * compromised server would send (issue 25 items 1–3, issue 26 item 3), end to end: the real
 * grammy client against the fake Telegram, the worker connected to the hostile fixture server
 * (a real MCP server built with the official SDK, test/fixtures/mcp/hostile-server.ts) and the
 * strict fake Messages API, which refuses a top-level `anyOf`, a bracketed property key and a
 * name over 64 characters as the real API does (every test also checks that it refused nothing).
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { text, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { hostileEntry, recordedCalls, tempDir, writeMcpConfig } from "../mcp/support.js";
import { useStack, type Stack } from "./harness.js";
import { answerIn as answerInChat, callingModel, telegramDm } from "./mcp-helpers.js";
import { lastUserTyped } from "./scripted-model.js";

const WAIT = 20_000;
const LONG_PREFIX = "generate_quarterly_financial_report_for_the_selected_business_unit";
const dir = tempDir();
const callsFile = path.join(dir, "calls.jsonl");
const trustedCalls = path.join(dir, "trusted-calls.jsonl");

/** `<server>__<tool>` cut to 55 characters, `_` and 8 hex digits of its SHA-256 (what the README promises). */
function hashedName(full: string): string {
  return `${full.slice(0, 55)}_${createHash("sha256").update(full).digest("hex").slice(0, 8)}`;
}
const PDF_NAME = hashedName(`hostile__${LONG_PREFIX}_as_pdf`);
const CSV_NAME = hashedName(`hostile__${LONG_PREFIX}_as_csv`);

const configFile = writeMcpConfig(dir, {
  hostile: hostileEntry({
    env: { CALLS_FILE: callsFile },
    exclude: ["wipe", "flip", "peek", "look"],
    // The operator's word: these run without approval (annotations are not trusted here).
    safe: ["search_pages", "list_apps", "gallery", "posters", "grow", `${LONG_PREFIX}_as_csv`],
  }),
  trusted: hostileEntry({
    env: { CALLS_FILE: trustedCalls },
    include: ["wipe", "flip", "peek", "look"],
    trustAnnotations: true,
  }),
  untrusted: hostileEntry({ include: ["look"] }),
});

/** The fake model: `ping` is answered `pong`; everything else as {@link callingModel}. */
function model(request: FakeRequest): FakeMessageReply {
  return lastUserTyped(request)?.trim() === "ping" ? text("pong") : callingModel(request);
}

let stack: Stack;
useStack({ model, env: { MCP_CONFIG: configFile } }, (started) => {
  stack = started;
});
afterEach(() => {
  // no request of any test was refused: every schema offered was acceptable
  expect(stack.model.rejections).toEqual([]);
});

const dm = (id: number, name: string) => telegramDm(stack, id, name);

const answerIn = (chatId: number, needle: string) => answerInChat(stack, chatId, needle, WAIT);

const promptIn = (chatId: number): Promise<FakeSentMessage> => stack.telegram.buttonsMessage(chatId, WAIT);

const prompts = (chatId: number) =>
  stack.telegram.sent.filter((m) => m.chatId === chatId && stack.telegram.buttons(m).length > 0);
const offered = () => stack.model.requests.at(-1)!.tools ?? [];
const logs = () => stack.logs().map((l) => String(l.msg));

it("a tool with a top-level anyOf is offered as one object schema; the server's schema still checks the input", async () => {
  const { user, chat } = dm(9101, "Amy");
  stack.telegram.sendUserMessage({ chat, from: user, text: 'call hostile__search_pages {"query":"budget","limit":3}' });
  await answerIn(9101, 'hostile__search_pages: searched: {"query":"budget","limit":3}');
  const schema = offered().find((t) => t.name === "hostile__search_pages")!.input_schema!;
  expect(Object.keys(schema)).not.toContain("anyOf");
  expect(schema).toMatchObject({
    type: "object",
    properties: { limit: { type: "integer" }, query: { type: "string" }, page_id: { type: "string" } },
  });
  expect(schema.required).toBeUndefined();
  expect(schema.description).toBe("Give the fields of one of these sets: (query) or (page_id).");

  // neither a query nor a page id: the server's anyOf refuses it before any call
  stack.telegram.sendUserMessage({ chat, from: user, text: 'call hostile__search_pages {"limit":3}' });
  const refused = await answerIn(9101, 'Invalid input for tool "hostile__search_pages"');
  expect(refused.text).toContain("query: is required");
  expect(refused.text).toContain("page_id: is required");
  expect(recordedCalls(callsFile).filter((c) => c.tool === "search_pages")).toEqual([
    expect.objectContaining({ args: { query: "budget", limit: 3 } }),
  ]);
});

it("bracketed property keys are renamed for the model and mapped back for the server", async () => {
  const { user, chat } = dm(9102, "Bob");
  stack.telegram.sendUserMessage({
    chat,
    from: user,
    text: 'call hostile__list_apps {"filter.bundleId":"tw.example.app","limit":2}',
  });
  await answerIn(9102, "hostile__list_apps: apps:");
  const schema = offered().find((t) => t.name === "hostile__list_apps")!.input_schema!;
  expect(Object.keys(schema.properties as object)).toEqual(["filter.bundleId", "filter.name", "limit"]);
  expect(schema.required).toEqual(["filter.bundleId"]);
  expect(
    recordedCalls(callsFile)
      .filter((c) => c.tool === "list_apps")
      .map((c) => c.args),
  ).toEqual([{ "filter[bundleId]": "tw.example.app", limit: 2 }]);

  // a missing field is named as the model knows it
  stack.telegram.sendUserMessage({ chat, from: user, text: 'call hostile__list_apps {"limit":2}' });
  expect((await answerIn(9102, 'Invalid input for tool "hostile__list_apps"')).text).toContain(
    "filter.bundleId: is required",
  );
});

it("two tool names equal in their first 64 characters both load, as distinct names ending in a hash of the full name", async () => {
  const names = stack.toolbox.names();
  expect(names).toEqual(expect.arrayContaining([PDF_NAME, CSV_NAME]));
  expect(PDF_NAME).not.toBe(CSV_NAME);
  expect(PDF_NAME).toHaveLength(64);
  const { user, chat } = dm(9103, "Cid");
  stack.telegram.sendUserMessage({ chat, from: user, text: `call ${CSV_NAME}` });
  await answerIn(9103, `${CSV_NAME}: ${LONG_PREFIX}_as_csv done`);
  expect(
    recordedCalls(callsFile)
      .filter((c) => c.tool.startsWith(LONG_PREFIX))
      .map((c) => c.tool),
  ).toEqual([`${LONG_PREFIX}_as_csv`]);
  expect(offered().find((t) => t.name === PDF_NAME)).toBeDefined();
});

it("a result with 40 images passes 5 on, each converted; images past 5 MB together are left out; both with a warning", async () => {
  const { user, chat } = dm(9104, "Dee");
  stack.telegram.sendUserMessage({ chat, from: user, text: "call hostile__gallery" });
  const answer = await answerInChat(stack, 9104, "hostile__gallery: 40 pictures", 50_000);
  expect(answer.text).toContain("[35 images left out: at most 5 images of one result are passed on]");
  const request = stack.model.requests.at(-1)!;
  const result = (request.messages.at(-1)!.content as { type: string; content?: { type: string }[] }[])[0]!;
  expect(result.content!.filter((c) => c.type === "image")).toHaveLength(5);
  expect(logs()).toContain(
    "MCP server hostile: 35 images of a gallery result left out (at most 5 images of one result are passed on)",
  );

  stack.telegram.sendUserMessage({ chat, from: user, text: "call hostile__posters" });
  expect((await answerInChat(stack, 9104, "hostile__posters: 3 posters", 50_000)).text).toContain(
    "[1 image left out: the images of one result may have 5 MB together]",
  );
  const posters = (
    stack.model.requests.at(-1)!.messages.at(-1)!.content as {
      content?: { type: string; source?: { data: string } }[];
    }[]
  )[0]!.content!;
  const images = posters.filter((c) => c.type === "image");
  expect(images).toHaveLength(2);
  expect(images.reduce((n, i) => n + i.source!.data.length, 0)).toBeLessThanOrEqual(5 * 1024 * 1024);
  expect(logs()).toContain(
    "MCP server hostile: 1 image of a posters result left out (the images of one result may have 5 MB together)",
  );
}, 120_000); // 40 small images and three 800×800 posters are made and converted: 10 s or more on a loaded machine

it("a description over 4000 characters is cut for the model, with one warning naming the server", () => {
  const story = stack.toolbox.get("hostile__long_story")!;
  expect(story.description.length).toBe(4000);
  expect(story.description.endsWith("…")).toBe(true);
  expect(logs().filter((m) => m.includes('the description of "long_story"'))).toEqual([
    'MCP server hostile: the description of "long_story" has 10808 characters; the model gets the first 4000',
  ]);
});

it("a huge schema arriving by list_changed is refused before compiling, and another chat is answered meanwhile", async () => {
  const tg = stack.telegram;
  const a = dm(9105, "Eli");
  const b = dm(9106, "Fay");
  tg.sendUserMessage({ chat: a.chat, from: a.user, text: "call hostile__grow" });
  await answerIn(9105, "hostile__grow: grown");
  await tg.waitFor(
    () => logs().find((m) => m === "MCP server hostile: tool list changed; refreshing"),
    WAIT,
    "the refresh",
  );
  const sent = Date.now();
  tg.sendUserMessage({ chat: b.chat, from: b.user, text: "ping" });
  await answerIn(9106, "pong");
  // the compile of this schema blocked a worker for over 20 s; a busy test machine answers a ping in well under 8
  expect(Date.now() - sent).toBeLessThan(8000);
  await tg.waitFor(
    () => logs().find((m) => m.startsWith("MCP tool hostile/pick_region skipped:")),
    WAIT,
    "the skip warning",
  );
  expect(logs().find((m) => m.startsWith("MCP tool hostile/pick_region skipped:"))).toMatch(
    /^MCP tool hostile\/pick_region skipped: its input schema is \d+ KB, over the limit of 64 KB$/,
  );
  expect(stack.toolbox.get("hostile__pick_region")).toBeUndefined();
  expect(stack.toolbox.get("hostile__search_pages")).toBeDefined();
});

it("annotations are claims: untrusted, read-only asks; trusted, read-only runs; read-only + destructive always asks", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(9107, "Gil");
  tg.sendUserMessage({ chat, from: user, text: "call untrusted__look" });
  await promptIn(9107);
  expect(stack.toolbox.get("untrusted__look")).toMatchObject({ dangerous: true, readOnly: false });

  const other = dm(9108, "Hal");
  tg.sendUserMessage({ chat: other.chat, from: other.user, text: "call trusted__look" });
  await answerIn(9108, "trusted__look: look done");
  expect(prompts(9108)).toEqual([]);

  tg.sendUserMessage({ chat: other.chat, from: other.user, text: "call trusted__peek" });
  await promptIn(9108);
  expect(stack.toolbox.get("trusted__peek")).toMatchObject({ dangerous: true, readOnly: false });
  expect(recordedCalls(trustedCalls).map((c) => c.tool)).toEqual(["look"]);
});

it("a tool that claims read-only after list_changed keeps asking for approval until restart, with one warning", async () => {
  const tg = stack.telegram;
  const { user, chat } = dm(9109, "Ida");
  expect(stack.toolbox.get("trusted__wipe")).toMatchObject({ dangerous: true });
  tg.sendUserMessage({ chat, from: user, text: "call trusted__flip" });
  const prompt = await promptIn(9109);
  tg.pressButton({
    from: user,
    message: prompt,
    data: tg
      .buttons(prompt)
      .map((b) => b.callback_data!)
      .find((d) => d.endsWith(":y"))!,
  });
  await answerIn(9109, "trusted__flip: flipped");
  const warning =
    'MCP server trusted: tool "wipe" now claims to need less than when the worker first saw it ' +
    "(its annotations changed); it still asks for approval until the worker restarts";
  await tg.waitFor(() => logs().includes(warning), WAIT, "the warning");
  expect(stack.toolbox.get("trusted__wipe")).toMatchObject({ dangerous: true, readOnly: false });

  const before = prompts(9109).length;
  tg.sendUserMessage({ chat, from: user, text: "call trusted__wipe" });
  await tg.waitFor(() => prompts(9109).length > before || undefined, WAIT, "a second prompt");
  expect(recordedCalls(trustedCalls).filter((c) => c.tool === "wipe")).toEqual([]);
  expect(logs().filter((m) => m === warning)).toHaveLength(1);
});
