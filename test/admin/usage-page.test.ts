/**
 * The console's usage page and CSV (src/admin/usage.ts) from a real usage store, in the cases the
 * browser test does not take: zh-TW, and no `MODEL_PRICES` (no dollars anywhere, no dollar chart).
 */
import { describe, expect, it } from "vitest";
import { usageCsv, usagePage, usageReport } from "../../src/admin/usage.js";
import type { RedisClient } from "../../src/redis.js";
import { UsageStore } from "../../src/usage/store.js";
import { testConfig } from "../helpers/config.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((r) => (redis = r));

describe("the usage page without MODEL_PRICES, in zh-TW", () => {
  it("shows tokens and shares, says why there are no dollars, and leaves the CSV's usd empty", async () => {
    const config = testConfig();
    expect(config.MODEL_PRICES).toBeUndefined();
    const store = new UsageStore(redis, "Asia/Taipei");
    const at = Date.UTC(2027, 2, 10, 4); // 2027-03-10 in Taipei
    const call = { input_tokens: 300, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 700 };
    await store.record({ platform: "line", userId: "Uabc", chatId: "Cgroup" }, call, at, 0, 5, "claude-x");
    const report = await usageReport(store, config, at);
    expect(report.priced).toBe(false);
    expect(report.days.at(-1)).toMatchObject({ day: "2027-03-10", calls: 1, budget: 470, usd: undefined });
    expect(report.days.at(-1)!.cacheReadShare).toBeCloseTo(0.7, 10);

    const html = usagePage("zh-TW", report);
    expect(html).toContain("用量最多的使用者");
    expect(html).toContain("未設定 MODEL_PRICES，無法估算費用。");
    expect(html).not.toContain('id="chart-usd"');
    expect(html).toContain('id="chart-budget"');
    expect(html).toMatch(/<td>1<\/td><td>470<\/td><td>—<\/td><td>70\.0%<\/td>/);
    // The data block cannot end its element: "<" is escaped in the JSON.
    const block = /<script type="application\/json" id="usage-data">([^<]*)<\/script>/.exec(html)![1]!;
    expect(JSON.parse(block).days).toHaveLength(30);

    const rows = usageCsv(report)
      .trimEnd()
      .split("\r\n")
      .map((r) => r.split(","));
    const model = rows.find((r) => r[0] === "model")!;
    expect(model.slice(0, 3)).toEqual(["model", "2027-03-10", "claude-x"]);
    expect(model[13]).toBe("");
    expect(rows.find((r) => r[0] === "chat")!.slice(2, 9)).toEqual(["line:Cgroup", "", "", "", "", "", "470"]);
  });
});
