/**
 * The Redis trace store with a real Redis, fed by a real agent run against the fake Messages API.
 */
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgent } from "../../src/agent/loop.js";
import { registerSecrets } from "../../src/log.js";
import { connectRedis } from "../../src/redis.js";
import { formatRun } from "../../src/trace/format.js";
import { TRACE_KEEP_RUNS, TRACE_TTL_SECONDS, TraceStore, traceKey } from "../../src/trace/store.js";
import { PREVIEW_CHARS } from "../../src/trace/tracer.js";
import { traceMain } from "../../src/cli/trace.js";
import { runCli } from "../helpers/cli.js";
import { testContext } from "../helpers/context.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { startFakeAnthropic, text, toolUse, type FakeAnthropic } from "../fakes/anthropic.js";
import { TEST_API_KEY, testDeps } from "../agent/helpers.js";

let server: TestRedis;
let redis: RedisClient;
let fake: FakeAnthropic;

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  fake = await startFakeAnthropic({ promptCache: { minTokens: 1 } });
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
  await fake.close();
});

async function commandCalls(): Promise<Record<string, number>> {
  const info = await redis.info("commandstats");
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

describe("TraceStore", () => {
  it("stores a whole agent run in one command, with cache usage per model call", async () => {
    const store = new TraceStore(redis);
    const tracer = store.startRun({ chat: { platform: "telegram", chatId: "100" }, runId: "job-1" });
    const deps = { ...testDeps(fake), tracer };
    // a long system prompt is cached; the fake reports creation on the first call and reads afterwards
    fake.enqueue(toolUse("get_time", { timezone: "Asia/Taipei" }, { id: "toolu_t" }), text("現在是凌晨三點。"));
    const outcome = await runAgent({ history: [], userText: "現在幾點？", context: testContext() }, deps);
    expect(outcome.kind).toBe("answer");

    const before = await commandCalls();
    expect(await tracer.finish()).toBe(true);
    const after = await commandCalls();
    expect((after.eval ?? 0) - (before.eval ?? 0)).toBe(1);
    expect((after.multi ?? 0) - (before.multi ?? 0)).toBe(0);
    expect((after.lpush ?? 0) - (before.lpush ?? 0)).toBe(1); // inside the script
    expect(await tracer.finish()).toBe(false);

    const run = (await store.latestRun("telegram:100"))!;
    expect(run.runId).toBe("job-1");
    expect(run.chat).toBe("telegram:100");
    expect(run.events.map((e) => e.type)).toEqual([
      "user_input",
      "model_call",
      "model_response",
      "tool_call",
      "tool_result",
      "model_call",
      "model_response",
      "final_answer",
    ]);
    expect(run.events.every((e) => e.runId === "job-1" && e.chat === "telegram:100" && e.at >= run.startedAt)).toBe(
      true,
    );
    const [call1, resp1, , toolResult, , resp2, final] = run.events.slice(1).map((e) => e.data);
    expect(call1).toMatchObject({ model: "claude-test-1", messages: 1, tools: 4, turn: 1 });
    expect(resp1).toMatchObject({ stopReason: "tool_use", toolUses: ["get_time"] });
    const usage1 = resp1!.usage as Record<string, number>;
    const usage2 = resp2!.usage as Record<string, number>;
    expect(Object.keys(usage1).sort()).toEqual([
      "cache_creation_input_tokens",
      "cache_read_input_tokens",
      "input_tokens",
      "output_tokens",
    ]);
    expect(usage1.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(usage1.cache_read_input_tokens).toBe(0);
    // The second call reads the whole first request back (up to its breakpoint on the user turn) and writes its new turns.
    expect(usage2.cache_read_input_tokens).toBe(usage1.cache_creation_input_tokens);
    expect(usage2.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(toolResult).toMatchObject({ tool: "get_time", ok: true, preview: "2026-11-30 03:00 (Asia/Taipei)" });
    expect(final).toMatchObject({ text: "現在是凌晨三點。", turns: 2 });

    // the requests carried the breakpoints: last tool and the system prompt
    const req = fake.requests[0]!;
    expect(req.tools!.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    expect((req.system as { cache_control?: unknown }[])[0]!.cache_control).toEqual({ type: "ephemeral" });

    const ttl = await redis.ttl(traceKey("telegram:100"));
    expect(ttl).toBeGreaterThan(TRACE_TTL_SECONDS - 10);
    expect(ttl).toBeLessThanOrEqual(TRACE_TTL_SECONDS);
    expect(JSON.stringify(run)).not.toContain(TEST_API_KEY);
  });

  it("keeps the last 20 runs per chat, newest first", async () => {
    const store = new TraceStore(redis);
    const run = async (i: number) => {
      const t = store.startRun({ chat: "discord:555", runId: `r${i}` });
      t.event("user_input", { text: `message ${i}` });
      await t.finish();
    };
    for (let i = 0; i < TRACE_KEEP_RUNS + 5; i++) await run(i);
    // the list is cut back to the kept runs once it has grown to twice that; only the kept runs are read
    expect(await redis.llen(traceKey("discord:555"))).toBeLessThanOrEqual(2 * TRACE_KEEP_RUNS);
    expect(await store.runs("discord:555", 100)).toHaveLength(TRACE_KEEP_RUNS);
    for (let i = TRACE_KEEP_RUNS + 5; i < 2 * TRACE_KEEP_RUNS + 1; i++) await run(i);
    expect(await redis.llen(traceKey("discord:555"))).toBe(TRACE_KEEP_RUNS);
    expect((await store.runs("discord:555")).map((r) => r.runId)).toEqual(
      Array.from({ length: TRACE_KEEP_RUNS }, (_, i) => `r${2 * TRACE_KEEP_RUNS - i}`),
    );
    for (let i = 2 * TRACE_KEEP_RUNS + 1; i < 2 * TRACE_KEEP_RUNS + 3; i++) await run(i);
    expect((await store.latestRun("discord:555"))!.runId).toBe(`r${2 * TRACE_KEEP_RUNS + 2}`);
    const runs = await store.runs("discord:555", 3);
    expect(runs.map((r) => r.runId)).toEqual(["r42", "r41", "r40"]);
    expect((await store.runs("discord:555")).at(-1)!.runId).toBe("r23");
    expect(await store.latestRun("discord:nothing")).toBeUndefined();
  });

  it("stores no run that recorded no event (a no-op /compact), so the conversation's latest real run stays first", async () => {
    const store = new TraceStore(redis);
    const answer = store.startRun({ chat: "telegram:7001", runId: "answer" });
    answer.event("user_input", { text: "hi" });
    expect(await answer.finish()).toBe(true);
    const empty = store.startRun({ chat: "telegram:7001", runId: "compaction:telegram:7001:1" });
    expect(await empty.finish()).toBe(false);
    const taken = store.startRun({ chat: "telegram:7001", runId: "nothing" });
    expect(taken.take()).toBeUndefined();
    expect((await store.runs("telegram:7001")).map((r) => r.runId)).toEqual(["answer"]);
  });

  it("redacts secrets and keeps only previews", async () => {
    registerSecrets(["very-secret-token-42"]);
    const store = new TraceStore(redis);
    const t = store.startRun({ chat: "console:me" });
    t.event("tool_result", {
      preview: "token very-secret-token-42 here",
      nested: { list: ["1234567:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "x".repeat(1000)] },
      n: 3,
    });
    await t.finish();
    const stored = (await redis.lindex(traceKey("console:me"), 0))!;
    expect(stored).not.toContain("very-secret-token-42");
    expect(stored).not.toContain("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    const data = (await store.latestRun("console:me"))!.events[0]!.data as {
      preview: string;
      nested: { list: string[] };
      n: number;
    };
    expect(data.preview).toBe("token [redacted] here");
    expect(data.nested.list[0]).toBe("[redacted]");
    expect(data.nested.list[1]).toHaveLength(PREVIEW_CHARS);
    expect(data.n).toBe(3);
  });

  it("never throws when Redis is gone", async () => {
    const broken = connectRedis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    await broken.ping();
    broken.disconnect();
    const t = new TraceStore(broken).startRun({ chat: "telegram:1" });
    t.event("error", { message: "x" });
    await expect(t.finish()).resolves.toBe(false);
  });

  it("formats a run as a readable timeline, and npm run trace prints it", async () => {
    const run = (await new TraceStore(redis).latestRun("telegram:100"))!;
    const textOut = formatRun(run);
    const lines = textOut.split("\n");
    expect(lines[0]).toMatch(/^run job-1 · telegram:100 · \d{4}-\d\d-\d\dT.*Z · 8 events · \d+ ms$/);
    expect(lines[1]).toMatch(/^\s+\+\d+ ms {2}user_input {6}text="現在幾點？"/);
    expect(lines.find((l) => l.includes("model_response"))).toMatch(
      /stopReason="tool_use".*usage=\{input_tokens=\d+ output_tokens=\d+ cache_creation_input_tokens=\d+/,
    );

    // npm run trace in this process (`traceMain`; its program and folder handling: test/trace/cli.test.ts).
    const env = { REDIS_URL: server.url, LOG_LEVEL: "silent" };
    const { stdout } = await runCli(traceMain, ["telegram", "100"], env);
    expect(stdout.trim()).toBe(textOut);
    const missing = await runCli(traceMain, ["telegram", "404"], env);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stdout).toContain("No trace stored for telegram:404");
  });
});
