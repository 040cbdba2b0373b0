/**
 * The strict fake Messages API and the memory tool: the definition `{ type: "memory_20250818",
 * name: "memory" }` is accepted; any other name, a description, an input schema or an unknown
 * field is refused as the API refuses it.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";

let fake: FakeAnthropic;
let client: Anthropic;
beforeAll(async () => {
  fake = await startFakeAnthropic();
  client = new Anthropic({ apiKey: "test-key", baseURL: fake.url, maxRetries: 0 });
});
afterAll(async () => {
  await fake.close();
});

describe("the fake's check of the memory tool", () => {
  const base = { model: "claude-test-1", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
  const refused = async (tool: Record<string, unknown>) =>
    String(await client.messages.create({ ...base, tools: [tool] } as never).catch((e: unknown) => e));
  const memory = { type: "memory_20250818", name: "memory" };

  it("accepts the API's definition", async () => {
    fake.enqueue(text("ok"));
    await client.messages.create({ ...base, tools: [memory] } as never);
    expect(fake.requests.at(-1)!.tools).toEqual([memory]);
  });

  it("refuses another name, a description, an input schema and unknown fields", async () => {
    expect(await refused({ ...memory, name: "notes" })).toContain(
      "tools.0.memory_20250818.name: Input should be 'memory'",
    );
    expect(await refused({ ...memory, description: "my memory" })).toContain(
      "tools.0.memory_20250818.description: Extra inputs are not permitted",
    );
    expect(await refused({ ...memory, input_schema: { type: "object" } })).toContain(
      "tools.0.memory_20250818.input_schema: Extra inputs are not permitted",
    );
    expect(await refused({ ...memory, defer_loading: "yes" })).toContain(
      "defer_loading: Input should be a valid boolean",
    );
    expect(await refused({ type: "memory_20250101", name: "memory" })).toContain(
      "Input tag 'memory_20250101' found using 'type' does not match any of the expected tags",
    );
  });
});
