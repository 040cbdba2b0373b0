/**
 * Issue 16 on Telegram, end to end: real image, PDF and text bytes (made with sharp and pdf-lib)
 * served by the strict fake Bot API (`getFile` + the file endpoint), the real grammy adapter and
 * the worker, and the strict fake Messages API, which checks image and document blocks as the real
 * API does.
 */
import type { Chat, PhotoSize, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { conversationKeys } from "../../src/queue/keys.js";
import { overloaded, toolUse, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { makeImage, makePdf } from "../media/fixtures.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, MODEL_RETRIES, QUIET_WINDOW_MS, redisDump, textsOf } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
/** `ALBUM_QUIET_MS` here: half the bot's default, so each album is waited for 1.5 s instead of 3 s. */
const ALBUM_QUIET_MS = 1500;
useStack({ env: { ALBUM_QUIET_MS: String(ALBUM_QUIET_MS) } }, (started, connection) => {
  stack = started;
  redis = connection;
});

type Block = Record<string, unknown>;

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** The blocks of the last user turn of `request`. */
function lastUserBlocks(request: FakeRequest): Block[] {
  const last = request.messages[request.messages.length - 1]!;
  return typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
}

/** Pixel size of a base64 image block. */
async function pixels(block: Block): Promise<{ width: number; height: number; format: string }> {
  const meta = await sharp(Buffer.from(String((block.source as Block).data), "base64")).metadata();
  return { width: meta.width, height: meta.height, format: meta.format };
}

/**
 * A Telegram photo as the Bot API describes it: a thumbnail (90 px) and the full image, each a file
 * of the fake; `extra` adds a larger size whose file is over the 20 MB download limit.
 */
async function photo(width: number, height: number, options: { tooBig?: boolean } = {}): Promise<PhotoSize[]> {
  const tg = stack.telegram;
  const full = await makeImage(width, height, "jpeg");
  const thumb = await sharp(full).resize(90, 90, { fit: "inside" }).jpeg().toBuffer();
  const sizes: PhotoSize[] = [
    {
      ...tg.addFile(thumb, { path: `photos/thumb_${width}x${height}.jpg` }),
      width: 90,
      height: Math.round((90 * height) / width),
    },
    { ...tg.addFile(full, { path: `photos/full_${width}x${height}.jpg` }), width, height },
  ];
  if (options.tooBig)
    sizes.push({
      ...tg.addFile(full, { fileSize: 25 * 1024 * 1024, path: `photos/huge_${width}x${height}.jpg` }),
      width: width * 2,
      height: height * 2,
    });
  return sizes;
}

/** Sends a user message and waits for the bot's next message in the chat. */
async function send(
  chat: Chat,
  from: User,
  input: { caption?: string; text?: string; extra: Record<string, unknown>; reply_to_message?: number },
): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, ...input }, ANSWER_TIMEOUT_MS)).answer;
}

describe("Telegram: pictures, documents and other files", () => {
  it("a photo with a caption: one image block (JPEG, long edge ≤ 1568 px) and the caption; the next request carries the placeholder", async () => {
    const tg = stack.telegram;
    const user = tg.user(16001, "Lin");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const sizes = await photo(3000, 2000, { tooBig: true });
    const answer = await send(chat, user, { caption: "這張收據的總金額是多少？", extra: { photo: sizes } });
    expect(answer.text).toContain("這張收據的總金額是多少？");
    const requests = stack.model.requests.slice(before);
    expect(requests).toHaveLength(1);
    const blocks = lastUserBlocks(requests[0]!);
    expect(blocks.map((b) => b.type)).toEqual(["image", "text"]);
    expect(blocks[0]!.source).toMatchObject({ type: "base64", media_type: "image/jpeg" });
    expect(await pixels(blocks[0]!)).toEqual({ width: 1568, height: 1045, format: "jpeg" });
    expect(blocks[1]).toMatchObject({ type: "text", text: "這張收據的總金額是多少？" });
    // The largest size within the limit was downloaded: not the thumbnail, never the one over 20 MB.
    expect(tg.callsOf("getFile").map((c) => c.payload.file_id)).toEqual([sizes[1]!.file_id]);
    expect(tg.fileDownloads.filter((d) => d.path.includes("3000x2000"))).toEqual([
      { path: "photos/full_3000x2000.jpg", sent: expect.any(Number), complete: true },
    ]);

    await send(chat, user, { text: "謝謝，再說一次總額", extra: {} });
    const next = stack.model.requests.at(-1)!;
    expect(JSON.stringify(next.messages)).not.toContain('"image"');
    expect(next.messages[0]!.content).toEqual([
      { type: "text", text: "[photo 3000×2000]" },
      { type: "text", text: "這張收據的總金額是多少？" },
    ]);
    // Redis holds the placeholder only, never the file.
    const stored = (await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history))!;
    expect(stored).toContain("[photo 3000×2000]");
    expect(stored.length).toBeLessThan(2000);
  });

  it("a run paused for an approval is saved with the placeholder, not the image", async () => {
    const tg = stack.telegram;
    const user = tg.user(16009, "Yeh");
    const chat = tg.privateChat(user);
    await send(chat, user, { text: "add todo 繳電費", extra: {} });
    const prompt = await send(chat, user, { caption: "繳完了，delete #1", extra: { photo: await photo(1000, 700) } });
    expect(tg.buttons(prompt).length).toBeGreaterThan(0);
    const dump = JSON.stringify(await redisDump(stack));
    expect(dump).toContain("[photo 1000×700]");
    expect(dump).not.toContain("image/jpeg");
    expect(dump).not.toContain("/9j/"); // the start of any JPEG in base64
  });

  it("a model call that fails after a tool changed data is retried within the run: the photo is not downloaded again, the todo added once", async () => {
    const tg = stack.telegram;
    const user = tg.user(16011, "Hsu");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const sizes = await photo(720, 540);
    // add_todo runs, then the model call after it fails on both SDK attempts: the loop asks again after a short wait.
    stack.model.enqueue(
      toolUse("add_todo", { title: "繳電費" }),
      ...Array.from({ length: MODEL_RETRIES + 1 }, () => overloaded()),
    );
    const answer = await send(chat, user, { caption: "add todo 繳電費", extra: { photo: sizes } });
    expect(answer.text).toBe("add_todo: 已新增待辦：#1 繳電費");
    expect(await redis.hlen(`todo:{telegram:${user.id}}:items`)).toBe(1);
    const requests = stack.model.requests.slice(before);
    expect(requests).toHaveLength(MODEL_RETRIES + 3);
    // The retried call sent the run's messages as they were: the same image, the same tool result.
    expect(requests.at(-1)!.messages).toEqual(requests[1]!.messages);
    expect((requests.at(-1)!.messages[0]!.content as { type: string }[]).map((b) => b.type)).toEqual(["image", "text"]);
    // One getFile and one download, by the first attempt only.
    expect(tg.callsOf("getFile").filter((c) => c.payload.file_id === sizes[1]!.file_id)).toHaveLength(1);
    expect(tg.fileDownloads.filter((d) => d.path === "photos/full_720x540.jpg")).toHaveLength(1);
    expect(sentTo(chat)).toHaveLength(1);
  }, 30_000);

  it("a photo without text is answered (the model sees the image alone)", async () => {
    const tg = stack.telegram;
    const user = tg.user(16002, "Wu");
    const before = stack.model.requests.length;
    await send(tg.privateChat(user), user, { extra: { photo: await photo(800, 600) } });
    const blocks = lastUserBlocks(stack.model.requests.slice(before)[0]!);
    expect(blocks.map((b) => b.type)).toEqual(["image"]);
    expect(await pixels(blocks[0]!)).toEqual({ width: 800, height: 600, format: "jpeg" });
  });

  /**
   * Sends an album of photos of these sizes (the first with `caption`) in a new DM, waiting
   * `gapMs` between the items, and checks it became one model request with every photo and the
   * caption, and one answer.
   */
  async function albumAnsweredOnce(
    userId: number,
    sizes: [number, number][],
    caption: string,
    gapMs: number,
  ): Promise<void> {
    const tg = stack.telegram;
    const user = tg.user(userId, "Chen");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const photos = await Promise.all(sizes.map(([w, h]) => photo(w, h)));
    const group = `album-${userId}`;
    for (const [i, sizesOfPhoto] of photos.entries()) {
      if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs)); // the upload time between the items: the scenario itself
      tg.sendUserMessage({
        chat,
        from: user,
        ...(i === 0 ? { caption } : {}),
        extra: { photo: sizesOfPhoto, media_group_id: group },
      });
    }
    await tg.waitFor(() => sentTo(chat)[0], ANSWER_TIMEOUT_MS, "the album's answer");
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(sentTo(chat)).toHaveLength(1);
    const requests = stack.model.requests.slice(before);
    expect(requests).toHaveLength(1);
    const blocks = lastUserBlocks(requests[0]!);
    expect(blocks.map((b) => b.type)).toEqual([...sizes.map(() => "image"), "text"]);
    expect(await Promise.all(blocks.slice(0, sizes.length).map(pixels))).toEqual(
      sizes.map(([width, height]) => ({ width, height, format: "jpeg" })),
    );
    expect(blocks[sizes.length]).toMatchObject({ type: "text", text: caption });
  }

  it("an album of 3 photos becomes one message with all three, answered once", async () => {
    await albumAnsweredOnce(
      16003,
      [
        [1200, 900],
        [900, 1200],
        [500, 500],
      ],
      "比較這三張",
      0,
    );
  });

  it("an album whose photos arrive most of ALBUM_QUIET_MS apart (slow uploads) is still one message, answered once", async () => {
    await albumAnsweredOnce(
      16021,
      [
        [640, 480],
        [480, 640],
        [400, 400],
      ],
      "慢慢傳的三張",
      ALBUM_QUIET_MS - 500, // as 2.5 s apart with the default 3 s
    );
  }, 60_000);

  it("an album of more than MAX_IMAGES_PER_MESSAGE (5) photos gets one short answer, without a download or a model request", async () => {
    const tg = stack.telegram;
    const user = tg.user(16010, "Six");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const downloads = tg.fileDownloads.length;
    const small = await makeImage(200, 200, "jpeg");
    for (let i = 0; i < 6; i += 1) {
      tg.sendUserMessage({
        chat,
        from: user,
        ...(i === 0 ? { caption: "這些是什麼？" } : {}),
        extra: { photo: [{ ...tg.addFile(small), width: 200, height: 200 }], media_group_id: "666" },
      });
    }
    const answer = await tg.waitFor(() => sentTo(chat)[0], ANSWER_TIMEOUT_MS, "the album's answer");
    expect(answer.text).toMatch(/^一則訊息最多只能放 5 張圖片（這則有 6 張）。\n我看得懂：/);
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(sentTo(chat)).toHaveLength(1);
    expect(stack.model.requests.length).toBe(before);
    expect(tg.fileDownloads.length).toBe(downloads);
  });

  it("in a group: an album whose caption mentions the bot is answered with every photo; a photo without the mention is ignored", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1001600100, "相簿群");
    const ann = tg.user(16004, "Ann");
    const before = stack.model.requests.length;
    tg.sendUserMessage({ chat: group, from: ann, extra: { photo: await photo(300, 200) } });
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(stack.model.requests.length).toBe(before);
    const first = tg.sendUserMessage({
      chat: group,
      from: ann,
      caption: `@${tg.bot.username} 哪一張比較好看？`,
      extra: { photo: await photo(640, 480), media_group_id: "24680" },
    });
    tg.sendUserMessage({ chat: group, from: ann, extra: { photo: await photo(480, 640), media_group_id: "24680" } });
    const answer = await tg.waitFor(() => sentTo(group)[0], ANSWER_TIMEOUT_MS, "the group album's answer");
    expect(answer.payload.reply_parameters).toMatchObject({ message_id: first.message_id });
    const blocks = lastUserBlocks(stack.model.requests.slice(before)[0]!);
    expect(blocks.map((b) => b.type)).toEqual(["image", "image", "text"]);
    expect(String(blocks[2]!.text)).toMatch(/^\[Ann #[0-9a-f]{4}\] 哪一張比較好看？$/);
  });

  it("a PDF becomes a document block; the next request carries its placeholder", async () => {
    const tg = stack.telegram;
    const user = tg.user(16005, "Huang");
    const chat = tg.privateChat(user);
    const pdf = await makePdf(3);
    const before = stack.model.requests.length;
    await send(chat, user, {
      caption: "幫我看這張帳單",
      extra: {
        document: {
          ...tg.addFile(pdf, { path: "documents/bill.pdf" }),
          file_name: "bill.pdf",
          mime_type: "application/pdf",
        },
      },
    });
    const blocks = lastUserBlocks(stack.model.requests.slice(before)[0]!);
    expect(blocks.map((b) => b.type)).toEqual(["document", "text"]);
    expect(blocks[0]).toEqual({
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: pdf.toString("base64") },
      title: "bill.pdf",
    });
    await send(chat, user, { text: "繳費期限呢？", extra: {} });
    expect(stack.model.requests.at(-1)!.messages[0]!.content).toEqual([
      { type: "text", text: '[PDF "bill.pdf", 3 pages]' },
      { type: "text", text: "幫我看這張帳單" },
    ]);
  });

  it("a text file is read as text labelled with its name", async () => {
    const tg = stack.telegram;
    const user = tg.user(16006, "Kao");
    const before = stack.model.requests.length;
    const notes = "# 購物清單\n- 牛奶\n- 雞蛋\n";
    await send(tg.privateChat(user), user, {
      caption: "整理一下",
      extra: { document: { ...tg.addFile(Buffer.from(notes)), file_name: "notes.md", mime_type: "text/markdown" } },
    });
    const blocks = lastUserBlocks(stack.model.requests.slice(before)[0]!);
    expect(blocks).toMatchObject([
      { type: "text", text: `<file name="notes.md">\n${notes}\n</file>` },
      { type: "text", text: "整理一下" },
    ]);
  });

  it("an oversized file is refused before its download completes, without a model request", async () => {
    const tg = stack.telegram;
    const user = tg.user(16007, "Tsai");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    // Announced over the limit: not even getFile.
    const big = tg.addFile(Buffer.from("%PDF-1.7 tiny"), { fileSize: 15 * 1024 * 1024 });
    const refused = await send(chat, user, {
      caption: "看一下",
      extra: { document: { ...big, file_name: "big.pdf", mime_type: "application/pdf" } },
    });
    expect(refused.text).toContain("這個 PDF 太大了（上限 10 MB）");
    expect(refused.text).toContain("我看得懂");
    expect(tg.callsOf("getFile").some((c) => c.payload.file_id === big.file_id)).toBe(false);
    // Announced small, but larger when served: cut off while downloading.
    const liar = tg.addFile(Buffer.alloc(600 * 1024, 0x61), {
      fileSize: 4 * 1024,
      chunked: true,
      path: "documents/liar.txt",
    });
    const cut = await send(chat, user, {
      extra: { document: { ...liar, file_name: "liar.txt", mime_type: "text/plain" } },
    });
    expect(cut.text).toContain("這個文字檔太大了（上限 200 KB）");
    const download = tg.fileDownloads.find((d) => d.path === "documents/liar.txt")!;
    expect(download.complete).toBe(false);
    expect(download.sent).toBeLessThan(600 * 1024);
    expect(stack.model.requests.length).toBe(before);
  });

  it("a voice message gets a short answer saying what is supported, without a model request; a sticker is its emoji", async () => {
    const tg = stack.telegram;
    const user = tg.user(16008, "Lee");
    const chat = tg.privateChat(user);
    const before = stack.model.requests.length;
    const voice = tg.addFile(Buffer.from("OggS fake voice"), { path: "voice/file_1.oga" });
    const answer = await send(chat, user, { extra: { voice: { ...voice, duration: 3, mime_type: "audio/ogg" } } });
    expect(answer.text).toMatch(
      /^我還聽不懂語音訊息，請改用文字。\n我看得懂：圖片（JPEG、PNG、GIF、WebP，每則訊息最多 5 張/,
    );
    expect(stack.model.requests.length).toBe(before);
    expect(tg.callsOf("getFile").some((c) => c.payload.file_id === voice.file_id)).toBe(false);
    const video = await send(chat, user, {
      extra: { video_note: { ...tg.addFile(Buffer.from("mp4")), length: 240, duration: 2 } },
    });
    expect(video.text).toContain("我還看不了影片");
    expect(stack.model.requests.length).toBe(before);

    await send(chat, user, {
      extra: {
        sticker: {
          file_id: "CAACAgIAAxkBAAIBfake",
          file_unique_id: "AgADfake",
          type: "regular",
          width: 512,
          height: 512,
          is_animated: false,
          is_video: false,
          emoji: "👍",
        },
      },
    });
    expect(textsOf(stack.model.requests.at(-1)!.messages.at(-1)!)).toEqual(["👍"]);
  });
});
