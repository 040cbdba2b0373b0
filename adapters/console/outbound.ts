/**
 * The console's outbound side: answers and approval prompts written to a stream (stdout for
 * `npm run chat`, a PassThrough in tests). It keeps the open approval prompt so the console's
 * inbound side can map a `y`/`n` line to it. Text of users and the model is written through
 * `terminalText` (`src/plain-text.ts`): its controls are shown, never acted on by the terminal; an
 * answer's links (the sources of a web search too) as `label (address)` (`terminalLinks`).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Writable } from "node:stream";
import type { Locale } from "../../src/config.js";
import { localize } from "../../src/i18n.js";
import { terminalLinks, terminalText } from "../../src/plain-text.js";
import type { ApprovalVerdict } from "../../src/agent/contract.js";
import type {
  ApprovalPrompt,
  Destination,
  Outbound,
  ReminderMessage,
  SentRef,
  VoiceReply,
} from "../../src/outbound.js";
import { clockDuration } from "../../src/media/voice.js";
import type { PrintingSurface, TerminalScreen } from "../../src/streaming.js";

/** Default longest chunk of an answer, in UTF-16 code units (the console has no platform limit; this keeps chunks readable). */
export const CONSOLE_CHUNK_CHARS = 4000;

/**
 * Longest a streamed answer waits for the one being printed to end before printing anyway, in ms
 * (a stream its run abandoned without ending it must not hold the screen for good).
 */
export const STREAM_TURN_MAX_WAIT_MS = 60_000;

/** Options of {@link ConsoleOutbound}. */
export interface ConsoleOutboundOptions {
  output: Writable;
  locale: Locale;
  /** Longest chunk in UTF-16 code units; default {@link CONSOLE_CHUNK_CHARS}. */
  chunkChars?: number;
  /** Set when `output` is a terminal: a streamed answer's status lines are redrawn in place (see `PrintedAnswer` of `src/streaming.ts`). */
  screen?: TerminalScreen;
  /** Folder of the voice replies' files; default `.data/voice` under the current folder. */
  voiceDir?: string;
}

/** An approval prompt shown on the console and not yet closed. */
export interface OpenPrompt extends ApprovalPrompt {
  ref: SentRef;
  /** The platform message id of the message whose run asked (its resumed answer replies to it), when known. */
  replyTo?: string;
}

/**
 * Splits `text` into chunks of at most `max` UTF-16 units: at blank lines between paragraphs
 * when possible, never inside a fenced code block unless the block alone is too long, then at a
 * line break, and never between the halves of a surrogate pair. Empty chunks are never returned.
 */
export function splitText(text: string, max: number): string[] {
  // Paragraphs: runs of lines separated by blank lines, except inside a fenced code block.
  const paragraphs: string[] = [];
  let current: string[] = [];
  let inFence = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (!inFence && line.trim() === "") {
      if (current.length > 0) paragraphs.push(current.join("\n"));
      current = [];
    } else {
      current.push(line);
    }
  }
  if (current.length > 0) paragraphs.push(current.join("\n"));

  const chunks: string[] = [];
  let chunk = "";
  const flush = () => {
    if (chunk.trim() !== "") chunks.push(chunk);
    chunk = "";
  };
  for (const paragraph of paragraphs) {
    const joined = chunk === "" ? paragraph : `${chunk}\n\n${paragraph}`;
    if (joined.length <= max) {
      chunk = joined;
      continue;
    }
    flush();
    let rest = paragraph;
    while (rest.length > max) {
      let cut = rest.lastIndexOf("\n", max);
      if (cut <= 0) {
        cut = max;
        const code = rest.charCodeAt(cut - 1);
        if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
      }
      chunk = rest.slice(0, cut);
      flush();
      rest = rest.slice(cut).replace(/^\n/, "");
    }
    chunk = rest;
  }
  flush();
  return chunks;
}

/** Writes answers and prompts to a stream. */
export class ConsoleOutbound implements Outbound {
  readonly platform = "console" as const;
  /** The reader is the operator: apologies say why (see `Outbound.showsCauses`). */
  readonly showsCauses = true;
  /** The newest approval prompt not yet closed, if any. */
  openPrompt: OpenPrompt | undefined;
  readonly #options: ConsoleOutboundOptions;
  #sent = 0;
  /** Messages of this terminal (platform message ids) whose answer has not been delivered yet; see {@link expectAnswer}. */
  readonly #awaited = new Set<string>();
  /**
   * Of {@link #awaited}: the messages whose answer is a run resumed by a decision typed here, each
   * with when it was decided (ms since the Unix epoch); see {@link expectResumed}.
   */
  readonly #resumed = new Map<string, number>();
  /** The prompts (their `SentRef.messageId`) whose outcome was written; see {@link closeApprovalPrompt}. */
  readonly #closed = new Set<string>();
  /** Streamed answers that printed something and have not ended yet. */
  #live = 0;
  /** Resolves when the streamed answer that took the screen last has ended (see {@link liveSurface}). */
  #screenFree: Promise<void> = Promise.resolve();
  /** Who waits in {@link settled} or {@link quiet}, each with the condition it waits for. */
  #waiters: { ready: () => boolean; resolve: () => void }[] = [];

  constructor(options: ConsoleOutboundOptions) {
    this.#options = options;
  }

  /**
   * Notes that the message `messageId` was typed here and will be answered: {@link settled} then
   * waits until its answer was delivered (written whole, or its streamed answer finished) or an
   * approval prompt was shown for it. Call it before the message is queued.
   */
  expectAnswer(messageId: string): void {
    this.#awaited.add(messageId);
  }

  /**
   * Notes that a decision typed here (`y`, `n`, `a`) resumes the run of the message `messageId`:
   * {@link settled} then waits until the resumed run's answer was delivered (or it asked again), so
   * that a command typed after the decision (`/permissions`) sees what the decision did. Call it
   * before the decision is sent; {@link forgetAnswer} when it was not accepted.
   * @param at - when the decision was typed, ms since the Unix epoch (default `Date.now()`).
   */
  expectResumed(messageId: string, at = Date.now()): void {
    this.#awaited.add(messageId);
    this.#resumed.set(messageId, at);
  }

  /**
   * Stops waiting for the answer to `messageId` (it was not queued after all). Without one: for
   * every message typed here (the conversation went idle), and for the resumed runs decided at or
   * before `resumedBefore` (ms since the Unix epoch; default none: those are still waited for).
   */
  forgetAnswer(messageId?: string, resumedBefore?: number): void {
    if (messageId !== undefined) {
      this.#awaited.delete(messageId);
      this.#resumed.delete(messageId);
    } else
      for (const id of [...this.#awaited]) {
        const decided = this.#resumed.get(id);
        if (decided !== undefined && (resumedBefore === undefined || decided > resumedBefore)) continue;
        this.#awaited.delete(id);
        this.#resumed.delete(id);
      }
    this.#wake();
  }

  /**
   * Resolves once every message noted with {@link expectAnswer} has been answered and no streamed
   * answer is being printed (at once when that holds already), so that a line's own reply
   * (a command's) comes after the answers to the lines typed before it and never inside one.
   * Waits on the deliveries themselves: no timer.
   */
  settled(): Promise<void> {
    return this.#when(() => this.#awaited.size === 0 && this.#live === 0);
  }

  /** Resolves once no streamed answer is being printed (at once when none is). */
  quiet(): Promise<void> {
    return this.#when(() => this.#live === 0);
  }

  #when(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ ready, resolve }));
  }

  #wake(): void {
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiting) {
      if (waiter.ready()) waiter.resolve();
      else this.#waiters.push(waiter);
    }
  }

  /** The answer to `to.replyTo` is on screen (or its approval prompt). */
  #answered(to: Destination): void {
    if (to.replyTo === undefined) return;
    this.#resumed.delete(to.replyTo);
    if (this.#awaited.delete(to.replyTo)) this.#wake();
  }

  /** An answer up to one chunk's size (`chunkChars`) is written in one piece. */
  get singleChunkUnits(): number {
    return this.#options.chunkChars ?? CONSOLE_CHUNK_CHARS;
  }

  /**
   * Writes the answer as `bot> …`, one write per chunk (see {@link splitText}); chunks before
   * `skip` are not written. Its links are written as `label (address)` ({@link terminalLinks}: a
   * terminal shows Markdown as it is), the rest of its Markdown as the model wrote it. `onSent(index)` is awaited after each chunk, `index` counting from the
   * first chunk of the whole answer.
   * @throws the stream's write error; the chunks written before it stay written.
   */
  async sendAnswer(
    to: Destination,
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    const chunks = splitText(terminalLinks(text), this.#options.chunkChars ?? CONSOLE_CHUNK_CHARS);
    const refs: SentRef[] = [];
    for (let i = options.skip ?? 0; i < chunks.length; i += 1) {
      await this.#write(`bot> ${terminalText(chunks[i]!)}\n`);
      const ref = { chatId: to.conversation.chatId, messageId: String(++this.#sent) };
      refs.push(ref);
      await options.onSent?.(i, ref);
    }
    this.#answered(to);
    return refs;
  }

  /**
   * {@inheritDoc Outbound.liveSurface} Deltas are printed as they come (`PrintedAnswer`). From its
   * first write until it ends, the stream counts as live (see {@link settled}); `finish` delivers
   * the answer to `to.replyTo`. Streamed answers take turns on the screen: one that begins while
   * another is being printed (the answer resumed after `y`, and the next message's) waits until
   * that one ended, or at most {@link STREAM_TURN_MAX_WAIT_MS}, so their lines never interleave.
   */
  liveSurface(to: Destination): PrintingSurface {
    let live = false;
    let turn: Promise<void> = Promise.resolve();
    let release = () => {};
    // Live from the moment text is handed over to be printed (its write waits for its turn).
    const print = () => {
      if (live) return;
      live = true;
      this.#live += 1;
      const before = this.#screenFree;
      turn = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STREAM_TURN_MAX_WAIT_MS);
        timer.unref();
        void before.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.#screenFree = new Promise<void>((resolve) => (release = resolve));
    };
    const end = (finished: boolean) => {
      if (live) {
        live = false;
        this.#live -= 1;
        release();
      }
      if (finished) this.#answered(to);
      this.#wake();
    };
    return {
      kind: "printing",
      write: async (text) => {
        print();
        await turn;
        return this.#write(text);
      },
      sendAnswer: async (text, o) => {
        print();
        await turn;
        return this.sendAnswer(to, text, o);
      },
      ...(this.#options.screen ? { screen: this.#options.screen } : {}),
      onEnd: end,
      onPrint: print,
    };
  }

  /** The console shows no typing indicator. */
  async sendTyping(_to: Destination): Promise<void> {}

  /**
   * Writes the prompt (in `prompt.locale`, else the console's locale) and remembers it as the open prompt (the next
   * `y`/`n` line, or `a` when it offers "always allow", answers it).
   */
  async sendApprovalPrompt(to: Destination, prompt: ApprovalPrompt): Promise<SentRef> {
    const ref = { chatId: to.conversation.chatId, messageId: String(++this.#sent) };
    const seconds = Math.max(0, Math.round((prompt.expiresAt - Date.now()) / 1000));
    const texts = prompt.alwaysAllow
      ? {
          "zh-TW":
            "⚠️ 需要確認：{action}\n     要執行嗎？請輸入 y（是）、n（否）或 a（一律允許：之後在這裡不再詢問這個工具），{seconds} 秒內有效。",
          en:
            "⚠️ Confirmation needed: {action}\n     Go ahead? Type y (yes), n (no) or a (always allow: " +
            "do not ask again for this tool here) within {seconds} s.",
        }
      : {
          "zh-TW": "⚠️ 需要確認：{action}\n     要執行嗎？請輸入 y（是）或 n（否），{seconds} 秒內有效。",
          en: "⚠️ Confirmation needed: {action}\n     Go ahead? Type y (yes) or n (no) within {seconds} s.",
        };
    await this.#write(
      `bot> ${localize(prompt.locale ?? this.#options.locale, texts, { action: terminalText(prompt.action), seconds })}\n`,
    );
    this.openPrompt = { ...prompt, ref, ...(to.replyTo !== undefined ? { replyTo: to.replyTo } : {}) };
    this.#answered(to);
    return ref;
  }

  /**
   * Writes the prompt's outcome, once per prompt (a decision typed the moment the prompt appeared
   * can get it closed twice: by the run that posted it and by the decision), and forgets it if it
   * was the open prompt.
   */
  async closeApprovalPrompt(prompt: SentRef, outcome: ApprovalVerdict, text: string): Promise<void> {
    if (this.openPrompt?.ref.messageId === prompt.messageId) this.openPrompt = undefined;
    if (this.#closed.has(prompt.messageId)) return;
    this.#closed.add(prompt.messageId);
    await this.#write(`bot> ${terminalText(text)}\n`);
  }

  /**
   * Writes `bot> ⏰ …` (the console has no buttons: done and snooze are Telegram and Discord only),
   * once no streamed answer is being printed: a reminder that comes due meanwhile follows the answer, never lands inside it.
   */
  async sendReminder(reminder: ReminderMessage): Promise<SentRef> {
    await this.quiet();
    await this.#write(`bot> ${terminalText(reminder.text)}\n`);
    return { chatId: reminder.conversation.chatId, messageId: String(++this.#sent) };
  }

  /** Writes the closed reminder's text (after a streamed answer being printed, as {@link sendReminder}). */
  async closeReminder(_message: SentRef, text: string): Promise<void> {
    await this.quiet();
    await this.#write(`bot> ${terminalText(text)}\n`);
  }

  /** Voice replies are saved as MP3 (any player opens it). */
  readonly voiceFormat = "mp3" as const;

  /**
   * {@inheritDoc Outbound.sendVoice} Saves the audio as `<voiceDir>/<time>-<n>.mp3` (default
   * `.data/voice`, the file readable by its owner only) and writes `bot> 🔊 語音回覆（0:03）：<path>`
   * (the path relative to the current folder when it is under it), after any streamed answer
   * being printed.
   * @throws the file system's or the stream's error.
   */
  async sendVoice(to: Destination, voice: VoiceReply): Promise<SentRef> {
    const dir = this.#options.voiceDir ?? path.resolve(".data", "voice");
    await mkdir(dir, { recursive: true });
    const messageId = String(++this.#sent);
    const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${messageId}.mp3`);
    await writeFile(file, voice.audio, { mode: 0o600 });
    const relative = path.relative(process.cwd(), file);
    const shown = relative.startsWith("..") || path.isAbsolute(relative) ? file : relative;
    await this.quiet();
    await this.#write(
      `bot> ${localize(
        voice.locale,
        { "zh-TW": "🔊 語音回覆（{time}）：{path}", en: "🔊 Voice reply ({time}): {path}" },
        { time: clockDuration(voice.seconds), path: terminalText(shown) },
      )}\n`,
    );
    return { chatId: to.conversation.chatId, messageId };
  }

  #write(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#options.output.write(text, (err) => (err ? reject(err) : resolve()));
    });
  }
}
