import { describe, expect, it } from "vitest";
import { markdownToTelegramHtml } from "../../adapters/telegram/html.js";
import { htmlToPlain } from "../../adapters/telegram/split.js";
import { markdownLiteral, markdownToPlain } from "../../src/plain-text.js";

/** Texts people choose that Markdown would read as formatting, or that would lose characters. */
const TRICKY = [
  "**drink** water",
  "rm *_old_*.log",
  "a`b`c and ```fence```",
  "~~gone~~ ~one~",
  "||spoiler|| a|b",
  "[a](b) ![i](x) [ref]: http://example.com",
  "<b>bold</b> <https://example.com> <@123> <t:1:R> <#456>",
  "# heading",
  "#3 is not one",
  "###### six",
  "1. first",
  "12) twelfth",
  "- item",
  "+ item",
  "* item",
  "-# small text",
  "> quote",
  ">>> quote to the end",
  "title\n===",
  "title\n---",
  "---",
  "***",
  "___",
  "|a|b|\n|-|-|\n|1|2|",
  "back\\slash \\* \\\\ C:\\Users\\x end\\",
  "line\\\nbreak",
  "@everyone @here hi",
  "&amp; &#42; &copy;",
  "https://example.com/a_b_c and www.example.com/*x* and (https://x.y/a_b).",
  "a_b@example.com",
  "line one\n# two\n1. three\n> four\n- five",
  "🙂 *表情* 中文**粗體**",
];

describe("markdownLiteral: text people chose, shown as it is inside the bot's Markdown", () => {
  it("LINE's and the console's converter (markdownToPlain) and Telegram's Markdown → HTML show every tricky text exactly", () => {
    for (const text of TRICKY) {
      const markdown = markdownLiteral(text);
      expect({ text, plain: markdownToPlain(markdown) }).toEqual({ text, plain: text });
      expect({ text, telegram: htmlToPlain(markdownToTelegramHtml(markdown)) }).toEqual({ text, telegram: text });
      // Nothing of it is formatting on Telegram: no tag at all (a bare web or e-mail address alone is linked).
      if (!/https?:|www\.|\w@\w/.test(text)) expect(markdownToTelegramHtml(markdown)).not.toMatch(/<[a-z]/);
    }
  });

  it("escapes with backslashes, which Discord drops before punctuation too; line-start marks only at a line's start", () => {
    expect(markdownLiteral("**drink** water")).toBe("\\*\\*drink\\*\\* water");
    expect(markdownLiteral("rm *_old_*.log")).toBe("rm \\*\\_old\\_\\*.log");
    expect(markdownLiteral("# a #b\n1. c 2. d\n-# e - f")).toBe("\\# a #b\n1\\. c 2. d\n\\-# e - f");
    expect(markdownLiteral("<@123> ||x|| [a](b)")).toBe("\\<@123> \\|\\|x\\|\\| \\[a](b)");
    expect(markdownLiteral("see https://example.com/a_b_c")).toBe("see https://example.com/a_b_c");
    expect(markdownLiteral("")).toBe("");
    expect(markdownLiteral("繳電費")).toBe("繳電費");
  });
});
