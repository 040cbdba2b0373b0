/**
 * The fake Bot API is strict: it answers what Telegram answers, and checks every call against the
 * published Bot API (test/fakes/telegram-spec.ts) — calls through the real grammY client, plain
 * form and query-string requests, and a multipart upload. A refused call is recorded as a
 * violation, which these tests take and assert on (else the harness would fail them).
 */
import { readFileSync } from "node:fs";
import { Api, GrammyError, InputFile } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkTelegramRequest, TELEGRAM_SPEC_EXCEPTIONS, telegramSpecVersion } from "../fakes/telegram-spec.js";
import { FakeTelegram, parseTelegramHtml } from "../fakes/telegram.js";
import { speechFixture } from "../fakes/speech.js";

let tg: FakeTelegram;
let api: Api;
beforeAll(async () => {
  tg = await FakeTelegram.start();
  api = new Api(tg.token, { apiRoot: tg.apiRoot });
});
afterAll(async () => {
  await tg.stop();
});

async function failure(p: Promise<unknown>): Promise<GrammyError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(GrammyError);
  return e as GrammyError;
}

describe("the fake Bot API is strict", () => {
  it("sendVoice: an uploaded Ogg Opus, MP3 or M4A file is a voice message, anything else a document; a file_id it does not know is refused", async () => {
    const chat = 42_900;
    const ogg = await api.sendVoice(chat, new InputFile(speechFixture("speech.ogg"), "voice.ogg"), { duration: 3 });
    expect(ogg.voice).toMatchObject({
      duration: 3,
      mime_type: "audio/ogg",
      file_size: speechFixture("speech.ogg").length,
    });
    const mp3 = await api.sendVoice(chat, new InputFile(speechFixture("speech.mp3"), "a.mp3"));
    expect(mp3.voice?.mime_type).toBe("audio/mpeg");
    const m4a = await api.sendVoice(chat, new InputFile(speechFixture("speech.m4a"), "a.m4a"));
    expect(m4a.voice?.mime_type).toBe("audio/mp4");
    const flac = await api.sendVoice(chat, new InputFile(speechFixture("speech.flac"), "a.flac"));
    expect(flac.voice).toBeUndefined();
    expect((flac as { document?: { file_name?: string } }).document?.file_name).toBe("a.flac");
    expect(tg.voices.filter((v) => v.chatId === chat).map((v) => v.shownAs)).toEqual([
      "voice",
      "voice",
      "voice",
      "document",
    ]);
    expect(tg.voices.find((v) => v.chatId === chat)!.file.bytes.equals(speechFixture("speech.ogg"))).toBe(true);
    expect((await failure(api.sendVoice(chat, "AwACAgIAAxkBAAI"))).error_code).toBe(400);
  });

  it("rejects HTML Telegram would reject", () => {
    expect(() => parseTelegramHtml("<div>x</div>")).toThrow(/can't parse entities: Unsupported start tag "div"/);
    expect(() => parseTelegramHtml("<b>x")).toThrow(/Can't find end tag corresponding to start tag "b"/);
    expect(() => parseTelegramHtml("<b><i>x</b></i>")).toThrow(/Unmatched end tag/);
    expect(() => parseTelegramHtml("1 < 2")).toThrow(/Unexpected character '<'/);
    expect(() => parseTelegramHtml("a & b")).toThrow(/Character '&' is reserved/);
    expect(parseTelegramHtml('<a href="https://x?a=1&amp;b=2">l</a> &lt;&#128512;').text).toBe("l <😀");
  });

  it("answers like the Bot API over HTTP", async () => {
    expect((await failure(new Api("1:wrong", { apiRoot: tg.apiRoot }).getMe())).error_code).toBe(401);
    expect((await failure(api.sendMessage(1, "x".repeat(4097)))).description).toBe("Bad Request: message is too long");
    await expect(api.sendMessage(1, `<b>${"&lt;".repeat(4096)}</b>`, { parse_mode: "HTML" })).resolves.toBeTruthy();
    // Telegram counts the parsed text's code points (TDLib refuses a bot's text when utf8_length(text)
    // exceeds message_text_length_max): 4096 emoji, 8192 UTF-16 units, fit; 4097 do not.
    await expect(api.sendMessage(1, "😀".repeat(4096))).resolves.toBeTruthy();
    expect((await failure(api.sendMessage(1, "😀".repeat(4097)))).description).toBe("Bad Request: message is too long");
    expect((await failure(api.sendMessage(1, "  "))).description).toBe("Bad Request: message text is empty");
    expect((await failure(api.sendMessage(1, "<b>x", { parse_mode: "HTML" }))).description).toMatch(
      /^Bad Request: can't parse entities/,
    );
    expect(
      (
        await failure(
          api.sendMessage(1, "x", {
            reply_markup: { inline_keyboard: [[{ text: "a", callback_data: "x".repeat(65) }]] },
          }),
        )
      ).description,
    ).toBe("Bad Request: BUTTON_DATA_INVALID");
    const m = await api.sendMessage(1, "same");
    expect((await failure(api.editMessageText(1, m.message_id, "same"))).description).toMatch(
      /message is not modified/,
    );
    expect((await failure(api.answerCallbackQuery("nope"))).description).toMatch(/query is too old/);
    tg.failNext("getMe", { error_code: 429, description: "Too Many Requests: retry after 3", retry_after: 3 });
    expect((await failure(api.getMe())).parameters.retry_after).toBe(3);
    await expect(api.getMe()).resolves.toMatchObject({ username: "taiwan_test_bot" });
    const viaGet = (await (await fetch(`${tg.apiRoot}/bot${tg.token}/sendMessage?chat_id=8&text=hi`)).json()) as {
      ok: boolean;
      result: { text: string };
    };
    expect(viaGet).toMatchObject({ ok: true, result: { text: "hi" } });
    expect((await fetch(`${tg.apiRoot}/bot${tg.token}/noSuchMethod`, { method: "POST" })).status).toBe(404);
    // Each refused call is recorded as breaking the Bot API (else this test would fail when it ends).
    expect(tg.takeSpecViolations().map((v) => [v.request, v.problems])).toEqual([
      ["sendMessage", ["text: must be 1-4096 characters after entity parsing (is 4097)"]],
      ["sendMessage", ["text: must be 1-4096 characters after entity parsing (is 4097)"]],
      ["sendMessage", ["reply_markup.inline_keyboard[0][0].callback_data: must be 1-64 bytes in UTF-8 (is 65)"]],
      ["noSuchMethod", ["noSuchMethod: not a method of the Bot API 10.1"]],
    ]);
  });

  it("holds getUpdates until an update arrives and honours offset", async () => {
    const pending = api.getUpdates({ timeout: 5, offset: 0 });
    await new Promise((r) => setTimeout(r, 50));
    const u = tg.user(3, "C");
    tg.sendUserMessage({ chat: tg.privateChat(u), from: u, text: "ping" });
    const updates = await pending;
    expect(updates.map((x) => x.message?.text)).toEqual(["ping"]);
    const next = await api.getUpdates({ offset: updates[0]!.update_id + 1, timeout: 0 });
    expect(next).toEqual([]);
    const started = Date.now();
    await api.getUpdates({ offset: updates[0]!.update_id + 1, timeout: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});

/** The problems of the violations recorded since the last call, one list per refused call. */
function violations(): string[][] {
  return tg.takeSpecViolations().map((v) => v.problems);
}

describe("the fake Bot API follows api.json", () => {
  it("translates every method of Bot API 10.1 (each compiles; a call without parameters is refused only for its required ones)", () => {
    const spec = JSON.parse(
      readFileSync(new URL("../fixtures/specs/telegram-bot-api/api.json", import.meta.url), "utf8"),
    ) as {
      methods: Record<string, { fields?: { name: string; required: boolean }[] }>;
    };
    expect(telegramSpecVersion()).toBe("Bot API 10.1");
    expect(Object.keys(spec.methods).length).toBeGreaterThan(150);
    for (const [name, method] of Object.entries(spec.methods)) {
      const required = (method.fields ?? []).filter((f) => f.required).map((f) => `${f.name}: required, but missing`);
      const check = checkTelegramRequest(name, {}, (text) => text);
      expect(check.ok ? [] : check.problems.sort(), name).toEqual(required.sort());
    }
    expect(TELEGRAM_SPEC_EXCEPTIONS).toEqual([]);
  });

  it("refuses an unknown method (404), an unknown parameter, a missing required one and wrong types, nested ones included", async () => {
    expect((await fetch(`${tg.apiRoot}/bot${tg.token}/sendMesage`, { method: "POST" })).status).toBe(404);
    const typo = await failure(api.raw.sendMessage({ chat_id: 1, text: "hi", disable_notifications: true } as never));
    expect(typo).toMatchObject({
      error_code: 400,
      description: "Bad Request: disable_notifications: not a field the spec defines here",
    });
    expect((await failure(api.raw.sendMessage({ chat_id: 1 } as never))).description).toBe(
      "Bad Request: message text is empty",
    );
    await failure(api.raw.sendMessage({ chat_id: true, text: "hi" } as never));
    await failure(api.sendMessage(1, "hi", { reply_parameters: { message_id: "5" as never } }));
    await failure(
      api.sendMessage(1, "hi", {
        reply_markup: { inline_keyboard: [[{ text: "a", callback_data: "b", colour: "red" } as never]] },
      }),
    );
    await failure(api.setMyCommands([{ command: "help", description: "Help" }], { scope: { type: "chat" } as never }));
    expect(violations()).toEqual([
      ["sendMesage: not a method of the Bot API 10.1"],
      ["disable_notifications: not a field the spec defines here"],
      ["text: required, but missing"],
      ["chat_id: must be integer"],
      ["reply_parameters.message_id: must be integer"],
      ["reply_markup.inline_keyboard[0][0].colour: not a field the spec defines here"],
      ["scope.chat_id: required, but missing"],
    ]);
  });

  it("accepts what the Bot API documents: Integer or String chat ids, JSON-serialized objects, subtypes told apart by their type", async () => {
    await api.sendMessage(1, "<b>hi</b>", {
      parse_mode: "HTML",
      link_preview_options: { is_disabled: true },
      reply_markup: {
        inline_keyboard: [
          [
            { text: "a", callback_data: "b" },
            { text: "site", url: "https://example.org" },
          ],
        ],
      },
    });
    await api.raw.sendMessage({ chat_id: "1" as never, text: "hi" });
    await api.setMyCommands([{ command: "help", description: "Help" }], {
      scope: { type: "chat", chat_id: 5 },
      language_code: "en",
    });
    await api.sendChatAction(1, "typing");
    expect(violations()).toEqual([]);
  });

  it("reads form and query-string parameters as Telegram does: numbers, booleans and JSON-serialized objects from their text", async () => {
    const post = (method: string, form: Record<string, string>) =>
      fetch(`${tg.apiRoot}/bot${tg.token}/${method}`, { method: "POST", body: new URLSearchParams(form) }).then(
        (r) => r.json() as Promise<{ ok: boolean; description?: string }>,
      );
    const markup = JSON.stringify({ inline_keyboard: [[{ text: "a", callback_data: "b" }]] });
    await expect(
      post("sendMessage", { chat_id: "1", text: "hi", disable_notification: "true", reply_markup: markup }),
    ).resolves.toMatchObject({ ok: true });
    await expect(
      post("sendMessage", { chat_id: "1", text: "hi", disable_notification: "maybe" }),
    ).resolves.toMatchObject({ ok: false });
    await expect(post("sendMessage", { chat_id: "1", text: "hi", reply_markup: "{not json" })).resolves.toMatchObject({
      ok: false,
    });
    const viaGet = await fetch(`${tg.apiRoot}/bot${tg.token}/getUpdates?timeout=0&limit=101`).then((r) => r.json());
    expect(viaGet).toMatchObject({ ok: false, error_code: 400, description: "Bad Request: limit: must be <= 100" });
    expect(violations()).toEqual([
      ["disable_notification: must be boolean"],
      ["reply_markup: must be object"],
      ["limit: must be <= 100"],
    ]);
  });

  it("checks a multipart upload: the file part is the InputFile, the other parts are read like form fields", async () => {
    await expect(
      api.setWebhook("https://example.org/hook", {
        certificate: new InputFile(Buffer.from("-----BEGIN CERTIFICATE-----"), "cert.pem"),
      }),
    ).resolves.toBe(true);
    await api.deleteWebhook();
    await failure(
      api.setWebhook("https://example.org/hook", {
        certificate: new InputFile(Buffer.from("x"), "cert.pem"),
        max_connections: 1000,
      }),
    );
    await failure(api.raw.setWebhook({ url: "https://example.org/hook", certificate: "not a file" as never }));
    expect(violations()).toEqual([["max_connections: must be <= 100"], ["certificate: must be object"]]);
    await api.deleteWebhook();
  });

  it("holds the documented limits: text after entity parsing in code points, callback_data in UTF-8 bytes, a callback answer's 200 characters", async () => {
    // 4096 characters of text inside tags that parsing removes; &lt; is one character.
    await api.sendMessage(1, `<b>${"&lt;".repeat(2048)}</b>${"字".repeat(2048)}`, { parse_mode: "HTML" });
    expect((await failure(api.sendMessage(1, `<i>${"字".repeat(4097)}</i>`, { parse_mode: "HTML" }))).description).toBe(
      "Bad Request: message is too long",
    );
    // 21 × 3 bytes fit in 64; 22 do not.
    await api.sendMessage(1, "pick", {
      reply_markup: { inline_keyboard: [[{ text: "a", callback_data: "測".repeat(21) }]] },
    });
    expect(
      (
        await failure(
          api.sendMessage(1, "pick", {
            reply_markup: { inline_keyboard: [[{ text: "a", callback_data: "測".repeat(22) }]] },
          }),
        )
      ).description,
    ).toBe("Bad Request: BUTTON_DATA_INVALID");
    const user = tg.user(5, "E");
    const sent = tg.sent.at(-1)!;
    const query = tg.pressButton({ from: user, message: sent, data: "測".repeat(21) });
    expect((await failure(api.answerCallbackQuery(query, { text: "字".repeat(201) }))).description).toBe(
      "Bad Request: MESSAGE_TOO_LONG",
    );
    await api.answerCallbackQuery(query, { text: "字".repeat(200) });
    expect(violations()).toEqual([
      ["text: must be 1-4096 characters after entity parsing (is 4097)"],
      ["reply_markup.inline_keyboard[0][0].callback_data: must be 1-64 bytes in UTF-8 (is 66)"],
      ["text: must NOT have more than 200 characters"],
    ]);
  });
});
