/**
 * Issue 26 (10): which links are shown honestly — a label that looks like another address than the
 * target, and Telegram proxy links — and how each platform's renderer shows them.
 */
import { describe, expect, it } from "vitest";
import { honestLinks } from "../../adapters/discord/links.js";
import { markdownToTelegramHtml } from "../../adapters/telegram/html.js";
import { isMislabelledLink, isProxyLink } from "../../src/links.js";

describe("isMislabelledLink", () => {
  it.each([
    ["https://bank.example", "https://evil.example"],
    ["https://bank.example/login", "https://evil.example/login"],
    ["bank.example", "https://evil.example"],
    ["bank.example/login?x=1", "https://evil.example"],
    ["www.bank.example", "https://evil.example"],
    ["Log in at https://bank.example now", "https://evil.example"],
    ["ｂａｎｋ．ｅｘａｍｐｌｅ", "https://evil.example"],
    ["bank\u200B.example", "https://evil.example"],
    ["http://", "https://evil.example"],
  ])("%j → %s is mislabelled", (label, href) => expect(isMislabelledLink(label, href)).toBe(true));

  it.each([
    ["the forecast", "https://www.cwa.gov.tw/V8/C/"],
    ["氣象署", "https://www.cwa.gov.tw/"],
    ["https://www.cwa.gov.tw/", "https://www.cwa.gov.tw/"],
    ["https://www.cwa.gov.tw", "https://www.cwa.gov.tw/"],
    ["cwa.gov.tw", "https://www.cwa.gov.tw/V8"],
    ["www.cwa.gov.tw/V8", "https://cwa.gov.tw/V8"],
    ["CWA.GOV.TW", "https://cwa.gov.tw/"],
    ["e.g. this", "https://example.com"],
    ["", "https://example.com"],
  ])("%j → %s is not", (label, href) => expect(isMislabelledLink(label, href)).toBe(false));
});

describe("isProxyLink", () => {
  it.each([
    "tg://proxy?server=1.2.3.4&port=443&secret=ee",
    "tg://socks?server=x&port=1080",
    "TG://PROXY?server=x",
    "tg:proxy?server=x",
    "https://t.me/proxy?server=x",
    "https://telegram.me/socks?server=x",
    "t.me/proxy?server=x",
  ])("%s is one", (href) => expect(isProxyLink(href)).toBe(true));
  it.each([
    "tg://user?id=5",
    "tg://resolve?domain=x",
    "https://t.me/proxybot",
    "https://t.me/channel/5",
    "https://example.com/proxy",
  ])("%s is not", (href) => expect(isProxyLink(href)).toBe(false));
});

describe("Telegram HTML", () => {
  it("a mislabelled link or image shows its target; an honest one keeps its text", () => {
    expect(markdownToTelegramHtml("[https://bank.example](https://evil.example)")).toBe(
      '<a href="https://evil.example">https://evil.example</a>',
    );
    expect(markdownToTelegramHtml("[**www.bank.example**](https://evil.example/a?b=1&c=2)")).toBe(
      '<a href="https://evil.example/a?b=1&amp;c=2">https://evil.example/a?b=1&amp;c=2</a>',
    );
    expect(markdownToTelegramHtml("![bank.example](https://evil.example/x.png)")).toBe(
      '<a href="https://evil.example/x.png">https://evil.example/x.png</a>',
    );
    expect(markdownToTelegramHtml("[the **forecast**](https://www.cwa.gov.tw/)")).toBe(
      '<a href="https://www.cwa.gov.tw/">the <b>forecast</b></a>',
    );
    expect(markdownToTelegramHtml("https://www.cwa.gov.tw/")).toBe(
      '<a href="https://www.cwa.gov.tw/">https://www.cwa.gov.tw/</a>',
    );
  });

  it("proxy links are not clickable: their label, or the address as code", () => {
    expect(markdownToTelegramHtml("[Faster](tg://proxy?server=1.2.3.4&port=443)")).toBe("Faster");
    expect(markdownToTelegramHtml("[join](https://t.me/socks?server=x)")).toBe("join");
    expect(markdownToTelegramHtml("<tg://proxy?server=x>")).toBe("<code>tg://proxy?server=x</code>");
    expect(markdownToTelegramHtml("use tg://socks?server=x&port=1 now")).toBe(
      "use <code>tg://socks?server=x&amp;port=1</code> now",
    );
    expect(markdownToTelegramHtml("[me](tg://user?id=5)")).toBe('<a href="tg://user?id=5">me</a>');
  });
});

describe("Discord masked links", () => {
  it("a mislabelled masked link becomes its target; others, autolinks and plain text are unchanged", () => {
    expect(honestLinks("See [https://bank.example](https://evil.example) now")).toBe("See https://evil.example now");
    expect(honestLinks("- [www.bank.example](<https://evil.example/a b>)")).toBe("- <https://evil.example/a b>");
    expect(honestLinks("| a |\n|---|\n| [bank.example](https://evil.example) |")).toBe(
      "| a |\n|---|\n| https://evil.example |",
    );
    const honest = "[the forecast](https://www.cwa.gov.tw/) and https://bank.example and `[x](y)`";
    expect(honestLinks(honest)).toBe(honest);
    const mislabelled = "[https://bank.example](https://evil.example) ".repeat(50);
    expect(honestLinks(mislabelled).length).toBeLessThan(mislabelled.length);
  });
});
