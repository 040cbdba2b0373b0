import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbound, type TelegramOutbound } from "../../adapters/telegram/index.js";
import { silentLogger } from "../../src/log.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { testConfig } from "../helpers/config.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { destinationOf } from "../../src/outbound.js";

let tg: FakeTelegram;
let out: TelegramOutbound;
beforeAll(async () => {
  tg = await FakeTelegram.start();
  out = createOutbound(testConfig({ TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_API_ROOT: tg.apiRoot }), silentLogger);
  tg.createTopic(tg.group(-100555, "Forum", true), "Plans", 9);
});
afterAll(async () => {
  await tg.stop();
});

function incoming(overrides: Partial<IncomingMessage> = {}): IncomingMessage {
  return {
    platform: "telegram",
    chatId: "21",
    chatKind: "dm",
    userId: "21",
    userName: "Alice",
    text: "hi",
    messageId: "5",
    sentAt: Date.now(),
    reply: {},
    ...overrides,
  };
}

const sentSince = (n: number) => tg.sent.slice(n);

describe("telegram outbound", () => {
  it("sends a private answer plainly and a group answer as a reply, in the forum topic", async () => {
    const n = tg.sent.length;
    const refs = await out.sendAnswer(destinationOf(incoming()), "**你好**！今天 _天氣_ 很好。");
    expect(refs).toEqual([{ chatId: "21", messageId: String(tg.sent[n]!.messageId) }]);
    expect(tg.sent[n]!.text).toBe("你好！今天 天氣 很好。");
    expect(tg.sent[n]!.entities.map((e) => e.type)).toEqual(["bold", "italic"]);
    expect(tg.sent[n]!.payload.reply_parameters).toBeUndefined();
    expect(tg.sent[n]!.payload.parse_mode).toBe("HTML");

    await out.sendAnswer(
      destinationOf(incoming({ chatId: "-100555", chatKind: "group", messageId: "77", reply: { threadId: "9" } })),
      "ok",
    );
    expect(tg.sent[n + 1]!.payload.reply_parameters).toEqual({ message_id: 77, allow_sending_without_reply: true });
    expect(tg.sent[n + 1]!.payload.message_thread_id).toBe(9);
  });

  it("escapes characters that Telegram HTML reserves", async () => {
    const n = tg.sent.length;
    const md = 'if a < b && c > d then <div> & &amp; "q" `x<y && z` [site](https://e.com/?a=1&b=<2>)';
    await out.sendAnswer(destinationOf(incoming()), md);
    const [m] = sentSince(n);
    expect(m!.text).toBe('if a < b && c > d then <div> & &amp; "q" x<y && z site');
    const link = m!.entities.find((e) => e.type === "text_link") as { url: string };
    expect(link.url).toBe("https://e.com/?a=1&b=<2>");
    const code = m!.entities.find((e) => e.type === "code")!;
    expect(m!.text.slice(code.offset, code.offset + code.length)).toBe("x<y && z");
  });

  it("keeps a code block that crosses the 4096 mark of a 6,000-character answer whole in the next message", async () => {
    const n = tg.sent.length;
    const intro = "說明：".padEnd(3000, "字");
    const code = Array.from({ length: 90 }, (_, i) => `console.log("line ${i} <ok> & 😀");`).join("\n");
    const md = `${intro}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n結尾 **完成**。`;
    expect(md.length).toBeGreaterThan(6000);
    expect(md.indexOf("```")).toBeLessThan(4096);
    expect(md.lastIndexOf("```")).toBeGreaterThan(4096);
    const refs = await out.sendAnswer(destinationOf(incoming()), md);
    const parts = sentSince(n);
    expect(parts.map((p) => p.text.length)).toEqual([3000, code.length + 2 + "結尾 完成。".length]);
    const pre = parts[1]!.entities.find((e) => e.type === "pre") as {
      offset: number;
      length: number;
      language?: string;
    };
    expect(parts[1]!.text.slice(pre.offset, pre.offset + pre.length)).toBe(code);
    expect(pre.language).toBe("ts");
    expect(refs.map((r) => Number(r.messageId))).toEqual([parts[0]!.messageId, parts[1]!.messageId]);
  });

  it("cuts a code block longer than 4096 at line boundaries, closing and reopening the fence", async () => {
    const n = tg.sent.length;
    const code = Array.from({ length: 200 }, (_, i) => `const value${i} = compute("<${i}>", a && b); // 😀`).join("\n");
    const md = `前言。\n\n\`\`\`ts\n${code}\n\`\`\`\n\n結尾。`;
    expect(md.length).toBeGreaterThan(8000);
    await out.sendAnswer(destinationOf(incoming()), md);
    const parts = sentSince(n);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const p of parts) expect(p.text.length).toBeLessThanOrEqual(4096);
    const pieces = parts.flatMap((p) =>
      p.entities
        .filter((e) => e.type === "pre")
        .map((e) => ({ e: e as { language?: string }, text: p.text.slice(e.offset, e.offset + e.length) })),
    );
    expect(pieces.length).toBeGreaterThanOrEqual(2);
    for (const piece of pieces) {
      expect(piece.e.language).toBe("ts");
      expect(piece.text.startsWith("const value")).toBe(true);
      expect(piece.text.endsWith("// 😀")).toBe(true);
    }
    expect(pieces.map((p) => p.text).join("\n")).toBe(code);
    expect(parts[0]!.text.startsWith("前言。")).toBe(true);
    expect(parts.at(-1)!.text.endsWith("結尾。")).toBe(true);
  });

  it("honours a 429 retry_after without duplicating or reordering chunks", async () => {
    const n = tg.sent.length;
    const md = `${"第一段".repeat(1000)}\n\n${"第二段".repeat(1000)}`;
    tg.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 1", retry_after: 1 });
    const started = Date.now();
    const refs = await out.sendAnswer(destinationOf(incoming()), md);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    const parts = sentSince(n);
    expect(parts.map((p) => p.text.slice(0, 3))).toEqual(["第一段", "第二段"]);
    expect(refs).toHaveLength(2);
  });

  it("resends a chunk as plain Markdown when Telegram cannot parse its entities", async () => {
    const n = tg.sent.length;
    tg.failNext("sendMessage", {
      error_code: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0',
    });
    await out.sendAnswer(destinationOf(incoming()), "**粗體** 與 `code`");
    const [m] = sentSince(n);
    expect(m!.text).toBe("**粗體** 與 `code`");
    expect(m!.payload.parse_mode).toBeUndefined();
  });

  it("skips chunks sent by an earlier attempt and reports each sent chunk", async () => {
    const n = tg.sent.length;
    const seen: number[] = [];
    const md = `${"一".repeat(3000)}\n\n${"二".repeat(3000)}\n\n${"三".repeat(3000)}`;
    const refs = await out.sendAnswer(destinationOf(incoming()), md, { skip: 1, onSent: (i) => void seen.push(i) });
    expect(seen).toEqual([1, 2]);
    expect(refs).toHaveLength(2);
    expect(sentSince(n).map((p) => p.text[0])).toEqual(["二", "三"]);
  });

  it("sends the typing action to the chat and topic", async () => {
    await out.sendTyping(destinationOf(incoming({ chatId: "-100555", chatKind: "group", reply: { threadId: "9" } })));
    expect(tg.chatActions.at(-1)).toMatchObject({ chat_id: "-100555", action: "typing", message_thread_id: 9 });
  });

  it("is refused by Telegram for a topic the chat does not have", async () => {
    const to = incoming({
      chatId: "-100555",
      chatKind: "group",
      messageId: "77",
      topicId: "10",
      reply: { threadId: "10" },
    });
    await expect(out.sendAnswer(destinationOf(to), "ok")).rejects.toThrow("message thread not found");
    await expect(out.sendTyping(destinationOf(to))).rejects.toThrow("message thread not found");
  });

  it("fails loudly on a wrong token without leaking it", async () => {
    const bad = createOutbound(
      testConfig({ TELEGRAM_BOT_TOKEN: "900000001:WRONGwrongWRONGwrongWRONG", TELEGRAM_API_ROOT: tg.apiRoot }),
      silentLogger,
    );
    const error = await bad.sendAnswer(destinationOf(incoming()), "hi").then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain("401");
    expect(error?.message).not.toContain("WRONGwrong");
  });
});
