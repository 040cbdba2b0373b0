/**
 * Streamed answers, platform-neutral: what the worker tells a live answer ({@link StreamEvent}),
 * how those events become the text shown while the answer is written ({@link LiveView}), and the
 * engine that shows it on a platform by posting and editing messages or by drafts, throttled,
 * and finishes with today's formatted, split answer ({@link LiveAnswer}), and the one that prints
 * it to a terminal ({@link PrintedAnswer}). Each adapter supplies only its platform calls (a
 * {@link LiveSurface}: `Outbound.liveSurface`); the core builds the live answer ({@link openLiveAnswer}).
 *
 * Rules kept here for every platform:
 * - at most one update per message (or draft) per `intervalMs` (`STREAM_EDIT_INTERVAL_MS`); the
 *   first text is shown at once (no wait);
 * - never an edit that does not change what the message shows (Telegram answers such an edit
 *   400 "message is not modified");
 * - intermediate updates are plain text (the platform never rejects them); the final update is
 *   the platform's formatted answer, split exactly as a non-streamed answer;
 * - past the platform's limit, the full part stays in its message and the rest continues in a
 *   new one; at the end every message is edited to its final chunk, missing chunks are posted and
 *   messages beyond the last chunk are deleted, so the chat holds exactly the non-streamed answer;
 *   a message deleted in the chat meanwhile gets its chunk posted anew (and the chunks after it
 *   are posted after it, their old messages deleted), so the answer still arrives whole and in order.
 */
import { sliceUnits, withEllipsis } from "./cut.js";
import stringWidth from "string-width";
import type { Logger } from "./log.js";
import { PlatformRefusedError } from "./outbound-errors.js";
import { markdownLiteral, terminalLinks, terminalText } from "./plain-text.js";
import type { SentRef } from "./sent-ref.js";

/**
 * What a live answer is told, in order:
 * - `text`: a piece of the answer the model is writing;
 * - `text_dropped`: the text written so far in this model call led into a tool call (e.g. "let me
 *   check the weather"): it is not part of the answer and is no longer shown (the history keeps it;
 *   the final answer, like a non-streamed one, is the text of the last model call);
 * - `tool_start` / `tool_end`: a tool call runs / ended; shown as one status line per call
 *   (with `icon`, default `🔧`; a web search shows `🔎`);
 * - `tool_progress`: a running call reported how far it has come: its status line shows it
 *   (`🔧 notes: export… (2/5 · writing pages)`) until the call ends;
 * - `notice`: a short status of the answer itself (`⏳ the model is busy, still trying…`), shown
 *   above the answer until the next `text` or `tool_start` (or the final answer) replaces it;
 * - `lead`: a line shown first, above the status lines and the answer, for the rest of the answer
 *   (the transcript of a voice message, `🎤 「…」`); a later `lead` replaces it. The final answer
 *   given to {@link AnswerStream.finish} begins with the same line.
 */
export type StreamEvent =
  | { type: "lead"; text: string }
  | { type: "text"; text: string }
  | { type: "notice"; text: string }
  | { type: "text_dropped" }
  | { type: "tool_start"; id: string; activity: string; icon?: string }
  | { type: "tool_end"; id: string; ok: boolean }
  | { type: "tool_progress"; id: string; progress: { progress: number; total?: number; message?: string } };

/** Options of a live answer ({@link openLiveAnswer}). */
export interface StreamOptions {
  /** Least time between two updates of one message or draft, in ms (`STREAM_EDIT_INTERVAL_MS`). */
  intervalMs: number;
  /**
   * Messages of this answer an earlier attempt posted (their ids were kept in Redis): they are
   * edited rather than new ones posted, and deleted when the final answer needs fewer.
   */
  resume?: SentRef[];
  /** Awaited whenever the list of posted messages changes, so a retried job can {@link resume} it. */
  onMessages?: (refs: readonly SentRef[]) => Promise<void>;
  /** Called once, right after the first text became visible in the chat. */
  onVisible?: () => void;
  /**
   * False when the chat is known to refuse drafts (the surface's `draft` is then not used: the live
   * text is posted and edited as in groups). Default true.
   */
  drafts?: boolean;
  /**
   * Awaited once when the chat refused a draft for good (`PlatformRefusedError`, e.g. Telegram 400
   * `TEXTDRAFT_PEER_INVALID`): the answer goes on by posting and editing; the caller remembers the
   * chat so its next answers do not try drafts. Must not throw.
   */
  onDraftsRefused?: () => Promise<void>;
  /**
   * True when the live messages carry a button (Stop, {@link LiveSurfaceOptions}): the final edit
   * is then made even where the final chunk shows the same text, since it removes the button.
   */
  controls?: boolean;
  log: Logger;
}

/** A live answer: fed with events while the run works, then finished with the final text or discarded. */
export interface AnswerStream {
  /** Feeds one event; the chat catches up within the interval. Never throws (failed updates are logged). */
  push(event: StreamEvent): void;
  /**
   * Shows the final answer `text` with the platform's formatting and splitting (the same chunks a
   * non-streamed answer gets), editing the streamed messages and posting or deleting the difference.
   * May be called again after it threw (e.g. a 429): chunks before `skip` are left as they are.
   *
   * @param options.onSent - awaited after each final chunk is in place, with its index and message.
   * @returns the messages of the chunks put in place now.
   * @throws the platform's error for a chunk that could not be put in place (with its `retry_after` on a 429).
   */
  finish(
    text: string,
    options?: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void },
  ): Promise<SentRef[]>;
  /** Stops updating and deletes the messages posted for this answer (before an approval prompt or an apology). Never throws. */
  discard(): Promise<void>;
  /** Stops updating and keeps the messages (the job will retry: it edits them, their ids being kept in Redis). Never throws. */
  pause(): Promise<void>;
  /** The messages posted so far (live or final), in order. */
  readonly messages: readonly SentRef[];
}

/**
 * The status line of a tool call: `🔧 查詢天氣：臺北市…` while it runs (with how far it has come
 * when it reported it: `… (2/5 · writing pages)`), then `✓` or `✗` at its end; `icon` replaces
 * `🔧` (a web search: `🔎 搜尋：…`).
 */
export function statusLine(activity: string, state: "running" | "ok" | "failed", icon = "🔧", progress = ""): string {
  if (state !== "running") return `${icon} ${activity} ${state === "ok" ? "✓" : "✗"}`;
  // An activity cut short already ends with `…`: one mark, not two.
  return progress ? `${icon} ${withEllipsis(activity)} (${progress})` : `${icon} ${withEllipsis(activity)}`;
}

/** How far a call has come, in a few characters: `2/5 · writing pages`, `40%`, `3`; numbers rounded to 2 decimals. */
export function progressText(p: { progress: number; total?: number; message?: string }): string {
  const n = (x: number) => String(Math.round(x * 100) / 100);
  const amount =
    p.total !== undefined && p.total > 0
      ? p.total === 100
        ? `${n(p.progress)}%`
        : `${n(p.progress)}/${n(p.total)}`
      : n(p.progress);
  const message = p.message && sliceUnits(p.message.replace(/\s+/g, " ").trim(), 60);
  return message ? `${amount} · ${message}` : amount;
}

/** Options of a {@link LiveView}. */
export interface LiveViewOptions {
  /**
   * Writes the view's own plain lines (the lead, the status lines, the notice) for the surface;
   * default as they are. A surface that shows the live text as Markdown (Discord) passes
   * {@link markdownLiteral}, so a tool's input (`🔧 設定提醒：**drink** water`) shows as it is,
   * never bold. The answer so far is the model's Markdown and is never changed.
   */
  literal?: (plain: string) => string;
}

/** Turns {@link StreamEvent}s into the text shown while the answer is written: status lines, the notice, the answer so far (blank lines between). */
export class LiveView {
  readonly #literal: (plain: string) => string;
  readonly #tools = new Map<
    string,
    { activity: string; icon?: string; state: "running" | "ok" | "failed"; progress?: string }
  >();
  #lead = "";
  #text = "";
  #notice = "";

  /** @param options - see {@link LiveViewOptions}. */
  constructor(options: LiveViewOptions = {}) {
    this.#literal = options.literal ?? ((plain) => plain);
  }

  /** Applies one event. */
  apply(event: StreamEvent): void {
    switch (event.type) {
      case "lead":
        this.#lead = event.text.trim();
        break;
      case "text":
        this.#text += event.text;
        this.#notice = "";
        break;
      case "notice":
        this.#notice = event.text;
        break;
      case "text_dropped":
        this.#text = "";
        break;
      case "tool_start":
        this.#notice = "";
        this.#tools.set(event.id, {
          activity: event.activity,
          ...(event.icon ? { icon: event.icon } : {}),
          state: "running",
        });
        break;
      case "tool_end": {
        const tool = this.#tools.get(event.id);
        if (tool) tool.state = event.ok ? "ok" : "failed";
        break;
      }
      case "tool_progress": {
        const tool = this.#tools.get(event.id);
        if (tool?.state === "running") tool.progress = progressText(event.progress);
        break;
      }
    }
  }

  /**
   * The text to show now (may be empty: nothing to show yet): the lead, status lines, the notice, the answer so far.
   * Leading and trailing white space is trimmed.
   */
  text(): string {
    const literal = this.#literal;
    const lines = [...this.#tools.values()].map((t) => literal(statusLine(t.activity, t.state, t.icon, t.progress)));
    const answer = this.#text.trim();
    return [literal(this.#lead), lines.join("\n"), literal(this.#notice), answer]
      .filter((part) => part !== "")
      .join("\n\n");
  }
}

/**
 * Cuts plain `text` into pieces of at most `limit` UTF-16 units, in order: at the last blank line
 * or line break in the second half of the window when there is one, else at the limit (never
 * between the halves of a surrogate pair). Used for the live (plain) messages only; the final
 * answer is split by the platform's own splitter. Never returns empty pieces.
 */
export function livePieces(text: string, limit: number): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    let cut = rest.lastIndexOf("\n\n", limit);
    if (cut < limit / 2) cut = rest.lastIndexOf("\n", limit);
    if (cut < limit / 2) {
      cut = limit;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    const piece = rest.slice(0, cut).trimEnd();
    if (piece !== "") pieces.push(piece);
    rest = rest.slice(cut).replace(/^\s+/, "");
  }
  if (rest.trim() !== "") pieces.push(rest);
  return pieces;
}

/**
 * The platform calls of a live answer in one chat that posts and edits messages (or drafts). `C`
 * is one chunk of the platform's final formatting (e.g. Telegram's `{ html, plain }`, Discord's string).
 */
export interface EditingSurface<C> {
  readonly kind: "editing";
  /** Longest live message, in UTF-16 units of plain text (Telegram 4096, Discord 2000). */
  readonly limit: number;
  /**
   * True when the chat shows the live text as Markdown, as it shows the final one (Discord): the
   * live view's own lines (the lead, the tool status lines with their inputs, the notice) are then
   * written as Markdown literals ({@link LiveViewOptions.literal}). Default false: live text is
   * shown as it is (Telegram sends it without `parse_mode`).
   */
  readonly markdown?: boolean;
  /**
   * Present when the chat shows drafts (Telegram private chats, Bot API `sendMessageDraft`): the
   * live text is shown as a draft (`piece` counts from 0 when the text passes the limit) and
   * nothing is posted until the final answer.
   */
  draft?: (text: string, piece: number) => Promise<void>;
  /** Posts plain `text` as live message `index` (a reply to the user's message where the platform's answers are). */
  post(text: string, index: number): Promise<SentRef>;
  /**
   * Edits a posted message to plain `text`. `shown` is what it shows now, undefined when unknown
   * (posted by an earlier attempt): an edit that turns out not to change it is then not a failure.
   */
  edit(ref: SentRef, text: string, shown: string | undefined): Promise<void>;
  /** Deletes a posted message; one already gone is not a failure. */
  remove(ref: SentRef): Promise<void>;
  /** The final chunks of `text`, exactly as a non-streamed answer is split. */
  finalChunks(text: string): C[];
  /** The plain text a chunk shows when it has no formatting at all, else undefined (then it always differs from a plain live text). */
  plainOf(chunk: C): string | undefined;
  /** Posts final chunk `index` (formatted, with the platform's plain-text fallback). */
  postFinal(chunk: C, index: number): Promise<SentRef>;
  /**
   * Edits a message to final chunk `index` (formatted, with the platform's plain-text fallback);
   * `shown` as in {@link edit}. When the message is gone (deleted in the chat meanwhile: Telegram
   * 400 "message to edit not found", Discord 10008 Unknown Message), posts the chunk anew as
   * {@link postFinal} does and returns the new message; else returns nothing.
   */
  editFinal(ref: SentRef, chunk: C, index: number, shown: string | undefined): Promise<SentRef | void>;
}

/**
 * A draft is "a temporary 30-second preview" (Bot API `sendMessageDraft`): one unchanged for this
 * long (e.g. while a slow tool runs) is sent again so it does not vanish, in ms.
 */
export const DRAFT_REFRESH_MS = 20_000;

interface Posted {
  ref: SentRef;
  /** What the message shows (plain), undefined when posted by an earlier attempt. */
  shown: string | undefined;
  /** When it was last posted or edited, ms (performance clock); 0 when unknown. */
  at: number;
}

/** The {@link AnswerStream} engine over an {@link EditingSurface} (see the module comment for its rules). */
export class LiveAnswer<C> implements AnswerStream {
  readonly #surface: EditingSurface<C>;
  readonly #options: StreamOptions;
  readonly #view: LiveView;
  readonly #posted: Posted[];
  #draftShown: string[] = [];
  #draftAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** When {@link #timer} fires, ms (performance clock). */
  #timerAt = 0;
  /** The chain of platform calls: one at a time, in order. */
  #chain: Promise<void> = Promise.resolve();
  #flushing = false;
  /** When the last update round failed, ms (performance clock): the next one waits an interval (no retry storm). */
  #failedAt = -Infinity;
  #closed = false;
  #visible = false;

  readonly #draftRefreshMs: number;
  /** True while the live text is shown as drafts (the surface has them, the chat has not refused them). */
  #drafts: boolean;

  /** @param draftRefreshMs - see {@link DRAFT_REFRESH_MS} (shorter in tests). */
  constructor(surface: EditingSurface<C>, options: StreamOptions, draftRefreshMs = DRAFT_REFRESH_MS) {
    this.#surface = surface;
    this.#options = options;
    this.#view = new LiveView(surface.markdown ? { literal: markdownLiteral } : {});
    this.#draftRefreshMs = draftRefreshMs;
    this.#drafts = surface.draft !== undefined && options.drafts !== false;
    this.#posted = (options.resume ?? []).map((ref) => ({ ref, shown: undefined, at: 0 }));
  }

  get messages(): readonly SentRef[] {
    return this.#posted.map((p) => p.ref);
  }

  push(event: StreamEvent): void {
    if (this.#closed) return;
    this.#view.apply(event);
    this.#schedule();
  }

  /** Plans the next update: now when allowed, else when the interval of the message to change has passed. */
  #schedule(): void {
    if (this.#flushing || this.#closed) return;
    const wait = this.#nextWait();
    if (wait === undefined) return;
    // A planned update that comes sooner stays; a later one (a draft's refresh) gives way.
    if (this.#timer && this.#timerAt <= performance.now() + wait) return;
    clearTimeout(this.#timer);
    this.#timerAt = performance.now() + wait;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = true;
      this.#chain = this.#chain
        .then(() => this.#update())
        .catch((err: unknown) => {
          this.#failedAt = performance.now();
          this.#options.log.warn({ err }, "a live answer update failed; the next one catches up");
        })
        .finally(() => {
          this.#flushing = false;
          this.#schedule();
        });
    }, wait);
  }

  /**
   * ms until the next update may go out, or undefined when the chat already shows the current
   * text; at least an interval after a failed round.
   */
  #nextWait(): number | undefined {
    const wait = this.#dueIn();
    return wait === undefined
      ? undefined
      : Math.max(wait, this.#failedAt + this.#options.intervalMs - performance.now());
  }

  /** ms until the next update is due by the per-message (or draft) interval, or undefined when nothing changed. */
  #dueIn(): number | undefined {
    const pieces = livePieces(this.#view.text(), this.#surface.limit);
    const now = performance.now();
    const interval = this.#options.intervalMs;
    if (this.#drafts) {
      const i = pieces.length - 1;
      if (i < 0) return undefined;
      if (this.#draftShown[i] === pieces[i]) return Math.max(0, this.#draftAt + this.#draftRefreshMs - now);
      return this.#draftShown.length === 0 ? 0 : Math.max(0, this.#draftAt + interval - now);
    }
    let wait: number | undefined;
    for (const [i, piece] of pieces.entries()) {
      const posted = this.#posted[i];
      if (posted && posted.shown === piece) continue;
      const w = posted ? Math.max(0, posted.at + interval - now) : 0;
      wait = wait === undefined ? w : Math.min(wait, w);
    }
    return wait;
  }

  /** One round of updates: every piece whose message may change now. */
  async #update(): Promise<void> {
    if (this.#closed) return;
    const pieces = livePieces(this.#view.text(), this.#surface.limit);
    const interval = this.#options.intervalMs;
    if (this.#drafts && this.#surface.draft) {
      const i = pieces.length - 1;
      if (i < 0) return;
      const since = performance.now() - this.#draftAt;
      if (
        this.#draftShown[i] === pieces[i]
          ? since < this.#draftRefreshMs
          : this.#draftShown.length > 0 && since < interval
      )
        return;
      try {
        await this.#surface.draft(pieces[i]!, i);
      } catch (error) {
        if (!(error instanceof PlatformRefusedError)) throw error;
        // Refused for good (not a rate limit, not an outage): post and edit from now on, at once.
        this.#drafts = false;
        this.#options.log.warn(
          { err: error },
          "the chat refused a draft; this answer goes on as a posted message with edits, and the chat gets no drafts for a while",
        );
        await this.#options.onDraftsRefused?.();
        return this.#update();
      }
      this.#draftShown[i] = pieces[i]!;
      this.#draftAt = performance.now();
      this.#becameVisible();
      return;
    }
    for (const [i, piece] of pieces.entries()) {
      if (this.#closed) return;
      const posted = this.#posted[i];
      if (!posted) {
        const ref = await this.#surface.post(piece, i);
        this.#posted.push({ ref, shown: piece, at: performance.now() });
        await this.#options.onMessages?.(this.messages);
        this.#becameVisible();
      } else if (posted.shown !== piece && performance.now() - posted.at >= interval) {
        await this.#surface.edit(posted.ref, piece, posted.shown);
        posted.shown = piece;
        posted.at = performance.now();
        this.#becameVisible();
      }
    }
  }

  #becameVisible(): void {
    if (this.#visible) return;
    this.#visible = true;
    this.#options.onVisible?.();
  }

  /** Stops live updates and waits for the one in flight. */
  async #stop(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#chain;
  }

  async finish(
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void } = {},
  ): Promise<SentRef[]> {
    await this.#stop();
    const chunks = this.#surface.finalChunks(text);
    const refs: SentRef[] = [];
    const interval = this.#options.intervalMs;
    for (const [i, chunk] of chunks.entries()) {
      if (i < (options.skip ?? 0)) continue;
      const posted = this.#posted[i];
      if (!posted) {
        const ref = await this.#surface.postFinal(chunk, i);
        this.#posted.push({ ref, shown: undefined, at: performance.now() });
        await this.#options.onMessages?.(this.messages);
        refs.push(ref);
      } else {
        const plain = this.#surface.plainOf(chunk);
        if (posted.shown === undefined || plain !== posted.shown || this.#options.controls === true) {
          const wait = posted.at + interval - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const anew = await this.#surface.editFinal(posted.ref, chunk, i, posted.shown);
          posted.at = performance.now();
          if (anew) {
            // The message was gone and the chunk was posted below the later live messages: those are
            // deleted and their chunks posted after it, so the answer reads in order.
            posted.ref = anew;
            await this.#removeAll(this.#posted.splice(i + 1));
            await this.#options.onMessages?.(this.messages);
          }
        }
        // What it shows now is the final chunk; unknown as plain text when formatted.
        posted.shown = plain;
        refs.push(posted.ref);
      }
      await options.onSent?.(i, refs[refs.length - 1]!);
    }
    if (this.#posted.length > chunks.length) {
      // Every chunk is in place (onSent ran for each): a message that cannot be deleted is logged, not a failed answer.
      await this.#removeAll(this.#posted.splice(chunks.length));
      await this.#options.onMessages?.(this.messages);
    }
    return refs;
  }

  /** Deletes `posted` messages, logging (not throwing) a failure for each. */
  async #removeAll(posted: Posted[]): Promise<void> {
    for (const p of posted) {
      await this.#surface
        .remove(p.ref)
        .catch((err: unknown) => this.#options.log.warn({ err }, "could not delete a live answer message"));
    }
  }

  async pause(): Promise<void> {
    await this.#stop();
  }

  async discard(): Promise<void> {
    await this.#stop();
    await this.#removeAll(this.#posted.splice(0));
    await this.#options
      .onMessages?.([])
      .catch((err: unknown) => this.#options.log.warn({ err }, "could not forget the live answer messages"));
  }
}

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

/**
 * The platform calls of a live answer that prints (the console, `npm run chat`): what is printed
 * stays (nothing is edited or deleted).
 */
export interface PrintingSurface {
  readonly kind: "printing";
  /** Prints text (resolves when written). */
  write(text: string): Promise<void>;
  /** Prints a whole answer (the outbound's `sendAnswer` to the answer's destination). */
  sendAnswer(
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void },
  ): Promise<SentRef[]>;
  /** Set when the output is a terminal: status lines are redrawn in place. */
  readonly screen?: TerminalScreen;
  /**
   * Called each time the answer ends what it printed: `true` after `finish` (the answer is on
   * screen, its last line ended), `false` after `discard` or `pause`.
   */
  onEnd?(finished: boolean): void;
  /** Called (synchronously) whenever something is handed to `write`, before it is written. */
  onPrint?(): void;
}

/**
 * The printing {@link AnswerStream} over a {@link PrintingSurface}: text deltas are printed as they
 * come, after `bot> `; a tool call prints its status line (`🔧 查詢天氣：臺北市…`, then its
 * outcome). What was printed cannot be taken back, so text that led into a tool call stays on
 * screen; when the final answer begins with what was printed since the last tool, only the rest of
 * it and a line break end it (nothing, or the sources of an answer that cites the web, their links
 * written as `label (address)`: `terminalLinks`), else the final answer is printed in full (e.g. a
 * note was added before it). Links in the text streamed as it came stay as the model wrote them.
 * A notice (`⏹ 正在停止…`) is printed on a line of its own; when the final answer is the text
 * printed before it and then lines of its own (a stopped answer's `⏹ 已停止`), only those follow.
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
export class PrintedAnswer implements AnswerStream {
  #printed = "";
  /**
   * The answer's text printed before the last notice, when nothing of the answer followed the
   * notice ("" otherwise): a stopped answer (`⏹ 正在停止…`, then the text so far and `⏹ 已停止`)
   * then prints only its mark, not the text again.
   */
  #beforeNotice = "";
  #atLineStart = true;
  #started = false;
  #block: StatusBlock | undefined;
  #writes: Promise<void> = Promise.resolve();

  readonly #surface: PrintingSurface;
  readonly #onVisible: (() => void) | undefined;
  readonly screen: TerminalScreen | undefined;

  /** @param options - of the options only `onVisible` applies (called once, when the first text is printed). */
  constructor(surface: PrintingSurface, options: Pick<StreamOptions, "onVisible">) {
    this.#surface = surface;
    this.#onVisible = options.onVisible;
    this.screen = surface.screen;
  }

  private write(text: string): Promise<void> {
    return this.#surface.write(text);
  }

  private sendAnswer(
    text: string,
    options: { skip?: number; onSent?: (index: number, ref: SentRef) => Promise<void> | void },
  ): Promise<SentRef[]> {
    return this.#surface.sendAnswer(text, options);
  }

  private onVisible(): void {
    this.#onVisible?.();
  }

  private onEnd(finished: boolean): void {
    this.#surface.onEnd?.(finished);
  }

  private onPrint(): void {
    this.#surface.onPrint?.();
  }

  readonly messages: readonly SentRef[] = [];

  #emit(text: string): void {
    this.onPrint();
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
    if (prefix) this.onVisible();
  }

  push(event: StreamEvent): void {
    switch (event.type) {
      case "lead":
        // The answer begins with this line (a voice message's transcript): printed once, first.
        this.#beforeNotice = "";
        this.#printed += `${event.text}\n\n`;
        this.#print(`${event.text}\n\n`);
        break;
      case "text":
        this.#beforeNotice = "";
        this.#printed += event.text;
        this.#print(event.text);
        break;
      case "text_dropped":
        this.#printed = "";
        this.#beforeNotice = "";
        break;
      case "notice":
        // Printed on a line of its own; it is not part of the answer (the final answer is then
        // printed whole, unless it is the text printed before the notice and more: see `finish`).
        this.#print(`${this.#atLineStart ? "" : "\n"}${event.text}\n`);
        if (this.#printed !== "") this.#beforeNotice = this.#printed;
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
        this.#beforeNotice = "";
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
    if (first) this.onVisible();
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
      // The rest is most often the sources of a web search: its links as `label (address)`.
      await this.write(`${terminalText(terminalLinks(rest))}\n`);
      await options.onSent?.(0, { chatId: "console", messageId: "stream" });
      this.onEnd(true);
      return [];
    }
    const before = this.#beforeNotice.trim();
    const after = text.trim().slice(before.length);
    if (printed === "" && before !== "" && text.trim().startsWith(before) && /^\s*\n/.test(after)) {
      // The text printed before a notice, then lines of its own (a stopped answer's `⏹ 已停止`):
      // those lines follow the notice; the text is not printed twice.
      this.#atLineStart = true;
      await this.write(`${terminalText(terminalLinks(after.trimStart()))}\n`);
      await options.onSent?.(0, { chatId: "console", messageId: "stream" });
      this.onEnd(true);
      return [];
    }
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
    const sent = await this.sendAnswer(text, options);
    this.onEnd(true);
    return sent;
  }

  async discard(): Promise<void> {
    const close = this.#closeBlock();
    if (close) this.#emit(close);
    await this.#writes;
    if (!this.#atLineStart) await this.write("\n");
    this.#atLineStart = true;
    this.onEnd(false);
  }

  async pause(): Promise<void> {
    await this.discard();
  }
}

/**
 * What the core asks of a live answer's surface (`Outbound.liveSurface`):
 * - `stop`: the Stop button (`src/stop/`) to show on each live message while the answer is being
 *   written (Telegram inline keyboard, Discord a button component), never on the final chunks;
 *   `label` is localized, `data` its `callback_data` / `custom_id` (at most 64 bytes). A surface
 *   that cannot show one (a Telegram draft) leaves it out: `/stop` still works there; the terminal
 *   offers Ctrl-G instead.
 */
export interface LiveSurfaceOptions {
  stop?: { label: string; data: string };
}

/** What an adapter gives for a live answer (`Outbound.liveSurface`): a surface that edits, or one that prints. */
export type LiveSurface = EditingSurface<unknown> | PrintingSurface;

/**
 * Builds the live answer over an adapter's `surface`: a {@link LiveAnswer} (posts and edits, or
 * drafts) for an editing surface, a {@link PrintedAnswer} for a printing one. Never throws
 * (nothing is sent yet).
 *
 * @param draftRefreshMs - see {@link DRAFT_REFRESH_MS} (shorter in tests).
 */
export function openLiveAnswer(surface: LiveSurface, options: StreamOptions, draftRefreshMs?: number): AnswerStream {
  return surface.kind === "editing"
    ? new LiveAnswer(surface, options, draftRefreshMs)
    : new PrintedAnswer(surface, options);
}
