/**
 * The Messages API's web search through the agent loop, the real SDK and the strict fake: the
 * offered tool, cited answers with their sources, what the history keeps (and what that saves),
 * pause_turn in the middle of a search, search errors, streaming status lines, usage, and an API
 * that refuses the tool.
 */
import { describe, expect, it } from "vitest";
import type { AgentDeps, AgentEvent, MessageParam } from "../../src/agent/contract.js";
import { runAgent } from "../../src/agent/loop.js";
import { SOURCES_NOTE_HEADING } from "../../src/agent/sources.js";
import type { ModelUsage } from "../../src/usage/store.js";
import { serverTools } from "../../src/toolbox/server-tools.js";
import type { Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { captureLogger } from "../helpers/log.js";
import { testContext } from "../helpers/context.js";
import {
  searchReply,
  startFakeAnthropic,
  text,
  type FakeAnthropic,
  type FakeSearchResult,
} from "../fakes/anthropic.js";
import { addNumbers, answerOf, getTime, testDeps, useFakeAnthropic } from "./helpers.js";

let fake: FakeAnthropic;
useFakeAnthropic((started) => {
  fake = started;
});

const answer = answerOf;

/** The test tools and the server tools of `env` (web search on by default). */
function searchingDeps(env: Record<string, string> = {}, fakeFor = fake): AgentDeps & { usages: ModelUsage[] } {
  const deps = testDeps(fakeFor, { env });
  const usages: ModelUsage[] = [];
  return {
    ...deps,
    toolbox: new ToolBox([addNumbers as unknown as Tool, getTime as unknown as Tool, ...serverTools(deps.config)]),
    onUsage: (u) => usages.push(u),
    usages,
  };
}

const STRIKE: FakeSearchResult[] = [
  { url: "https://www.cna.com.tw/news/strike", title: "台鐵罷工 [快訊] *明天*", page_age: "2 hours ago" },
  { url: "https://www.thsrc.com.tw/notice", title: "高鐵營運公告" },
  { url: "https://example.org/unused", title: "Not cited" },
];

const cited = (i: number, cited_text: string) => ({ url: STRIKE[i]!.url, title: STRIKE[i]!.title, cited_text });

describe("web search", () => {
  it("offers a valid web_search tool: the configured max_uses, an approximate location in Taiwan in TIMEZONE, tagged web", async () => {
    const deps = searchingDeps({ WEB_SEARCH_MAX_USES: "5", TIMEZONE: "Asia/Taipei" });
    fake.enqueue(text("好。"));
    answer(await runAgent({ history: [], userText: "嗨", context: testContext() }, deps));
    const tools = fake.requests[0]!.tools!;
    expect(tools.map((t) => t.name)).toEqual(["add_numbers", "get_time", "web_search"]);
    expect(tools[2]).toEqual({
      type: "web_search_20250305",
      name: "web_search",
      max_uses: 5,
      user_location: { type: "approximate", city: "Taipei", country: "TW", timezone: "Asia/Taipei" },
      cache_control: { type: "ephemeral" },
    });
    expect(deps.toolbox.get("web_search")!.tags).toEqual(["web"]);
    expect((fake.requests[0]!.system as { text: string }[])[0]!.text).toContain(
      "search the web instead of answering from memory",
    );
    // WEB_SEARCH=off: no search tool, and no word of it in the prompt
    const off = searchingDeps({ WEB_SEARCH: "off" });
    fake.enqueue(text("好。"));
    answer(await runAgent({ history: [], userText: "嗨", context: testContext() }, off));
    expect(fake.requests[1]!.tools!.map((t) => t.name)).toEqual(["add_numbers", "get_time"]);
    expect((fake.requests[1]!.system as { text: string }[])[0]!.text).not.toContain("search the web");
  });

  it("the fake refuses malformed web search and web fetch definitions as the API does", async () => {
    const deps = searchingDeps();
    const base = { model: "claude-test-1", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
    const refused = async (tool: Record<string, unknown>) =>
      String(await deps.client.messages.create({ ...base, tools: [tool] } as never).catch((e: unknown) => e));
    const search = { type: "web_search_20250305", name: "web_search" };
    expect(await refused({ ...search, name: "search" })).toContain(
      "tools.0.web_search_20250305.name: Input should be 'web_search'",
    );
    expect(await refused({ ...search, max_uses: 0 })).toContain("max_uses: Input should be greater than 0");
    expect(await refused({ ...search, user_location: { type: "exact", city: "Taipei" } })).toContain(
      "user_location.type: Input should be 'approximate'",
    );
    expect(await refused({ ...search, user_location: { type: "approximate", timezone: "Mars/Olympus" } })).toContain(
      "Invalid IANA time zone",
    );
    expect(await refused({ ...search, user_location: { type: "approximate", country: "Taiwan" } })).toContain(
      "user_location.country",
    );
    expect(await refused({ ...search, allowed_domains: ["a.tw"], blocked_domains: ["b.tw"] })).toContain(
      "Cannot specify both allowed_domains and blocked_domains",
    );
    expect(await refused({ ...search, citations: { enabled: true } })).toContain(
      "tools.0.web_search_20250305.citations: Extra inputs are not permitted",
    );
    expect(await refused({ type: "web_fetch_20250910", name: "web_fetch", max_content_tokens: -1 })).toContain(
      "max_content_tokens: Input should be greater than 0",
    );
    expect(await refused({ type: "web_search_20240101", name: "web_search" })).toContain(
      "Input tag 'web_search_20240101' found using 'type' does not match any of the expected tags",
    );
  });

  it(
    "a cited answer ends with its sources, each cited URL once as a Markdown link; the history " +
      "keeps the text without results or citations, and stays valid",
    async () => {
      const deps = searchingDeps();
      fake.enqueue(
        searchReply(
          "台鐵 罷工",
          STRIKE,
          [
            "根據搜尋結果，",
            { text: "台鐵明天起罷工三天", citations: [cited(0, "台鐵工會宣布明天起罷工三天")] },
            "，",
            { text: "高鐵照常營運。", citations: [cited(1, "高鐵今日正常營運"), cited(0, "高鐵不受影響")] },
          ],
          {
            lead: "我來查一下最新消息。",
          },
        ),
      );
      const out = answer(await runAgent({ history: [], userText: "台鐵明天有罷工嗎？", context: testContext() }, deps));
      expect(out.text).toBe(
        [
          "根據搜尋結果，台鐵明天起罷工三天 [1]，高鐵照常營運。 [1][2]",
          "",
          "來源：",
          "1. [台鐵罷工 \\[快訊\\] \\*明天\\*](<https://www.cna.com.tw/news/strike>) `www.cna.com.tw`",
          "2. [高鐵營運公告](<https://www.thsrc.com.tw/notice>) `www.thsrc.com.tw`",
        ].join("\n"),
      );
      expect(out.text).not.toContain("example.org/unused");
      // the run's response had the search and its encrypted results; the history keeps the text only
      const response = fake.answered.at(-1)!;
      expect(response.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
      expect(deps.usages).toEqual([expect.objectContaining({ web_search_requests: 1, web_fetch_requests: 0 })]);
      // the history keeps what the person saw of the sources: the numbers, and a compact note (issue 38 item 12)
      const note = [
        SOURCES_NOTE_HEADING,
        "1. 台鐵罷工 [快訊] *明天* — https://www.cna.com.tw/news/strike",
        "2. 高鐵營運公告 — https://www.thsrc.com.tw/notice]",
      ].join("\n");
      expect(out.messages[1]).toEqual({
        role: "assistant",
        content: [
          { type: "text", text: "我來查一下最新消息。" },
          { type: "text", text: "根據搜尋結果，" },
          { type: "text", text: "台鐵明天起罷工三天 [1]" },
          { type: "text", text: "，" },
          { type: "text", text: "高鐵照常營運。 [1][2]" },
          { type: "text", text: note },
        ],
      });
      const perSource = Buffer.byteLength(note) / 2;
      console.log(`sources note: ${Buffer.byteLength(note)} bytes for 2 sources (${perSource} bytes per source)`);
      expect(perSource).toBeLessThan(150);
      // "which site said that?" is answered from the history: the next request carries the note, no search needed
      fake.enqueue(text("高鐵照常營運的消息來自高鐵營運公告（www.thsrc.com.tw）。"));
      answer(await runAgent({ history: out.messages, userText: "哪個網站說高鐵照常？", context: testContext() }, deps));
      expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain(
        "2. 高鐵營運公告 — https://www.thsrc.com.tw/notice",
      );
      expect(fake.rejections).toEqual([]);
    },
  );

  it("the history without the results is a fraction of their size (measured with results as large as the API's)", async () => {
    const deps = searchingDeps();
    const results = Array.from({ length: 5 }, (_, i) => ({ url: `https://news.example.tw/${i}`, title: `新聞 ${i}` }));
    fake.enqueue(
      searchReply("新聞", results, [
        {
          text: "今天的新聞重點如下。",
          citations: [{ url: results[0]!.url, title: "新聞 0", cited_text: "今天的新聞重點" }],
        },
      ]),
    );
    const out = answer(await runAgent({ history: [], userText: "今天有什麼新聞？", context: testContext() }, deps));
    const asReceived = [out.messages[0], { role: "assistant", content: fake.answered.at(-1)!.content }];
    const full = Buffer.byteLength(JSON.stringify(asReceived));
    const stored = Buffer.byteLength(JSON.stringify(out.messages));
    expect(full).toBeGreaterThan(5 * 5000); // five results of ~5.3 KB of encrypted content each
    expect(stored).toBeLessThan(300);
    expect(stored / full).toBeLessThan(0.01);
  });

  it("a pause_turn in the middle of a search continues the turn: one assistant message, the answer after the search", async () => {
    const deps = searchingDeps();
    fake.enqueue(
      {
        content: [
          { type: "text", text: "我搜尋一下。" },
          { type: "server_tool_use", id: "srvtoolu_pause1", name: "web_search", input: { query: "颱風 停班停課" } },
        ],
        stop_reason: "pause_turn",
      },
      {
        content: [
          {
            type: "web_search_tool_result",
            tool_use_id: "srvtoolu_pause1",
            results: [{ url: "https://www.dgpa.gov.tw/typh", title: "停班停課資訊" }],
          },
          {
            type: "text",
            text: "臺北市明天停班停課。",
            citations: [
              { url: "https://www.dgpa.gov.tw/typh", title: "停班停課資訊", cited_text: "臺北市 明天 停止上班上課" },
            ],
          },
        ],
        stop_reason: "end_turn",
      },
    );
    const out = answer(await runAgent({ history: [], userText: "明天停班停課嗎？", context: testContext() }, deps));
    expect(out.text).toBe(
      "臺北市明天停班停課。 [1]\n\n來源：\n1. [停班停課資訊](<https://www.dgpa.gov.tw/typh>) `www.dgpa.gov.tw`",
    );
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.messages.at(-1)).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "我搜尋一下。" },
        {
          type: "server_tool_use",
          id: "srvtoolu_pause1",
          name: "web_search",
          input: { query: "颱風 停班停課" },
          caller: { type: "direct" },
        },
      ],
    });
    expect(out.messages).toHaveLength(2);
    expect(out.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "我搜尋一下。" },
        { type: "text", text: "臺北市明天停班停課。 [1]" },
        { type: "text", text: `${SOURCES_NOTE_HEADING}\n1. 停班停課資訊 — https://www.dgpa.gov.tw/typh]` },
      ],
    });
    fake.enqueue(text("好。"));
    answer(await runAgent({ history: out.messages, userText: "好", context: testContext() }, deps));
    expect(fake.rejections).toEqual([]);
  });

  it("a search error result still gives an answer, without sources; searches beyond max_uses fail as max_uses_exceeded", async () => {
    const deps = searchingDeps({ WEB_SEARCH_MAX_USES: "1" });
    fake.enqueue(searchReply("颱風", { error: "too_many_requests" }, ["目前無法搜尋，建議查看中央氣象署網站。"]));
    const out = answer(await runAgent({ history: [], userText: "颱風消息？", context: testContext() }, deps));
    expect(out.text).toBe("目前無法搜尋，建議查看中央氣象署網站。");
    expect(fake.answered.at(-1)!.usage.server_tool_use).toEqual({ web_search_requests: 0, web_fetch_requests: 0 });
    fake.enqueue({
      content: [
        { type: "server_tool_use", name: "web_search", input: { query: "一" } },
        { type: "web_search_tool_result", results: [{ url: "https://a.example.tw/", title: "一" }] },
        { type: "server_tool_use", name: "web_search", input: { query: "二" } },
        { type: "web_search_tool_result", results: [{ url: "https://b.example.tw/", title: "二" }] },
        { type: "text", text: "只查到一筆。" },
      ],
      stop_reason: "end_turn",
    });
    answer(await runAgent({ history: [], userText: "查兩次", context: testContext() }, deps));
    const blocks = fake.answered.at(-1)!.content as { type: string; content?: unknown }[];
    expect(
      blocks
        .filter((b) => b.type === "web_search_tool_result")
        .map((b) => (Array.isArray(b.content) ? "results" : (b.content as { error_code: string }).error_code)),
    ).toEqual(["results", "max_uses_exceeded"]);
    expect(fake.answered.at(-1)!.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  });

  it("streamed: the search shows 🔎 搜尋：<query> while it runs and ends ✓ (✗ for an error result); the lead-in text is dropped", async () => {
    const events: AgentEvent[] = [];
    const deps = { ...searchingDeps(), onEvent: (e: AgentEvent) => events.push(e) };
    fake.enqueue({
      ...searchReply("台北 新聞", STRIKE.slice(0, 1), [{ text: "今天台北的新聞……", citations: [cited(0, "今天")] }], {
        lead: "我查一下。",
      }),
      stream: { serverToolMs: 50 },
    });
    const out = answer(await runAgent({ history: [], userText: "台北新聞", context: testContext() }, deps));
    expect(out.text).toContain("今天台北的新聞…… [1]");
    expect(events.map((e) => e.type)).toEqual(["model_call", "text", "tool_use", "tool_start", "tool_end", "text"]);
    const start = events[3] as Extract<AgentEvent, { type: "tool_start" }>;
    expect(start).toEqual({
      type: "tool_start",
      toolUseId: expect.stringMatching(/^srvtoolu_/),
      name: "web_search",
      activity: "搜尋：台北 新聞",
      icon: "🔎",
    });
    expect(events[4]).toEqual({ type: "tool_end", toolUseId: start.toolUseId, ok: true });
    events.length = 0;
    fake.enqueue(searchReply("颱風", { error: "unavailable" }, ["目前查不到。"]));
    answer(await runAgent({ history: [], userText: "颱風", context: testContext({ locale: "en" }) }, deps));
    expect(events.find((e) => e.type === "tool_start")).toMatchObject({ activity: "Searching: 颱風", icon: "🔎" });
    expect(events.find((e) => e.type === "tool_end")).toMatchObject({ ok: false });
  });

  it(
    "when the organization has not enabled web search, the request is sent again without it, " +
      "one warning names the cause, and it stays off in that worker",
    async () => {
      const strict = await startFakeAnthropic({ refuseTools: { organization: ["web_search"] } });
      try {
        const { log, lines } = captureLogger("warn");
        const deps = searchingDeps({}, strict);
        strict.enqueue(text("我無法上網搜尋，不過……"), text("再一次。"));
        expect(
          answer(await runAgent({ history: [], userText: "新聞？", context: testContext({ log }) }, deps)).text,
        ).toBe("我無法上網搜尋，不過……");
        expect(strict.rejections.map((r) => r.message)).toEqual([
          "The web_search tool is not enabled for this organization. An organization admin can enable it in the Claude Console.",
        ]);
        expect(strict.requests.map((r) => r.tools!.map((t) => t.name))).toEqual([["add_numbers", "get_time"]]);
        expect((strict.requests[0]!.system as { text: string }[])[0]!.text).not.toContain("search the web");
        answer(await runAgent({ history: [], userText: "再問", context: testContext({ log }) }, deps));
        expect(strict.rejections).toHaveLength(1);
        const warnings = lines.map((l) => JSON.parse(l) as { msg: string });
        expect(warnings.map((w) => w.msg)).toEqual([
          "web_search is off in this worker until restart: the API refused it for claude-test-1 (The " +
            "web_search tool is not enabled for this organization. An organization admin can enable it " +
            "in the Claude Console.); the request is sent again without it",
        ]);
      } finally {
        await strict.close();
      }
    },
  );

  it("web fetch (WEB_FETCH=on): offered deferred with citations on and bounded, found with tool search, its status line names the page", async () => {
    const events: AgentEvent[] = [];
    const deps = {
      ...searchingDeps({ WEB_FETCH: "on", WEB_SEARCH: "off" }),
      onEvent: (e: AgentEvent) => events.push(e),
    };
    fake.enqueue({
      content: [
        { type: "server_tool_use", name: "web_fetch", input: { url: "https://example.tw/menu" } },
        { type: "web_fetch_tool_result", url: "https://example.tw/menu", title: "菜單", text: "牛肉麵 180 元" },
        { type: "text", text: "牛肉麵一碗 180 元。" },
      ],
      stop_reason: "end_turn",
    });
    const out = answer(
      await runAgent({ history: [], userText: "https://example.tw/menu 牛肉麵多少錢？", context: testContext() }, deps),
    );
    expect(out.text).toBe("牛肉麵一碗 180 元。");
    expect(fake.requests[0]!.tools!.find((t) => t.name === "web_fetch")).toEqual({
      type: "web_fetch_20250910",
      name: "web_fetch",
      max_uses: 3,
      citations: { enabled: true },
      max_content_tokens: 20000,
      defer_loading: true,
    });
    // The model found it with tool search first, in the same response.
    expect(fake.answered.at(-1)!.content.map((b) => `${b.type}${"name" in b ? ` ${String(b.name)}` : ""}`)).toEqual([
      "server_tool_use tool_search_tool_bm25",
      "tool_search_tool_result",
      "server_tool_use web_fetch",
      "web_fetch_tool_result",
      "text",
    ]);
    expect(events.find((e) => e.type === "tool_start" && e.name === "web_fetch")).toMatchObject({
      name: "web_fetch",
      activity: "讀取網頁：https://example.tw/menu",
      icon: "🌐",
    });
    expect(fake.answered.at(-1)!.usage.server_tool_use).toEqual({ web_search_requests: 0, web_fetch_requests: 1 });
    // The history keeps the tool search (as for any deferred tool: later turns have web fetch loaded), not the page.
    expect(out.messages[1]).toEqual({
      role: "assistant",
      content: [
        expect.objectContaining({ type: "server_tool_use", name: "tool_search_tool_bm25" }),
        expect.objectContaining({
          type: "tool_search_tool_result",
          content: expect.objectContaining({ tool_references: [{ type: "tool_reference", tool_name: "web_fetch" }] }),
        }),
        { type: "text", text: "牛肉麵一碗 180 元。" },
      ],
    });
    // A later turn reads another page without searching again.
    fake.enqueue({
      content: [
        { type: "server_tool_use", name: "web_fetch", input: { url: "https://example.tw/hours" } },
        { type: "web_fetch_tool_result", url: "https://example.tw/hours", title: "營業時間", text: "11:00-21:00" },
        { type: "text", text: "11 點開。" },
      ],
      stop_reason: "end_turn",
    });
    answer(
      await runAgent(
        { history: out.messages, userText: "https://example.tw/hours 幾點開？", context: testContext() },
        deps,
      ),
    );
    expect(fake.answered.at(-1)!.content.map((b) => b.type)).toEqual([
      "server_tool_use",
      "web_fetch_tool_result",
      "text",
    ]);
    expect(fake.rejections).toEqual([]);
  });

  it("the fake refuses search results or citations sent back altered", async () => {
    const deps = searchingDeps();
    fake.enqueue(searchReply("台鐵", STRIKE.slice(0, 1), [{ text: "台鐵罷工。", citations: [cited(0, "罷工")] }]));
    answer(await runAgent({ history: [], userText: "台鐵？", context: testContext() }, deps));
    const content = fake.answered.at(-1)!.content;
    const tampered = structuredClone(content);
    const result = tampered.find((b) => b.type === "web_search_tool_result") as {
      content: { encrypted_content: string }[];
    };
    result.content[0]!.encrypted_content = `${result.content[0]!.encrypted_content.slice(0, -4)}AAAA`;
    const messages: MessageParam[] = [
      { role: "user", content: "台鐵？" },
      { role: "assistant", content: tampered as never },
      { role: "user", content: "謝謝" },
    ];
    const tools = [{ type: "web_search_20250305", name: "web_search" }];
    const refused = String(
      await deps.client.messages
        .create({ model: "claude-test-1", max_tokens: 100, messages, tools } as never)
        .catch((e: unknown) => e),
    );
    expect(refused).toContain("encrypted_content: Invalid encrypted content");
    const intact: MessageParam[] = [
      { role: "user", content: "台鐵？" },
      { role: "assistant", content: content as never },
      { role: "user", content: "謝謝" },
    ];
    fake.enqueue(text("好"));
    await deps.client.messages.create({ model: "claude-test-1", max_tokens: 100, messages: intact, tools } as never);
    expect(fake.rejections.map((r) => r.message)).toHaveLength(1);
  });
});
