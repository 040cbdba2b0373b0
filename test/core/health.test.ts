import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startHealthServer } from "../../src/health.js";
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from "../../src/http-server.js";
import { connectRedis } from "../../src/redis.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => server.stop());

it("answers 200 while Redis and the platforms are up, 503 when one is down", async () => {
  const redis = connectRedis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
  let telegramUp = true;
  const http = await startHealthServer(0, {
    redis: async () => (await redis.ping()) === "PONG",
    telegram: () => telegramUp,
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/health`;
  try {
    await new Promise((r) => redis.once("ready", r));
    let res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", checks: { redis: true, telegram: true } });

    telegramUp = false;
    res = await fetch(url);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: "unavailable", checks: { redis: true, telegram: false } });

    telegramUp = true;
    await server.stop();
    res = await fetch(url);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { checks: { redis: boolean } }).checks.redis).toBe(false);
    expect((await fetch(url.replace("/health", "/other"))).status).toBe(404);
  } finally {
    http.close();
    redis.disconnect();
  }
});

it("listens on HTTP_HOST when given, with bounded header, request and keep-alive timeouts", async () => {
  const http = await startHealthServer(0, { always: () => true }, undefined, "127.0.0.1");
  try {
    expect((http.address() as AddressInfo).address).toBe("127.0.0.1");
    expect([http.headersTimeout, http.requestTimeout, http.keepAliveTimeout]).toEqual([
      HEADERS_TIMEOUT_MS,
      REQUEST_TIMEOUT_MS,
      KEEP_ALIVE_TIMEOUT_MS,
    ]);
    expect(HEADERS_TIMEOUT_MS).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS);
    const res = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/health`);
    expect(res.status).toBe(200);
  } finally {
    http.close();
  }
});
