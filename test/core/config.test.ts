import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, secretValues } from "../../src/config.js";

describe("loadConfig", () => {
  it("applies the documented defaults", () => {
    const c = loadConfig({}, { purpose: "inspect" });
    expect(c.ANTHROPIC_MODEL).toBe("claude-opus-5");
    expect(c.DEFAULT_CITY).toBe("臺北市");
    expect(c.TIMEZONE).toBe("Asia/Taipei");
    expect(c.BOT_LOCALE).toBe("zh-TW");
    expect(c.MAX_TURNS).toBe(10);
    expect(c.CONFIRM_TIMEOUT_SECONDS).toBe(300);
    expect(c.WORKER_CONCURRENCY).toBe(8);
    expect(c.ROLE).toBe("all");
    expect(c.CWA_API_BASE).toBe("https://opendata.cwa.gov.tw/api");
    expect(c.REDIS_URL).toBeUndefined();
  });

  it("reports every problem at once and never prints a secret", () => {
    const token = "123456789:AAFakeFakeFakeFakeFakeFakeFakeFake";
    const env = {
      ANTHROPIC_API_KEY: "",
      TELEGRAM_BOT_TOKEN: "not a token sk-ant-secret-value",
      MAX_TURNS: "zero",
      TIMEZONE: "Mars/Base",
      BOT_LOCALE: "fr",
      DISCORD_API_URL: "discord",
      CWA_API_KEY: token,
    };
    let error: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect((error as ConfigError).problems.map((p) => p.split(":")[0]).sort()).toEqual(
      ["BOT_LOCALE", "DISCORD_API_URL", "MAX_TURNS", "TELEGRAM_BOT_TOKEN", "TIMEZONE"].sort(),
    );
    expect(message).not.toContain("sk-ant-secret-value");
    expect(message).not.toContain("not a token");
    expect(message).not.toContain(token);
  });

  it("requires the Anthropic key only where a worker runs", () => {
    expect(() => loadConfig({ ROLE: "worker" })).toThrow(/ANTHROPIC_API_KEY: is required/);
    expect(loadConfig({ ROLE: "adapter" }).ROLE).toBe("adapter");
    expect(loadConfig({ ANTHROPIC_API_KEY: "sk-ant-x1234567" }).ANTHROPIC_API_KEY).toBe("sk-ant-x1234567");
  });

  it("lists secret values for redaction, including a Redis password", () => {
    const c = loadConfig({ ANTHROPIC_API_KEY: "sk-ant-abcdef", REDIS_URL: "redis://:hunter22pw@localhost:6379" });
    expect(secretValues(c)).toEqual(["sk-ant-abcdef", "hunter22pw"]);
  });
});
