/**
 * Streamed answers on the console (`npm run chat`): text deltas are printed as they come, after
 * `bot> `; a tool call prints its status line (`🔧 查詢天氣：臺北市…` then ` ✓`). The console
 * cannot take back what it printed, so text that led into a tool call stays on screen; when the
 * final answer is exactly what was printed since the last tool, only a line break ends it, else
 * the final answer is printed in full (e.g. a note was added to it).
 */
import type { SentRef } from "../../src/outbound.js";
import { statusLine, type AnswerStream, type StreamEvent } from "../../src/streaming.js";

/** The console's {@link AnswerStream}: `write` prints (resolves when written); `sendAnswer` prints a whole answer as today. */
export class ConsoleStream implements AnswerStream {
  #printed = "";
  #atLineStart = true;
  #started = false;
  #writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (text: string) => Promise<void>,
    private readonly sendAnswer: (text: string, options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void }) => Promise<SentRef[]>,
    private readonly onVisible?: () => void,
  ) {}

  readonly messages: readonly SentRef[] = [];

  #print(text: string): void {
    if (text === "") return;
    const prefix = this.#started ? "" : "bot> ";
    this.#started = true;
    this.#atLineStart = text.endsWith("\n");
    this.#writes = this.#writes.then(() => this.write(prefix + text)).catch(() => {});
    if (prefix) this.onVisible?.();
  }

  push(event: StreamEvent): void {
    switch (event.type) {
      case "text":
        this.#printed += event.text;
        this.#print(event.text);
        break;
      case "text_dropped":
        this.#printed = "";
        break;
      case "tool_start":
        this.#print(`${this.#atLineStart ? "" : "\n"}${statusLine(event.activity, "running")}`);
        break;
      case "tool_end":
        this.#print(` ${event.ok ? "✓" : "✗"}\n`);
        this.#printed = "";
        break;
    }
  }

  async finish(text: string, options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {}): Promise<SentRef[]> {
    await this.#writes;
    if (this.#printed.trim() === text.trim() && this.#printed !== "") {
      this.#atLineStart = true;
      await this.write("\n");
      await options.onSent?.(0, { chatId: "console", messageId: "stream" });
      return [];
    }
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
    return this.sendAnswer(text, options);
  }

  async discard(): Promise<void> {
    await this.#writes;
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
  }

  async pause(): Promise<void> {
    await this.discard();
  }
}
