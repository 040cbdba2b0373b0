/**
 * Issue 16 on Discord, end to end: real image and text bytes served as attachments by the strict
 * fake Discord (signed links on its own origin, standing in for the CDN), the real discord.js
 * adapter and the worker, and the strict fake Messages API. An attachment URL on any other host is
 * never fetched.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { FakeUser } from "../fakes/discord.js";
import { makeImage } from "../media/fixtures.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
useStack({}, (started) => (stack = started));

type Block = Record<string, unknown>;

function lastUserBlocks(request: FakeRequest): Block[] {
  const last = request.messages[request.messages.length - 1]!;
  return typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
}

const sentIn = (channelId: string) => stack.discord.messagesIn(channelId);

/** `author` writes `content` with `attachments`; resolves with the bot's next message in the channel. */
async function post(author: FakeUser, content: string, attachments: unknown[], where: { dm?: boolean } = {}) {
  const dc = stack.discord;
  const channelId = where.dm ? dc.dmChannel(author) : dc.channelId;
  const before = sentIn(channelId).length;
  const message = dc.sendUserMessage(author, content, { ...where, attachments });
  const answer = await dc.waitFor(() => sentIn(channelId)[before], ANSWER_TIMEOUT_MS, "the bot's answer");
  return { message, answer };
}

describe("Discord: pictures, documents and other files", () => {
  it("a PNG attachment in a group mention: one image block (PNG, long edge ≤ 1568 px) and the text, answered as a reply", async () => {
    const dc = stack.discord;
    const alice: FakeUser = { id: "700000000000016001", username: "alice16", global_name: "Alice" };
    const png = await makeImage(2400, 1200, "png");
    const attachment = dc.addAttachment(png, {
      filename: "chart.png",
      contentType: "image/png",
      width: 2400,
      height: 1200,
    });
    const before = stack.model.requests.length;
    const { message, answer } = await post(alice, `<@${dc.bot.id}> 這張圖表的趨勢是什麼？`, [attachment]);
    expect(answer.payload.message_reference).toMatchObject({ message_id: message.id });
    const requests = stack.model.requests.slice(before);
    expect(requests).toHaveLength(1);
    const blocks = lastUserBlocks(requests[0]!);
    expect(blocks.map((b) => b.type)).toEqual(["image", "text"]);
    expect(blocks[0]!.source).toMatchObject({ type: "base64", media_type: "image/png" });
    const meta = await sharp(Buffer.from(String((blocks[0]!.source as Block).data), "base64")).metadata();
    expect({ width: meta.width, height: meta.height, format: meta.format }).toEqual({
      width: 1568,
      height: 784,
      format: "png",
    });
    expect(String(blocks[1]!.text)).toMatch(/^\[Alice #[0-9a-f]{4}\] 這張圖表的趨勢是什麼？$/);
    expect(dc.attachmentDownloads.filter((d) => d.path.includes(String(attachment.id)))).toEqual([
      { path: expect.stringContaining("/chart.png"), status: 200 },
    ]);

    // The next request carries the placeholder, not the image.
    await post(alice, `<@${dc.bot.id}> 那最高點呢？`, []);
    const next = stack.model.requests.at(-1)!;
    expect(JSON.stringify(next.messages)).not.toContain('"image"');
    expect(JSON.stringify(next.messages)).toContain('[image \\"chart.png\\" 2400×1200]');
  });

  it("an attachment URL on a foreign host is refused unfetched, without a model request", async () => {
    const dc = stack.discord;
    const bob: FakeUser = { id: "700000000000016002", username: "bob16", global_name: "Bob" };
    const hits: string[] = [];
    const foreign = createServer((req, res) => {
      hits.push(req.url ?? "");
      res.writeHead(200, { "content-type": "image/png" }).end(Buffer.alloc(10));
    });
    await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}/attachments/1/2/cat.png`;
      const attachment = {
        ...dc.addAttachment(await makeImage(100, 100, "png"), { filename: "cat.png", contentType: "image/png" }),
        url,
        proxy_url: url,
      };
      const before = stack.model.requests.length;
      const { answer } = await post(bob, "這是什麼貓？", [attachment], { dm: true });
      expect(answer.content).toMatch(/^我沒辦法下載這個檔案，請再傳一次。\n我看得懂：/);
      expect(hits).toEqual([]);
      expect(stack.model.requests.length).toBe(before);
    } finally {
      foreign.closeAllConnections();
      await new Promise<void>((resolve) => foreign.close(() => resolve()));
    }
  });

  it("a text file in a DM is read as text labelled with its name; a voice message is refused without a model request", async () => {
    const dc = stack.discord;
    const carol: FakeUser = { id: "700000000000016003", username: "carol16", global_name: "Carol" };
    const code = "def add(a, b):\n    return a + b\n";
    const before = stack.model.requests.length;
    await post(
      carol,
      "這段程式有什麼問題？",
      [dc.addAttachment(Buffer.from(code), { filename: "add.py", contentType: "text/x-python; charset=utf-8" })],
      { dm: true },
    );
    const blocks = lastUserBlocks(stack.model.requests.slice(before)[0]!);
    expect(blocks).toMatchObject([
      { type: "text", text: `<file name="add.py">\n${code}\n</file>` },
      { type: "text", text: "這段程式有什麼問題？" },
    ]);

    const count = stack.model.requests.length;
    const voice = dc.addAttachment(Buffer.from("OggS fake"), {
      filename: "voice-message.ogg",
      contentType: "audio/ogg",
      extra: { duration_secs: 2.5, waveform: "AAAA" },
    });
    const { answer } = await post(carol, "", [voice], { dm: true });
    expect(answer.content).toMatch(/^我還聽不懂語音訊息/);
    expect(stack.model.requests.length).toBe(count);
  });
});
