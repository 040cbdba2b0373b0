/**
 * A webhook start-up that fails after `setWebhook` (here: `HEALTH_PORT` held by another process)
 * deletes the webhook again, so polling adapters of the same bot are not answered 409, and the
 * port in use is one clear log line without a stack. Real grammy against the strict fake Bot API,
 * `startBot` as `npm start` runs it, a real Redis.
 */
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBot } from "../../src/app.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

/** Listens on a free port of 127.0.0.1 and keeps it; resolves with the server and its port. */
function holdPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });
}

let redis: TestRedis;
let tg: FakeTelegram;
const held: Server[] = [];
beforeAll(async () => {
  redis = await startRedis();
  tg = await FakeTelegram.start();
});
afterAll(async () => {
  for (const server of held) await new Promise((r) => server.close(r));
  await tg?.stop();
  await redis?.stop();
});

describe("telegram webhook start-up failing after setWebhook", () => {
  it("deletes the webhook again and logs the port in use in one line", async () => {
    const health = await holdPort();
    const webhook = await holdPort();
    held.push(health.server);
    await new Promise((r) => webhook.server.close(r)); // free again: the webhook server takes it
    const config = testConfig({
      ROLE: "adapter",
      TELEGRAM_BOT_TOKEN: tg.token,
      TELEGRAM_API_ROOT: tg.apiRoot,
      TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${webhook.port}/telegram/hook`,
      TELEGRAM_WEBHOOK_SECRET: "s3cret-webhook_token",
      TELEGRAM_WEBHOOK_PORT: String(webhook.port),
      HEALTH_PORT: String(health.port),
      HTTP_HOST: "127.0.0.1",
    });
    const { log, lines } = captureLogger("info");
    const { toolbox } = await loadTools({ config, log });
    await expect(
      startBot({ config, log, redisUrl: redis.url, toolbox, role: "adapter", prefix: "webhook-startup" }),
    ).rejects.toMatchObject({ code: "EADDRINUSE" });

    expect(tg.callsOf("setWebhook")).toHaveLength(1);
    expect(tg.callsOf("deleteWebhook")).toHaveLength(1);
    expect(tg.webhook).toBeUndefined();
    const failed = lines
      .map((l) => JSON.parse(l) as { msg: string; err?: unknown })
      .filter((l) => l.msg.startsWith("start-up failed"));
    expect(failed).toEqual([
      expect.objectContaining({
        msg:
          `start-up failed: port ${health.port} on 127.0.0.1 is already in use by another process ` +
          "(HTTP_PORT, TELEGRAM_WEBHOOK_PORT or LINE_WEBHOOK_PORT; see HTTP_HOST)",
      }),
    ]);
    expect(failed[0]!.err).toBeUndefined();
    expect(lines.join("")).not.toContain("    at ");
    expect(lines.some((l) => l.includes("webhook deleted again"))).toBe(true);
    // The webhook server was closed by the stop: its port is free.
    const again = createServer();
    await new Promise<void>((resolve, reject) =>
      again.once("error", reject).listen(webhook.port, "127.0.0.1", () => resolve()),
    );
    await new Promise((r) => again.close(r));
  }, 60_000);
});
