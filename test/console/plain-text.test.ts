import { describe, expect, it } from "vitest";
import { plainText } from "../../adapters/console/adapter.js";

describe("plainText (a command's Markdown reply in the terminal)", () => {
  it("keeps code spans as they are: two MCP names with __ on one line are not read as emphasis", () => {
    expect(plainText("工具：`notes__read_notes`、`notes__add_note`")).toBe("工具：notes__read_notes、notes__add_note");
  });

  it("still removes bold markers outside code and writes links as text (url)", () => {
    expect(plainText("**待辦** __清單__ [說明](https://example.com/a)")).toBe("待辦 清單 說明 (https://example.com/a)");
  });
});
