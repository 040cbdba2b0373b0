/**
 * An {@link Outbound} for approval-flow tests that keeps what was sent in memory, strict where
 * platforms are: an empty answer, a prompt without an approval id, or closing a prompt that was
 * never posted or is already closed (Telegram: "message is not modified") throws.
 * Replace with the console adapter's outbound once it lands on main.
 */
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type { ApprovalPrompt, Destination, Outbound, ReminderMessage, SentRef } from "../../src/outbound.js";
import type { Platform } from "../../src/queue/incoming.js";

/** A posted prompt and, once closed, its outcome. */
export interface PostedPrompt {
  ref: SentRef;
  to: Destination;
  prompt: ApprovalPrompt;
  closed?: { outcome: ApprovalVerdict; text: string };
}

/** Records prompts, closes and answers. */
export class RecordingOutbound implements Outbound {
  readonly prompts: PostedPrompt[] = [];
  readonly answers: { to: Destination; text: string }[] = [];
  /** Calls of closeApprovalPrompt, including refused ones. */
  closeCalls = 0;
  #next = 1;

  /** True when built so: the prompts stay as sent, as on LINE (`Outbound.promptsStayAsSent`); closing them is still recorded. */
  readonly promptsStayAsSent?: boolean;

  constructor(
    readonly platform: Platform = "telegram",
    options: { promptsStayAsSent?: boolean } = {},
  ) {
    if (options.promptsStayAsSent) this.promptsStayAsSent = true;
  }

  async sendAnswer(to: Destination, text: string): Promise<SentRef[]> {
    if (!text.trim()) throw new Error("Bad Request: message text is empty");
    this.answers.push({ to, text });
    return [{ chatId: to.conversation.chatId, messageId: String(this.#next++) }];
  }

  async sendTyping(): Promise<void> {}

  async sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    if (!prompt.approvalId || !prompt.action.trim())
      throw new Error("Bad Request: prompt without approval id or action");
    const ref = { chatId: to.conversation.chatId, messageId: String(this.#next++) };
    this.prompts.push({ ref, to, prompt });
    return ref;
  }

  async sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    return { chatId: reminder.conversation.chatId, messageId: String(this.#next++) };
  }

  async closeReminder(): Promise<void> {}

  async closeApprovalPrompt(ref: SentRef, outcome: ApprovalVerdict, text: string): Promise<void> {
    this.closeCalls++;
    const posted = this.prompts.find((p) => p.ref.chatId === ref.chatId && p.ref.messageId === ref.messageId);
    if (!posted) throw new Error("Bad Request: message to edit not found");
    if (posted.closed) throw new Error("Bad Request: message is not modified");
    posted.closed = { outcome, text };
  }
}
