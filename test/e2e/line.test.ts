/**
 * LINE end to end: the real `@line/bot-sdk` clients against the strict fake LINE platform
 * (`test/fakes/line.ts`, checked against LINE's OpenAPI description), real Redis and BullMQ, the
 * worker and the scripted model; the bot runs as an adapter part and a worker part, as `npm start`
 * would with `ROLE=adapter` and `ROLE=worker`. Reply tokens expire on the fake's clock, and an
 * old event is made by its timestamp: no test waits for a minute to pass.
 */
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createAnthropicClient } from "../../src/agent/client.js";
import type { AgentDeps, AgentRequest } from "../../src/agent/contract.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot, type RunningBot } from "../../src/app.js";
import type { Config } from "../../src/config.js";
import { registry, resetMetrics } from "../../src/metrics.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { loadTools } from "../../src/toolbox/registry.js";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";
import { FakeLine, type FakeLineUser } from "../fakes/line.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { TEST_MODEL_RETRY } from "../helpers/model-retry.js";
import type { TestRedis } from "../helpers/redis.js";
import { startTestRedis } from "../helpers/use-redis.js";
import { scriptedModel } from "./scripted-model.js";

let line: FakeLine;
let model: FakeAnthropic;
let testRedis: TestRedis;
let redis: RedisClient;
let config: Config;
let adapters: RunningBot;
let worker: RunningBot;
let lines: string[];
let alice: FakeLineUser;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  testRedis = await startTestRedis();
  model = await startFakeAnthropic({ fallback: scriptedModel });
  line = await FakeLine.start({ pushQuota: 1000 });
  const port = await freePort();
  line.webhookUrl = `http://127.0.0.1:${port}/line/webhook`;
  const captured = captureLogger("debug");
  lines = captured.lines;
  config = testConfig({
    LOG_LEVEL: "debug",
    ANTHROPIC_API_KEY: "fake-e2e-anthropic-key-000000",
    ANTHROPIC_BASE_URL: model.url,
    LINE_CHANNEL_SECRET: line.secret,
    LINE_CHANNEL_ACCESS_TOKEN: line.token,
    LINE_API_URL: line.apiUrl,
    LINE_DATA_API_URL: line.dataUrl,
    LINE_WEBHOOK_PORT: String(port),
    HTTP_HOST: "127.0.0.1",
    ...testRedis.env,
  });
  const { toolbox } = await loadTools({ config, log: captured.log });
  const client = createAnthropicClient(config, { maxRetries: 1, timeoutMs: 10_000 });
  const agent = {
    runAgent: (request: AgentRequest, deps: AgentDeps) => runAgent(request, { ...deps, modelRetry: TEST_MODEL_RETRY }),
    client,
  };
  adapters = await startBot({
    config,
    log: captured.log.child({ part: "adapter" }),
    redisUrl: testRedis.url,
    toolbox,
    role: "adapter",
    prefix: "e2e",
  });
  worker = await startBot({
    config,
    log: captured.log.child({ part: "worker" }),
    redisUrl: testRedis.url,
    toolbox,
    role: "worker",
    agent,
    prefix: "e2e",
  });
  redis = connectRedis(testRedis.url);
  alice = line.user("Alice");
}, 60_000);

afterAll(async () => {
  await adapters?.stop();
  await worker?.stop();
  await redis?.quit();
  await line?.stop();
  await model?.close();
  await testRedis?.stop();
});

/** `bot_pushed_messages_total{platform="line"}` of this process. */
async function pushedMetric(): Promise<number> {
  const metric = await registry.getSingleMetric("bot_pushed_messages_total")?.get();
  return metric?.values.find((v) => v.labels.platform === "line")?.value ?? 0;
}

/** A one-to-one chat with `user`. */
const dm = (user: FakeLineUser) => ({ from: user });

it("answers a DM with its reply token: signed webhook, 200 at once, the answer as one reply, loading shown", async () => {
  resetMetrics();
  const event = line.textEvent(dm(alice), "calc (1200 + 800) * 0.05");
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("calculate")));
  expect(answer.via).toBe("reply");
  expect(answer.text).toContain("100");
  expect(line.pushes).toBe(0);
  expect(line.loadings.some((l) => l.chatId === alice.userId && l.loadingSeconds % 5 === 0)).toBe(true);
  expect(await pushedMetric()).toBe(0);
});

it("refuses a forged or unsigned webhook (401) and handles nothing of it", async () => {
  const before = line.sent.length;
  const event = line.textEvent(dm(alice), "forged hello");
  expect(await line.deliver([event], { signature: Buffer.alloc(32).toString("base64") })).toBe(401);
  const response = await fetch(line.webhookUrl, { method: "POST", body: JSON.stringify({ events: [event] }) });
  expect(response.status).toBe(401);
  const big = await fetch(line.webhookUrl, {
    method: "POST",
    headers: { "x-line-signature": "x", "content-length": String(2 * 1024 * 1024) },
    body: "x".repeat(2 * 1024 * 1024),
  }).catch(() => undefined);
  expect(big === undefined || big.status === 413).toBe(true);
  await new Promise((r) => setTimeout(r, 300));
  expect(line.sent.length).toBe(before);
  expect(model.requests.some((r) => JSON.stringify(r).includes("forged hello"))).toBe(false);
});

it("answers a redelivered event once", async () => {
  const event = line.textEvent(dm(alice), "redelivery check 42");
  expect(await line.deliver([event])).toBe(200);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("redelivery check 42")));
  expect(await line.deliver([event], { redelivery: true })).toBe(200);
  await new Promise((r) => setTimeout(r, 500));
  expect(line.messagesTo(alice.userId).filter((m) => m.text.includes("redelivery check 42"))).toHaveLength(1);
  expect(model.requests.filter((r) => JSON.stringify(r.messages.at(-1)).includes("redelivery check 42"))).toHaveLength(
    1,
  );
});

it("pushes when the reply token has expired (fake clock), and counts the push", async () => {
  resetMetrics();
  const event = line.textEvent(dm(alice), "late question 7");
  // The event is delivered after its token's minute has passed on LINE's side: the reply is refused, the answer is pushed.
  line.advance(61_000);
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.text.includes("late question 7")),
  );
  expect(answer.via).toBe("push");
  // The fake records the message before its answer reaches the bot, which counts the push then.
  await line.waitFor(async () => (await pushedMetric()) === 1 || undefined);
  expect(await pushedMetric()).toBe(1);
});

it("splits a long answer at 5,000 characters, five messages per call: the reply token first, then a push", async () => {
  const long = Array.from({ length: 7 }, (_, i) => `part ${i} ${"長".repeat(4900)}`).join("\n\n");
  model.enqueue(text(long));
  const event = line.textEvent(dm(alice), "write a lot");
  const pushesBefore = line.pushes;
  expect(await line.deliver([event])).toBe(200);
  await line.waitFor(() => line.messagesTo(alice.userId).find((m) => m.text.includes("part 6")), 15_000);
  const parts = line.messagesTo(alice.userId).filter((m) => /^part \d/.test(m.text));
  expect(parts.map((m) => m.text.slice(0, 6))).toEqual([
    "part 0",
    "part 1",
    "part 2",
    "part 3",
    "part 4",
    "part 5",
    "part 6",
  ]);
  expect(parts.map((m) => m.via)).toEqual(["reply", "reply", "reply", "reply", "reply", "push", "push"]);
  expect(parts.every((m) => m.text.length <= 5000)).toBe(true);
  expect(line.pushes - pushesBefore).toBe(1);
});

it("runs /reset as a command with the reply token, without the model", async () => {
  const before = model.requests.length;
  const event = line.textEvent(dm(alice), "/reset");
  expect(await line.deliver([event])).toBe(200);
  const answer = await line.waitFor(
    () => line.sent.at(-1)?.to === alice.userId && line.sent.at(-1)?.via === "reply" && line.sent.at(-1),
  );
  expect(answer.text).toMatch(/忘掉|forgot|reset/i);
  expect(model.requests.length).toBe(before);
  // The next question starts a fresh history.
  await line.deliver([line.textEvent(dm(alice), "and tomorrow?")]);
  const next = await line.waitFor(() =>
    line.messagesTo(alice.userId).find((m) => m.text.includes("no earlier question")),
  );
  expect(next.via).toBe("reply");
});

it("logs no message content and no token", () => {
  const all = lines.join("\n");
  expect(all).not.toContain(line.token);
  expect(all).not.toContain(line.secret);
  expect(all).not.toContain("late question 7");
});
