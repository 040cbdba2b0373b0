/**
 * Streamed answers on the console (`npm run chat`): text deltas are printed as they come, after
 * `bot> `; a tool call prints its status line (`🔧 查詢天氣：臺北市…`, then its outcome). The
 * console cannot take back the text it printed, so text that led into a tool call stays on screen;
 * when the final answer begins with what was printed since the last tool, only the rest of it and a
 * line break end it (nothing, or the sources of an answer that cites the web), else the final answer
 * is printed in full (e.g. a note was added before it).
 *
 * Status lines, two ways:
 * - to a pipe or file: ` ✓` / ` ✗` is appended to the running line (`🔧 新增待辦：tea… ✓`), since
 *   nothing printed can be changed;
 * - to a terminal ({@link TerminalScreen}): the status lines of the tool calls between two pieces
 *   of text form a block that is redrawn in place (carriage return, cursor up, erase down: ECMA-48
 *   CR, CUU, ED) as calls start and end, so the screen ends with each call's final line
 *   (`🔧 新增待辦：tea ✓`) and nothing else.
 *
 * Everything printed that comes from the model or a tool (deltas, activities) goes through
 * `terminalText` first: an escape sequence in a todo's title is shown (`␛[31m`), never acted on.
 */
import stringWidth from "string-width";
import type { SentRef } from "../../src/outbound.js";
import { terminalText } from "../../src/plain-text.js";
import { progressText, statusLine, type AnswerStream, type StreamEvent } from "../../src/streaming.js";

/** The terminal the console writes to, for redrawing status lines in place. */
export interface TerminalScreen {
  /** Its width in columns now (`process.stdout.columns`), to count the rows a line takes. */
  columns(): number;
}

/** The status lines of one turn's tool calls while they are on a terminal. */
interface StatusBlock {
  /** Printed before the first line (`bot> ` when the block starts the answer). */
  prefix: string;
  tools: Map<string, { activity: string; icon?: string; state: "running" | "ok" | "failed"; progress?: string }>;
  /** Terminal rows the block takes as last drawn (0: not drawn yet). */
  rows: number;
}

/** The console's {@link AnswerStream}: `write` prints (resolves when written); `sendAnswer` prints a whole answer as today. */
export class ConsoleStream implements AnswerStream {
  #printed = "";
  #atLineStart = true;
  #started = false;
  #block: StatusBlock | undefined;
  #writes: Promise<void> = Promise.resolve();

  /**
   * @param write - prints text (resolves when written).
   * @param sendAnswer - prints a whole answer (the outbound's `sendAnswer`).
   * @param onVisible - called once, when the first text is printed.
   * @param screen - set when the output is a terminal: status lines are redrawn in place.
   * @param onEnd - called each time the stream ends what it printed: `true` after `finish`
   *   (the answer is on screen, its last line ended), `false` after `discard` or `pause`.
   * @param onPrint - called (synchronously) whenever something is handed to `write`, before it is written.
   */
  constructor(
    private readonly write: (text: string) => Promise<void>,
    private readonly sendAnswer: (
      text: string,
      options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void },
    ) => Promise<SentRef[]>,
    private readonly onVisible?: () => void,
    private readonly screen?: TerminalScreen,
    private readonly onEnd?: (finished: boolean) => void,
    private readonly onPrint?: () => void,
  ) {}

  readonly messages: readonly SentRef[] = [];

  #emit(text: string): void {
    this.onPrint?.();
    this.#writes = this.#writes.then(() => this.write(text)).catch(() => {});
  }

  /** `bot> ` when nothing of the answer was printed yet (it is then marked started), else "". */
  #prefix(): string {
    if (this.#started) return "";
    this.#started = true;
    return "bot> ";
  }

  #print(text: string): void {
    if (text === "") return;
    const close = this.#closeBlock();
    const prefix = this.#prefix();
    this.#atLineStart = text.endsWith("\n");
    // The model's text and the tools' activities may carry terminal escapes: made harmless here.
    this.#emit(close + prefix + terminalText(text));
    if (prefix) this.onVisible?.();
  }

  push(event: StreamEvent): void {
    switch (event.type) {
      case "lead":
        // The answer begins with this line (a voice message's transcript): printed once, first.
        this.#printed += `${event.text}\n\n`;
        this.#print(`${event.text}\n\n`);
        break;
      case "text":
        this.#printed += event.text;
        this.#print(event.text);
        break;
      case "text_dropped":
        this.#printed = "";
        break;
      case "notice":
        // Printed on a line of its own; it is not part of the answer (the final answer is then printed whole).
        this.#print(`${this.#atLineStart ? "" : "\n"}${event.text}\n`);
        this.#printed = "";
        break;
      case "tool_start":
        if (this.screen) this.#drawTool(event.id, event.activity, event.icon);
        else this.#print(`${this.#atLineStart ? "" : "\n"}${statusLine(event.activity, "running", event.icon)}`);
        break;
      case "tool_end":
        if (this.screen) this.#endTool(event.id, event.ok);
        else this.#print(` ${event.ok ? "✓" : "✗"}\n`);
        this.#printed = "";
        break;
      case "tool_progress": {
        // A terminal redraws the call's status line with it; piped output keeps one line per call.
        const tool = this.screen ? this.#block?.tools.get(event.id) : undefined;
        if (tool?.state === "running") {
          tool.progress = terminalText(progressText(event.progress));
          this.#redraw("");
        }
        break;
      }
    }
  }

  /**
   * A terminal: adds a running call to the status block and redraws it. The block starts on a
   * line of its own and stays open (the cursor at the end of its last line) until text or the end
   * of the answer follows, so the calls of one turn share it even when they run one after another.
   */
  #drawTool(id: string, activity: string, icon?: string): void {
    let lead = "";
    let first = false;
    if (!this.#block) {
      lead = this.#atLineStart ? "" : "\n";
      const prefix = this.#prefix();
      first = prefix !== "";
      this.#block = { prefix, tools: new Map(), rows: 0 };
    }
    this.#block.tools.set(id, { activity: terminalText(activity), ...(icon ? { icon } : {}), state: "running" });
    this.#redraw(lead);
    if (first) this.onVisible?.();
  }

  /** A terminal: marks a call ended and redraws the block with its outcome. */
  #endTool(id: string, ok: boolean): void {
    const tool = this.#block?.tools.get(id);
    if (!tool) return;
    tool.state = ok ? "ok" : "failed";
    this.#redraw("");
  }

  /**
   * Draws the status block over its previous drawing (after `lead`): back to its first row
   * (carriage return, cursor up), erase to the end of the screen, then its lines anew. The rows it
   * takes are counted with the terminal's width (a line wider than the screen wraps).
   */
  #redraw(lead: string): void {
    const block = this.#block!;
    const lines = [...block.tools.values()].map(
      (t, i) => `${i === 0 ? block.prefix : ""}${statusLine(t.activity, t.state, t.icon, t.progress)}`,
    );
    const back = block.rows === 0 ? "" : `\r${block.rows > 1 ? `\x1b[${block.rows - 1}A` : ""}\x1b[J`;
    this.#emit(lead + back + lines.join("\n"));
    const columns = Math.max(1, this.screen!.columns());
    block.rows = lines.reduce((rows, line) => rows + Math.max(1, Math.ceil(stringWidth(line) / columns)), 0);
    this.#atLineStart = false;
  }

  /** Ends the open status block: returns the line break that closes it ("" when none is open). */
  #closeBlock(): string {
    if (!this.#block) return "";
    this.#block = undefined;
    this.#atLineStart = true;
    return "\n";
  }

  async finish(
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    const close = this.#closeBlock();
    if (close) this.#emit(close);
    await this.#writes;
    const printed = this.#printed.trim();
    if (printed !== "" && text.trim().startsWith(printed)) {
      // What was printed is the answer, or its start (an answer citing the web ends with its sources): only the rest follows.
      const rest = text.trim().slice(printed.length);
      this.#atLineStart = true;
      await this.write(`${terminalText(rest)}\n`);
      await options.onSent?.(0, { chatId: "console", messageId: "stream" });
      this.onEnd?.(true);
      return [];
    }
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
    const sent = await this.sendAnswer(text, options);
    this.onEnd?.(true);
    return sent;
  }

  async discard(): Promise<void> {
    const close = this.#closeBlock();
    if (close) this.#emit(close);
    await this.#writes;
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
    this.onEnd?.(false);
  }

  async pause(): Promise<void> {
    await this.discard();
  }
}
