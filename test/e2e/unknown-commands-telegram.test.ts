/**
 * An unknown command on Telegram end to end (the real grammy client against the strict fake Bot
 * API, real Redis, the worker and the scripted model): a command-shaped first word addressed to
 * the bot that is no command of ours is answered "unknown command" with the `/help` list (admin
 * commands for admins only), as `npm run chat` does, and never reaches the model; a stranger gets
 * what a stranger gets for a known command; text that only starts with "/" is still a message.
 */
import type { Chat, Message, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import { GATE_TEXT } from "../../src/access/gate.js";
import { unknownCommand } from "../../src/commands/runner.js";
import { localize } from "../../src/i18n.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, modelSaw } from "./scenarios-common.js";

const ADMIN = 96000;
const ALLOWED = 96001;
const STRANGER = 96002;
const GROUP = -1009600;

let stack: Stack;
useStack(
  {
    env: {
      ACCESS_POLICY: "pairing",
      ADMIN_USERS: `telegram:${ADMIN}`,
      ALLOWED_USERS: `telegram:${ALLOWED}`,
      ALLOWED_CHATS: `telegram:${GROUP}`,
    },
  },
  (started) => {
    stack = started;
  },
);

/** `from` writes `text` in `chat`; resolves with the bot's first reply to it. */
async function send(chat: Chat, from: User, text: string): Promise<{ message: Message; reply: FakeSentMessage }> {
  const tg = stack.telegram;
  const seen = tg.sent.length;
  const message = tg.sendUserMessage({ chat, from, text });
  return { message, reply: await tg.waitForReply(message, seen, ANSWER_TIMEOUT_MS) };
}

const unknown = (name: string, admin = false) => unknownCommand("zh-TW", name, "telegram", admin);

describe("unknown commands on Telegram", () => {
  it("answers an unknown command in a private chat with the /help list, without the model", async () => {
    const { user, chat } = stack.telegram.dm(ALLOWED, "Dave");
    expect((await send(chat, user, "/frobnicate")).reply.text).toBe(unknown("frobnicate"));
    expect((await send(chat, user, "/Frobnicate@taiwan_test_bot now")).reply.text).toBe(unknown("frobnicate"));
    // Not an admin: the list has no admin command.
    expect(unknown("frobnicate")).not.toContain("/approve");
    expect(modelSaw(stack, "frobnicate")).toBe(false);
  });

  it("answers an admin's typo of an admin command with the admin's list; the pairing code never reaches the model", async () => {
    const { user, chat } = stack.telegram.dm(ADMIN, "Ada");
    const { reply } = await send(chat, user, "/aprove S3NW26HC");
    expect(reply.text).toBe(unknown("aprove", true));
    expect(reply.text).not.toBe(unknown("aprove"));
    expect(modelSaw(stack, "S3NW26HC")).toBe(false);
    expect(modelSaw(stack, "aprove")).toBe(false);
  });

  it("in a group answers a bare or @bot unknown command and ignores one for another bot", async () => {
    const tg = stack.telegram;
    const group = tg.group(GROUP, "Family");
    const bob = tg.user(ALLOWED, "Dave");
    expect((await send(group, bob, "/frobnicate 台北")).reply.text).toBe(unknown("frobnicate"));
    expect((await send(group, bob, "/frobnicate@taiwan_test_bot")).reply.text).toBe(unknown("frobnicate"));
    const other = tg.sendUserMessage({ chat: group, from: bob, text: "/frobnicate@other_bot secret-other" });
    // A later command's reply: the one before it has been handled.
    await send(group, bob, "/help");
    expect(
      tg.sent.some(
        (s) => (s.payload.reply_parameters as { message_id?: number } | undefined)?.message_id === other.message_id,
      ),
    ).toBe(false);
    expect(modelSaw(stack, "frobnicate")).toBe(false);
    expect(modelSaw(stack, "secret-other")).toBe(false);
  });

  it("a stranger's unknown command gets what a known command gets: the pairing code, not the list", async () => {
    const { user, chat } = stack.telegram.dm(STRANGER, "Eve");
    const first = (await send(chat, user, "/frobnicate")).reply.text;
    expect(first).toMatch(/^嗨！這是私人機器人，需要擁有者同意才能使用。\n你的配對碼：\S+（1 小時內有效）/);
    expect((await send(chat, user, "/help")).reply.text).toBe(first);
    expect(modelSaw(stack, "frobnicate")).toBe(false);
  });

  it("a stranger's unknown command in a group that is not enabled gets the group's note, not the list", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009601, "Strangers");
    const eve = tg.user(STRANGER + 1, "Mallory");
    expect((await send(group, eve, "/frobnicate")).reply.text).toBe(localize("zh-TW", GATE_TEXT.groupNotEnabled));
  });

  it("text that only starts with / is still a message for the model", async () => {
    const { user, chat } = stack.telegram.dm(ALLOWED, "Dave");
    for (const text of ["/ 2 apples", "/usr/bin/xyz-path", "//comment-here"]) {
      const { reply } = await send(chat, user, text);
      expect(reply.text).not.toContain("不認得的指令");
      expect(modelSaw(stack, text)).toBe(true);
    }
  });
});
