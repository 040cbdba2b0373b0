/**
 * The fakes' media rules, through the real clients: the fake Messages API refuses image and
 * document blocks the real API refuses; the fake Bot API's getFile and file endpoint; the fake
 * Discord's signed attachment links.
 */
import Anthropic from "@anthropic-ai/sdk";
import { Api } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { makeImage, makePdf, noisePng } from "./fixtures.js";

describe("fake Messages API: image and document blocks", () => {
  let fake: FakeAnthropic;
  let client: Anthropic;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ fallback: text("ok") });
    client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
  });
  afterAll(() => fake.close());

  const ask = (content: Anthropic.Messages.ContentBlockParam[], role: "user" | "assistant" = "user") =>
    client.messages.create({
      model: "m",
      max_tokens: 10,
      messages:
        role === "user"
          ? [{ role, content }]
          : [
              { role: "user", content: "hi" },
              { role, content },
              { role: "user", content: "and?" },
            ],
    });
  const image = (media_type: string, data: string) =>
    ({ type: "image", source: { type: "base64", media_type, data } }) as Anthropic.Messages.ImageBlockParam;
  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    return (error as Error).message;
  };

  it("accepts valid images of the four types and a PDF", async () => {
    for (const format of ["jpeg", "png", "gif", "webp"] as const) {
      await ask([
        image(`image/${format}`, (await makeImage(30, 20, format)).toString("base64")),
        { type: "text", text: "what is it?" },
      ]);
    }
    await ask([
      {
        type: "document",
        source: { type: "base64", media_type: "application/pdf", data: (await makePdf(2)).toString("base64") },
        title: "a.pdf",
      },
    ]);
    expect(fake.rejections).toEqual([]);
  });

  it("refuses a wrong media type, bad base64, over 5 MB, images outside user turns", async () => {
    const png = (await makeImage(30, 20, "png")).toString("base64");
    expect(await refusal(ask([image("image/jpeg", png)]))).toContain(
      "Image does not match the provided media type image/jpeg",
    );
    expect(await refusal(ask([image("image/bmp", png)]))).toContain("media_type");
    expect(await refusal(ask([image("image/png", "not base64!")]))).toContain("not valid base64");
    expect(await refusal(ask([image("image/png", (await noisePng(1400, 1400)).toString("base64"))]))).toContain(
      "image exceeds 5 MB maximum",
    );
    expect(await refusal(ask([image("image/png", png)], "assistant"))).toContain("only allowed in user messages");
  });

  it("refuses documents that are not PDFs and more than 100 pages", async () => {
    const pdf = (data: Buffer) =>
      ({
        type: "document",
        source: { type: "base64", media_type: "application/pdf", data: data.toString("base64") },
      }) as Anthropic.Messages.DocumentBlockParam;
    expect(await refusal(ask([pdf(Buffer.from("hello"))]))).toContain("PDF specified was not valid");
    expect(await refusal(ask([pdf(await makePdf(60)), pdf(await makePdf(41))]))).toContain(
      "A maximum of 100 PDF pages",
    );
  });
});

describe("fake Bot API: getFile and the file endpoint", () => {
  let tg: FakeTelegram;
  beforeAll(async () => (tg = await FakeTelegram.start()));
  afterAll(() => tg.stop());

  it("answers getFile, serves the bytes, refuses files over 20 MB and unknown ids", async () => {
    const api = new Api(tg.token, { apiRoot: tg.apiRoot });
    const small = tg.addFile(Buffer.from("hello"), { path: "documents/a.txt" });
    expect(await api.getFile(small.file_id)).toEqual({
      file_id: small.file_id,
      file_unique_id: small.file_unique_id,
      file_size: 5,
      file_path: "documents/a.txt",
    });
    expect(await (await fetch(`${tg.apiRoot}/file/bot${tg.token}/documents/a.txt`)).text()).toBe("hello");
    expect((await fetch(`${tg.apiRoot}/file/bot123:wrong/documents/a.txt`)).status).toBe(401);
    expect((await fetch(`${tg.apiRoot}/file/bot${tg.token}/documents/none.txt`)).status).toBe(404);
    const big = tg.addFile(Buffer.from("x"), { fileSize: 21 * 1024 * 1024 });
    await expect(api.getFile(big.file_id)).rejects.toThrow(/file is too big/);
    await expect(api.getFile("nope")).rejects.toThrow(/invalid file_id/);
  });
});

describe("fake Discord: attachment links", () => {
  let dc: FakeDiscord;
  beforeAll(async () => (dc = await FakeDiscord.start()));
  afterAll(() => dc.close());

  it("serves a signed link, and refuses a tampered or unsigned one", async () => {
    const attachment = dc.addAttachment(Buffer.from("abc"), { filename: "a.txt", contentType: "text/plain" });
    const url = String(attachment.url);
    expect(await (await fetch(url)).text()).toBe("abc");
    expect((await fetch(url.replace(/hm=[0-9a-f]+/, "hm=00"))).status).toBe(404);
    expect((await fetch(url.split("?")[0]!)).status).toBe(404);
    expect(dc.attachmentDownloads.map((d) => d.status)).toEqual([200, 404, 404]);
  });
});
