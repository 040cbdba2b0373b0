/**
 * Helpers shared by the approval scenarios (`approvals-*.test.ts`): seeding and reading a
 * person's todo list straight from Redis with the todo store, and reading what reached the
 * scripted model.
 */
import { z } from "zod";
import type { RedisClient } from "../../src/redis.js";
import type { Platform } from "../../src/queue/incoming.js";
import { defineTool, type Tool } from "../../src/toolbox/tool.js";
import { addTodo, listTodos } from "../../tools/todo/store.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { Stack } from "./harness.js";

/** Adds todos with these titles to the list of `userId` on `platform`; returns their ids (#1, #2, … on a fresh list). */
export async function seedTodos(
  redis: RedisClient,
  platform: Platform,
  userId: string,
  titles: string[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const title of titles) ids.push((await addTodo(redis, { platform, userId }, title))!.id);
  return ids;
}

/** The todos of `userId` on `platform`, as `#id title` lines in id order. */
export async function todoLines(redis: RedisClient, platform: Platform, userId: string): Promise<string[]> {
  return (await listTodos(redis, { platform, userId })).map((t) => `#${t.id} ${t.title}`);
}

type Block = Record<string, unknown>;

function blocksOf(content: FakeRequest["messages"][number]["content"]): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** Whether a user text block of the request contains `marker`. */
function mentions(request: FakeRequest, marker: string): boolean {
  return request.messages.some(
    (m) => m.role === "user" && blocksOf(m.content).some((b) => b.type === "text" && String(b.text).includes(marker)),
  );
}

/**
 * The `tool_result` blocks that were new in each model request of the conversation whose user
 * text contains `marker` (the last message of each request), as `{ name, content, isError }`
 * with the tool's name looked up from the `tool_use` it answers. A tool that ran twice, or a run
 * resumed twice, shows up twice here.
 */
export function freshResults(stack: Stack, marker: string): { name: string; content: string; isError: boolean }[][] {
  return stack.model.requests
    .filter((r) => mentions(r, marker))
    .map((r) => {
      const names = new Map<string, string>();
      for (const m of r.messages) {
        if (m.role === "assistant")
          for (const b of blocksOf(m.content)) if (b.type === "tool_use") names.set(String(b.id), String(b.name));
      }
      const last = r.messages[r.messages.length - 1]!;
      return blocksOf(last.content)
        .filter((b) => b.type === "tool_result")
        .map((b) => ({
          name: names.get(String(b.tool_use_id)) ?? "?",
          content:
            typeof b.content === "string"
              ? b.content
              : ((b.content as Block[] | undefined) ?? []).map((c) => String(c.text ?? "")).join(""),
          isError: b.is_error === true,
        }));
    })
    .filter((results) => results.length > 0);
}

/** Resolves after `ms` ms: only for bounded "nothing else happens" windows. */
export function quietWindow(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A dangerous tool named `name` that never finishes on its own: each call waits until its abort
 * signal fires (the answer's deadline), then fails with the signal's reason. `aborted` counts the
 * calls that saw the signal.
 */
export function waitingTool(name: string): { tool: Tool; aborted: { count: number } } {
  const aborted = { count: 0 };
  const tool = defineTool({
    name,
    description: "Waits for an outside signal before it does anything (a test tool).",
    tags: ["util"],
    dangerous: true,
    input: z.object({}),
    run: (_input, context) =>
      new Promise<string>((_resolve, reject) => {
        context.signal.addEventListener(
          "abort",
          () => {
            aborted.count += 1;
            reject(context.signal.reason as Error);
          },
          { once: true },
        );
      }),
  });
  return { tool, aborted };
}
