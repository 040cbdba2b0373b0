/**
 * Shared setup of the agent tests: the real SDK client pointed at the strict fake, a real
 * toolbox of small tools defined here, and a tracer that keeps events in memory.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import { createAnthropicClient } from "../../src/agent/client.js";
import { afterAll, beforeAll, beforeEach } from "vitest";
import type { AgentDeps, AgentOutcome } from "../../src/agent/contract.js";
import type { Config } from "../../src/config.js";
import { defineTool, ToolError } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import type { TraceEvent, TraceEventType, Tracer } from "../../src/trace/tracer.js";
import { testConfig } from "../helpers/config.js";
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from "../fakes/anthropic.js";

/** The API key the tests use; it must never appear in errors or traces. */
export const TEST_API_KEY = "fake-anthropic-key-0123456789abcdef";

/** Calls made to the test tools, by tool name. */
export const calls: Record<string, unknown[]> = {};

function record(name: string, input: unknown): void {
  (calls[name] ??= []).push(input);
}

/** Clears {@link calls}. */
export function resetCalls(): void {
  for (const key of Object.keys(calls)) delete calls[key];
}

/** A safe tool: adds two numbers. */
export const addNumbers = defineTool({
  name: "add_numbers",
  description: "Adds two numbers. Use for any addition.",
  tags: ["util"],
  input: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => {
    record("add_numbers", { a, b });
    return String(a + b);
  },
});

/** A safe tool: a fixed time. */
export const getTime = defineTool({
  name: "get_time",
  description: "Current time in a time zone.",
  tags: ["info"],
  input: z.object({ timezone: z.string() }),
  run: ({ timezone }) => {
    record("get_time", { timezone });
    return `2026-11-30 03:00 (${timezone})`;
  },
});

/** A safe tool with a nested input that always fails with a ToolError (for the repeated-call guard and is_error). */
export const lookup = defineTool({
  name: "lookup",
  description: "Looks something up by query and filter.",
  tags: ["info"],
  input: z.object({ query: z.string(), filter: z.object({ city: z.string(), days: z.number() }) }),
  run: (input) => {
    record("lookup", input);
    throw new ToolError(`No results for "${input.query}". Try another query.`);
  },
});

/** A dangerous tool: never run without approval. */
export const deleteItem = defineTool({
  name: "delete_item",
  description: "Deletes an item by id. Dangerous.",
  tags: ["todo"],
  dangerous: true,
  input: z.object({ id: z.number().int() }),
  describe: ({ id }) => {
    if (id === 404) throw new ToolError("There is no item #404.");
    return `delete item #${id}`;
  },
  run: ({ id }) => {
    record("delete_item", { id });
    return `Deleted item #${id}.`;
  },
});

/** The toolbox of the tests. */
export function testToolbox(): ToolBox {
  return new ToolBox([addNumbers, getTime, lookup, deleteItem]);
}

/** A tracer keeping events in memory. */
export class MemoryTracer implements Tracer {
  readonly events: TraceEvent[] = [];
  /** Records the event. */
  event(type: TraceEventType, data: Record<string, unknown>): void {
    this.events.push({ type, runId: "test", chat: "telegram:100", at: Date.now(), data });
  }
  /** The data of the events of one type, in order. */
  of(type: TraceEventType): Record<string, unknown>[] {
    return this.events.filter((e) => e.type === type).map((e) => e.data);
  }
}

/** Agent deps against the fake: real SDK client (no retries unless given), test toolbox, memory tracer. */
export function testDeps(
  fake: FakeAnthropic,
  options: { env?: Record<string, string>; maxRetries?: number; timeoutMs?: number } = {},
): AgentDeps & { tracer: MemoryTracer; config: Config; client: Anthropic } {
  const config = testConfig({
    ANTHROPIC_API_KEY: TEST_API_KEY,
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_MODEL: "claude-test-1",
    ...options.env,
  });
  return {
    client: createAnthropicClient(config, {
      maxRetries: options.maxRetries ?? 0,
      timeoutMs: options.timeoutMs ?? 5000,
    }),
    config,
    toolbox: testToolbox(),
    tracer: new MemoryTracer(),
  };
}

/**
 * A fake Messages API for the calling test file: started before its tests, emptied (queue,
 * requests, rejections) and {@link calls} cleared before each, closed after them.
 * @param onStart - receives the fake once it listens.
 */
export function useFakeAnthropic(onStart: (fake: FakeAnthropic) => void, options: FakeAnthropicOptions = {}): void {
  let fake: FakeAnthropic | undefined;
  beforeAll(async () => {
    fake = await startFakeAnthropic(options);
    onStart(fake);
  });
  afterAll(async () => {
    await fake?.close();
  });
  beforeEach(() => {
    resetCalls();
    fake?.reset();
  });
}

/** The outcome as an answer. @throws when the run paused for an approval instead. */
export function answerOf(outcome: AgentOutcome): Extract<AgentOutcome, { kind: "answer" }> {
  if (outcome.kind !== "answer") throw new Error(`expected an answer, got ${outcome.kind}`);
  return outcome;
}
