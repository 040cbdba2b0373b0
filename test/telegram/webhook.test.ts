import { connect } from "node:net";
import { freePort } from "../helpers/ports.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { startHarness, type Harness } from "./harness.js";

let h: Harness;
let port: number;
const SECRET = "s3cret-webhook_token";
beforeAll(async () => {
  port = await freePort();
  const tg = await FakeTelegram.start();
  h = await startHarness(
    {
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram/hook`,
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_WEBHOOK_PORT: String(port),
      HTTP_HOST: "127.0.0.1",
    },
    tg,
  );
});
afterAll(async () => {
  await h.stop();
  await h.tg.stop();
});

const update = (id: number, text: string) => ({
  update_id: id,
  message: {
    message_id: 5000 + id,
    date: 1_700_000_000,
    chat: { id: 41, type: "private", first_name: "Ann" },
    from: { id: 41, is_bot: false, first_name: "Ann" },
    text,
  },
});
/** Sends a POST with the right secret over a raw socket (headers, then `chunk`); resolves with the status and the time it took. */
function rawPost(headers: Record<string, string>, chunk: Buffer): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    socket.on("data", (d) => {
      answer += d.toString();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (m) {
        socket.destroy();
        resolve({ status: Number(m[1]), ms: Date.now() - started });
      }
    });
    socket.on("error", reject);
    const head = Object.entries({
      host: "127.0.0.1",
      "content-type": "application/json",
      "x-telegram-bot-api-secret-token": SECRET,
      ...headers,
    })
      .map(([k, v]) => `${k}: ${v}`)
      .join("\r\n");
    socket.write(`POST /telegram/hook HTTP/1.1\r\n${head}\r\n\r\n`);
    socket.write(chunk);
  });
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${port}/telegram/hook`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

describe("telegram webhook mode", () => {
  it("sets the webhook with the secret token and does not poll", () => {
    expect(h.tg.webhook).toMatchObject({
      url: `http://127.0.0.1:${port}/telegram/hook`,
      secret_token: SECRET,
      allowed_updates: ["message", "callback_query"],
    });
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
    expect(h.queued).toEqual([
      expect.objectContaining({ chatId: "41", userId: "41", text: "你好", messageId: "5003" }),
    ]);
  });

  it("receives updates the fake Bot API delivers to the webhook", async () => {
    const ann = h.tg.user(42, "Ann");
    const m = h.tg.sendUserMessage({ chat: h.tg.privateChat(ann), from: ann, text: "delivered" });
    await h.tg.waitFor(() => h.queued.find((q) => q.messageId === String(m.message_id)));
    // The update is queued before the webhook's HTTP answer reaches the fake: wait for that answer too.
    await h.tg.waitFor(() => h.tg.webhookDeliveries.length > 0);
    expect(h.tg.webhookDeliveries).toEqual([200]);
  });

  it("refuses a body over 1 MiB with 413 without reading it, and still takes the next update", async () => {
    // 60 MB announced, only the headers and 64 KiB sent: the answer comes at once, the rest is never read.
    const declared = await rawPost({ "content-length": String(60 * 1024 * 1024) }, Buffer.alloc(64 * 1024, "a"));
    expect(declared.status).toBe(413);
    expect(declared.ms).toBeLessThan(5000);
    // The same without Content-Length (chunked): cut off once it passes the limit.
    const body = `{"update_id":90,"message":{"text":"${"x".repeat(1_100_000)}"}}`;
    const chunked = await fetch(`http://127.0.0.1:${port}/telegram/hook`, {
      method: "POST",
      headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: new Blob([body]).stream(),
      duplex: "half",
    } as RequestInit).then((r) => r.status);
    expect(chunked).toBe(413);
    expect(h.queued.some((q) => q.messageId === "5090")).toBe(false);
    const res = await post(update(91, "after the big one"), { "X-Telegram-Bot-Api-Secret-Token": SECRET });
    expect(res.status).toBe(200);
    expect(h.queued.some((q) => q.text === "after the big one")).toBe(true);
  });

  it("answers 400 to a body that is not JSON", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/telegram/hook`, {
      method: "POST",
      headers: { "content-type": "application/json", "X-Telegram-Bot-Api-Secret-Token": SECRET },
      body: "{not json",
    });
    expect(res.status).toBe(400);
  });

  it("answers 404 on other paths", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/other`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
  });
});
