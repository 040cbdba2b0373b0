/**
 * Issue 39 (9) end to end: with the logger at debug (as every e2e stack runs) and `LOG_CONTENT`
 * unset, nothing people wrote, nor the model's answers, tool inputs and results, file names or the
 * text of a send that failed, reaches any log line — through the real grammy and discord.js
 * clients, the worker, traces and the clients' own error objects (grammY's `payload`, discord.js's
 * `requestBody`, which carry the text sent).
 */
import { expect, it } from "vitest";
import { CONTENT_HIDDEN } from "../../src/log.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
useStack({}, (started) => (stack = started));

it("LOG_CONTENT off: at debug level no log line holds a message, an answer, a tool input or result, a file name or a failed send's text", async () => {
  expect(stack.config.LOG_LEVEL).toBe("debug");
  expect(stack.config.LOG_CONTENT).toBe("off");
  const tg = stack.telegram;
  const alice = tg.user(39901, "Alice");
  const chat = tg.privateChat(alice);
  // The first answer's send fails (a 500 after the bot's retries): the error carries its text.
  tg.failNext("sendMessage", { error_code: 500, description: "Internal Server Error" });
  tg.sendUserMessage({ chat, from: alice, text: "PRIVATE-TG-1 我住在新竹 calc 31415926 + 27182818" });
  await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === chat.id && m.text.includes("58598744")),
    ANSWER_TIMEOUT_MS,
    "the answer",
  );
  tg.sendUserMessage({
    chat,
    from: alice,
    caption: "PRIVATE-TG-2 看這個檔案",
    extra: {
      document: {
        ...tg.addFile(Buffer.from("PRIVATE-FILE-TEXT 帳號 1234"), { path: "documents/private-name.txt" }),
        file_name: "PRIVATE-FILE-NAME.txt",
        mime_type: "text/plain",
      },
    },
  });
  await tg.waitFor(
    () => tg.sent.filter((m) => m.chatId === chat.id).length >= 2,
    ANSWER_TIMEOUT_MS,
    "the file's answer",
  );

  const dc = stack.discord;
  const bob = { id: "700000000000039902", username: "bob", global_name: "Bob" };
  dc.failNext({ method: "POST", path: /\/channels\/\d+\/messages$/ }, 400, 1, {
    message: "Invalid Form Body",
    code: 50035,
  });
  dc.sendUserMessage(bob, "PRIVATE-DC-1 calc 41421356 + 17320508", { dm: true });
  dc.sendUserMessage(bob, "PRIVATE-DC-2 calc 22360679 + 26457513", { dm: true });
  await dc.waitFor(
    () => dc.sent.some((m) => m.content.includes("48818192")),
    ANSWER_TIMEOUT_MS,
    "the second Discord answer",
  );

  // Eight-digit figures: short ones (1007) turned up inside log timestamps by chance.
  const logs = JSON.stringify(stack.logs());
  for (const fragment of [
    "PRIVATE-",
    "我住在新竹",
    "帳號 1234",
    "看這個檔案",
    "31415926",
    "58598744",
    "58741864",
    "22360679",
    "48818192",
  ])
    expect(logs).not.toContain(fragment);
  // The paths that would have shown them did log: traces, tool calls and files (content hidden), and the failed send.
  const hidden = (msg: string) =>
    stack.logs().filter((l) => String(l.msg).startsWith(msg) && JSON.stringify(l).includes(CONTENT_HIDDEN));
  expect(hidden("trace user_input").length).toBeGreaterThanOrEqual(3);
  expect(hidden("tool calculate ok").length).toBeGreaterThanOrEqual(3);
  expect(hidden("files read for the model")).toHaveLength(1);
  const failed = stack.logs().find((l) => l.msg === "could not answer the message; sending an apology");
  expect(failed?.err).toMatchObject({ type: "PlatformRefusedError", cause: { type: "DiscordAPIError", code: 50035 } });
});
