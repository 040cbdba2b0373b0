/**
 * The named metric functions of `src/metrics.ts`, read back through the registry `/metrics` serves.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { countingFetch, metrics, registry, resetMetrics, watchQueues } from "../../src/metrics.js";

async function sample(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  const values = (await metric!.get()).values;
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))
    .reduce((s, v) => s + v.value, 0);
}

// Test files share a process (isolate: false in vitest.config.ts): start from zero, as the bot does.
beforeAll(() => resetMetrics());

describe("metrics", () => {
  it("first visible text is observed once per message, also when answered() follows", async () => {
    const message = { platform: "telegram", chatId: "5", messageId: "m1", receivedAt: Date.now() - 1500 };
    metrics.firstVisibleText(message);
    metrics.firstVisibleText(message);
    metrics.answered(message);
    const first = (await registry.getSingleMetric("bot_first_visible_text_seconds")!.get()).values as {
      metricName?: string;
      labels: Record<string, unknown>;
      value: number;
    }[];
    expect(
      first.find((v) => v.metricName === "bot_first_visible_text_seconds_count" && v.labels.platform === "telegram")
        ?.value,
    ).toBe(1);
    const sum = first.find((v) => v.metricName === "bot_first_visible_text_seconds_sum")!.value;
    expect(sum).toBeGreaterThanOrEqual(1.5);
    expect(sum).toBeLessThan(5);
    expect(await sample("bot_messages_answered_total", { platform: "telegram" })).toBe(1);
  });

  it("counts approvals by verdict, failures, and model errors by status through the counting fetch", async () => {
    metrics.approval("approved");
    metrics.approval("expired");
    metrics.approval("expired");
    metrics.failed({ platform: "discord" });
    expect(await sample("bot_approvals_total", { verdict: "expired" })).toBe(2);
    expect(await sample("bot_approvals_total", { verdict: "approved" })).toBe(1);
    expect(await sample("bot_messages_failed_total", { platform: "discord" })).toBe(1);
    const fetch = countingFetch(async () => new Response("{}", { status: 429 }));
    await fetch("http://model.invalid/v1/messages");
    const broken = countingFetch(() => Promise.reject(new TypeError("fetch failed")));
    await expect(broken("http://model.invalid/v1/messages")).rejects.toThrow("fetch failed");
    expect(await sample("bot_model_calls_total")).toBe(2);
    expect(await sample("bot_model_errors_total", { status: "429" })).toBe(1);
    expect(await sample("bot_model_errors_total", { status: "network" })).toBe(1);
  });

  it("queue depths are read at scrape time from the watched reader; a failing reader leaves them out", async () => {
    const stop = watchQueues(async () => ({ chats: { waiting: 3, active: 1, delayed: 0 } }));
    expect(await sample("bot_queue_jobs", { queue: "chats", state: "waiting" })).toBe(3);
    stop();
    watchQueues(() => Promise.reject(new Error("redis down")));
    expect(await registry.metrics()).not.toContain('bot_queue_jobs{queue="chats"');
  });

  it("a queue read that never answers (Redis down, commands waiting) holds a scrape up only for the timeout, and reads do not pile up", async () => {
    let reads = 0;
    const debug: string[] = [];
    const stop = watchQueues(
      () => {
        reads += 1;
        return new Promise(() => {}); // as getJobCounts on a connection with maxRetriesPerRequest null during an outage
      },
      { timeoutMs: 200, log: { debug: (message) => debug.push(message) } },
    );
    try {
      for (let scrape = 0; scrape < 2; scrape++) {
        const started = performance.now();
        const text = await registry.metrics();
        const took = performance.now() - started;
        expect(took).toBeGreaterThanOrEqual(190);
        expect(took).toBeLessThan(1500);
        expect(text).toContain("process_cpu_user_seconds_total");
        expect(text).not.toContain('bot_queue_jobs{queue="chats"');
      }
      expect(reads).toBe(1);
      expect(debug).toEqual([
        "metrics: queue depths left out of this scrape (no answer within 200 ms)",
        "metrics: queue depths left out of this scrape (no answer within 200 ms)",
      ]);
    } finally {
      stop();
    }
  });

  it("active jobs go up while a job runs and back down after it, also when it throws", async () => {
    let during = -1;
    await metrics.activeJob(async () => {
      during = await sample("bot_worker_active_jobs");
    });
    await expect(metrics.activeJob(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(during).toBe(1);
    expect(await sample("bot_worker_active_jobs")).toBe(0);
  });
});
