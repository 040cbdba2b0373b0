import { Api, GrammyError } from "grammy";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram, parseTelegramHtml } from "../fakes/telegram.js";

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
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(GrammyError);
  return e as GrammyError;
}

describe("the fake Bot API is strict", () => {
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
    expect((await failure(api.sendMessage(1, "😀".repeat(2049)))).description).toBe("Bad Request: message is too long");
    expect((await failure(api.sendMessage(1, "  "))).description).toBe("Bad Request: message text is empty");
    expect((await failure(api.sendMessage(1, "<b>x", { parse_mode: "HTML" }))).description).toMatch(/^Bad Request: can't parse entities/);
    expect((await failure(api.sendMessage(1, "x", { reply_markup: { inline_keyboard: [[{ text: "a", callback_data: "x".repeat(65) }]] } }))).description).toBe(
      "Bad Request: BUTTON_DATA_INVALID",
    );
    const m = await api.sendMessage(1, "same");
    expect((await failure(api.editMessageText(1, m.message_id, "same"))).description).toMatch(/message is not modified/);
    expect((await failure(api.answerCallbackQuery("nope"))).description).toMatch(/query is too old/);
    tg.failNext("getMe", { error_code: 429, description: "Too Many Requests: retry after 3", retry_after: 3 });
    expect((await failure(api.getMe())).parameters.retry_after).toBe(3);
    await expect(api.getMe()).resolves.toMatchObject({ username: "taiwan_test_bot" });
    const viaGet = (await (await fetch(`${tg.apiRoot}/bot${tg.token}/sendMessage?chat_id=8&text=hi`)).json()) as { ok: boolean; result: { text: string } };
    expect(viaGet).toMatchObject({ ok: true, result: { text: "hi" } });
    expect((await fetch(`${tg.apiRoot}/bot${tg.token}/noSuchMethod`, { method: "POST" })).status).toBe(404);
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
