/**
 * Per-chat order for an adapter's inbound work: what one chat (or conversation) sent is handled
 * one thing after another, in the order it arrived, while different chats run side by side.
 *
 * Used by the LINE adapter (each chat's webhook events, also across requests) and the Telegram
 * adapter (a slow command, such as `/compact`, runs detached on its chat's chain, so it holds
 * neither the polling loop nor other chats; what the same chat sends next waits behind it). A
 * task that fails does not break its chain: the next task of the chat runs all the same.
 */

/** One chat's chain: the end of its last task, and how many of its tasks have not ended. */
interface Chain {
  tail: Promise<void>;
  pending: number;
}

/** The chains of an adapter's chats; see the module comment. */
export class ChatOrder {
  readonly #chains = new Map<string, Chain>();

  /**
   * Runs `task` after the tasks queued before for `chat` ended (well or not).
   * @param chat - the key that orders: a chat id, or a conversation key.
   * @returns the outcome of `task`; its chain counts it as ended before the returned promise settles.
   */
  run<T>(chat: string, task: () => Promise<T>): Promise<T> {
    let chain = this.#chains.get(chat);
    if (!chain) {
      chain = { tail: Promise.resolve(), pending: 0 };
      this.#chains.set(chat, chain);
    }
    const own = chain;
    own.pending += 1;
    const result = own.tail.then(task).finally(() => {
      own.pending -= 1;
      // The map holds this chain while any of its tasks is pending: the last one out removes it.
      if (own.pending === 0) this.#chains.delete(chat);
    });
    own.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** True while a task queued for `chat` has not ended (so new work of the chat would wait for it). */
  busy(chat: string): boolean {
    return this.#chains.has(chat);
  }

  /** Resolves once every task queued so far, and any queued while it waits, has ended. Never rejects. */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.all([...this.#chains.values()].map((c) => c.tail));
  }
}
