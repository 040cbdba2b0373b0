/**
 * The undo record of a memory write (`src/memory/undo.ts`): which files one write changed, each
 * before and after, kept for {@link UNDO_TTL_SECONDS}. Apart from `undo.ts` so the store and the
 * tool can use it without importing the worker-side offers.
 */
import { createHash } from "node:crypto";
import { z } from "zod";

/** How long a write can be undone, in seconds (7 days). */
export const UNDO_TTL_SECONDS = 7 * 24 * 3600;

/** The data prefix of an undo button (`mm:u:<handle>`: a `/memory` button, see `src/commands/memory.ts`). */
export const UNDO_BUTTON_PREFIX = "mm:u:";

/** One file a write changed: its text before and after (null: absent). */
export interface MemoryFileChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** The undo record of one write (stored as JSON). */
export const UndoRecordSchema = z.object({
  /** Who asked for the answer that wrote (platform user id): the only one who may undo it. */
  userId: z.string().min(1),
  changes: z.array(z.object({ path: z.string(), before: z.string().nullable(), after: z.string().nullable() })),
});

/** See {@link UndoRecordSchema}. */
export type UndoRecord = z.output<typeof UndoRecordSchema>;

/** The handle of the write made by `tool_use` `toolUseId`: 16 characters of base64url SHA-256 (fits any button). */
export function undoHandle(toolUseId: string): string {
  return createHash("sha256").update(toolUseId).digest("base64url").slice(0, 16);
}

/** The files whose text differs between `before` and `after` (path order). Pure. */
export function memoryDiff(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
): MemoryFileChange[] {
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort();
  return paths
    .filter((p) => before.get(p) !== after.get(p))
    .map((path) => ({ path, before: before.get(path) ?? null, after: after.get(path) ?? null }));
}
