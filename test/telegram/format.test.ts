import { describe, expect, it } from "vitest";
import { markdownToTelegramHtml } from "../../adapters/telegram/html.js";
import { htmlToPlain, planChunks, splitHtml, TELEGRAM_TEXT_LIMIT } from "../../adapters/telegram/split.js";
import { formatHelp } from "../../src/commands/help.js";
import { formatToolList } from "../../src/commands/tools-listing.js";
import { z } from "zod";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { parseTelegramHtml } from "../fakes/telegram.js";
import { testConfig } from "../helpers/config.js";
import { loadShippedTools, SHIPPED_TOOLS } from "../tools/load.js";
import { testToolbox } from "./harness.js";

describe("markdown → Telegram HTML", () => {
  it("renders the supported subset and escapes the rest", () => {
    const html = markdownToTelegramHtml(
      "# 標題\n\n**粗** _斜_ ~~刪~~ `a<b` [連結](https://x.tw/?q=1&r=2) [壞](javascript:alert(1))\n\n- " +
        "一\n- 二\n  1. 甲\n\n> 引用 & 註\n\n```py\nprint(1 < 2)\n```\n\n<script>x</script>",
    );
    expect(html).toBe(
      [
        "<b>標題</b>",
        '<b>粗</b> <i>斜</i> <s>刪</s> <code>a&lt;b</code> <a href="https://x.tw/?q=1&amp;r=2">連結</a> 壞',
        "• 一\n• 二\n  1. 甲",
        "<blockquote>引用 &amp; 註</blockquote>",
        '<pre><code class="language-py">print(1 &lt; 2)</code></pre>',
        "&lt;script&gt;x&lt;/script&gt;",
      ].join("\n\n"),
    );
    expect(() => parseTelegramHtml(html)).not.toThrow();
  });

  it("produces HTML the strict parser accepts for awkward input", () => {
    for (const md of [
      "a & b < c > d",
      "**unclosed bold",
      "`` ` ``",
      "x <b>not a tag</b>",
      "&amp; &#123; &nbsp;",
      "1 < 2 && 3 > 2 **<i>**",
    ]) {
      const html = markdownToTelegramHtml(md);
      const parsed = parseTelegramHtml(html);
      expect(parsed.text.length).toBeGreaterThan(0);
    }
    expect(parseTelegramHtml(markdownToTelegramHtml("&amp; <b>")).text).toBe("&amp; <b>");
    expect(markdownToTelegramHtml("> outer\n> > inner")).toBe("<blockquote>outer\ninner</blockquote>");
  });
});

describe("splitting at 4096 UTF-16 units", () => {
  it("never cuts a surrogate pair, a tag or an entity, and keeps tags balanced", () => {
    const html = `<b>${"😀".repeat(10)}&lt;&amp;</b><i>ab</i>`;
    const pieces = splitHtml(html, 5);
    for (const p of pieces) {
      const parsed = parseTelegramHtml(p);
      expect(parsed.text.length).toBeLessThanOrEqual(5);
      expect(parsed.text).not.toMatch(/[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/);
    }
    expect(pieces.map(htmlToPlain).join("")).toBe(`${"😀".repeat(10)}<&ab`);
    expect(pieces[0]).toBe("<b>😀😀</b>");
    expect(splitHtml("😀a", 1)).toEqual(["😀", "a"]);
  });

  it("prefers paragraph, then line, then word boundaries", () => {
    expect(splitHtml("aaaa bbbb\ncccc\n\ndddd", 15)).toEqual(["aaaa bbbb\ncccc", "dddd"]);
    expect(splitHtml("aaaa bbbb\ncccc dddd", 12)).toEqual(["aaaa bbbb", "cccc dddd"]);
    expect(splitHtml("aaaa bbbb cccc", 12)).toEqual(["aaaa bbbb", "cccc"]);
  });

  it("packs whole blocks and keeps each chunk's Markdown as the plain fallback", () => {
    const md = `${"甲".repeat(3000)}\n\n**${"乙".repeat(1000)}**\n\n${"丙".repeat(2000)}`;
    const chunks = planChunks(md);
    expect(chunks.map((c) => c.plain)).toEqual([`${"甲".repeat(3000)}\n\n**${"乙".repeat(1000)}**`, "丙".repeat(2000)]);
    for (const c of chunks) expect(parseTelegramHtml(c.html).text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(planChunks("   \n\n  ")).toEqual([]);
  });

  it("splits a huge paragraph with entities so every piece parses and stays in order", () => {
    const md = Array.from({ length: 900 }, (_, i) => `**w${i}** <x> & 🇹🇼`).join(" ");
    const chunks = planChunks(md);
    expect(chunks.length).toBeGreaterThan(1);
    const text = chunks.map((c) => parseTelegramHtml(c.html).text);
    for (const t of text) expect(t.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(text.join(" ")).toBe(Array.from({ length: 900 }, (_, i) => `w${i} <x> & 🇹🇼`).join(" "));
  });
});

describe("shared command texts", () => {
  it("lists tools by tag with dangerous ones marked, one tag, or the tags for an unknown one", () => {
    const all = formatToolList(testToolbox, "zh-TW");
    expect(all).toBe(
      "可用的工具（依分類）：\n\n**info**\n- `get_time` — Tells the current time in a time " +
        "zone.\n\n**todo**\n- `add_todo` — Adds an item to the user's todo list.\n- ⚠️ " +
        "`delete_todo` — Deletes a todo by id.\n\n⚠️ 表示執行前會先請你確認。",
    );
    expect(formatToolList(testToolbox, "en", "INFO")).toBe(
      "**info**\n- `get_time` — Tells the current time in a time zone.",
    );
    expect(formatToolList(testToolbox, "en", "nope")).toBe("There is no tag “nope”. Tags: `info`, `todo`");
    expect(formatToolList(new ToolBox(), "zh-TW")).toBe("這個聊天目前沒有可用的工具。");
  });

  it("names tools by their title and summary for people in the locale; a tool without them (an MCP tool) by its name and description", () => {
    const toolbox = new ToolBox([
      defineTool({
        name: "roll_dice",
        title: { "zh-TW": "擲骰子", en: "Roll dice" },
        summary: { "zh-TW": "擲一顆或幾顆骰子。", en: "Rolls one or more dice." },
        description: "Roll dice when the user asks for a dice roll. Not for other random choices.",
        tags: ["util"],
        input: z.object({}),
        run: () => "4",
      }),
      defineTool({
        name: "wipe",
        title: { "zh-TW": "清空", en: "Wipe" },
        description: "Wipes everything.",
        tags: ["util"],
        dangerous: true,
        input: z.object({}),
        run: () => "wiped",
      }),
      defineTool({
        name: "files__read",
        description: "Read a file of the server. Use for paths the user names.",
        tags: ["util"],
        input: z.object({}),
        run: () => "x",
        source: 'MCP server "files"',
      }),
    ]);
    expect(formatToolList(toolbox, "zh-TW")).toBe(
      "可用的工具（依分類）：\n\n**util**\n- `roll_dice` 擲骰子 — 擲一顆或幾顆骰子。\n- ⚠️ `wipe` 清空 — Wipes " +
        "everything.\n- `files__read` — Read a file of the server.\n\n⚠️ 表示執行前會先請你確認。",
    );
    expect(formatToolList(toolbox, "en", "util")).toBe(
      "**util**\n- `roll_dice` Roll dice — Rolls one or more dice.\n- ⚠️ `wipe` Wipe — Wipes " +
        "everything.\n- `files__read` — Read a file of the server.\n\n⚠️ means you will be asked " +
        "to confirm first.",
    );
    expect(formatHelp("zh-TW", { toolbox, commands: [] })).toMatch(
      /^嗨！我是會使用工具的 AI 助理，可以幫你：擲骰子、清空、`files__read`。/,
    );
    expect(formatHelp("en", { toolbox, commands: [] })).toMatch(
      /^Hi! I am an AI assistant that uses tools: Roll dice, Wipe, `files__read`\./,
    );
  });

  it("help names the shipped tools by their Chinese titles in zh-TW, never by their tool names", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "fake-cwa-key-for-help" }));
    const help = formatHelp("zh-TW", { toolbox, commands: [] });
    const listing = formatToolList(toolbox, "zh-TW");
    for (const name of SHIPPED_TOOLS) {
      const tool = toolbox.get(name)!;
      expect(help).toContain(tool.title!["zh-TW"]);
      expect(help).not.toContain(tool.name);
      expect(listing).toContain(`\`${tool.name}\` ${tool.title!["zh-TW"]} — ${tool.summary!["zh-TW"]}`);
      expect(listing).not.toContain(tool.description.slice(0, 20));
    }
  });

  it("help explains the bot with examples in both locales", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "fake-cwa-key-for-help" }));
    const commands = [{ name: "help", description: "What I can do" }];
    expect(formatHelp("zh-TW", { toolbox, commands })).toContain("- 幫我記下：星期五前繳電話費");
    expect(formatHelp("en", { toolbox, commands, groupHint: "@bot" })).toMatch(
      /^Hi! .*\n\n- Will it rain in Taipei tomorrow\?/s,
    );
    expect(formatHelp("en", { toolbox, commands, groupHint: "@bot" })).toContain("mention @bot");
    expect(formatHelp("en", { toolbox, commands })).toContain("- /help — What I can do");
  });
});
