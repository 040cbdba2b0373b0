/**
 * The schema of a Messages API message as the bot stores it (history lines, saved runs), for
 * decoding it from Redis (`decodeRecord` of `src/records.ts`). It checks the envelope the bot
 * relies on — a `role` of `user` or `assistant`, and `content` that is text or a list of blocks
 * each with a `type` — and keeps every block's other fields as they are: their exact shape is the
 * Messages API's (https://docs.anthropic.com/en/api/messages), which refuses an invalid one.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { z } from "zod";

/** One content block: its `type`, and the API's other fields kept as they are. */
const BlockSchema = z.looseObject({ type: z.string().min(1) });

/** A stored Messages API message (see the module comment). */
export const MessageParamSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.union([z.string(), z.array(BlockSchema)]),
}) as unknown as z.ZodType<MessageParam>;

/**
 * `json` (a history line as `JSON.parse` returned it) as a message, without zod, when it already
 * has exactly the form {@link MessageParamSchema} outputs: the keys `role` then `content` and no
 * other, a known role, and text or blocks each an object whose first key is a non-empty string
 * `type` (and none named `__proto__`, which the schema drops). The schema would return a copy equal
 * to it, keys in the same order; the worker reads every line the bot wrote this way, so it skips
 * that copy (a quarter of reading a grown history). Anything else returns undefined: decode it
 * with the schema (which strips, copies, or reports it).
 */
export function asStoredMessage(json: unknown): MessageParam | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  let n = 0;
  for (const key in json) {
    if (key !== (n === 0 ? "role" : n === 1 ? "content" : undefined)) return undefined;
    n += 1;
  }
  if (n !== 2) return undefined;
  const { role, content } = json as { role: unknown; content: unknown };
  if (role !== "user" && role !== "assistant") return undefined;
  if (typeof content === "string") return json as MessageParam;
  if (!Array.isArray(content)) return undefined;
  for (const block of content as unknown[]) {
    if (typeof block !== "object" || block === null || Array.isArray(block)) return undefined;
    let first: string | undefined;
    for (const key in block) {
      first = key;
      break;
    }
    const type = (block as { type?: unknown }).type;
    if (first !== "type" || typeof type !== "string" || type === "" || Object.hasOwn(block, "__proto__"))
      return undefined;
  }
  return json as MessageParam;
}
