/**
 * `/reset`: forgetting a conversation. The history (with its summary) is deleted with every
 * feature's reset keys (`Feature.conversation.reset`, e.g. the compaction archive) in one
 * transaction that also raises the conversation's reset generation; workers then close its open
 * approval prompts (`src/history/store.ts`, `HistoryStore.reset`). Settings, memory, reminders and
 * tasks are kept.
 */
import type { Feature } from "../feature.js";
import type { HistoryStore } from "../history/store.js";
import type { ConversationRef } from "../queue/incoming.js";

/**
 * Forgets `conversation` (see the module comment): the chat, or only the Telegram topic when the
 * ref has a `topicId`. @throws when Redis is unreachable.
 */
export async function resetConversation(
  history: HistoryStore,
  features: readonly Feature[],
  conversation: ConversationRef,
): Promise<void> {
  await history.reset(
    conversation,
    features.flatMap((f) => f.conversation?.reset?.(conversation) ?? []),
  );
}
