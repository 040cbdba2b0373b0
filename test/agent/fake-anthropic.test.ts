/**
 * The fake Messages API is strict like the real one: the real SDK gets 400 for what the API refuses.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";

let fake: FakeAnthropic;
let client: Anthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  client = new Anthropic({ apiKey: "test-key-123456", baseURL: fake.url, maxRetries: 0, timeout: 5000 });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.rejections.length = 0;
});

type Params = Anthropic.Messages.MessageCreateParamsNonStreaming;
const base = { model: "claude-test-1", max_tokens: 100 } as const;
const toolUseTurn: Anthropic.Messages.MessageParam = {
  role: "assistant",
  content: [{ type: "tool_use", id: "toolu_1", name: "get_time", input: {} }],
};

async function rejected(params: unknown): Promise<string> {
  const error = await client.messages.create(params as Params).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Anthropic.BadRequestError);
  const body = (error as InstanceType<typeof Anthropic.BadRequestError>).error as {
    type: string;
    error: { type: string; message: string };
  };
  expect(body.type).toBe("error");
  expect(body.error.type).toBe("invalid_request_error");
  return body.error.message;
}

describe("fake Anthropic /v1/messages", () => {
  it("answers a valid request with the real message shape", async () => {
    fake.enqueue(text("hi"));
    const message = await client.messages.create({ ...base, messages: [{ role: "user", content: "hello" }] });
    expect(message).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-test-1",
      stop_reason: "end_turn",
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.content).toEqual([{ type: "text", text: "hi", citations: null }]);
    for (const k of [
      "input_tokens",
      "output_tokens",
      "cache_creation_input_tokens",
      "cache_read_input_tokens",
    ] as const) {
      expect(typeof message.usage[k]).toBe("number");
    }
    expect(fake.requests).toHaveLength(1);
  });

  it("simulates prompt caching of tools + system up to the last breakpoint", async () => {
    const params: Params = {
      ...base,
      system: [{ type: "text", text: "You are a bot. ".repeat(400), cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "hello" }],
    };
    fake.enqueue(text("a"), text("b"));
    const first = await client.messages.create(params);
    const second = await client.messages.create(params);
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
  });

  it(
    "caches like the API: breakpoints in messages, a later request reads the longest cached " +
      "prefix (also one that moved its breakpoint), the minimum cacheable length, 5-minute " +
      "entries",
    async () => {
      let now = 1_000_000;
      const own = await startFakeAnthropic({ fallback: text("ok"), promptCache: { now: () => now } });
      const c = new Anthropic({ apiKey: "test-key", baseURL: own.url, maxRetries: 0 });
      const system = [
        { type: "text" as const, text: "Rules. ".repeat(700), cache_control: { type: "ephemeral" as const } },
      ];
      const turn = (t: string, cached = false) => ({
        role: "user" as const,
        content: [
          { type: "text" as const, text: t, ...(cached ? { cache_control: { type: "ephemeral" as const } } : {}) },
        ],
      });
      const answer = (t: string) => ({ role: "assistant" as const, content: t });
      try {
        // A short prompt is below the minimum (1024 tokens): its breakpoint is ignored.
        const short = await c.messages.create({
          ...base,
          system: [{ type: "text", text: "Short.", cache_control: { type: "ephemeral" } }],
          messages: [turn("hi", true)],
        });
        expect(short.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
        const one = await c.messages.create({ ...base, system, messages: [turn("question one ".repeat(50), true)] });
        expect(one.usage.cache_read_input_tokens).toBe(0);
        const written = one.usage.cache_creation_input_tokens;
        expect(written).toBeGreaterThan(1024);
        expect(one.usage.input_tokens).toBeLessThan(5);
        // The next turn: the first request's prefix (its breakpoint now two blocks back) is read; the new turns are written.
        now += 60_000;
        const two = await c.messages.create({
          ...base,
          system,
          messages: [turn("question one ".repeat(50)), answer("answer one ".repeat(50)), turn("question two", true)],
        });
        expect(two.usage.cache_read_input_tokens).toBe(written);
        expect(two.usage.cache_creation_input_tokens).toBeGreaterThan(100);
        // Five minutes after the last use, the entries are gone: everything is written again.
        now += 5 * 60_000 + 1;
        const late = await c.messages.create({
          ...base,
          system,
          messages: [turn("question one ".repeat(50)), answer("answer one ".repeat(50)), turn("question two", true)],
        });
        expect(late.usage.cache_read_input_tokens).toBe(0);
        expect(late.usage.cache_creation_input_tokens).toBe(
          (two.usage.cache_read_input_tokens ?? 0) + (two.usage.cache_creation_input_tokens ?? 0),
        );
      } finally {
        await own.close();
      }
    },
  );

  it("refuses a first message that is not a user turn", async () => {
    expect(await rejected({ ...base, messages: [{ role: "assistant", content: "hi" }] })).toContain(
      'first message must use the "user" role',
    );
  });

  it("refuses a tool_use not answered in the very next user message", async () => {
    expect(
      await rejected({
        ...base,
        messages: [{ role: "user", content: "t?" }, toolUseTurn, { role: "user", content: "and?" }],
      }),
    ).toContain("`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1");
    expect(await rejected({ ...base, messages: [{ role: "user", content: "t?" }, toolUseTurn] })).toContain(
      "without `tool_result`",
    );
  });

  it("refuses a tool_result without a matching tool_use right before it", async () => {
    const result = { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "3:00" }] };
    expect(
      await rejected({
        ...base,
        messages: [{ role: "user", content: "t?" }, { role: "assistant", content: "ok" }, result],
      }),
    ).toContain("unexpected `tool_use_id` found in `tool_result` blocks: toolu_1");
    // answered one message too late
    expect(
      await rejected({
        ...base,
        messages: [
          { role: "user", content: "t?" },
          toolUseTurn,
          { role: "user", content: "x" },
          { role: "assistant", content: "y" },
          result,
        ],
      }),
    ).toContain("without `tool_result`");
    // tool_result after other content in the user message
    expect(
      await rejected({
        ...base,
        messages: [
          { role: "user", content: "t?" },
          toolUseTurn,
          { role: "user", content: [{ type: "text", text: "x" }, result.content[0]] },
        ],
      }),
    ).toContain("must come first");
  });

  it("refuses empty or whitespace-only text blocks anywhere", async () => {
    expect(
      await rejected({ ...base, messages: [{ role: "user", content: [{ type: "text", text: " \n" }] }] }),
    ).toContain("non-whitespace text");
    expect(await rejected({ ...base, messages: [{ role: "user", content: "  " }] })).toContain("non-whitespace text");
    expect(
      await rejected({
        ...base,
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [{ type: "text", text: "" }] },
          { role: "user", content: "b" },
        ],
      }),
    ).toContain("non-whitespace text");
    expect(
      await rejected({ ...base, system: [{ type: "text", text: "" }], messages: [{ role: "user", content: "a" }] }),
    ).toContain("non-whitespace text");
  });

  it("refuses a tool whose input_schema is not an object schema, or whose name is not allowed", async () => {
    const msg = [{ role: "user", content: "a" }];
    expect(
      await rejected({ ...base, messages: msg, tools: [{ name: "t", input_schema: { type: "string" } }] }),
    ).toContain("input_schema.type: Input should be 'object'");
    expect(
      await rejected({ ...base, messages: msg, tools: [{ name: "bad name!", input_schema: { type: "object" } }] }),
    ).toContain("String should match pattern");
    expect(
      await rejected({ ...base, messages: msg, tools: [{ name: "x".repeat(65), input_schema: { type: "object" } }] }),
    ).toContain("String should match pattern");
  });

  it("refuses what the API refuses in a custom tool: top-level combinators, bad property keys, an unknown tool type", async () => {
    const msg = [{ role: "user", content: "a" }];
    const tool = (input_schema: Record<string, unknown>) => ({
      ...base,
      messages: msg,
      tools: [{ name: "t", input_schema }],
    });
    for (const combinator of ["anyOf", "oneOf", "allOf"]) {
      expect(
        await rejected(
          tool({ type: "object", [combinator]: [{ type: "object", properties: { a: { type: "string" } } }] }),
        ),
      ).toBe("tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level");
    }
    for (const key of ["filter[bundleId]", "two words", "", "k".repeat(65), "名字"]) {
      expect(await rejected(tool({ type: "object", properties: { [key]: { type: "string" } } }))).toBe(
        "tools.0.custom.input_schema.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'",
      );
    }
    expect(await rejected({ ...base, messages: msg, tools: [{ type: "made_up_20990101", name: "t" }] })).toContain(
      "Input tag 'made_up_20990101' found using 'type'",
    );
    // accepted: combinators and any keys below the top level, dotted keys, an explicit "custom" type
    fake.enqueue(text("ok"));
    const ok = await client.messages.create({
      ...base,
      messages: msg,
      tools: [
        {
          type: "custom",
          name: "t",
          input_schema: {
            type: "object",
            properties: {
              "filter.id": {
                type: "object",
                properties: { "a[b]": { anyOf: [{ type: "string" }, { type: "number" }] } },
              },
            },
          },
        },
      ],
    } as Params);
    expect(ok.content).toEqual([expect.objectContaining({ type: "text", text: "ok" })]);
  });

  it("refuses a request without max_tokens, and more than 4 cache breakpoints", async () => {
    expect(await rejected({ model: "m", messages: [{ role: "user", content: "a" }] })).toContain(
      "max_tokens: Field required",
    );
    const cc = { type: "ephemeral" };
    const tools = Array.from({ length: 5 }, (_, i) => ({
      name: `t${i}`,
      input_schema: { type: "object" },
      cache_control: cc,
    }));
    expect(await rejected({ ...base, messages: [{ role: "user", content: "a" }], tools })).toContain(
      "A maximum of 4 blocks with cache_control",
    );
    expect(fake.requests).toHaveLength(0);
    expect(fake.rejections.length).toBeGreaterThan(0);
  });

  it("answers with the fallback when the queue is empty, and resets", async () => {
    const withFallback = await startFakeAnthropic({ fallback: (req) => text(`echo ${req.messages.length}`) });
    const c = new Anthropic({ apiKey: "test-key-123456", baseURL: withFallback.url, maxRetries: 0 });
    withFallback.enqueue(text("scripted"));
    const first = await c.messages.create({ ...base, messages: [{ role: "user", content: "a" }] });
    const second = await c.messages.create({ ...base, messages: [{ role: "user", content: "a" }] });
    expect(first.content[0]).toMatchObject({ text: "scripted" });
    expect(second.content[0]).toMatchObject({ text: "echo 1" });
    withFallback.enqueue(text("left over"));
    withFallback.reset();
    expect([withFallback.pending(), withFallback.requests.length]).toEqual([0, 0]);
    await withFallback.close();
  });

  it("answers 500 when nothing was scripted, so a test that calls too often fails", async () => {
    const error = await client.messages
      .create({ ...base, messages: [{ role: "user", content: "a" }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(String(error)).toContain("no scripted reply");
  });
});
