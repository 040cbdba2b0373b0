import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { startHarness, type Harness } from "./harness.js";

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let h: Harness;
let port: number;
const SECRET = "s3cret-webhook_token";
beforeAll(async () => {
  port = await freePort();
  const tg = await FakeTelegram.start();
  h = await startHarness(
    { TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/hook`, TELEGRAM_WEBHOOK_SECRET: SECRET, TELEGRAM_WEBHOOK_PORT: String(port) },
    tg,
  );
});
afterAll(async () => {
  await h.stop();
  await h.tg.stop();
});

const update = (id: number, text: string) => ({
  update_id: id,
  message: { message_id: 5000 + id, date: 1_700_000_000, chat: { id: 41, type: "private", first_name: "Ann" }, from: { id: 41, is_bot: false, first_name: "Ann" }, text },
});
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${port}/telegram/hook`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

describe("telegram webhook mode", () => {
  it("sets the webhook with the secret token and does not poll", () => {
    expect(h.tg.webhook).toMatchObject({ url: `http://127.0.0.1:${port}/telegram/hook`, secret_token: SECRET, allowed_updates: ["message", "callback_query"] });
    expect(h.tg.callsOf("getUpdates")).toHaveLength(0);
  });

  it("refuses a missing or wrong secret header with 401 and queues nothing", async () => {
    expect((await post(update(1, "forged"))).status).toBe(401);
    expect((await post(update(2, "forged"), { "X-Telegram-Bot-Api-Secret-Token": "wrong" })).status).toBe(401);
    expect(h.queued).toHaveLength(0);
  });

  it("queues an update with the right secret and answers 200 at once", async () => {
    const res = await post(update(3, "你好"), { "X-Telegram-Bot-Api-Secret-Token": SECRET });
    expect(res.status).toBe(200);
    expect(h.queued).toEqual([expect.objectContaining({ chatId: "41", userId: "41", text: "你好", messageId: "5003" })]);
  });

  it("receives updates the fake Bot API delivers to the webhook", async () => {
    const ann = h.tg.user(42, "Ann");
    const m = h.tg.sendUserMessage({ chat: h.tg.privateChat(ann), from: ann, text: "delivered" });
    await h.tg.waitFor(() => h.queued.find((q) => q.messageId === String(m.message_id)));
    // The update is queued before the webhook's HTTP answer reaches the fake: wait for that answer too.
    await h.tg.waitFor(() => h.tg.webhookDeliveries.length > 0);
    expect(h.tg.webhookDeliveries).toEqual([200]);
  });

  it("answers 404 on other paths", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/other`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
  });
});
