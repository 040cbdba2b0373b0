/**
 * What the queue pages show of a job's data, return value and progress (src/admin/job-view.ts):
 * content and credentials replaced by placeholders with their size, every other string redacted.
 * Bull Board's own use of it is checked in a real browser in console.test.ts.
 */
import { describe, expect, it } from "vitest";
import { jobNameView, jobView, MAX_SHOWN } from "../../src/admin/job-view.js";
import { fakePastedSecrets } from "../helpers/fake-tokens.js";

describe("jobView", () => {
  it("keeps ids, kinds, sizes and times; hides content keys with their size and credentials without it", () => {
    const data = {
      platform: "telegram",
      chatId: "-1001234",
      messageId: "42",
      sentAt: 1_700_000_000_000,
      forwarded: true,
      text: "hello there",
      Instruction: "water the plants",
      reply: { threadId: "7", replyToken: "abc" },
      media: [{ kind: "voice", size: 9000, duration: 12, url: "https://cdn.example/a.ogg" }],
      history: [{ role: "user" }, { role: "assistant" }],
      result: { summary: "x" },
      topicId: undefined,
    };
    expect(jobView(data)).toEqual({
      platform: "telegram",
      chatId: "-1001234",
      messageId: "42",
      sentAt: 1_700_000_000_000,
      forwarded: true,
      text: "[hidden: 11 characters]",
      Instruction: "[hidden: 16 characters]",
      reply: { threadId: "7", replyToken: "[hidden: credential]" },
      media: [{ kind: "voice", size: 9000, duration: 12, url: "[hidden: credential]" }],
      history: "[hidden: 2 items]",
      result: "[hidden: 1 field]",
      topicId: undefined,
    });
    expect(data.text).toBe("hello there"); // the job's own data is not changed
  });

  it("hides a long string under a key it does not know, and redacts the short ones", () => {
    const key = fakePastedSecrets().github;
    const long = "x".repeat(MAX_SHOWN + 1);
    expect(jobView({ newFeature: { words: long, code: `pwd=123456`, key } })).toEqual({
      newFeature: { words: `[hidden: ${MAX_SHOWN + 1} characters]`, code: "pwd=[redacted]", key: "[redacted]" },
    });
  });

  it("hides a return value that is a string, and anything nested too deep; counts what is left out of long lists", () => {
    expect(jobView("the whole answer")).toBe("[hidden: 16 characters]");
    expect(jobView(null)).toBeNull();
    expect(jobView(3)).toBe(3);
    let deep: unknown = { id: "1" };
    for (let i = 0; i < 10; i++) deep = { deeper: deep };
    expect(JSON.stringify(jobView(deep))).toContain("[hidden: 1 field]");
    const many = jobView(Array.from({ length: 60 }, (_, i) => i)) as unknown[];
    expect([many.length, many.at(-1)]).toEqual([51, "[10 more]"]);
  });

  it("redacts a job name and hides a long one", () => {
    expect(jobNameView("message")).toBe("message");
    expect(jobNameView(`x ${fakePastedSecrets().anthropic}`)).toBe("x [redacted]");
    expect(jobNameView("y".repeat(200))).toBe("[hidden: 200 characters]");
  });
});
