/**
 * `/reset`: forgetting a conversation. The history (with its summary) is deleted with every
 * feature's reset keys (`Feature.conversation.reset`, e.g. the compaction archive) in one
 * transaction that also raises the conversation's reset generation; workers then close its open
 * approval prompts (`src/history/store.ts`, `HistoryStore.reset`). Settings, memory, reminders and
 * tasks are kept. Just before the transaction, the started features are asked what the reset will
 * close (`Started.beforeReset` of `src/feature.ts`: the approvals feature's pending confirmations
 * where their prompts cannot say it), and those lines are handed back for the command's reply.
 */
import type { Feature } from "../feature.js";
import type { HistoryStore } from "../history/store.js";
import type { Localized } from "../i18n.js";
import type { ConversationRef } from "../queue/incoming.js";

/**
 * Forgets `conversation` (see the module comment): the chat, or only the Telegram topic when the
 * ref has a `topicId`.
 *
 * @param features - the features whose reset keys go with the history (`Feature.conversation.reset`).
 * @param before - asked first, before anything is deleted (`RunningFeatures.beforeReset` of
 *   `src/features.ts`, bound to the conversation and its platform): the features' lines for the
 *   reply. Absent: none. It should not throw (a throw is passed on, and nothing is deleted).
 * @returns the lines of `before`, in order, for the reply to say after its own (empty when none).
 * @throws when Redis is unreachable.
 */
export async function resetConversation(
  history: HistoryStore,
  features: readonly Feature[],
  conversation: ConversationRef,
  before?: () => Promise<Localized[]>,
): Promise<Localized[]> {
  const lines = (await before?.()) ?? [];
  await history.reset(
    conversation,
    features.flatMap((f) => f.conversation?.reset?.(conversation) ?? []),
  );
  return lines;
}
