/**
 * What the approval prompt says about an MCP call (issue 38 item 6): single-line values on their
 * line, multi-line values as a quoted block cut with `…(N more characters)`, on each platform's
 * prompt (Telegram HTML blockquote, Discord `> ` quote lines, the console's plain lines).
 */
import { describe, expect, it } from "vitest";
import { promptText } from "../../adapters/discord/approval.js";
import { approvalPromptHtml } from "../../adapters/telegram/approval.js";
import { describeMcpCall, PROMPT_BLOCK_MAX, PROMPT_LINE_MAX } from "../../src/mcp/prompt.js";
import { testConfig } from "../helpers/config.js";

const NOTE = "Dear team,\n\nthe meeting moves to 15:00.\n– Amy";

describe("describeMcpCall", () => {
  it("shows a multi-line value as a quoted block, keeping its lines", () => {
    expect(describeMcpCall("mail", "send", { to: "team@example.com", body: NOTE }, "en")).toBe(
      [
        "Use the send tool of MCP server “mail”",
        "• to: team@example.com",
        "• body:",
        "> Dear team,",
        ">",
        "> the meeting moves to 15:00.",
        "> – Amy",
      ].join("\n"),
    );
  });

  it("cuts a long single-line value and a long block with …(N more characters)", () => {
    const line = "a".repeat(PROMPT_LINE_MAX + 57);
    const block = `start\n${"b".repeat(2000)}`;
    const text = describeMcpCall("files", "write", { name: line, content: block }, "zh-TW");
    expect(text).toContain(`• name: ${"a".repeat(PROMPT_LINE_MAX)}…(57 more characters)`);
    const quoted = text.split("• content:\n")[1]!;
    expect(quoted).toBe(`> start\n> ${"b".repeat(PROMPT_BLOCK_MAX - 6)}…(${2006 - PROMPT_BLOCK_MAX} more characters)`);
  });

  it("a block of many short lines is cut after 15 lines", () => {
    const lines = Array.from({ length: 40 }, (_, i) => `row ${i}`);
    const text = describeMcpCall("db", "insert", { rows: lines.join("\n") }, "en");
    const quoted = text.split("• rows:\n")[1]!.split("\n");
    expect(quoted).toHaveLength(15);
    const rest = lines.slice(14).join("\n").length - "row 14".length;
    expect(quoted.at(-1)).toBe(`> row 14…(${rest} more characters)`);
  });

  it("a value cannot forge a field line or turn the text around: controls and bidi characters are removed", () => {
    const text = describeMcpCall("x", "y", { path: "a\u202Etxt.exe\u0007", note: "ok\n• amount: 1" }, "en");
    expect(text).toBe(
      ["Use the y tool of MCP server “x”", "• path: atxt.exe", "• note:", "> ok", "> • amount: 1"].join("\n"),
    );
  });

  it("shows at most 1400 characters of fields and counts the rest", () => {
    const args = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, "v".repeat(190)]));
    const text = describeMcpCall("x", "y", args, "en");
    expect(text.split("\n").filter((l) => l.startsWith("• "))).toHaveLength(7);
    expect(text.endsWith("…(5 more fields not shown)")).toBe(true);
  });
});

describe("on each platform's prompt", () => {
  const action = describeMcpCall("mail", "send", { body: NOTE }, "en");
  const prompt = {
    approvalId: "abc",
    action,
    requesterName: "Amy",
    expiresAt: Date.now() + 300_000,
    locale: "en" as const,
  };

  it("Telegram: the quoted lines become one blockquote", () => {
    const html = approvalPromptHtml(prompt, testConfig());
    expect(html).toContain("• body:\n<blockquote>Dear team,\n\nthe meeting moves to 15:00.\n– Amy</blockquote>");
  });

  it("Discord: the quoted lines start their lines, so Discord shows them as a quote", () => {
    const text = promptText(prompt, "en");
    expect(text).toContain("• body:\n> Dear team,\n>\n> the meeting moves to 15:00.\n> – Amy\nOnly **Amy** can decide");
  });
});
