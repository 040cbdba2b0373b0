/**
 * `GET /metrics` end to end: messages sent through the fake Telegram and Discord to the whole
 * stack (real adapters, queue, worker, agent loop, toolbox), then the adapter part's `/metrics`
 * parsed by a Prometheus text parser (`parse-prometheus-text-format`) and its counters compared
 * with what was sent. The adapter and worker parts run in this one process, so the one registry
 * holds both sides' counts.
 */
import { freePort } from "../helpers/ports.js";
import parsePrometheusTextFormat, { type PrometheusFamily } from "parse-prometheus-text-format";
import { afterAll, beforeAll, expect, it } from "vitest";
import { resetMetrics } from "../../src/metrics.js";
import { text, toolUses } from "../fakes/anthropic.js";
import { startStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

let stack: Stack;
let port: number;

beforeAll(async () => {
  // Test files share a process (isolate: false in vitest.config.ts): start from zero, as the bot does.
  resetMetrics();
  port = await freePort();
  stack = await startStack({ healthPort: port, env: { RATE_LIMIT_PER_MINUTE: "2" } });
}, 60_000);
afterAll(async () => {
  await stack?.stop();
});

/**
 * Scrapes `/metrics` and parses it. parse-prometheus-text-format 1.1.1 folds a histogram with
 * labels other than `le` into one label-less sample (it drops `_count` and `_sum`), so the text is
 * parsed twice: as served (types, counters, gauges), and with the histograms' `# TYPE` lines made
 * `untyped`, where `name_count{platform=…}` comes out as a family of its own.
 */
async function scrape(): Promise<{ contentType: string; families: Map<string, PrometheusFamily> }> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
  const counts = new Map<string, PrometheusFamily>();
  for (const f of parsePrometheusTextFormat(text.replace(/^(# TYPE \S+) histogram$/gm, "$1 untyped"))) {
    // Each label set's run of lines comes out as families of its own: gather the `_count` ones.
    if (!f.name.endsWith("_count") || families.has(f.name)) continue;
    const known = counts.get(f.name);
    if (known) known.metrics.push(...f.metrics);
    else counts.set(f.name, f);
  }
  for (const [name, family] of counts) families.set(name, family);
  return { contentType: response.headers.get("content-type") ?? "", families };
}

/** The value of the sample of `name` whose labels include `labels` (0 when absent). */
function value(families: Map<string, PrometheusFamily>, name: string, labels: Record<string, string> = {}): number {
  const sample = families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(sample?.value ?? 0);
}

/** The summed sample count of histogram `name` over samples whose labels include `labels`. */
function histogramCount(
  families: Map<string, PrometheusFamily>,
  name: string,
  labels: Record<string, string> = {},
): number {
  return (families.get(`${name}_count`)?.metrics ?? [])
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value ?? 0), 0);
}

it("counts received, answered and refused messages, model calls, tokens, errors and tool calls as sent", async () => {
  const tg = stack.telegram;
  const dc = stack.discord;
  const alice = tg.user(8101, "Alice");
  const carol = tg.user(8103, "Carol");
  // A 529 first: the SDK retries it once (MODEL_RETRIES), so alice's message costs 3 model calls, one failed.
  stack.model.enqueue({ status: 529, errorType: "overloaded_error", message: "Overloaded" });
  tg.sendUserMessage({ chat: tg.privateChat(alice), from: alice, text: "calc 6 * 7" });
  await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 8101 && m.text.includes("42")),
    ANSWER_TIMEOUT_MS,
    "alice's answer",
  );
  // Carol sends three within the minute with RATE_LIMIT_PER_MINUTE=2: two answered, the third refused ("slow down").
  for (const text of ["calc 1 + 1", "calc 2 + 2", "calc 3 + 3"])
    tg.sendUserMessage({ chat: tg.privateChat(carol), from: carol, text });
  await tg.waitFor(
    () =>
      tg.sent.filter((m) => m.chatId === 8103).length >= 3 &&
      tg.sent.some((m) => m.chatId === 8103 && m.text.includes("4")),
    ANSWER_TIMEOUT_MS,
    "carol's answers",
  );
  const bob = { id: "700000000000008102", username: "bob", global_name: "Bob" };
  dc.sendUserMessage(bob, "calc 0.1 + 0.2", { dm: true });
  await dc.waitFor(() => dc.sent.find((m) => m.content.includes("0.3")), ANSWER_TIMEOUT_MS);

  // The worker finishes a job (pops the message, writes the trace) just after the platform has the
  // answer: scrape once no job runs any more.
  let scraped = await scrape();
  for (
    const until = Date.now() + 10_000;
    value(scraped.families, "bot_worker_active_jobs") !== 0 && Date.now() < until;
  ) {
    await new Promise((r) => setTimeout(r, 100));
    scraped = await scrape();
  }
  const { contentType, families } = scraped;
  expect(contentType).toContain("text/plain");
  expect(value(families, "bot_messages_received_total", { platform: "telegram", chat_kind: "dm" })).toBe(4);
  expect(value(families, "bot_messages_received_total", { platform: "discord", chat_kind: "dm" })).toBe(1);
  expect(value(families, "bot_messages_refused_total", { platform: "telegram", reason: "rate" })).toBe(1);
  expect(value(families, "bot_messages_answered_total", { platform: "telegram" })).toBe(3);
  expect(value(families, "bot_messages_answered_total", { platform: "discord" })).toBe(1);
  expect(value(families, "bot_messages_failed_total", { platform: "telegram" })).toBe(0);
  // Every answered message: one queue wait, one first visible text, one whole-answer time.
  for (const name of ["bot_queue_wait_seconds", "bot_first_visible_text_seconds", "bot_answer_seconds"]) {
    expect(families.get(name)?.type).toBe("HISTOGRAM");
    expect(histogramCount(families, name, { platform: "telegram" })).toBe(3);
    expect(histogramCount(families, name, { platform: "discord" })).toBe(1);
  }
  // Each calc: a tool_use response and a final one; alice's first call got the 529 and was retried.
  expect(value(families, "bot_model_calls_total")).toBe(stack.model.requests.length);
  expect(value(families, "bot_model_calls_total")).toBe(9);
  expect(value(families, "bot_model_errors_total", { status: "529" })).toBe(1);
  const sum = (kind: "input_tokens" | "output_tokens" | "cache_creation_input_tokens" | "cache_read_input_tokens") =>
    stack.model.answered.reduce((s, a) => s + a.usage[kind], 0);
  expect(value(families, "bot_model_tokens_total", { kind: "input" })).toBe(sum("input_tokens"));
  expect(value(families, "bot_model_tokens_total", { kind: "output" })).toBe(sum("output_tokens"));
  expect(value(families, "bot_model_tokens_total", { kind: "cache_write" })).toBe(sum("cache_creation_input_tokens"));
  expect(value(families, "bot_model_tokens_total", { kind: "cache_read" })).toBe(sum("cache_read_input_tokens"));
  expect(sum("output_tokens")).toBeGreaterThan(0);
  expect(value(families, "bot_tool_calls_total", { tool: "calculate", outcome: "ok" })).toBe(4);
  expect(histogramCount(families, "bot_tool_duration_seconds", { tool: "calculate" })).toBe(4);
  // Queue depths are read from Redis at scrape time: all answered, nothing waits.
  for (const queue of ["chats", "decisions", "reminders", "tasks", "compactions"]) {
    for (const state of ["waiting", "active", "delayed"])
      expect(
        families.get("bot_queue_jobs")?.metrics.some((m) => m.labels?.queue === queue && m.labels.state === state),
      ).toBe(true);
  }
  expect(value(families, "bot_queue_jobs", { queue: "chats", state: "waiting" })).toBe(0);
  expect(value(families, "bot_worker_concurrency")).toBe(stack.config.WORKER_CONCURRENCY);
  expect(value(families, "bot_worker_active_jobs")).toBe(0);
  // Default process metrics are on.
  expect(families.has("process_cpu_user_seconds_total")).toBe(true);
  expect(families.has("nodejs_eventloop_lag_seconds")).toBe(true);
});

it("/health keeps its meaning beside /metrics; other paths are 404", async () => {
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  expect(health.status).toBe(200);
  expect(((await health.json()) as { status: string }).status).toBe("ok");
  expect((await fetch(`http://127.0.0.1:${port}/metricsx`)).status).toBe(404);
});

it("tool names the model makes up add no series: an unknown tool is counted as `unknown`", async () => {
  const tg = stack.telegram;
  const user = tg.user(8201, "Mallory");
  const before = (await scrape()).families;
  const series = (families: Map<string, PrometheusFamily>) =>
    [...families.values()].filter((f) => f.name.startsWith("bot_tool_")).reduce((n, f) => n + f.metrics.length, 0);
  const calculateBefore = value(before, "bot_tool_calls_total", { tool: "calculate", outcome: "ok" });
  // 300 made-up names in one turn (the 4,800 series came from 300 names), then a real tool.
  stack.model.enqueue(
    toolUses(Array.from({ length: 300 }, (_, i) => ({ name: `made_up_tool_${i}`, input: {} }))),
    toolUses([{ name: "calculate", input: { expression: "2 + 2" } }]),
    text("done"),
  );
  tg.sendUserMessage({ chat: tg.privateChat(user), from: user, text: "try every tool" });
  await tg.waitFor(
    () => tg.sent.find((m) => m.chatId === 8201 && m.text.includes("done")),
    ANSWER_TIMEOUT_MS,
    "the answer",
  );
  const { families } = await scrape();
  expect(
    families.get("bot_tool_calls_total")?.metrics.some((m) => String(m.labels?.tool).startsWith("made_up_tool_")),
  ).toBe(false);
  expect(value(families, "bot_tool_calls_total", { tool: "unknown", outcome: "error" })).toBe(
    value(before, "bot_tool_calls_total", { tool: "unknown", outcome: "error" }) + 300,
  );
  expect(value(families, "bot_tool_calls_total", { tool: "calculate", outcome: "ok" })).toBe(calculateBefore + 1);
  // At most the `unknown` series are new: one counter sample per outcome, and one histogram.
  expect(series(families) - series(before)).toBeLessThanOrEqual(
    2 +
      (families.get("bot_tool_duration_seconds")?.metrics.length ?? 0) -
      (before.get("bot_tool_duration_seconds")?.metrics.length ?? 0),
  );
  expect(histogramCount(families, "bot_tool_duration_seconds", { tool: "unknown" })).toBe(
    histogramCount(before, "bot_tool_duration_seconds", { tool: "unknown" }) + 300,
  );
});

it("the health server listens on 127.0.0.1 only when HTTP_HOST is unset", async () => {
  expect(stack.config.HTTP_HOST).toBeUndefined();
  expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  // 127.0.0.2 is loopback too: a server on every interface would answer there.
  await expect(fetch(`http://127.0.0.2:${port}/health`)).rejects.toThrow();
});
