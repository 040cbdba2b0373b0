import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  CONTENT_HIDDEN,
  createLogger,
  redact,
  registerSecrets,
  SECRET_SHAPES,
  secretForms,
  valueRedactor,
} from "../../src/log.js";
import { fakePastedSecrets, fakeTelegramToken } from "../helpers/fake-tokens.js";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
  return { lines, log: createLogger({ destination, level: "info" }) };
}

it("writes JSON lines with registered secrets and credential fields redacted", () => {
  registerSecrets(["fake-api-verysecretvalue", "cwa-KEY-123456"]);
  const { lines, log } = capture();
  log.info(
    {
      url: "https://opendata.cwa.gov.tw/api?Authorization=cwa-KEY-123456",
      token: "abc",
      config: { DISCORD_TOKEN: "x" },
    },
    "called with fake-api-verysecretvalue",
  );
  log.error({ err: new Error("401 for key fake-api-verysecretvalue") }, "failed");
  const text = lines.join("");
  expect(text).not.toContain("verysecretvalue");
  expect(text).not.toContain("cwa-KEY-123456");
  const first = JSON.parse(lines[0]!);
  expect(first.msg).toBe("called with [redacted]");
  expect(first.url).toBe("https://opendata.cwa.gov.tw/api?Authorization=[redacted]");
  expect(first.token).toBe("[redacted]");
  expect(first.config.DISCORD_TOKEN).toBe("[redacted]");
  expect(JSON.parse(lines[1]!).err.message).toBe("401 for key [redacted]");
});

it("redacts token shapes that were never registered", () => {
  expect(redact(`GET /bot${fakeTelegramToken()}/getMe`)).toBe("GET /bot[redacted]/getMe");
  expect(redact("nothing secret here")).toBe("nothing secret here");
});

it("redacts API keys, bot tokens and Bearer tokens a person pasted (never registered), and leaves ordinary text", () => {
  for (const [kind, value] of Object.entries(fakePastedSecrets()))
    expect([kind, redact(`我的金鑰是 ${value}，請記住`)]).toEqual([kind, "我的金鑰是 [redacted]，請記住"]);
  const bearer = "fAkE0".repeat(6);
  expect(redact(`curl -H "Authorization: Bearer ${bearer}" https://x`)).toBe(
    'curl -H "Authorization: Bearer [redacted]" https://x',
  );
  expect(redact(`{"authorization":"bearer ${bearer}"}`)).toBe('{"authorization":"bearer [redacted]"}');
  expect(redact("Authorization: Basic dXNlcjpwYXNz")).toBe("Authorization: Basic [redacted]");
  // Ordinary words with the same beginnings stay.
  for (const plain of [
    "the bearer of this letter",
    "Bearer short",
    "task-telegram-7001-3 and desk-lamp-sk-a",
    "sk-short",
    "ghp_ is GitHub's prefix",
    "AKIA",
    "eyJ.eyJ.x",
  ])
    expect(redact(plain)).toBe(plain);
});

it("redacts a credential written as a setting (password=…, token: …), and leaves prose and code that name one", () => {
  for (const [text, expected] of [
    ["password=hunter2", "password=[redacted]"],
    ["我的密碼 password: hunter2 別說出去", "我的密碼 password: [redacted] 別說出去"],
    ["PASSWORD = 'hunter2'", "PASSWORD = '[redacted]'"],
    ["DB_PASSWORD=abc123\nAPI_KEY=xyz", "DB_PASSWORD=[redacted]\nAPI_KEY=[redacted]"],
    ["https://x.test/cb?access_token=abc&state=1", "https://x.test/cb?access_token=[redacted]&state=1"],
    ["密碼：hunter2", "密碼：[redacted]"],
    ["apiKey: abcdef12, pwd=0000", "apiKey: [redacted], pwd=[redacted]"],
    ["refused (password=hunter2)", "refused (password=[redacted])"],
  ])
    expect(redact(text!)).toBe(expected);
  for (const plain of [
    "the token: expired",
    "keep it secret: the plan",
    "reset your password: click the link",
    "password: correcthorse",
    "max_tokens: 1024",
    "tokenizer=x",
    "const token = getToken();",
    'let password = "";',
    "passwords: 12",
  ])
    expect(redact(plain)).toBe(plain);
});

it("each shape's hints are in every text its pattern matches (a text without them is not searched)", () => {
  const bearer = "fAkE0".repeat(6);
  const texts = [
    ...Object.values(fakePastedSecrets()),
    fakeTelegramToken().replace(":", "%3A"),
    fakeTelegramToken().replace(":", "%3a"),
    `AUTHORIZATION= 'BOT ${bearer}'`,
    `AuThOrIzAtIoN: bAsIc ${bearer}`,
    `BEARER ${bearer}`,
    "password=hunter2",
    "我的密碼 password: hunter2",
    "密碼：hunter2",
    "apiKey: abcdef12, pwd=0000",
  ];
  for (const { name, pattern, hints, caseless } of SECRET_SHAPES)
    for (const text of texts) {
      if (!new RegExp(pattern.source, pattern.flags.replace("g", "")).test(text)) continue;
      const haystack = caseless ? text.toLowerCase() : text;
      expect([name, text, hints.some((h) => haystack.includes(h))]).toEqual([name, text, true]);
    }
  expect(redact(`AuThOrIzAtIoN: bAsIc ${bearer}`)).toBe("AuThOrIzAtIoN: bAsIc [redacted]");
});

it("redacts a bot token inside a URL, URL-encoded (`%3A` for the colon), registered or not", () => {
  expect(redact(`fetch failed: https://proxy.example/bot${fakeTelegramToken().replace(":", "%3A")}/getUpdates`)).toBe(
    "fetch failed: https://proxy.example/bot[redacted]/getUpdates",
  );
  expect(redact(`GET /bot${fakeTelegramToken().replace(":", "%3a")}/getMe`)).toBe("GET /bot[redacted]/getMe");
  // A registered token of any shape (this one is too short for the shape rule) is caught encoded too.
  registerSecrets(["900000007:short-Test_token"]);
  const { lines, log } = capture();
  log.error(
    { err: new Error("request to http://127.0.0.1:9/bot900000007%3Ashort-Test_token/getMe failed") },
    "GET /bot900000007:short-Test_token/x",
  );
  const text = lines.join("");
  expect(text).not.toContain("short-Test_token");
  expect(JSON.parse(lines[0]!).err.message).toBe("request to http://127.0.0.1:9/bot[redacted]/getMe failed");
});

it("secretForms: the value and each line of it, as written and URL-encoded both ways with either case of %xx; short lines left out when asked", () => {
  const forms = secretForms("k y/1:z\nline-two+");
  for (const form of [
    "k y/1:z\nline-two+",
    "k%20y%2F1%3Az%0Aline-two%2B",
    "k%20y%2f1%3az%0aline-two%2b",
    "k%20y/1:z%0Aline-two+",
    "k%20y/1:z%0aline-two+",
    "k y/1:z",
    "k%20y%2F1%3Az",
    "k%20y/1:z",
    "line-two+",
    "line-two%2B",
    "line-two%2b",
  ]) {
    expect(forms).toContain(form);
  }
  expect(secretForms("abc\nlonger-line", 6)).toEqual(expect.not.arrayContaining(["abc"]));
  expect(secretForms("abc\nlonger-line", 6)).toContain("longer-line");
  expect(secretForms("")).toEqual([]);
});

it("valueRedactor: short values of one source, also in a URL (encodeURI keeps '/' and ':'), longest first", () => {
  const clean = valueRedactor(["k y/1", "k y/1-and-more"]);
  expect(clean("GET /api/k%20y/1?x=1 failed")).toBe("GET /api/[redacted]?x=1 failed");
  expect(clean("value k y/1-and-more here")).toBe("value [redacted] here");
});

describe("message content (issue 39 item 9: LOG_CONTENT)", () => {
  const logged = (content: boolean, write: (log: ReturnType<typeof createLogger>) => void) => {
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
    write(createLogger({ destination, level: "debug", content }));
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  /** An error as a client library throws it: the request's payload on it, a cause with a body of its own. */
  const sendFailed = () =>
    Object.assign(new Error("Call to 'sendMessage' failed! (400: Bad Request)"), {
      method: "sendMessage",
      error_code: 400,
      payload: { chat_id: 1, text: "PRIVATE-ANSWER 住在新竹" },
      cause: Object.assign(new Error("socket"), {
        code: "ECONNRESET",
        requestBody: { json: { content: "PRIVATE-BODY" } },
      }),
    });

  it("off (the default): `content` fields are hidden and errors lose the objects that carry what was sent, at debug too", () => {
    const [first, second] = logged(false, (log) => {
      log.debug({ trace: { type: "user_input" }, content: { text: "PRIVATE-TEXT 我的帳號" } }, "trace user_input");
      log.error({ err: sendFailed(), chatId: "1" }, "could not send a reply");
    });
    expect(JSON.stringify([first, second])).not.toMatch(/PRIVATE|帳號|新竹/);
    expect(first).toMatchObject({ trace: { type: "user_input" }, content: CONTENT_HIDDEN });
    expect(second!.err).toMatchObject({
      type: "Error",
      message: "Call to 'sendMessage' failed! (400: Bad Request)",
      method: "sendMessage",
      error_code: 400,
      cause: { message: "socket", code: "ECONNRESET" },
    });
    expect(String((second!.err as { stack: string }).stack)).toContain("sendFailed");
  });

  it("on: the operator's choice shows them; secrets stay redacted", () => {
    registerSecrets(["fake-api-contentsecret"]);
    const lines = logged(true, (log) => {
      log.debug({ content: { text: "PRIVATE-TEXT fake-api-contentsecret" } }, "trace user_input");
      log.error({ err: sendFailed() }, "could not send a reply");
    });
    expect(lines[0]!.content).toEqual({ text: "PRIVATE-TEXT [redacted]" });
    expect(JSON.stringify(lines[1])).toContain("PRIVATE-ANSWER 住在新竹");
  });
});
