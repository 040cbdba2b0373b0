/**
 * Helpers shared by the "always allow" scenarios (`grants-*.test.ts`): the scripted model with a
 * `call <tool>` rule, a dangerous test tool that refuses grants, and reading grants and traces
 * straight from Redis.
 */
import type { RedisClient } from "../../src/redis.js";
import { z } from "zod";
import { GrantStore, type GrantOwner } from "../../src/approvals/grants.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { TraceStore } from "../../src/trace/store.js";
import type { TraceEvent } from "../../src/trace/tracer.js";
import type { ConversationRef } from "../../src/queue/incoming.js";
import { toolUse, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import { approvalsModel } from "./scripted-approvals.js";
import { lastUserTyped } from "./scripted-model.js";

/**
 * A dangerous tool that refuses grants (`alwaysAllow: false`): its prompt never offers "always
 * allow". Offered in chats (tag `todo`). Returns `notes erased`.
 */
export const eraseNotes = defineTool({
  name: "erase_notes",
  description: "Erase all of the user's notes (a test tool: dangerous, and never always allowed).",
  tags: ["todo"],
  dangerous: true,
  alwaysAllow: false,
  input: z.object({}),
  describe: (_input, context) => (context.locale === "en" ? "Erase all notes" : "清除所有筆記"),
  run: () => "notes erased",
});

/** {@link approvalsModel} plus: a last user text containing `call <tool>` is answered with that tool_use (input `{}`). */
export function grantsModel(request: FakeRequest): FakeMessageReply {
  const m = /call ([a-z_]+)\s*$/.exec(lastUserTyped(request) ?? "");
  if (m) return toolUse(m[1]!, {});
  return approvalsModel(request);
}

/** The tools `owner` always allows in their conversation, as stored (any store length will do for reading). */
export async function grantedTools(redis: RedisClient, owner: GrantOwner): Promise<string[]> {
  return (await new GrantStore(redis, { ttlMs: 1000 }).list(owner)).map((g) => g.tool);
}

/** The trace events of every stored run of `conversation` with type `approval` and `verdict` (newest run first). */
export async function approvalEvents(
  redis: RedisClient,
  conversation: ConversationRef,
  verdict: string,
): Promise<TraceEvent[]> {
  const runs = await new TraceStore(redis).runs(conversation);
  return runs.flatMap((r) => r.events).filter((e) => e.type === "approval" && e.data.verdict === verdict);
}

/** Polls `check` (async) every 50 ms until it returns a value, or fails after `timeoutMs` naming `what`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
