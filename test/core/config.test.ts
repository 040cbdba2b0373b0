import path from "node:path";
import { describe, expect, it } from "vitest";
import { alwaysAllowMs, ConfigError, ConfigSchema, loadConfig, secretValues } from "../../src/config.js";
import { fakeDiscordToken } from "../helpers/fake-tokens.js";

/** The problems `loadConfig` reports for `env` (purpose `inspect`), or [] when it is valid. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, { purpose: "inspect" });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

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
      TELEGRAM_BOT_TOKEN: "not a token fake-secret-value",
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
      // ANTHROPIC_API_KEY too: the run-time requirement is reported along with the format problems.
      ["ANTHROPIC_API_KEY", "BOT_LOCALE", "DISCORD_API_URL", "MAX_TURNS", "TELEGRAM_BOT_TOKEN", "TIMEZONE"].sort(),
    );
    expect(message).not.toContain("fake-secret-value");
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

  it("says what a numeric variable expects instead of 'is required', without the value", () => {
    const problems = problemsOf({
      MAX_TURNS: "abc",
      ANTHROPIC_MAX_TOKENS: "lots",
      WORKER_CONCURRENCY: "1.5",
      CONFIRM_TIMEOUT_SECONDS: "0x10",
      HISTORY_TTL_DAYS: "1e3",
    });
    expect(problems.sort()).toEqual([
      "ANTHROPIC_MAX_TOKENS: must be a whole number from 256 to 64000",
      "CONFIRM_TIMEOUT_SECONDS: must be a whole number from 5 to 86400",
      "HISTORY_TTL_DAYS: must be a whole number from 1 to 3650",
      "MAX_TURNS: must be a whole number from 1 to 50",
      "WORKER_CONCURRENCY: must be a whole number from 1 to 256",
    ]);
    expect(problemsOf({ MAX_TURNS: "51" })).toEqual(["MAX_TURNS: must be a whole number from 1 to 50"]);
    expect(problemsOf({ MAX_TURNS: "0" })).toEqual(["MAX_TURNS: must be a whole number from 1 to 50"]);
    expect(loadConfig({ MAX_TURNS: " 50 ", WORKER_CONCURRENCY: "1" }, { purpose: "inspect" })).toMatchObject({
      MAX_TURNS: 50,
      WORKER_CONCURRENCY: 1,
    });
  });

  it("STREAM_EDIT_INTERVAL_MS: 100 to 10000 ms (the final text may wait one interval), default 1000", () => {
    expect(loadConfig({}, { purpose: "inspect" }).STREAM_EDIT_INTERVAL_MS).toBe(1000);
    expect(loadConfig({ STREAM_EDIT_INTERVAL_MS: "10000" }, { purpose: "inspect" }).STREAM_EDIT_INTERVAL_MS).toBe(
      10_000,
    );
    expect(loadConfig({ STREAM_EDIT_INTERVAL_MS: "100" }, { purpose: "inspect" }).STREAM_EDIT_INTERVAL_MS).toBe(100);
    expect(problemsOf({ STREAM_EDIT_INTERVAL_MS: "30000" })).toEqual([
      "STREAM_EDIT_INTERVAL_MS: must be a whole number from 100 to 10000",
    ]);
    expect(problemsOf({ STREAM_EDIT_INTERVAL_MS: "10001" })).toEqual([
      "STREAM_EDIT_INTERVAL_MS: must be a whole number from 100 to 10000",
    ]);
    expect(problemsOf({ STREAM_EDIT_INTERVAL_MS: "99" })).toEqual([
      "STREAM_EDIT_INTERVAL_MS: must be a whole number from 100 to 10000",
    ]);
  });

  it("ALWAYS_ALLOW_DAYS: default 30, fractions allowed, zero, negative and words refused without the value", () => {
    expect(loadConfig({}, { purpose: "inspect" }).ALWAYS_ALLOW_DAYS).toBe(30);
    expect(alwaysAllowMs(loadConfig({}, { purpose: "inspect" }))).toBe(30 * 86_400_000);
    const half = loadConfig({ ALWAYS_ALLOW_DAYS: " 0.5 " }, { purpose: "inspect" });
    expect(half.ALWAYS_ALLOW_DAYS).toBe(0.5);
    expect(alwaysAllowMs(half)).toBe(12 * 3600_000);
    expect(alwaysAllowMs(loadConfig({ ALWAYS_ALLOW_DAYS: "0.00000001" }, { purpose: "inspect" }))).toBe(1000);
    const message =
      "ALWAYS_ALLOW_DAYS: must be a number of days greater than 0 and at most 3650 (fractions allowed, e.g. 0.5)";
    for (const bad of ["0", "0.0", "-1", "3651", "thirty", "1e3", ".5"])
      expect(problemsOf({ ALWAYS_ALLOW_DAYS: bad })).toEqual([message]);
  });

  it("treats a blank variable as unset, so its default applies (like .env.example's empty lines)", () => {
    const blank = Object.fromEntries(Object.keys(ConfigSchema.shape).map((k) => [k, ""]));
    expect(loadConfig(blank, { purpose: "inspect" })).toEqual(loadConfig({}, { purpose: "inspect" }));
    const c = loadConfig(
      { MAX_TURNS: "", ANTHROPIC_MODEL: "  ", HEALTH_PORT: "", TELEGRAM_WEBHOOK_PORT: "", CWA_API_BASE: "" },
      { purpose: "inspect" },
    );
    expect(c).toMatchObject({
      MAX_TURNS: 10,
      ANTHROPIC_MODEL: "claude-opus-5",
      TELEGRAM_WEBHOOK_PORT: 8443,
      CWA_API_BASE: "https://opendata.cwa.gov.tw/api",
    });
    expect(c.HEALTH_PORT).toBeUndefined();
  });

  it("checks ports with a real message", () => {
    expect(problemsOf({ HEALTH_PORT: "abc", TELEGRAM_WEBHOOK_PORT: "70000" }).sort()).toEqual([
      "HEALTH_PORT: must be a port number from 1 to 65535",
      "TELEGRAM_WEBHOOK_PORT: must be a port number from 1 to 65535",
    ]);
    expect(loadConfig({ HEALTH_PORT: "8080" }, { purpose: "inspect" }).HEALTH_PORT).toBe(8080);
  });

  it("reads HTTP_PORT, or HEALTH_PORT (its old name); refuses both set to different ports", () => {
    const portOf = (env: Record<string, string>) => {
      const c = loadConfig(env, { purpose: "inspect" });
      return [c.HTTP_PORT, c.HEALTH_PORT];
    };
    expect(portOf({ HTTP_PORT: "9090" })).toEqual([9090, 9090]);
    expect(portOf({ HEALTH_PORT: "9091" })).toEqual([9091, 9091]);
    expect(portOf({ HTTP_PORT: "9092", HEALTH_PORT: "9092" })).toEqual([9092, 9092]);
    expect(portOf({ HTTP_PORT: "9093", HEALTH_PORT: "" })).toEqual([9093, 9093]);
    expect(portOf({})).toEqual([undefined, undefined]);
    expect(problemsOf({ HTTP_PORT: "9090", HEALTH_PORT: "8080" })).toEqual([
      "HTTP_PORT: is 9090 but HEALTH_PORT (its old name) is 8080: the bot has one HTTP server for /health, " +
        "/metrics and /admin; set HTTP_PORT only (or both to the same port)",
    ]);
    // The console needs either name; the webhooks' ports are checked against whichever is set.
    expect(problemsOf({ ADMIN_CONSOLE: "on" })).toEqual([
      "ADMIN_CONSOLE: needs HTTP_PORT (or its old name HEALTH_PORT): the console is served by the bot's HTTP " +
        "server, at /admin on that port",
    ]);
    expect(problemsOf({ ADMIN_CONSOLE: "on", HTTP_PORT: "9090" })).toEqual([]);
    expect(problemsOf({ ADMIN_CONSOLE: "on", HEALTH_PORT: "9090" })).toEqual([]);
    const line = {
      LINE_CHANNEL_SECRET: "0123456789abcdef0123456789abcdef",
      LINE_CHANNEL_ACCESS_TOKEN: "x".repeat(172),
    };
    expect(problemsOf({ ...line, HTTP_PORT: "8444" })).toEqual([
      "HTTP_PORT: must differ from LINE_WEBHOOK_PORT: the LINE webhook and /health + /metrics are two servers",
    ]);
  });

  it("checks the shape of DISCORD_TOKEN without printing it", () => {
    // Made-up values in the shape of a bot token (id.timestamp.hmac) and of the usual mistakes.
    const shaped = "fake-discord-token.abcdef.0123456789";
    expect(loadConfig({ DISCORD_TOKEN: ` ${shaped} ` }, { purpose: "inspect" }).DISCORD_TOKEN).toBe(shaped);
    expect(loadConfig({ DISCORD_TOKEN: fakeDiscordToken() }, { purpose: "inspect" }).DISCORD_TOKEN).toBeDefined();
    const mistakes = [
      `Bot ${shaped}`, // the header prefix pasted along
      `"${shaped}"`,
      "fakeclientsecretfakeclientsecret", // OAuth2 client secret: no dots
      "123456789012345678", // application id
      "f".repeat(64), // public key
      "fake-discord-token.abcdef", // cut short
    ];
    for (const value of mistakes) {
      const problems = problemsOf({ DISCORD_TOKEN: value });
      expect(problems).toEqual([
        expect.stringMatching(/^DISCORD_TOKEN: does not look like a bot token from the Developer Portal/),
      ]);
      expect(problems[0]).not.toContain(value);
      expect(problems[0]).not.toContain("fake-discord-token");
    }
  });

  it("refuses the addresses the README calls wrong", () => {
    const problems = problemsOf({
      TELEGRAM_WEBHOOK_URL: "http://bot.example.com/hook",
      DISCORD_API_URL: "https://discord.com",
      CWA_API_BASE: "https://opendata.cwa.gov.tw/api/v1/rest",
      ANTHROPIC_BASE_URL: "api.anthropic.com",
    });
    expect(problems.map((p) => p.split(":")[0]).sort()).toEqual([
      "ANTHROPIC_BASE_URL",
      "CWA_API_BASE",
      "DISCORD_API_URL",
      "TELEGRAM_WEBHOOK_URL",
    ]);
    expect(problems.find((p) => p.startsWith("TELEGRAM_WEBHOOK_URL"))).toMatch(/https:\/\//);
    expect(problemsOf({ CWA_API_BASE: "ftp://opendata.cwa.gov.tw/api" })).toEqual([
      expect.stringMatching(/^CWA_API_BASE: must be an http:\/\/ or https:\/\/ URL ending in \/api/),
    ]);
    expect(problemsOf({ TELEGRAM_API_ROOT: "file:///srv/bot-api" })).toEqual([
      expect.stringMatching(/^TELEGRAM_API_ROOT: must be an http:\/\/ or https:\/\/ URL/),
    ]);
    expect(problemsOf({ TELEGRAM_WEBHOOK_URL: "bot.example.com/hook" })).toEqual([
      expect.stringMatching(/^TELEGRAM_WEBHOOK_URL: must be the public https:\/\//),
    ]);
    expect(problemsOf({ REDIS_URL: "localhost:6379" })).toEqual([
      expect.stringMatching(/^REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/),
    ]);
    expect(problemsOf({ REDIS_URL: "http://localhost:6379" })).toEqual([expect.stringMatching(/^REDIS_URL:/)]);
  });

  it("accepts the official addresses and the forms the test fakes use", () => {
    const c = loadConfig(
      {
        ANTHROPIC_BASE_URL: "http://127.0.0.1:40001",
        TELEGRAM_API_ROOT: "http://127.0.0.1:40002",
        // A self-hosted Bot API server in --local mode accepts an http:// webhook.
        TELEGRAM_WEBHOOK_URL: "http://127.0.0.1:40003/telegram/hook",
        DISCORD_API_URL: "http://127.0.0.1:40004/api/",
        CWA_API_BASE: "http://127.0.0.1:40005/api/",
        REDIS_URL: "redis://:hunter22pw@127.0.0.1:6379/2",
      },
      { purpose: "inspect" },
    );
    expect(c.DISCORD_API_URL).toBe("http://127.0.0.1:40004/api");
    expect(c.CWA_API_BASE).toBe("http://127.0.0.1:40005/api");
    const official = loadConfig(
      {
        ANTHROPIC_BASE_URL: "https://api.anthropic.com",
        TELEGRAM_API_ROOT: "https://api.telegram.org",
        TELEGRAM_WEBHOOK_URL: "https://bot.example.com:8443/hook",
        DISCORD_API_URL: "https://discord.com/api",
        REDIS_URL: "rediss://redis.example.com:6380",
      },
      { purpose: "inspect" },
    );
    expect(official.TELEGRAM_WEBHOOK_URL).toBe("https://bot.example.com:8443/hook");
  });

  it("resolves a relative unix socket path in REDIS_URL", () => {
    expect(loadConfig({ REDIS_URL: ".data/redis/redis.sock" }, { purpose: "inspect" }).REDIS_URL).toBe(
      path.resolve(".data/redis/redis.sock"),
    );
    expect(loadConfig({ REDIS_URL: "/run/redis/redis.sock" }, { purpose: "inspect" }).REDIS_URL).toBe(
      "/run/redis/redis.sock",
    );
  });

  it("gives every variable a message that says what is expected and never echoes the value", () => {
    const value = "§wrong-value§ fake-looks-secret";
    const env = Object.fromEntries(Object.keys(ConfigSchema.shape).map((k) => [k, value]));
    const problems = problemsOf(env);
    // Free text (keys, model id, city) is accepted as is: the city is checked by the weather tool.
    const freeText = [
      "ANTHROPIC_API_KEY",
      "ANTHROPIC_MODEL",
      "CWA_API_KEY",
      "DEFAULT_CITY",
      "REDIS_PASSWORD",
      "STT_API_KEY",
      "STT_MODEL",
      "TTS_API_KEY",
      "TTS_MODEL",
      "TTS_VOICE",
    ];
    // The garbage is a relative path, which REDIS_URL accepts as a socket path and MCP_CONFIG as a file path (read at start-up).
    const accepted = [...freeText, "REDIS_URL", "MCP_CONFIG"];
    expect(problems.map((p) => p.split(":")[0]).sort()).toEqual(
      Object.keys(ConfigSchema.shape)
        .filter((k) => !accepted.includes(k))
        .sort(),
    );
    for (const p of problems) {
      expect(p).toMatch(/^[A-Z_]+: (must|does not look like) /);
      expect(p).not.toContain("wrong-value");
      expect(p).not.toContain("sk-ant");
      expect(p).not.toMatch(/Invalid input|is required/);
    }
  });

  it("reports run-time requirements together with format problems", () => {
    const problems = (() => {
      try {
        loadConfig({ MAX_TURNS: "x", TELEGRAM_WEBHOOK_URL: "https://bot.example.com/hook" });
        return [];
      } catch (e) {
        return (e as ConfigError).problems;
      }
    })();
    expect(problems.map((p) => p.split(":")[0]).sort()).toEqual([
      "ANTHROPIC_API_KEY",
      "MAX_TURNS",
      "TELEGRAM_WEBHOOK_SECRET",
    ]);
  });

  it("requires a webhook secret of 16-256 characters from Telegram's set, and a plain HTTP_HOST", () => {
    const hook = { TELEGRAM_WEBHOOK_URL: "https://bot.example.com/hook" };
    for (const secret of ["x", "short-secret-15", "has spaces in it ok", "üñíçødé-secret-value", "a".repeat(257)]) {
      const problems = problemsOf({ ...hook, TELEGRAM_WEBHOOK_SECRET: secret });
      expect(problems).toEqual([
        expect.stringMatching(/^TELEGRAM_WEBHOOK_SECRET: must be 16-256 characters of A-Z, a-z, 0-9, _ and -/),
      ]);
      if (secret.length > 3) expect(problems[0]).not.toContain(secret);
    }
    for (const secret of ["0123456789abcdef", "Ab_-".repeat(64)]) {
      expect(
        loadConfig({ ...hook, TELEGRAM_WEBHOOK_SECRET: secret }, { purpose: "inspect" }).TELEGRAM_WEBHOOK_SECRET,
      ).toBe(secret);
    }
    expect(loadConfig({}, { purpose: "inspect" }).HTTP_HOST).toBeUndefined();
    for (const host of ["127.0.0.1", "0.0.0.0", "::", "::1", "localhost", "bot-host.internal"]) {
      expect(loadConfig({ HTTP_HOST: host }, { purpose: "inspect" }).HTTP_HOST).toBe(host);
    }
    for (const host of ["http://127.0.0.1", "127.0.0.1:8080", "two words"]) {
      expect(problemsOf({ HTTP_HOST: host })).toEqual([
        expect.stringMatching(/^HTTP_HOST: must be an IP address or host name/),
      ]);
    }
  });
});

describe("access and budget variables (issue 13)", () => {
  it("defaults: pairing, no lists, 10 messages a minute, 20 queued, 330000 budget tokens a day, no global budget, no prices", () => {
    const c = loadConfig({}, { purpose: "inspect" });
    expect(c.ACCESS_POLICY).toBe("pairing");
    expect([c.ADMIN_USERS, c.ALLOWED_USERS, c.ALLOWED_CHATS]).toEqual([[], [], []]);
    expect([c.RATE_LIMIT_PER_MINUTE, c.MAX_QUEUED_PER_CHAT, c.USER_DAILY_TOKENS, c.GLOBAL_DAILY_TOKENS]).toEqual([
      10, 20, 330000, 0,
    ]);
    expect(c.MODEL_PRICES).toBeUndefined();
  });

  it("parses the lists (normalised, without duplicates) and the prices", () => {
    const c = loadConfig(
      {
        ADMIN_USERS: "Telegram:42, discord:123456789012345678,telegram:42,",
        ALLOWED_CHATS: "telegram:-1001234567890,discord:876543210987654321",
        MODEL_PRICES: "15, 75,18.75,1.5",
      },
      { purpose: "inspect" },
    );
    expect(c.ADMIN_USERS).toEqual(["telegram:42", "discord:123456789012345678"]);
    expect(c.ALLOWED_CHATS).toEqual(["telegram:-1001234567890", "discord:876543210987654321"]);
    expect(c.MODEL_PRICES).toEqual({ input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5, webSearch: 10 });
    // a fifth price: USD per 1,000 web searches (default the API's 10)
    expect(loadConfig({ MODEL_PRICES: "15,75,18.75,1.5,12.5" }, { purpose: "inspect" }).MODEL_PRICES).toEqual({
      input: 15,
      output: 75,
      cacheWrite: 18.75,
      cacheRead: 1.5,
      webSearch: 12.5,
    });
    expect(problemsOf({ MODEL_PRICES: "1,2,3,4,5,6" }).find((p) => p.startsWith("MODEL_PRICES:"))).toContain(
      "optionally a fifth: USD per 1,000 web searches",
    );
  });

  it("a malformed entry stops start-up naming the variable and the entry, never its value (a pasted token is called one)", () => {
    const token = "123456789:AAFakeFakeFakeFakeFakeFakeFakeFake";
    const problems = problemsOf({
      ADMIN_USERS: `telegram:42,${token}`,
      ALLOWED_USERS: "telegram:-5",
      ALLOWED_CHATS: "slack:1",
      MODEL_PRICES: "1,2,3",
      ACCESS_POLICY: "public",
    });
    expect(problems).toContain(
      "ADMIN_USERS: must be a comma list of telegram:<userId>, discord:<userId> or line:<userId>; entry 2 of 2 is not (it looks like a token: remove it)",
    );
    expect(problems).toContain(
      "ALLOWED_USERS: must be a comma list of telegram:<userId>, discord:<userId> or line:<userId>; entry 1 of 1 is not",
    );
    expect(problems.find((p) => p.startsWith("ALLOWED_CHATS:"))).toMatch(/entry 1 of 1 is not$/);
    expect(problems.find((p) => p.startsWith("MODEL_PRICES:"))).toContain("input,output,cache_write,cache_read");
    expect(problems.find((p) => p.startsWith("ACCESS_POLICY:"))).toBe(
      "ACCESS_POLICY: must be pairing, allowlist or open",
    );
    expect(problems.join("\n")).not.toContain("AAFake");
    expect(problems.join("\n")).not.toContain("slack");
  });
});

describe("LINE variables (issue 41)", () => {
  const secret = "0123456789abcdef0123456789abcdef";
  const token = "lineChannelAccessTokenForTests0123456789+/=";
  it("reads the LINE channel, webhook and hosts, with the defaults", () => {
    const config = loadConfig(
      { LINE_CHANNEL_SECRET: secret, LINE_CHANNEL_ACCESS_TOKEN: token, LINE_API_URL: "http://127.0.0.1:9/" },
      { purpose: "inspect" },
    );
    expect(config.LINE_WEBHOOK_PORT).toBe(8444);
    expect(config.LINE_WEBHOOK_PATH).toBe("/line/webhook");
    expect(config.LINE_API_URL).toBe("http://127.0.0.1:9");
    expect(config.LINE_DATA_API_URL).toBeUndefined();
    expect(config.LINE_PUSH_MONTHLY_LIMIT).toBeUndefined();
    expect(secretValues(config)).toEqual(expect.arrayContaining([secret, token]));
  });

  it("needs both the secret and the token, and never prints either", () => {
    const problems = problemsOf({
      LINE_CHANNEL_ACCESS_TOKEN: token,
      LINE_WEBHOOK_PATH: "line",
      LINE_PUSH_MONTHLY_LIMIT: "-1",
    });
    expect(problems.find((p) => p.startsWith("LINE_CHANNEL_SECRET:"))).toContain("is required with the other");
    expect(problems.find((p) => p.startsWith("LINE_WEBHOOK_PATH:"))).toContain("beginning with /");
    expect(problems.find((p) => p.startsWith("LINE_PUSH_MONTHLY_LIMIT:"))).toBeDefined();
    expect(problemsOf({ LINE_CHANNEL_SECRET: "not-hex-at-all" }).join("\n")).not.toContain("not-hex-at-all");
    expect(problems.join("\n")).not.toContain(token);
  });

  it("takes line:<id> in the access lists (users U…, chats C… and R…)", () => {
    const user = `U${"a".repeat(32)}`;
    const group = `C${"b".repeat(32)}`;
    const config = loadConfig(
      { ALLOWED_USERS: `line:${user.toLowerCase()}`, ALLOWED_CHATS: `line:${group}` },
      { purpose: "inspect" },
    );
    expect(config.ALLOWED_USERS).toEqual([`line:${user}`]);
    expect(config.ALLOWED_CHATS).toEqual([`line:${group}`]);
    expect(problemsOf({ ALLOWED_USERS: `line:${group}` })[0]).toMatch(/^ALLOWED_USERS: must be a comma list/);
  });
});

describe("Discord shards (issue 19)", () => {
  it("reads DISCORD_SHARDS as ids and ranges, sorted; unset means all and Discord's recommendation", () => {
    const config = loadConfig({ DISCORD_SHARD_COUNT: "16", DISCORD_SHARDS: "8, 0-3" }, { purpose: "inspect" });
    expect(config.DISCORD_SHARD_COUNT).toBe(16);
    expect(config.DISCORD_SHARDS).toEqual([0, 1, 2, 3, 8]);
    const unset = loadConfig({}, { purpose: "inspect" });
    expect(unset.DISCORD_SHARD_COUNT).toBeUndefined();
    expect(unset.DISCORD_SHARDS).toBeUndefined();
  });

  it("refuses a malformed list, a shard at or over the count, a count of 0, and shards without a count", () => {
    expect(problemsOf({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARDS: "3-1" })).toEqual([
      "DISCORD_SHARDS: must be shard ids and ranges separated by commas, e.g. 0,1 or 0-3",
    ]);
    expect(problemsOf({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARDS: "0,x" })).toEqual([
      "DISCORD_SHARDS: must be shard ids and ranges separated by commas, e.g. 0,1 or 0-3",
    ]);
    expect(problemsOf({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARDS: "1-2" })).toEqual([
      "DISCORD_SHARDS: every shard id must be below DISCORD_SHARD_COUNT (2): shards are numbered 0 to 1",
    ]);
    expect(problemsOf({ DISCORD_SHARD_COUNT: "0" })).toEqual([
      "DISCORD_SHARD_COUNT: must be a whole number from 1 to 65535",
    ]);
    expect(problemsOf({ DISCORD_SHARDS: "0" })[0]).toMatch(/^DISCORD_SHARDS: needs DISCORD_SHARD_COUNT/);
  });

  it("refuses a shard named twice, and answers a huge range with the count it passes", () => {
    expect(problemsOf({ DISCORD_SHARD_COUNT: "4", DISCORD_SHARDS: "0,0" })).toEqual([
      "DISCORD_SHARDS: lists shard 0 more than once: name each shard id once",
    ]);
    expect(problemsOf({ DISCORD_SHARD_COUNT: "16", DISCORD_SHARDS: "0-3,2" })).toEqual([
      "DISCORD_SHARDS: lists shard 2 more than once: name each shard id once",
    ]);
    expect(problemsOf({ DISCORD_SHARD_COUNT: "4", DISCORD_SHARDS: "0-100000000" })).toEqual([
      "DISCORD_SHARDS: every shard id must be below DISCORD_SHARD_COUNT (4): shards are numbered 0 to 3",
    ]);
    expect(problemsOf({ DISCORD_SHARDS: "0-100000000" })).toEqual([
      "DISCORD_SHARDS: every shard id must be below DISCORD_SHARD_COUNT (at most 65535)",
    ]);
  });
});

describe("HTTP ports", () => {
  const webhook = {
    TELEGRAM_WEBHOOK_URL: "https://bot.example.com/hook",
    TELEGRAM_WEBHOOK_SECRET: "s3cret-webhook_token",
  };
  it("refuses HEALTH_PORT equal to TELEGRAM_WEBHOOK_PORT (also its default 8443) when the webhook is on", () => {
    const reason =
      "HEALTH_PORT: must differ from TELEGRAM_WEBHOOK_PORT: the webhook and /health + /metrics " +
      "are two servers, each on its own port (and /metrics should stay private while the webhook " +
      "is public)";
    expect(problemsOf({ ...webhook, TELEGRAM_WEBHOOK_PORT: "8080", HEALTH_PORT: "8080" })).toEqual([reason]);
    expect(problemsOf({ ...webhook, HEALTH_PORT: "8443" })).toEqual([reason]);
    expect(problemsOf({ ...webhook, TELEGRAM_WEBHOOK_PORT: "8443", HEALTH_PORT: "8080" })).toEqual([]);
    // Without a webhook the webhook port is never listened on.
    expect(problemsOf({ TELEGRAM_WEBHOOK_PORT: "8080", HEALTH_PORT: "8080" })).toEqual([]);
  });
});
