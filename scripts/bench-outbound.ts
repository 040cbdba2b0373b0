/**
 * The fake platform of the benchmarks (`npm run bench`, `-- --cost`, `-- --ablate`): an Outbound
 * that sends nothing and records when each answer went out; and the benchmarks' messages
 * ({@link benchMessage}). Approvals and reminders are not part of any benchmark's workload: asking
 * for one throws.
 */
import type { ApprovalVerdict } from "../src/agent/contract.js";
import type { Destination, Outbound, SentRef } from "../src/outbound.js";
import type { IncomingMessage } from "../src/queue/incoming.js";

/**
 * The benchmarks' message `n` (from 0) of chat `chat`: a Telegram message in chat `<prefix><chat>`
 * (a private chat for an even `chat`, a group for an odd one) from user `u<chat>`, asking for the
 * day's list; its message id is `n + 1`.
 */
export function benchMessage(chat: number, n: number, prefix: string): IncomingMessage {
  return {
    platform: "telegram",
    chatId: `${prefix}${chat}`,
    chatKind: chat % 2 === 0 ? "dm" : "group",
    userId: `u${chat}`,
    userName: `User ${chat}`,
    text: `message ${n} of chat ${chat}: what is on my list today?`,
    messageId: String(n + 1),
    sentAt: Date.now(),
    reply: {},
  };
}

/** Records each answer's time as it goes out; see the module comment. */
export class BenchOutbound implements Outbound {
  readonly platform = "telegram" as const;
  /** When each answer went out (`performance.now()` ms), by `<chatId>:<replyTo>`. */
  readonly done = new Map<string, number>();
  /** Called after each answer is recorded. */
  onDone: (() => void) | undefined;

  /**
   * @param singleChunkUnits - the longest answer sent as one message, in UTF-16 units, like a real
   *   adapter that splits only above its platform's limit (Discord 2000; Telegram 4096).
   */
  constructor(readonly singleChunkUnits: number) {}

  async sendAnswer(
    to: Destination,
    _text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    const ref = { chatId: to.conversation.chatId, messageId: `a-${to.replyTo}` };
    if ((options.skip ?? 0) === 0) await options.onSent?.(0, ref);
    this.done.set(`${to.conversation.chatId}:${to.replyTo}`, performance.now());
    this.onDone?.();
    return [ref];
  }
  async sendTyping(): Promise<void> {}
  async sendApprovalPrompt(): Promise<SentRef> {
    throw new Error("no approvals in the benchmark");
  }
  async closeApprovalPrompt(_p: SentRef, _o: ApprovalVerdict, _t: string): Promise<void> {}
  async sendReminder(): Promise<SentRef> {
    throw new Error("no reminders in the benchmark");
  }
  async closeReminder(): Promise<void> {}
}
