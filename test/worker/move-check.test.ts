/**
 * Which group answers read the chat-migration marker after they are given (`mayMove` of
 * src/worker/pipeline.ts): only a conversation whose chat can still get a new id.
 */
import { describe, expect, it } from "vitest";
import { mayMove } from "../../src/worker/pipeline.js";

describe("mayMove: which group answers check whether their chat moved meanwhile", () => {
  it("a Telegram basic group may be upgraded to a supergroup; a supergroup, Discord and LINE chats keep their ids", () => {
    expect(mayMove({ platform: "telegram", chatId: "-4009601" })).toBe(true);
    expect(mayMove({ platform: "telegram", chatId: "-999999999999" })).toBe(true);
    expect(mayMove({ platform: "telegram", chatId: "-1001234567890" })).toBe(false);
    expect(mayMove({ platform: "telegram", chatId: "-1000000000000" })).toBe(false);
    expect(mayMove({ platform: "telegram", chatId: "-1001234567890", topicId: "5" })).toBe(false);
    // An id that is not a number (the tests' and the benchmark's) is checked, as before.
    expect(mayMove({ platform: "telegram", chatId: "chat7" })).toBe(true);
    expect(mayMove({ platform: "discord", chatId: "1100000000000000000" })).toBe(false);
    expect(mayMove({ platform: "line", chatId: "C4af4980629" })).toBe(false);
  });
});
