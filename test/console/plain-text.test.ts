import { describe, expect, it } from "vitest";
import { markdownToPlain, terminalText } from "../../src/plain-text.js";

// The console's command replies and LINE's texts go through the one converter, markdownToPlain
// (the console had a regex converter of its own, `plainText`, until newcomer round 4).
describe("markdownToPlain for a command's Markdown reply in the terminal", () => {
  it("keeps code spans as they are: two MCP names with __ on one line are not read as emphasis", () => {
    expect(markdownToPlain("工具：`notes__read_notes`、`notes__add_note`")).toBe(
      "工具：notes__read_notes、notes__add_note",
    );
    // Without backticks too: underscores inside a word are no emphasis (CommonMark).
    expect(markdownToPlain("工具：notes__read_notes、notes__add_note")).toBe(
      "工具：notes__read_notes、notes__add_note",
    );
  });

  it("still removes bold markers outside code and writes links as text (url)", () => {
    expect(markdownToPlain("**待辦** __清單__ [說明](https://example.com/a)")).toBe(
      "待辦 清單 說明 (https://example.com/a)",
    );
  });
});

describe("terminalText (users' and the model's text on the terminal)", () => {
  it("keeps lines, tabs and emoji sequences; shows C0 controls and DEL; drops C1, bidi and zero-width characters", () => {
    expect(terminalText("a\r\nb\tc\u2028d")).toBe("a\nb\tc\nd");
    expect(terminalText("x\ry\x7f\x1b]0;title\x07")).toBe("x␍y␡␛]0;title␇");
    expect(terminalText("\u009b31mred \u202eexe.pdf \u2066iso\u2069 z\u200bw\ufeff")).toBe("31mred exe.pdf iso zw");
    expect(terminalText("👩‍💻 👍🏽 ❤️‍🔥 a\u200db")).toBe("👩‍💻 👍🏽 ❤️‍🔥 ab");
  });
});

describe("markdownToPlain (LINE shows text as it is)", () => {
  it("drops emphasis, fences and backticks, keeps words, links, lists, quotes and tables readable", () => {
    const markdown = [
      "**今天**（12/7）：_1,200_ tokens ~~old~~",
      "",
      "See [the docs](https://example.com/a) and https://example.com/b, `npm test`.",
      "",
      "- one",
      "- **two**",
      "  1. nested",
      "",
      "> quoted",
      "",
      "```js",
      "const x = a * b;",
      "```",
      "",
      "| a | b |",
      "|---|---|",
      "| 1 | 2 |",
    ].join("\n");
    expect(markdownToPlain(markdown)).toBe(
      [
        "今天（12/7）：1,200 tokens old",
        "",
        "See the docs (https://example.com/a) and https://example.com/b, npm test.",
        "",
        "• one\n• two\n  1. nested",
        "",
        "> quoted",
        "",
        "const x = a * b;",
        "",
        "a | b\n1 | 2",
      ].join("\n"),
    );
  });

  it("keeps the text's block spacing: a line over its list stays on the next line, blank lines stay one", () => {
    const reply = "可用的工具：\ntodo\n- `add_todo` — 新增待辦\n- **list_todos**\n\n\n\nweb\n- web_search";
    expect(markdownToPlain(reply)).toBe("可用的工具：\ntodo\n• add_todo — 新增待辦\n• list_todos\n\nweb\n• web_search");
    // The console keeps the dash a person would type (adapters/console/adapter.ts).
    expect(markdownToPlain(reply, { bullet: "- " })).toBe(
      "可用的工具：\ntodo\n- add_todo — 新增待辦\n- list_todos\n\nweb\n- web_search",
    );
  });

  it("leaves plain text as it is", () => {
    expect(markdownToPlain("hello 你好\nsecond line")).toBe("hello 你好\nsecond line");
  });
});
