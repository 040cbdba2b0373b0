/**
 * Deferred tools and the API's tool search through the agent loop, the real SDK and the strict
 * fake: what a request offers, the discovery blocks kept in the run and in the history, a
 * refusal of tool search, and histories that name tools the request no longer defers or has.
 */
import { describe, expect, it } from "vitest";
import type { AgentDeps, AgentEvent, MessageParam } from "../../src/agent/contract.js";
import { runAgent } from "../../src/agent/loop.js";
import type { Tool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { captureLogger } from "../helpers/log.js";
import { testContext } from "../helpers/context.js";
import { startFakeAnthropic, text, toolUse, type FakeAnthropic } from "../fakes/anthropic.js";
import { addNumbers, answerOf, calls, deleteItem, getTime, lookup, testDeps, useFakeAnthropic } from "./helpers.js";

let fake: FakeAnthropic;
useFakeAnthropic(
  (started) => {
    fake = started;
  },
  { promptCache: { minTokens: 1 } },
);

const answer = answerOf;

/** `tool`, deferred. */
function deferred(tool: unknown, extra: Partial<Tool> = {}): Tool {
  return { ...(tool as Tool), deferred: true, ...extra };
}

/** The test tools with `lookup` and `delete_item` deferred. */
function deferringDeps(options: Parameters<typeof testDeps>[1] = {}): AgentDeps {
  return {
    ...testDeps(fake, options),
    toolbox: new ToolBox([
      addNumbers as unknown as Tool,
      getTime as unknown as Tool,
      deferred(lookup),
      deferred(deleteItem),
    ]),
  };
}

const names = (tools: { name?: string; type?: string }[] | undefined) => (tools ?? []).map((t) => t.name ?? t.type);

describe("deferred tools and tool search", () => {
  it("offers the loaded tools, the tool search tool and the deferred tools behind it, with the breakpoint on the last loaded one", async () => {
    const deps = deferringDeps();
    fake.enqueue(text("好的。"));
    answer(await runAgent({ history: [], userText: "嗨", context: testContext() }, deps));
    const tools = fake.requests[0]!.tools!;
    expect(names(tools)).toEqual(["add_numbers", "get_time", "tool_search_tool_bm25", "lookup", "delete_item"]);
    expect(tools[2]).toEqual({
      type: "tool_search_tool_bm25_20251119",
      name: "tool_search_tool_bm25",
      cache_control: { type: "ephemeral" },
    });
    expect(tools.slice(3).every((t) => t.defer_loading === true && t.cache_control === undefined)).toBe(true);
    expect(tools.slice(0, 2).every((t) => t.defer_loading === undefined && t.cache_control === undefined)).toBe(true);
    const system = fake.requests[0]!.system as { text: string }[];
    expect(system[0]!.text).toContain("find it with the tool search tool");
  });

  it("keeps the model's tool search blocks in the run and in the history, so the deferred tool's call stays valid", async () => {
    const deps = deferringDeps();
    fake.enqueue(
      toolUse("lookup", { query: "天氣", filter: { city: "臺北", days: 1 } }, { id: "toolu_lk1" }),
      text("查不到。"),
    );
    const out = answer(await runAgent({ history: [], userText: "查一下天氣", context: testContext() }, deps));
    expect(out.text).toBe("查不到。");
    expect(calls.lookup).toEqual([{ query: "天氣", filter: { city: "臺北", days: 1 } }]);
    const assistant = out.messages[1]!.content as unknown as Record<string, unknown>[];
    expect(assistant.map((b) => b.type)).toEqual(["server_tool_use", "tool_search_tool_result", "tool_use"]);
    expect(assistant[0]).toMatchObject({
      name: "tool_search_tool_bm25",
      input: { query: "lookup" },
      id: expect.stringMatching(/^srvtoolu_/),
    });
    expect(assistant[1]).toMatchObject({
      tool_use_id: assistant[0]!.id,
      content: {
        type: "tool_search_tool_search_result",
        tool_references: [{ type: "tool_reference", tool_name: "lookup" }],
      },
    });
    // the second request of the run and a later message both carry the discovery: the strict fake accepts them
    expect(fake.requests[1]!.messages[1]).toEqual({ role: "assistant", content: assistant });
    fake.enqueue(text("不客氣！"));
    answer(await runAgent({ history: out.messages, userText: "謝謝", context: testContext() }, deps));
    expect(fake.rejections).toEqual([]);
  });

  it("the fake refuses a deferred tool's call without its tool_reference, and a tool_reference to an unknown tool", async () => {
    const deps = deferringDeps();
    const orphan: MessageParam[] = [
      { role: "user", content: "刪掉 #1" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_x1", name: "delete_item", input: { id: 1 } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x1", content: "Deleted item #1." }] },
      { role: "assistant", content: [{ type: "text", text: "刪好了。" }] },
    ];
    const body = {
      model: "claude-test-1",
      max_tokens: 100,
      messages: [...orphan, { role: "user", content: "謝謝" }],
      tools: [
        { type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" },
        { name: "delete_item", input_schema: { type: "object" }, defer_loading: true },
      ],
    };
    const error = await deps.client.messages.create(body as never).catch((e: unknown) => e as Error);
    expect(String(error)).toContain(
      "tool_use of 'delete_item', a tool with defer_loading set that no tool_reference before it loaded",
    );
    // the loop loads such a tool instead (it was called before it was deferred): the request is valid
    fake.reset();
    fake.enqueue(text("不客氣！"));
    answer(await runAgent({ history: orphan, userText: "謝謝", context: testContext() }, deps));
    expect(fake.rejections).toEqual([]);
    expect(names(fake.requests[0]!.tools)).toEqual([
      "add_numbers",
      "get_time",
      "delete_item",
      "tool_search_tool_bm25",
      "lookup",
    ]);
    // a tool_reference to a tool this request does not have (an MCP server removed since) is left out of the request
    const gone: MessageParam[] = [
      { role: "user", content: "找工具" },
      {
        role: "assistant",
        content: [
          { type: "server_tool_use", id: "srvtoolu_g1", name: "tool_search_tool_bm25", input: { query: "notes" } },
          {
            type: "tool_search_tool_result",
            tool_use_id: "srvtoolu_g1",
            content: {
              type: "tool_search_tool_search_result",
              tool_references: [
                { type: "tool_reference", tool_name: "notes__add" },
                { type: "tool_reference", tool_name: "lookup" },
              ],
            },
          },
          { type: "text", text: "找到了。" },
        ],
      },
    ];
    const refused = await deps.client.messages
      .create({ ...body, messages: [...gone, { role: "user", content: "好" }] } as never)
      .catch((e: unknown) => e as Error);
    expect(String(refused)).toContain("Tool reference 'notes__add' has no corresponding tool definition");
    fake.reset();
    fake.enqueue(text("好的。"));
    answer(await runAgent({ history: gone, userText: "好", context: testContext() }, deps));
    expect(fake.rejections).toEqual([]);
    const sent = fake.requests[0]!.messages[1]!.content as Record<string, { tool_references?: unknown }>[];
    expect(sent[1]!.content!.tool_references).toEqual([{ type: "tool_reference", tool_name: "lookup" }]);
    expect(
      (gone[1]!.content as unknown as Record<string, { tool_references?: unknown[] }>[])[1]!.content!.tool_references,
    ).toHaveLength(2); // the history is not changed
  });

  it("the fake refuses deferral without a tool search tool, every tool deferred, and cache_control on a deferred tool", async () => {
    const deps = deferringDeps();
    const base = { model: "claude-test-1", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
    const custom = (name: string, extra: Record<string, unknown> = {}) => ({
      name,
      input_schema: { type: "object" },
      ...extra,
    });
    const search = { type: "tool_search_tool_bm25_20251119", name: "tool_search_tool_bm25" };
    const refused = async (tools: unknown[]) =>
      String(await deps.client.messages.create({ ...base, tools } as never).catch((e: unknown) => e));
    expect(await refused([custom("a"), custom("b", { defer_loading: true })])).toContain(
      "Tools with defer_loading require a tool search tool",
    );
    expect(await refused([{ ...search, defer_loading: true }, custom("b", { defer_loading: true })])).toContain(
      "All tools have defer_loading set. At least one tool must be non-deferred.",
    );
    expect(
      await refused([search, custom("b", { defer_loading: true, cache_control: { type: "ephemeral" } })]),
    ).toContain(
      "Tool 'b' cannot have both defer_loading=true and cache_control set. Tools with defer_loading cannot use prompt caching.",
    );
    expect(await refused([{ ...search, name: "tool_search" }])).toContain(
      "tools.0.tool_search_tool_bm25_20251119.name: Input should be 'tool_search_tool_bm25'",
    );
    expect(await refused([{ ...search, max_results: 5 }])).toContain(
      "tools.0.tool_search_tool_bm25_20251119.max_results: Extra inputs are not permitted",
    );
  });

  it("deferred tools are not part of the cached prefix: adding one keeps the cache", async () => {
    const deps = deferringDeps();
    fake.enqueue(text("一"), text("二"));
    answer(await runAgent({ history: [], userText: "一", context: testContext() }, deps));
    const more = {
      ...deps,
      toolbox: new ToolBox([
        addNumbers as unknown as Tool,
        getTime as unknown as Tool,
        deferred(lookup),
        deferred(deleteItem),
        deferred(lookup, { name: "lookup_more" }),
      ]),
    };
    answer(await runAgent({ history: [], userText: "二", context: testContext() }, more));
    const [first, second] = fake.answered.map((a) => a.usage);
    expect(first!.cache_creation_input_tokens).toBeGreaterThan(0);
    // The second run reads the tools + system prefix back (only its own user turn is new).
    expect(second!.cache_read_input_tokens).toBeGreaterThan(0.9 * first!.cache_creation_input_tokens);
    expect(second!.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(second!.cache_creation_input_tokens).toBeLessThan(30);
  });

  it("when the model has no tool search, the request is sent again with every tool loaded, one warning names the cause, and later runs skip it", async () => {
    const picky = await startFakeAnthropic({ refuseTools: { model: ["tool_search_tool_"] } });
    try {
      const { log, lines } = captureLogger("warn");
      const deps = {
        ...testDeps(picky),
        toolbox: new ToolBox([addNumbers as unknown as Tool, getTime as unknown as Tool, deferred(lookup)]),
      };
      picky.enqueue(text("好。"), text("再好。"));
      expect(answer(await runAgent({ history: [], userText: "嗨", context: testContext({ log }) }, deps)).text).toBe(
        "好。",
      );
      expect(picky.rejections.map((r) => r.message)).toEqual([
        "'claude-test-1' does not support tool types: tool_search_tool_bm25_20251119.",
      ]);
      expect(picky.requests).toHaveLength(1);
      expect(names(picky.requests[0]!.tools)).toEqual(["add_numbers", "get_time", "lookup"]);
      expect(picky.requests[0]!.tools!.every((t) => t.defer_loading === undefined)).toBe(true);
      answer(await runAgent({ history: [], userText: "再一次", context: testContext({ log }) }, deps));
      expect(picky.rejections).toHaveLength(1);
      const warnings = lines.map((l) => JSON.parse(l) as { msg: string; tool?: string });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ tool: "tool_search_tool_bm25" });
      expect(warnings[0]!.msg).toContain(
        "tool_search_tool_bm25 is off in this worker until restart: the API refused it for " +
          "claude-test-1 ('claude-test-1' does not support tool types: " +
          "tool_search_tool_bm25_20251119.)",
      );
      // another client (another worker) asks again
      const other = { ...deps, client: testDeps(picky).client };
      picky.enqueue(text("三。"));
      answer(await runAgent({ history: [], userText: "三", context: testContext() }, other));
      expect(picky.rejections).toHaveLength(2);
    } finally {
      await picky.close();
    }
  });

  it("a history with tool search blocks stays valid once tool search is off: they are left out of the request", async () => {
    const deps = deferringDeps();
    fake.enqueue(toolUse("lookup", { query: "x", filter: { city: "臺北", days: 1 } }), text("查不到。"));
    const first = answer(await runAgent({ history: [], userText: "查", context: testContext() }, deps));
    const picky = await startFakeAnthropic({ refuseTools: { model: ["tool_search_tool_"] } });
    try {
      const later = { ...deferringDeps(), client: testDeps(picky).client };
      picky.enqueue(text("好的。"));
      answer(await runAgent({ history: first.messages, userText: "好", context: testContext() }, later));
      expect(picky.requests).toHaveLength(1);
      const sent = picky.requests[0]!.messages[1]!.content as Record<string, unknown>[];
      expect(sent.map((b) => b.type)).toEqual(["tool_use"]);
    } finally {
      await picky.close();
    }
  });

  it("streamed: the discovery's server events drop the lead-in text and show no status line; the run is the same as without streaming", async () => {
    const events: AgentEvent[] = [];
    const deps = { ...deferringDeps(), onEvent: (e: AgentEvent) => events.push(e) };
    fake.enqueue(
      toolUse(
        "lookup",
        { query: "天氣", filter: { city: "臺北", days: 1 } },
        { id: "toolu_st1", text: "我找一下工具。" },
      ),
      text("查不到。"),
    );
    const out = answer(await runAgent({ history: [], userText: "查一下天氣", context: testContext() }, deps));
    expect(out.text).toBe("查不到。");
    expect(events.map((e) => e.type)).toEqual([
      "model_call",
      "text",
      "tool_use",
      "tool_use",
      "tool_start",
      "tool_end",
      "model_call",
      "text",
    ]);
    expect(events[2]).toEqual({ type: "tool_use", name: "tool_search_tool_bm25" });
    const assistant = out.messages[1]!.content as unknown as Record<string, unknown>[];
    expect(assistant.map((b) => b.type)).toEqual(["text", "server_tool_use", "tool_search_tool_result", "tool_use"]);
    expect(assistant[1]).toEqual({
      type: "server_tool_use",
      id: expect.stringMatching(/^srvtoolu_/),
      name: "tool_search_tool_bm25",
      input: { query: "lookup" },
      caller: { type: "direct" },
    });
    expect(fake.rejections).toEqual([]);
  });
});
