/**
 * In `npm run chat` the reader is the operator: a rejected API key (401), a wrong base URL (404)
 * and an unreachable endpoint each get a one-line cause under the apology, never the key; a base
 * URL ending in `/v1` is accepted (the SDK adds `/v1/messages` itself).
 */
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createAnthropicClient } from "../../src/agent/client.js";
import type { RunningBot } from "../../src/app.js";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";
import { startConsoleBot } from "./harness.js";

const KEY = "test-key-operator-0123456789";

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe("the terminal chat says why the model could not answer", () => {
  let server: TestRedis | undefined;
  let fake: FakeAnthropic | undefined;
  let bot: RunningBot | undefined;
  afterEach(async () => {
    await bot?.stop();
    await fake?.close();
    await server?.stop();
    bot = fake = server = undefined;
  });

  /** Starts the chat with `ANTHROPIC_API_KEY` = `key` and `ANTHROPIC_BASE_URL` = `baseUrl`, types `line`, returns the answer. */
  async function ask(env: { key: string; baseUrl: string }, line = "hello"): Promise<string> {
    server ??= await startRedis();
    const config = testConfig({
      ROLE: "all",
      BOT_LOCALE: "en",
      ANTHROPIC_API_KEY: env.key,
      ANTHROPIC_BASE_URL: env.baseUrl,
    });
    const session = await startConsoleBot({
      redisUrl: server.url,
      config,
      client: createAnthropicClient(config, { maxRetries: 0, timeoutMs: 5000 }),
    });
    bot = session.bot;
    const { output } = session;
    session.type(line);
    await waitFor(() => output.answers().length >= 1, 30_000, "an answer");
    return output.answers()[0]!;
  }

  it("accepts ANTHROPIC_BASE_URL ending in /v1 (the SDK's /v1/messages is not doubled)", async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    expect(testConfig({ ANTHROPIC_BASE_URL: `${fake.url}/v1/` }).ANTHROPIC_BASE_URL).toBe(fake.url);
    expect(testConfig({ ANTHROPIC_BASE_URL: "https://api.anthropic.com/v1" }).ANTHROPIC_BASE_URL).toBe(
      "https://api.anthropic.com",
    );
    expect(testConfig({ ANTHROPIC_BASE_URL: "https://gateway.example.com/anthropic/" }).ANTHROPIC_BASE_URL).toBe(
      "https://gateway.example.com/anthropic",
    );
    fake.enqueue(text("hi there"));
    expect(await ask({ key: KEY, baseUrl: `${fake.url}/v1` })).toBe("hi there");
    expect(fake.requests).toHaveLength(1);
  }, 60_000);

  it("401: says ANTHROPIC_API_KEY was rejected, without the key", async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    const wrong = "test-key-wrong-9876543210";
    const answer = await ask({ key: wrong, baseUrl: fake.url });
    const [apology, cause, ...rest] = answer.split("\n");
    expect(apology).toMatch(/^Sorry/);
    expect(cause).toBe(
      "(ANTHROPIC_API_KEY was rejected (401 authentication_error: invalid x-api-key); check the key in .env)",
    );
    expect(rest).toEqual([]);
    expect(answer).not.toContain(wrong);
  }, 60_000);

  it("404: says the base URL is wrong and what form it takes", async () => {
    fake = await startFakeAnthropic({ apiKey: KEY });
    const answer = await ask({ key: KEY, baseUrl: `${fake.url}/anthropic` });
    expect(answer.split("\n")[1]).toBe(
      "(the Messages API address was not found (404 not_found_error: Not found: POST " +
        "/anthropic/v1/messages); ANTHROPIC_BASE_URL must be the server root, such as https:" +
        "//api.anthropic.com (without /v1))",
    );
  }, 60_000);

  it("unreachable: says the endpoint cannot be reached and why", async () => {
    const port = await closedPort();
    const answer = await ask({ key: KEY, baseUrl: `http://127.0.0.1:${port}` });
    expect(answer.split("\n")[1]).toBe(
      `(cannot reach the Messages API: connect ECONNREFUSED 127.0.0.1:${port}; check ANTHROPIC_BASE_URL and the network)`,
    );
    expect(answer).not.toContain(KEY);
  }, 90_000);
});
