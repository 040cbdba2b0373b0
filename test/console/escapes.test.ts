/**
 * Terminal escapes in stored text (hostile input): a todo whose title carries BEL, an SGR escape
 * sequence, NUL and a bidi override reaches the terminal through the real console adapter, queue,
 * worker, tools and history, on a real Redis and the strict fake Messages API — in a tool's
 * status line, in a streamed answer and in an answer printed whole (the model repeats the title as
 * the user wrote it; the todo tool itself stores it as one plain line). Nothing of it may drive the
 * terminal: its controls are shown as Control Pictures (`␛[31m`), the override is removed.
 */
import { expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { plainLine } from "../../src/plain-text.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { searchReply, text, toolUse, toolUses } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

const TITLE = "bell\x07 esc\x1b[31mRED\x1b[0m nul\x00 bidi\u202e…";
const SHOWN = "bell␇ esc␛[31mRED␛[0m nul␀ bidi…";
/** What must never reach the terminal: C0 controls but tab and line feed, DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const RAW = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/;

it("a todo titled with BEL, ESC[31m, NUL and U+202E is printed harmless: status line, streamed answer, whole answer", async () => {
  const config = testConfig({ ROLE: "all", STREAMING: "on" });
  const { toolbox } = await loadTools({ config, log: silentLogger });
  const { output, type, fake } = await start({ config, toolbox });
  const printed = () => output.lines.join("");

  // The todo tool stores its title as one plain line; the model's text (and a tool's activity) carry it as given.
  fake.enqueue(
    toolUses([
      { name: "add_todo", input: { title: TITLE } },
      { name: "calculate", input: { expression: `1 + 1 ${TITLE}` } },
    ]),
    { ...text(`已新增待辦「${TITLE}」。`), stream: { chunkChars: 3, totalMs: 100 } },
  );
  type("add a todo");
  await waitFor(() => printed().includes("。\n"), 10_000, "the streamed answer");
  expect(printed()).toBe(
    // The title ends with its own `…`: the running line's mark is not added twice (src/cut.ts).
    `bot> 🔧 新增待辦：${plainLine(TITLE)} ✓\n🔧 計算：1 + 1 ${SHOWN} ✗\n已新增待辦「${SHOWN}」。\n`,
  );

  type("/settings streaming off");
  await waitFor(() => printed().includes("邊寫邊顯示回答：關。"), 10_000, "streaming off");
  const before = output.lines.length;
  fake.enqueue(toolUse("list_todos", {}), text(`你的待辦：\n1. ${TITLE}`));
  type("list my todos");
  await waitFor(() => output.lines.slice(before).join("").includes("你的待辦"), 10_000, "the whole answer");
  expect(output.lines.slice(before).join("")).toBe(`bot> 你的待辦：\n1. ${SHOWN}\n`);
  expect(JSON.stringify(fake.requests.at(-1)!.messages.at(-1))).toContain(plainLine(TITLE));

  expect(printed()).not.toMatch(RAW);
});

it("issue 39 (6): web search sources show their real host beside a spoofing title, without its bidi and control characters", async () => {
  const config = testConfig({ ROLE: "all", STREAMING: "off" });
  const { toolbox } = await loadTools({ config, log: silentLogger });
  const { output, type, fake } = await start({ config, toolbox });
  const printed = () => output.lines.join("");
  const spoof = {
    url: "https://bank-gov-tw.example/login",
    title: "臺灣銀行 bank.gov.tw 官方網站\u202E\u0007 \u001b[31m登入",
  };
  fake.enqueue(
    searchReply(
      "臺灣銀行 登入",
      [spoof],
      [{ text: "請到官方網站登入。", citations: [{ ...spoof, cited_text: "登入" }] }],
    ),
  );
  type("臺灣銀行怎麼登入？");
  await waitFor(() => printed().includes("bank-gov-tw.example`"), 10_000, "the answer with its sources");
  // The terminal shows the link's real address after the title (and the host beside it), the title's controls gone.
  expect(printed()).toContain(
    "來源：\n1. 臺灣銀行 bank.gov.tw 官方網站 [31m登入 (https://bank-gov-tw.example/login) `bank-gov-tw.example`",
  );
  expect(printed()).not.toMatch(RAW);
});
