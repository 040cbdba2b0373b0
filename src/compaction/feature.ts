/**
 * The compaction feature: the archive of what compactions replaced (`/context`'s counts), which
 * moves with the conversation and which `/reset` deletes with the history. The summary itself is
 * the history's `S` line: it moves and resets with the history. The compaction lease
 * (`compacting`) is not moved: it expires, and a compaction of the old id then finds nothing.
 */
import type { Feature } from "../feature.js";
import { conversationKeys } from "../queue/keys.js";

/** The compaction feature (see the module comment). */
export const compactionFeature: Feature = {
  name: "compaction",
  conversation: {
    stores: [{ name: "compaction archive", keys: (c) => [conversationKeys(c).archive] }],
    reset: (c) => [conversationKeys(c).archive],
  },
};
