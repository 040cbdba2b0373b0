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

it("ACCESS_POLICY=open (the test stacks' policy): a stranger's DM is answered, and start-up warned that anyone can spend the key", async () => {
  expect(stack.config.ACCESS_POLICY).toBe("open");
  const tg = stack.telegram;
  const stranger = tg.user(7002, "Stranger");
  tg.sendUserMessage({ chat: tg.privateChat(stranger), from: stranger, text: "calc 6 * 7" });
  const answer = await tg.waitFor(() => tg.sent.find((m) => m.chatId === 7002), 15_000);
  expect(answer.text).toContain("42");
  expect(
    stack
      .logs()
      .some((l) => l.level === 40 && String(l.msg).includes("ACCESS_POLICY=open: anyone who finds the bot can use it")),
  ).toBe(true);
});
