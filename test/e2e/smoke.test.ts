import { expect, it } from "vitest";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
useStack({}, (started) => (stack = started));

it("answers a Telegram DM and a Discord DM through the whole stack", async () => {
  const tg = stack.telegram;
  const alice = tg.user(7001, "Alice");
  tg.sendUserMessage({ chat: tg.privateChat(alice), from: alice, text: "calc (1200 + 800) * 0.05" });
  const answer = await tg.waitFor(() => tg.sent.find((m) => m.chatId === 7001), 15_000);
  expect(answer.text).toContain("100");

  const dc = stack.discord;
  const bob = { id: "700000000000000002", username: "bob", global_name: "Bob" };
  dc.sendUserMessage(bob, "calc 0.1 + 0.2", { dm: true });
  const reply = await dc.waitFor(() => dc.sent.find((m) => m.content.includes("0.3")), 15_000);
  expect(reply.content).toContain("calculate:");
});
