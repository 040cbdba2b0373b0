/**
 * A message the bot sent, as the platform identifies it: shared by the outbound (`outbound.ts`)
 * and the live answer (`streaming.ts`) without either importing the other's module for it.
 */
import { z } from "zod";

/** A message the bot sent, as the platform identifies it (decoded with this schema when read back from Redis). */
export const SentRefSchema = z.object({ chatId: z.string().min(1), messageId: z.string().min(1) });

/** See {@link SentRefSchema}. */
export type SentRef = z.output<typeof SentRefSchema>;
