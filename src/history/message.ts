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
