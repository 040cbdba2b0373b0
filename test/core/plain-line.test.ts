import { describe, expect, it } from "vitest";
import { plainLine, withoutInvisible } from "../../src/plain-text.js";
import { IncomingMessageSchema, isBlankText } from "../../src/queue/incoming.js";

// A newcomer's group name 「👨‍👩‍👧‍👦 Fam 🏳️‍🌈」 and todo 「👩‍💻 code 🏳️‍🌈」 were shown and stored as
// 👨👩👧👦 and 👩💻: plainLine removed the zero-width joiners that make each one picture.
describe("plainLine keeps emoji that a zero-width joiner makes one picture", () => {
  it("keeps the joiner between two emoji, in names and titles", () => {
    expect(plainLine("👨‍👩‍👧‍👦 Fam 🏳️‍🌈")).toBe("👨‍👩‍👧‍👦 Fam 🏳️‍🌈");
    expect(plainLine("👩‍💻 code")).toBe("👩‍💻 code");
    expect(plainLine("👩🏽‍🚀")).toBe("👩🏽‍🚀"); // after a skin tone
    expect(withoutInvisible("🏳️‍🌈")).toBe("🏳️‍🌈");
  });

  it("still removes a joiner, zero-width space or bidi control elsewhere", () => {
    expect(plainLine("a\u200Db")).toBe("ab");
    expect(plainLine("Al\u200Bice")).toBe("Alice");
    expect(plainLine("👩\u200D")).toBe("👩");
    expect(plainLine("\u200D💻")).toBe("💻");
    expect(plainLine("invoice\u202Efdp.exe")).toBe("invoicefdp.exe");
  });
});

describe("isBlankText: what shows nothing on its own", () => {
  it("counts variation selectors, controls such as NEL and the blank Braille pattern alone as blank", () => {
    for (const text of ["\uFE0F", "\uFE00", "\uFE0E", "\u0085", "\u2800", " \u200B\u200D\uFE0F "]) {
      expect(isBlankText(text), JSON.stringify(text)).toBe(true);
    }
  });

  it("does not count an emoji with its selector, or text, as blank", () => {
    for (const text of ["☀️", "❤\uFE0F", "a\uFE0F", "🏳️‍🌈"]) expect(isBlankText(text), text).toBe(false);
  });

  it("a message of only a variation selector is refused as one without text, as a zero-width one is", () => {
    const message = (text: string) =>
      IncomingMessageSchema.safeParse({
        platform: "telegram",
        chatId: "1",
        chatKind: "dm",
        userId: "2",
        userName: "Alice",
        text,
        messageId: "3",
        sentAt: 0,
        reply: {},
      });
    expect(message("hi").success).toBe(true);
    for (const text of ["\uFE0F", "\u200B", "\u2800"]) {
      const parsed = message(text);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((i) => i.path.join("."))).toEqual(["text"]);
    }
  });
});
