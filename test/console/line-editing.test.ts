/**
 * `npm run chat` in a real pseudo-terminal, read as a terminal emulator shows it: the line editor
 * (`adapters/console/terminal.ts`). Arrow keys move the cursor instead of being sent as text, ↑
 * recalls earlier lines (also from the history file of an earlier session), Ctrl-L clears the
 * screen, Backspace, Ctrl-U and Ctrl-W on Chinese text leave the screen as what is sent, emoji
 * are stepped over and deleted whole; Ctrl-C during a streamed answer prints its notice on a line
 * of its own after the answer. One chat (zh-TW, 40 columns, so lines wrap) for the whole file.
 */
import { readFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, expect, it } from "vitest";
import { text, type FakeAnthropic } from "../fakes/anthropic.js";
import { waitFor } from "../worker/harness.js";
import { useTerminalChat, type TerminalChat } from "./terminal.js";

const LEFT = "\x1b[D";
const UP = "\x1b[A";
const BACKSPACE = "\x7f";
const CTRL_U = "\x15";
const CTRL_W = "\x17";
const CTRL_L = "\x0c";
const CTRL_C = "\x03";

const started = useTerminalChat({
  cols: 40,
  rows: 12,
  // An earlier session's lines, oldest first.
  prepare: async (cwd) => {
    await mkdir(path.join(cwd, ".data"), { recursive: true });
    await writeFile(path.join(cwd, ".data", "chat-history"), "from last time\n");
  },
});
let chat: TerminalChat;
let fake: FakeAnthropic;
beforeAll(async () => {
  ({ chat, fake } = started);
  await chat.waitForScreen((rows) => rows[rows.length - 1] === "> ", "the prompt");
});

/** The text of the newest request's last user turn. */
function lastSent(): string {
  const messages = fake.requests[fake.requests.length - 1]!.messages;
  const content = messages[messages.length - 1]!.content;
  return typeof content === "string"
    ? content
    : content.flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : [])).join("\n");
}

/** Waits until the prompt's row (the last one) reads `row`. */
async function promptReads(row: string): Promise<void> {
  await chat.waitForScreen((rows) => rows[rows.length - 1] === row, `the prompt to read ${JSON.stringify(row)}`);
}

/** Presses Enter on what is typed, answers it with `answer`, and waits for the answer and the prompt after it. */
async function send(answer: string): Promise<void> {
  const requests = fake.requests.length;
  fake.enqueue(text(answer));
  chat.keys("\r");
  await waitFor(() => fake.requests.length > requests, 30_000, "the message to reach the model");
  await chat.waitForScreen(
    (rows) => rows[rows.length - 1] === "> " && rows.some((r) => r.includes(answer)),
    `the answer ${answer} and the prompt after it`,
  );
}

it("←← then X inserts before the last two characters; no escape sequence reaches the message", async () => {
  chat.keys("abc");
  await promptReads("> abc");
  chat.keys(`${LEFT}${LEFT}X`);
  await promptReads("> aXbc");
  await send("ok-1");
  expect(lastSent()).toContain("aXbc");
  expect(lastSent()).not.toContain("[D");
  expect(chat.screen()).toContain("> aXbc");
}, 60_000);

it("↑ recalls the lines typed before, the newest first, then the earlier session's from the history file", async () => {
  chat.keys(UP);
  await promptReads("> aXbc");
  chat.keys(UP);
  await promptReads("> from last time");
  chat.keys(CTRL_U);
  await promptReads("> ");
  await waitFor(
    async () => (await readFile(path.join(chat.cwd, ".data", "chat-history"), "utf8")) === "from last time\naXbc\n",
    10_000,
    "the history file to hold both lines",
  );
}, 60_000);

it("Backspace, Ctrl-U and Ctrl-W on Chinese text: the screen shows what is sent", async () => {
  chat.keys("買牛奶和雞蛋");
  await promptReads("> 買牛奶和雞蛋");
  chat.keys(`${BACKSPACE}${BACKSPACE}`);
  await promptReads("> 買牛奶和");
  chat.keys(`${BACKSPACE}${LEFT}${LEFT}麵包`);
  await promptReads("> 買麵包牛奶");
  await send("ok-2");
  expect(lastSent()).toContain("買麵包牛奶");
  expect(chat.screen()).toContain("> 買麵包牛奶");

  chat.keys("刪掉這一整行的中文字");
  await promptReads("> 刪掉這一整行的中文字");
  chat.keys(CTRL_U);
  await promptReads("> ");
  chat.keys("明天 見面 wait no");
  chat.keys(`${CTRL_W}${CTRL_W}好`);
  await promptReads("> 明天 見面 好");
  await send("ok-3");
  expect(lastSent()).toContain("明天 見面 好");
  expect(lastSent()).not.toMatch(/刪掉|wait/);
}, 60_000);

it("a line longer than the terminal wraps, and editing at its start redraws every row of it", async () => {
  const long = "這是一行很長的中文訊息，比四十欄的終端機還要寬，所以會折成兩行以上。";
  chat.keys(long);
  await chat.waitForScreen(() => chat.lines().at(-1) === `> ${long}`, "the long line, wrapped");
  chat.keys(`\x01${"\x1b[C".repeat(2)}${BACKSPACE}${BACKSPACE}那`); // Ctrl-A, → →, ⌫ ⌫
  await chat.waitForScreen(() => chat.lines().at(-1) === `> 那${[...long].slice(2).join("")}`, "the edited line");
  await send("ok-4");
  expect(lastSent()).toContain(`那${[...long].slice(2).join("")}`);
}, 60_000);

it("emoji are stepped over and deleted whole (a skin tone, a variation selector)", async () => {
  chat.keys(`a👍🏽b${LEFT}${LEFT}X${BACKSPACE}${BACKSPACE}`);
  chat.keys(`❤️${LEFT}Y`);
  await send("ok-5");
  // a👍🏽b → ←← (over b, over 👍🏽) → aX👍🏽b → ⌫⌫ (X, then a) → 👍🏽b → ❤️👍🏽b → ← → Y❤️👍🏽b
  expect(lastSent()).toContain("Y❤️👍🏽b");
}, 60_000);

it("Ctrl-L clears the screen: the prompt is the first row", async () => {
  chat.keys("half typed");
  await promptReads("> half typed");
  chat.keys(CTRL_L);
  await chat.waitForScreen(
    () => chat.viewport().join("\n") === "> half typed",
    "a cleared screen with the prompt on top",
  );
  chat.keys(CTRL_U);
  await promptReads("> ");
}, 60_000);

it("Ctrl-C during a streamed answer: the answer's line stays whole, the notice comes on its own line after it", async () => {
  const answer = "一個慢慢串流出來的回答，中間按下 Ctrl-C 也不會被打斷。";
  fake.enqueue({ ...text(answer), stream: { chunkChars: 2, totalMs: 1500 } });
  chat.keys("慢慢回答\r");
  await chat.waitForScreen((rows) => rows.some((r) => r.startsWith("bot> 一個慢")), "the answer to start");
  chat.keys(CTRL_C);
  expect(await chat.exited).toBe(0);
  const lines = chat.lines();
  const at = lines.findIndex((l) => l.startsWith("bot> 一個慢"));
  expect(lines[at]).toBe(`bot> ${answer}`);
  expect(lines[at + 1]).toMatch(/^正在結束對話/);
}, 60_000);
