/**
 * The compaction feature: `/context` and `/compact` (`commands.ts`), the `compactions` queue whose
 * jobs a worker runs (`queue.ts`, `compactor.ts`), and the archive of what compactions replaced
 * (`/context`'s counts), which moves with the conversation and which `/reset` deletes with the
 * history. The summary itself is the history's `S` line: it moves and resets with the history. The
 * compaction lease (`compacting`) is not moved: it expires, and a compaction of the old id then
 * finds nothing. Compaction requests after answers and the context-window rescue are the answer
 * pipeline's (`src/worker/pipeline.ts`, `compute.ts`): a worker's compaction side lends them the
 * queue and the compactor (`AnswerServices.compaction`).
 */
import { defineFeature } from "../feature.js";
import type { UsageOwner } from "../usage/store.js";
import type { Localized } from "../i18n.js";
import { COMPACTIONS_QUEUE, conversationKeys } from "../queue/keys.js";
import { compactReply, contextReply, type CompactionCommands } from "./commands.js";
import { historyTtlSeconds } from "../config.js";
import { assertBudget } from "../usage/budget.js";
import { CompactionQueue, compactionProcessor } from "./queue.js";
import { CompactionStore } from "./store.js";

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/** The compaction feature (see the module comment). */
export const compactionFeature = defineFeature<CompactionCommands>({
  name: "compaction",
  start({ history, redis, prefix }) {
    const compactions = new CompactionQueue({ redis, prefix });
    return {
      state: {
        context: async (conversation) => {
          const read = await history.read(conversation);
          return {
            tokens: read.lastTokens,
            messages: read.stored,
            summarized: read.summary?.summarized ?? 0,
            compactions: read.summary?.compactions ?? 0,
            summary: read.summary?.text,
          };
        },
        compactNow: (conversation, owner) => compactions.compactNow({ conversation, owner, reason: "command" }),
      },
      close: () => compactions.close(),
    };
  },
  commands: [
    {
      name: "context",
      description: d("對話大小、已摘要的內容與目前的摘要", "This conversation's size and its summary"),
      access: "everyone",
      option: {
        name: "part",
        description: d("摘要的第幾段（較長的摘要分段顯示）", "Which part of a long summary"),
        required: false,
      },
      run: contextReply,
    },
    {
      name: "compact",
      description: d("現在就把較早的對話壓縮成摘要", "Summarise the older part of this conversation now"),
      access: "group-admin",
      run: compactReply,
    },
  ],
  worker({ config, log, client, redis, bullRedis, prefix, usage, tracerFor }) {
    // Its store on the history's Redis, its queue beside the chats queue.
    const queue = new CompactionQueue({ redis: bullRedis, prefix });
    const deps = {
      config,
      log,
      client,
      store: new CompactionStore(redis, historyTtlSeconds(config)),
      ...(usage ? { usage } : {}),
      ...(tracerFor ? { tracerFor } : {}),
      // The budgets are checked before the summary's model call, as before every other one.
      ...(usage ? { beforeModelCall: (owner: UsageOwner) => assertBudget(usage, config, owner) } : {}),
    };
    return { lends: { compaction: { queue, deps } }, close: () => queue.close() };
  },
  queues: [
    {
      name: COMPACTIONS_QUEUE,
      concurrency: (config) => Math.max(1, Math.ceil(config.WORKER_CONCURRENCY / 4)),
      // A worker without the compaction feature (`npm run bench -- --cost`) runs no compactions.
      processor: ({ answer }) =>
        answer.compaction ? compactionProcessor(answer.compaction.deps, answer.log) : undefined,
    },
  ],
  conversation: {
    stores: [{ name: "compaction archive", keys: (c) => [conversationKeys(c).archive] }],
    reset: (c) => [conversationKeys(c).archive],
  },
});
