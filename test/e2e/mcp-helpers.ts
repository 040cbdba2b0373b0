/**
 * Helpers of the MCP end-to-end tests: a scripted model that calls a tool when told to, a private
 * chat on the fake Telegram, and waiting for an answer.
 */
import type { Chat, User } from "grammy/types";
import { toolUse, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import type { Stack } from "./harness.js";
import { lastUserTyped, scriptedModel } from "./scripted-model.js";

/** The fake model: `call <tool> <json>` calls that tool with that input (`{}` without one); everything else is {@link scriptedModel}. */
export function callingModel(request: FakeRequest): FakeMessageReply {
  const said = lastUserTyped(request)?.trim();
  const m = said ? /^call (\S+)(?: (.+))?$/.exec(said) : null;
  if (m) return toolUse(m[1]!, m[2] ? JSON.parse(m[2]) : {});
  return scriptedModel(request);
}

/** A person `id` and their private chat with the bot on the fake Telegram. */
export function telegramDm(stack: Stack, id: number, name: string): { user: User; chat: Chat } {
  const user = stack.telegram.user(id, name);
  return { user, chat: stack.telegram.privateChat(user) };
}

/** The first message the bot sent to `chatId` that contains `needle`; fails after `waitMs`. */
export function answerIn(stack: Stack, chatId: number, needle: string, waitMs = 20_000): Promise<FakeSentMessage> {
  const tg = stack.telegram;
  return tg.waitFor(
    () => tg.sent.find((m) => m.chatId === chatId && m.text.includes(needle)),
    waitMs,
    `an answer with ${needle} in chat ${chatId}`,
  );
}
