/**
 * The console prints an answer's links readably: the sources of a web search (and any other
 * Markdown link of an answer) as `title (address)`, not `[title](<address>)`, whether the answer
 * was streamed (its sources follow the streamed text) or printed whole. Through the real bot, its
 * worker and loop, and the strict fake Messages API with its web search.
 */
import { expect, it } from "vitest";
import { markdownLiteral, terminalLinks } from "../../src/plain-text.js";
import { serverTools } from "../../src/toolbox/server-tools.js";
import type { Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import type { FakeMessageReply } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

/** A search whose answer cites one page, and names another page in a link of its own. */
const searched: FakeMessageReply = {
  content: [
    { type: "server_tool_use", id: "srvtoolu_links1", name: "web_search", input: { query: "颱風 停班停課" } },
    {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_links1",
      results: [{ url: "https://www.dgpa.gov.tw/typh", title: "停班停課 [資訊]" }],
    },
    {
      type: "text",
      text: "臺北市明天停班停課。",
      citations: [
        { url: "https://www.dgpa.gov.tw/typh", title: "停班停課 [資訊]", cited_text: "臺北市 明天 停止上班上課" },
      ],
    },
  ],
  stop_reason: "end_turn",
};

for (const streaming of ["on", "off"] as const)
  it(`prints a web search's sources as title (address) (STREAMING=${streaming})`, async () => {
    const config = testConfig({ ROLE: "all", STREAMING: streaming, WEB_SEARCH: "on" });
    const { input, output, fake } = await start({
      config,
      toolbox: new ToolBox(serverTools(config) as Tool[]),
    });
    fake.enqueue(searched);
    input.write("明天停班停課嗎？\n");
    await waitFor(() => output.lines.join("").includes("`www.dgpa.gov.tw`\n"), 10_000, "the answer with its sources");
    const printed = output.lines.join("");
    expect(printed).toContain(
      "臺北市明天停班停課。 [1]\n\n來源：\n1. 停班停課 [資訊] (https://www.dgpa.gov.tw/typh) `www.dgpa.gov.tw`\n",
    );
    expect(printed).not.toContain("](");
  });

it("terminalLinks writes links as title (address), escapes as the characters they stand for, and leaves the rest of the Markdown and code as written", () => {
  expect(
    terminalLinks("See **the** [docs](https://example.com/a) and https://example.com/b, <https://x.example/z>."),
  ).toBe("See **the** docs (https://example.com/a) and https://example.com/b, https://x.example/z.");
  expect(terminalLinks("1. [\\[demo\\] A result (scripted)](<https://example.com/s?q=a%20b>) `example.com`")).toBe(
    "1. [demo] A result (scripted) (https://example.com/s?q=a%20b) `example.com`",
  );
  // Text that only looks like a link stays text: in code, after a backslash (shown without it, as a
  // reader of the Markdown sees it); the link after it is still a link.
  expect(terminalLinks("`[a](b)` and \\[c](d), then [a](b)")).toBe("`[a](b)` and [c](d), then a (b)");
  // What people wrote, written into an answer as a Markdown literal (a tool's notice), reads as they wrote it.
  expect(terminalLinks(`done\n\n📝 ${markdownLiteral("記住了：**x** a_b `c` \\d")}`)).toBe(
    "done\n\n📝 記住了：**x** a_b `c` \\d",
  );
  expect(terminalLinks("`\\*` stays in code")).toBe("`\\*` stays in code");
  expect(terminalLinks("```\n[code](https://c.example)\n```\nafter [z](https://z.example)")).toBe(
    "```\n[code](https://c.example)\n```\nafter z (https://z.example)",
  );
  // Lists, quotes, tables, images, a label that writes another address (its real target is shown).
  expect(
    terminalLinks("- [one](https://a.example)\n  [two](https://b.example)\n- ![map](https://m.example/p.png)"),
  ).toBe("- one (https://a.example)\n  two (https://b.example)\n- map (https://m.example/p.png)");
  expect(terminalLinks("> [q](https://q.example)\n\n| a |\n|---|\n| [x](https://t.example) |")).toBe(
    "> q (https://q.example)\n\n| a |\n|---|\n| x (https://t.example) |",
  );
  expect(terminalLinks("[https://bank.example](https://evil.example)")).toBe(
    "https://bank.example (https://evil.example)",
  );
  expect(terminalLinks("mail foo@bar.example or <foo@bar.example>")).toBe("mail foo@bar.example or foo@bar.example");
  expect(terminalLinks("no links here")).toBe("no links here");
});
