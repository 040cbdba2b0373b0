/**
 * Issue 26 (1) end to end on Telegram: a 1 MB PDF whose object stream inflates to 1 GiB, sent
 * through the strict fake Bot API to the real grammy adapter and worker. It is opened in the PDF
 * reader thread, refused with the short answer naming the limit, and meanwhile another chat is
 * answered within a few seconds (before the reader thread, pdf-lib inflated it on the event loop:
 * 16 s and 1.3 GB for this file). A normal PDF is read as before, also right after the bomb.
 */
import type { Chat, User } from "grammy/types";
import { describe, expect, it } from "vitest";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { makePdf, pdfBomb } from "../media/fixtures.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
useStack({}, (started) => {
  stack = started;
});

/** How soon another chat must be answered while the bomb is handled, in ms ("within a few seconds"). */
const OTHER_CHAT_WITHIN_MS = 5_000;

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

async function send(
  chat: Chat,
  from: User,
  input: { caption?: string; text?: string; extra?: Record<string, unknown> },
): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, ...input, extra: input.extra ?? {} }, ANSWER_TIMEOUT_MS)).answer;
}

const blocksOf = (request: FakeRequest) => {
  const last = request.messages.at(-1)!;
  return typeof last.content === "string"
    ? [{ type: "text", text: last.content }]
    : (last.content as { type: string; text?: string }[]);
};

describe("Telegram: a PDF decompression bomb", () => {
  it("is refused naming the limit, without a model call; another chat is answered meanwhile; normal PDFs are still read", async () => {
    const tg = stack.telegram;
    const victim = tg.user(26001, "Mallory");
    const bombChat = tg.privateChat(victim);
    const other = tg.user(26002, "Grace");
    const otherChat = tg.privateChat(other);
    const bomb = pdfBomb(1024);
    expect(bomb.length).toBeLessThan(1.1 * 1024 * 1024);

    const requests = stack.model.requests.length;
    const bombSent = sentTo(bombChat).length;
    tg.sendUserMessage({
      chat: bombChat,
      from: victim,
      caption: "請幫我看這份發票",
      extra: {
        document: {
          ...tg.addFile(bomb, { path: "documents/invoice.pdf" }),
          file_name: "invoice.pdf",
          mime_type: "application/pdf",
        },
      },
    });
    // The bomb is downloaded whole: from here on the worker opens it.
    await tg.waitFor(
      () => tg.fileDownloads.find((d) => d.path === "documents/invoice.pdf" && d.complete),
      ANSWER_TIMEOUT_MS,
      "the bomb's download",
    );
    const asked = Date.now();
    const answer = await send(otherChat, other, { text: "早安，今天過得好嗎？" });
    const answeredInMs = Date.now() - asked;
    expect(answer.text).toContain("早安，今天過得好嗎？");
    expect(answeredInMs).toBeLessThan(OTHER_CHAT_WITHIN_MS);

    const refusal = await tg.waitFor(() => sentTo(bombChat)[bombSent], ANSWER_TIMEOUT_MS, "the bomb's refusal");
    expect(refusal.text.split("\n")[0]).toBe("這個 PDF 解壓縮後太大了（壓縮內容解開後上限 32 MB），我讀不了。");
    expect(refusal.text).toContain("我看得懂");
    // The only model call was the other chat's.
    expect(
      stack.model.requests.slice(requests).every((r) => !JSON.stringify(r.messages).includes("請幫我看這份發票")),
    ).toBe(true);
    expect(
      stack
        .logs()
        .some(
          (l) =>
            l.problem === "too_complex" &&
            l.msg === "a file of the message cannot be read; answering without the model",
        ),
    ).toBe(true);

    // A normal PDF right after: read as before, in the same chat.
    const pdf = await makePdf(3);
    const before = stack.model.requests.length;
    await send(bombChat, victim, {
      caption: "那這份呢？",
      extra: {
        document: {
          ...tg.addFile(pdf, { path: "documents/bill.pdf" }),
          file_name: "bill.pdf",
          mime_type: "application/pdf",
        },
      },
    });
    const blocks = blocksOf(stack.model.requests.slice(before)[0]!);
    expect(blocks[0]).toEqual({
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: pdf.toString("base64") },
      title: "bill.pdf",
    });
  });
});
