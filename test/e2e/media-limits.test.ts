/**
 * Issue 16 with the access gate: messages with files pass the same rate limit and budgets as text
 * (`RATE_LIMIT_PER_MINUTE`, `USER_DAILY_TOKENS`), a Telegram album counting as one message; a
 * refusal costs no download and no model call. Real grammy adapter and worker, fake Bot API and
 * Messages API, real Redis.
 */
import type { Chat, PhotoSize, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { makeImage, noisePng } from "../media/fixtures.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, QUIET_WINDOW_MS } from "./scenarios-common.js";

let stack: Stack;
useStack(
  { env: { RATE_LIMIT_PER_MINUTE: "3", USER_DAILY_TOKENS: "60000", ALBUM_QUIET_MS: "1000" } },
  (started) => (stack = started),
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** A one-size Telegram photo of the given bytes. */
function photo(bytes: Buffer, width: number, height: number): PhotoSize[] {
  return [{ ...stack.telegram.addFile(bytes), width, height }];
}

async function send(
  chat: Chat,
  from: User,
  extra: Record<string, unknown>,
  caption?: string,
): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, extra, ...(caption ? { caption } : {}) }, ANSWER_TIMEOUT_MS)).answer;
}

describe("files and the access gate", () => {
  it("an album counts as one message for the rate limit; the message over the limit is refused without a download or a model call", async () => {
    const tg = stack.telegram;
    const user = tg.user(16101, "Rate");
    const chat = tg.privateChat(user);
    const small = await makeImage(300, 200, "jpeg");
    const before = stack.model.requests.length;
    for (const caption of ["一", undefined, undefined]) {
      tg.sendUserMessage({
        chat,
        from: user,
        ...(caption ? { caption } : {}),
        extra: { photo: photo(small, 300, 200), media_group_id: "555" },
      });
    }
    await tg.waitFor(() => sentTo(chat)[0], ANSWER_TIMEOUT_MS, "the album's answer");
    await send(chat, user, { photo: photo(small, 300, 200) }, "二");
    await send(chat, user, { photo: photo(small, 300, 200) }, "三");
    expect(stack.model.requests.length - before).toBe(3);
    const downloads = tg.fileDownloads.length;
    const refused = await send(chat, user, { photo: photo(small, 300, 200) }, "四");
    expect(refused.text).toMatch(/^訊息太快了，請 \d+ 秒後再試。$/);
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(stack.model.requests.length - before).toBe(3);
    expect(tg.fileDownloads.length).toBe(downloads);
  });

  it("the tokens of an image count against USER_DAILY_TOKENS; the next message is refused without a model call", async () => {
    const tg = stack.telegram;
    const user = tg.user(16102, "Budget");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    await send(chat, user, { photo: photo(await noisePng(1000, 1000), 1000, 1000) }, "這是什麼？");
    expect(stack.model.requests.length - before).toBe(1);
    const refused = await send(chat, user, { photo: photo(await makeImage(100, 100, "jpeg"), 100, 100) }, "再一張");
    expect(refused.text).toMatch(/^你今天的用量已達上限（60000 tokens）/);
    expect(stack.model.requests.length - before).toBe(1);
  });
});
