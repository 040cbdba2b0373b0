/**
 * The terminal of `npm run chat`: where the lines typed come from and where the bot's output goes.
 *
 * In a terminal (stdin and stdout both a TTY) the lines are read with Node's `readline` as a line
 * editor (https://nodejs.org/docs/latest-v20.x/api/readline.html#tty-keybindings): ← → Home End
 * and Ctrl-A/E move the cursor, Backspace, Delete, Ctrl-U (to the line's start), Ctrl-K (to its
 * end) and Ctrl-W (a word) delete, ↑ ↓ walk the history (kept between sessions in `historyFile`),
 * Ctrl-L clears the screen, Ctrl-C stops the chat as the signal would, Ctrl-D on an empty line
 * ends the input. Display widths and cursor steps go by grapheme cluster with `string-width`
 * ({@link measureByGraphemes}), so CJK characters and emoji take the columns the terminal gives them.
 *
 * The screen is shared by the line being typed and what the bot prints:
 * - the prompt (`> ` and the line typed so far) is drawn after every piece of output that ends a
 *   line, and erased (carriage return, cursor up, erase down: ECMA-48 CR, CUU, ED) before the next
 *   piece, so it always sits below the output;
 * - output that ends mid-line (a streamed answer still coming, a tool's status line) gets no
 *   prompt; keys typed meanwhile still edit the line (readline's drawing of it is held back) and the
 *   prompt shows it once the bot's line ends. A line sent meanwhile is shown as `> …` then;
 * - a notice (Ctrl-C's "stopping") waits for the bot's line to end, so it never lands inside an
 *   answer; after it no prompt is drawn (the chat is stopping).
 *
 * Elsewhere (input piped in, output to a file) lines are read as they come, with no prompt and no
 * echo, and output is written as it is; notices still wait for the end of the bot's line.
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createInterface, type Interface } from "node:readline";
import { Writable } from "node:stream";
import { stripVTControlCharacters } from "node:util";
import stringWidth from "string-width";
import type { TerminalScreen } from "../../src/streaming.js";

/** The input prompt. */
export const PROMPT = "> ";

/** Most lines kept in the history file (the newest). */
export const HISTORY_LINES = 500;

/** Options of {@link ConsoleTerminal}. */
export interface ConsoleTerminalOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /**
   * The file the lines typed are kept in between sessions (one a line, oldest first, at most
   * {@link HISTORY_LINES}); unset = no history kept. Only read and written in a terminal.
   */
  historyFile?: string;
}

/** See the module comment. */
export class ConsoleTerminal implements TerminalScreen {
  /** True when stdin and stdout are a terminal: a line editor, a prompt. */
  readonly interactive: boolean;
  /** What the bot prints goes here (answers, prompts, command replies). */
  readonly output: Writable;
  readonly #options: ConsoleTerminalOptions;
  #rl: Interface | undefined;
  /** The prompt and the line typed are on screen, the cursor in that line. */
  #promptShown = false;
  /** The bot's output ended mid-line (no prompt, notices wait). */
  #midLine = false;
  /** Lines to print once the bot's line ends (notices, lines sent while it was printing). */
  #held: string[] = [];
  /** A notice was printed: the chat is stopping, no prompt anymore. */
  #stopping = false;
  #closed = false;
  #saving: Promise<void> = Promise.resolve();
  /** Called when Ctrl-G is pressed (Stop, issue 42: the console adapter stops the answer being written). */
  onStopKey: (() => void) | undefined;

  constructor(options: ConsoleTerminalOptions) {
    this.#options = options;
    this.interactive = Boolean(options.input.isTTY && options.output.isTTY);
    this.output = new Writable({
      write: (chunk: Buffer, _encoding, done) => this.write(chunk.toString(), () => done()),
    });
  }

  /** The terminal's width in columns now (80 when it does not say). */
  columns(): number {
    return this.#options.output.columns || 80;
  }

  /**
   * Starts reading lines (call it once, when the chat is ready for them: keys typed before stay
   * buffered). Its `line` events are the lines sent; `close` is the end of the input.
   */
  open(): Interface {
    if (!this.interactive) {
      this.#rl = createInterface({ input: this.#options.input, terminal: false });
      return this.#rl;
    }
    const screen = this.#options.output;
    // readline draws the line being typed through this stream: passed on while the prompt is on screen.
    const drawing = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (this.#promptShown) screen.write(chunk, () => done());
        else done();
      },
    });
    Object.defineProperty(drawing, "columns", { get: () => this.columns() });
    Object.defineProperty(drawing, "isTTY", { value: true });
    screen.on("resize", () => drawing.emit("resize"));
    const rl = createInterface({
      input: this.#options.input,
      output: drawing,
      terminal: true,
      prompt: PROMPT,
      history: this.#loadHistory(),
      historySize: HISTORY_LINES,
      removeHistoryDuplicates: true,
    });
    measureByGraphemes(rl);
    this.#rl = rl;
    rl.on("line", (line) => {
      if (this.#promptShown) {
        // readline moved to a new line under the one sent; the prompt comes back there.
        this.#promptShown = false;
        this.#showPrompt();
      } else if (!this.#stopping) {
        this.#held.push(`${PROMPT}${line}\n`);
      }
    });
    rl.on("history", (history: string[]) => this.#saveHistory(history));
    // Raw mode: Ctrl-C is a key here, not a signal; it stops the chat as the signal does.
    rl.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
    // Ctrl-G (BEL, which readline ignores): stop the answer being written.
    this.#options.input.on(
      "keypress",
      (_text: string | undefined, key: { ctrl?: boolean; name?: string } | undefined) => {
        if (key?.ctrl && key.name === "g") this.onStopKey?.();
      },
    );
    rl.on("close", () => (this.#closed = true));
    if (!this.#midLine) this.#showPrompt();
    return rl;
  }

  /**
   * Prints the bot's `text`: below the prompt's line (which is erased first), then the prompt
   * again when `text` ends a line (see the module comment). `done` is called once it was written.
   */
  write(text: string, done?: () => void): void {
    if (text === "") {
      done?.();
      return;
    }
    let out = this.#erasePrompt();
    const lineEnd = text.indexOf("\n");
    // Lines held while the bot's line was open go right where that line ends (a `> /stop` typed
    // during an answer comes before the answer's `⏹ 正在停止…`, not after it).
    if (this.#midLine && lineEnd >= 0 && this.#held.length > 0)
      out += text.slice(0, lineEnd + 1) + this.#takeHeld() + text.slice(lineEnd + 1);
    else out += text;
    this.#midLine = !text.endsWith("\n");
    if (!this.#midLine) out += this.#takeHeld();
    this.#options.output.write(out, () => done?.());
    if (!this.#midLine) this.#showPrompt();
  }

  /**
   * Prints `text` on a line of its own once the bot's line ends, with no prompt after it (the chat
   * is stopping). With `now` (the process exits next) it is printed at once, ending the bot's line.
   */
  notice(text: string, options: { now?: boolean } = {}): void {
    this.#stopping = true;
    this.#held.push(`${text}\n`);
    if (this.#midLine && options.now) {
      this.#midLine = false;
      this.#held.unshift("\n");
    }
    if (this.#midLine) return;
    this.#options.output.write(this.#erasePrompt() + this.#takeHeld());
  }

  #takeHeld(): string {
    const held = this.#held.join("");
    this.#held = [];
    return held;
  }

  /** What takes the prompt and the line typed off the screen ("" when they are not on it). */
  #erasePrompt(): string {
    if (!this.#promptShown) return "";
    this.#promptShown = false;
    const rows = this.#rl?.getCursorPos().rows ?? 0;
    return `\r${rows > 0 ? `\x1b[${rows}A` : ""}\x1b[J`;
  }

  /** Draws the prompt and the line typed so far at the start of the cursor's line. */
  #showPrompt(): void {
    const rl = this.#rl;
    if (!rl || !this.interactive || this.#closed || this.#stopping) return;
    this.#promptShown = true;
    // The cursor is at the start of an empty line: nothing of an earlier drawing is above it.
    (rl as unknown as { prevRows: number }).prevRows = 0;
    rl.prompt(true);
  }

  /** The history file's lines, newest first (as readline wants them); none when there is no file. */
  #loadHistory(): string[] {
    const file = this.#options.historyFile;
    if (!file) return [];
    try {
      return readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "")
        .slice(-HISTORY_LINES)
        .reverse();
    } catch {
      return []; // no history yet, or unreadable: start with none
    }
  }

  /** Writes the history (newest first, as readline gives it) to the history file, oldest line first. */
  #saveHistory(history: readonly string[]): void {
    const file = this.#options.historyFile;
    if (!file) return;
    const text = `${[...history].reverse().join("\n")}\n`;
    // Only the person at this terminal reads their history: mode 0600. A failed write loses only the history.
    this.#saving = this.#saving.then(() => writeFile(file, text, { mode: 0o600 }).catch(() => {}));
  }
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Offsets (UTF-16 units) in `line` where a grapheme cluster starts, and its length. */
function graphemeBounds(line: string): number[] {
  const bounds = [0];
  for (const { index, segment } of graphemes.segment(line)) bounds.push(index + segment.length);
  return bounds;
}

/** The symbol-keyed method of readline's `Interface` whose symbol is described `name`, if any. */
function readlineMethod(rl: Interface, name: string): symbol | undefined {
  for (
    let proto = Object.getPrototypeOf(rl) as object | null;
    proto;
    proto = Object.getPrototypeOf(proto) as object | null
  )
    for (const key of Object.getOwnPropertySymbols(proto)) if (key.description === name) return key;
  return undefined;
}

/** The parts of readline's `Interface` {@link measureByGraphemes} uses. */
type EditableLine = Interface & {
  line: string;
  cursor: number;
  columns: number;
  tabSize?: number;
  [key: symbol]: (...args: never[]) => unknown;
};

/**
 * Makes `rl` measure and step by grapheme cluster: Node's readline counts widths code point by
 * code point (an emoji with a skin tone or a variation selector comes out 1 or 4 columns wide
 * where terminals draw 2) and moves the cursor and deletes one code point at a time (half an
 * emoji). Here the width of each cluster is `string-width`'s, and ← → Backspace Delete move over
 * or delete whole clusters. Text pasted in the middle of the line is inserted at the cursor
 * (readline puts all of a paste but its last character at the end of the line). Uses readline's internal methods (found by their symbols'
 * descriptions, as in Node 20–24); when they are not there, `rl` is left as it is (its own widths
 * are right for CJK and most emoji).
 */
export function measureByGraphemes(rl: Interface): void {
  const keys = {
    displayPos: readlineMethod(rl, "_getDisplayPos"),
    moveCursor: readlineMethod(rl, "_moveCursor"),
    deleteLeft: readlineMethod(rl, "_deleteLeft"),
    deleteRight: readlineMethod(rl, "_deleteRight"),
    refreshLine: readlineMethod(rl, "_refreshLine"),
    insertString: readlineMethod(rl, "_insertString"),
  };
  if (Object.values(keys).some((k) => k === undefined)) return;
  const { displayPos, moveCursor, deleteLeft, deleteRight, refreshLine, insertString } = keys as Record<
    keyof typeof keys,
    symbol
  >;
  const beforeEdit = readlineMethod(rl, "_beforeEdit");
  const editor = rl as EditableLine;
  const move = editor[moveCursor]!.bind(editor) as (dx: number) => void;
  const insert = editor[insertString]!.bind(editor) as (text: string) => void;
  // Own properties of `rl` (readline's prototype has getters only for these symbols).
  const define = (key: symbol, value: (...args: never[]) => unknown) =>
    Object.defineProperty(rl, key, { value, configurable: true, writable: true });

  // Same as readline's own, with a cluster's width from string-width: a wide cluster that would
  // start in the last column wraps to the next row whole.
  define(displayPos, (str: string) => {
    const columns = editor.columns;
    const tab = editor.tabSize ?? 8;
    let offset = 0;
    let rows = 0;
    for (const { segment } of graphemes.segment(stripVTControlCharacters(str))) {
      if (segment === "\n") {
        rows += Math.ceil(offset / columns) || 1;
        offset = 0;
        continue;
      }
      if (segment === "\t") {
        offset += tab - (offset % tab);
        continue;
      }
      const width = Math.min(2, stringWidth(segment));
      if (width === 2 && (offset + 1) % columns === 0) offset += 1;
      offset += width;
    }
    const cols = offset % columns;
    rows += (offset - cols) / columns;
    return { cols, rows };
  });
  define(moveCursor, (dx: number) => {
    if (Number.isFinite(dx) && dx !== 0) {
      const bounds = graphemeBounds(editor.line);
      const target = editor.cursor + dx;
      const to =
        dx < 0 ? (bounds.findLast((b) => b <= target) ?? 0) : (bounds.find((b) => b >= target) ?? editor.line.length);
      dx = to - editor.cursor;
    }
    move(dx);
  });
  // readline appends every key of a chunk but its last at the end of the line (it takes a chunk
  // of several keys for a paste and skips its mid-line path), so text pasted or typed fast in the
  // middle of a line landed at its end: insert it at the cursor.
  define(insertString, (text: string) => {
    const paste = editor as EditableLine & { isCompletionEnabled: boolean };
    if (paste.isCompletionEnabled || editor.cursor >= editor.line.length) return insert(text);
    paste.isCompletionEnabled = true;
    try {
      insert(text);
    } finally {
      paste.isCompletionEnabled = false;
    }
  });
  const remove = (from: number, to: number) => {
    if (from === to) return;
    if (beforeEdit) Reflect.apply(editor[beforeEdit]!, editor, [editor.line, editor.cursor]);
    editor.line = editor.line.slice(0, from) + editor.line.slice(to);
    editor.cursor = from;
    Reflect.apply(editor[refreshLine]!, editor, []);
  };
  define(deleteLeft, () => {
    if (editor.cursor === 0) return;
    remove(graphemeBounds(editor.line).findLast((b) => b < editor.cursor) ?? 0, editor.cursor);
  });
  define(deleteRight, () => {
    if (editor.cursor >= editor.line.length) return;
    remove(editor.cursor, graphemeBounds(editor.line).find((b) => b > editor.cursor) ?? editor.line.length);
  });
}
