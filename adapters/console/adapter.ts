/**
 * The console adapter (platform `console`): each line typed on stdin is a message of one DM chat;
 * answers come back through the same queue, worker and history as Discord and Telegram, written
 * by {@link ConsoleOutbound}. Commands: those of the catalogue (`src/commands/catalog.ts`: `/help`,
 * `/tools`, `/reset`, `/usage` …, shown as plain text) and `/quit` (also `/exit`, `/quit@somebot`); an unknown `/command` is answered
 * with the list, never sent to the model. `y`/`n` answer the open approval prompt; `a` answers it
 * with "always allow" when the prompt offers it.
 *
 * Lines are handled in order, also when piped in all at once: a line the console answers itself
 * (a command, a `y` typed before its prompt appeared, a message too long) waits until every
 * message typed before it has been answered (its answer delivered, or an approval prompt shown for
 * it; see `ConsoleOutbound.settled`) — a message whose prompt was answered here, until its resumed
 * run's answer — and no reply is written inside a streamed answer.
 *
 * Stop (issue 42): `/stop`, or Ctrl-G in `npm run chat`'s terminal, stops the answer being written
 * at once — it does not wait behind that answer as other commands do; the stopped answer's own
 * `⏹ 已停止` is the reply. With nothing being written, the "nothing to stop" line comes after the
 * answers before it, as any command's reply.
 */
import { userInfo } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { createInterface, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { EnqueueError, type Adapter, type AdapterContext } from "../../src/adapter.js";
import { isAdmin } from "../../src/access/policy.js";
import { decisionNotice, type DecisionResult } from "../../src/approvals/decider.js";
import { findCommand } from "../../src/commands/catalog.js";
import { unknownCommand } from "../../src/commands/runner.js";
import type { Locale } from "../../src/config.js";
import { localize, STOP_TEXT } from "../../src/i18n.js";
import { markdownToPlain, terminalText } from "../../src/plain-text.js";
import type { Logger } from "../../src/log.js";
import {
  isBlankText,
  MAX_INCOMING_TEXT,
  type ConversationRef,
  type IncomingMessage,
} from "../../src/queue/incoming.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { TerminalScreen } from "../../src/streaming.js";
import { ConsoleOutbound } from "./outbound.js";
import type { ConsoleTerminal } from "./terminal.js";

/** Options of {@link ConsoleAdapter}. */
export interface ConsoleAdapterOptions {
  input: Readable;
  output: Writable;
  locale: Locale;
  log: Logger;
  /** The chat id; default `local` (so the history survives between sessions until `/reset`). */
  chatId?: string;
  /** The user; default the OS user name. */
  userId?: string;
  userName?: string;
  /** Longest answer chunk in UTF-16 units (see `ConsoleOutbound`). */
  chunkChars?: number;
  /** Set when `output` is a terminal: streamed status lines are redrawn in place (see `PrintedAnswer` of `src/streaming.ts`). */
  screen?: TerminalScreen;
  /** `npm run chat`'s terminal: lines are read from it (a line editor in a terminal) instead of from `input`. */
  terminal?: ConsoleTerminal;
  /** Folder of the voice replies' files (see `ConsoleOutbound`); default `.data/voice`. */
  voiceDir?: string;
}

/** How often, in ms, a line waiting for earlier answers checks whether the conversation went idle without them (see `#settled`). */
const IDLE_CHECK_MS = 1000;

/**
 * How long, in ms, a line waits at most for the answer of a run resumed by a decision typed here
 * when that answer never comes (a worker that died with the decision job): two minutes.
 */
const RESUMED_WAIT_MS = 120_000;

const YES = new Set(["y", "yes", "是", "好", "確認"]);
const NO = new Set(["n", "no", "否", "不", "取消"]);
const ALWAYS = new Set(["a", "always", "一律允許"]);

const TEXT = {
  help: {
    "zh-TW": "在這個終端機：/quit 離開；需要確認時輸入 y（是）、n（否），或 a（一律允許，提示有這個選項時）。",
    en: "In this terminal: /quit leaves; answer a confirmation with y (yes), n (no), or a (always allow, when the prompt offers it).",
  },
  tryAgain: {
    "zh-TW": "訊息沒有送出（暫時連不上佇列），請再試一次。",
    en: "Your message was not queued (the queue is unreachable right now). Please try again.",
  },
  tooLong: {
    "zh-TW": "訊息太長了（最多 {max} 個字元），請縮短一點。",
    en: "That message is too long (at most {max} characters). Please shorten it.",
  },
  alwaysRefused: {
    "zh-TW": "這個動作不能設為一律允許，請輸入 y（確認）或 n（取消）。",
    en: "This action cannot be always allowed; type y (confirm) or n (cancel).",
  },
  noPrompt: { "zh-TW": "目前沒有等待確認的動作。", en: "Nothing is waiting for confirmation." },
  questionDropped: {
    "zh-TW": "（已取消清除記憶的詢問，沒有刪除任何東西。）",
    en: "(The question about erasing the memory was dropped; nothing was erased.)",
  },
  decideFailed: {
    "zh-TW": "目前無法記錄你的決定，請再試一次。",
    en: "Could not record your decision right now. Please try again.",
  },
};

/**
 * How a command's Markdown reply is shown in the terminal (`markdownToPlain`, shared with LINE):
 * list items keep the `- ` a person would type.
 */
const CONSOLE_PLAIN = { bullet: "- " } as const;

/**
 * The notice of a decision typed in the terminal: the shared {@link decisionNotice}, with the
 * "always allow" part on a line of its own (indented under `bot> `), so that "已確認，處理中…"
 * and "之後 30 天內…" do not run together.
 */
export function consoleDecisionNotice(result: DecisionResult, locale: Locale): string {
  const notice = decisionNotice(result, locale);
  if (result.status !== "accepted" || !result.always) return notice;
  const head = decisionNotice({ status: "accepted", approve: true }, locale);
  return notice.startsWith(head) ? `${head}\n     ${notice.slice(head.length).trim()}` : notice;
}

/**
 * The command a line names, or undefined when it is a message for the model:
 * - `/name` or `/name args`, also `/name@somebot …` (the Telegram habit of addressing a bot: the
 *   `@…` suffix is dropped), where `name` is 0–32 letters, digits or `_` (lower-cased);
 * - a bare `/`, a line of only slashes and spaces, or one starting with `//`: the empty name
 *   (answered with the list of commands).
 * A path such as `/usr/bin is where?` is no command: after the name comes neither a space, `@`
 * nor the end of the line.
 */
export function commandLine(text: string): { name: string; args: string } | undefined {
  if (/^[/\s]+$/.test(text) || text.startsWith("//")) return { name: "", args: "" };
  const slash = /^\/([a-z0-9_]{0,32})(?:@[a-z0-9_]+)?(?:\s+([\s\S]*))?$/i.exec(text);
  return slash ? { name: slash[1]!.toLowerCase(), args: (slash[2] ?? "").trim() } : undefined;
}

/** Reads lines from `input` and queues them; see the module comment. */
export class ConsoleAdapter implements Adapter {
  readonly platform = "console" as const;
  readonly outbound: ConsoleOutbound;
  /** Resolves when the input ended or `/quit` was typed. */
  readonly closed: Promise<void>;
  readonly #options: ConsoleAdapterOptions;
  readonly #session = Date.now().toString(36);
  #counter = 0;
  #rl: Interface | undefined;
  #markClosed!: () => void;
  /** The conversation's language as last read (`/settings language`); see {@link locale}. */
  #locale: Locale | undefined;
  /**
   * A command's yes-or-no question the next line may answer (`/forget`'s "erase everything?":
   * `CommandReply.typed`): `y` presses `yes`'s button data, `n` `no`'s; any other line drops it
   * (saying so first, except `/quit`).
   */
  #question: { yes: string; no: string } | undefined;

  constructor(options: ConsoleAdapterOptions) {
    this.#options = options;
    this.outbound = new ConsoleOutbound({
      output: options.output,
      locale: options.locale,
      chunkChars: options.chunkChars,
      screen: options.screen,
      ...(options.voiceDir ? { voiceDir: options.voiceDir } : {}),
    });
    this.closed = new Promise((resolve) => (this.#markClosed = resolve));
  }

  /**
   * The conversation's language (`/settings language`) as last read: at start and with each line
   * handled; the `locale` option until it was read. For the chat's own lines (Ctrl-C's notice).
   */
  get locale(): Locale {
    return this.#locale ?? this.#options.locale;
  }

  /** Starts reading lines. Each line is handled after the previous one was queued, so order is kept. */
  async start(context: AdapterContext): Promise<void> {
    void context.commands
      .languageOf({ platform: "console", chatId: this.#options.chatId ?? "local" })
      .then((locale) => void (this.#locale ??= locale))
      .catch(() => {});
    const rl = this.#options.terminal?.open() ?? createInterface({ input: this.#options.input, terminal: false });
    this.#rl = rl;
    // Ctrl-G in the terminal: Stop, as `/stop` (on its own chain: it never waits behind the answer it stops).
    if (this.#options.terminal)
      this.#options.terminal.onStopKey = () =>
        void this.#stop(context, { platform: "console", chatId: this.#options.chatId ?? "local" }).catch(
          (err: unknown) => this.#options.log.error({ err }, "console stop failed"),
        );
    let chain = Promise.resolve();
    rl.on("line", (line) => {
      chain = chain
        .then(() => this.#handle(line, context))
        .catch((err: unknown) => this.#options.log.error({ err }, "console line failed"));
    });
    rl.on("close", () => void chain.then(() => this.#markClosed()));
  }

  /**
   * `/stop` or Ctrl-G: asks the worker to stop the answer being written now, without waiting
   * behind it; a reply is written only when nothing was stopped (after the answers before it).
   */
  async #stop(context: AdapterContext, chat: ConversationRef, args = ""): Promise<void> {
    const locale = (await context.commands.languageOf(chat)) ?? this.#options.locale;
    const reply = await context.commands.run({
      name: "stop",
      args,
      platform: "console",
      chatId: chat.chatId,
      chatKind: "dm",
      userId: this.#userId(),
      userName: this.#options.userName ?? this.#userId(),
      locale,
    });
    if (reply === undefined || reply === localize(locale, STOP_TEXT.pressed)) return;
    await this.#settled(context, chat);
    await this.outbound.quiet();
    await this.#say(reply);
  }

  /** Stops reading stdin. Never throws. */
  async stop(): Promise<void> {
    this.#rl?.close();
  }

  async #handle(line: string, context: AdapterContext): Promise<void> {
    const text = line.trim();
    // A line of whitespace or invisible characters (zero-width spaces…) alone is no message.
    if (isBlankText(text)) return;
    const chat = { platform: "console" as const, chatId: this.#options.chatId ?? "local" };
    const command = text.toLowerCase();
    const slash = commandLine(text);
    // A command's question (`/forget`) is answered by the line right after it; any other line drops it.
    const question = this.#question;
    this.#question = undefined;
    // `/quit@somebot` too, as `/help@somebot` is `/help` (and `/quit` with words after it).
    if (slash?.name === "quit" || slash?.name === "exit") {
      this.#rl?.close();
      return;
    }
    if (question && (YES.has(command) || NO.has(command)))
      return this.#answerQuestion(context, chat, YES.has(command) ? question.yes : question.no);
    if (question) {
      // Said once, before the line is handled, so that a later `y` is not taken for an answer to it.
      await this.outbound.quiet();
      await this.#say(localize(this.locale, TEXT.questionDropped));
    }
    if (slash?.name === "stop") return this.#stop(context, chat, slash.args);
    const always = ALWAYS.has(command);
    const approve = YES.has(command) || always ? true : NO.has(command) ? false : undefined;
    // Lines in order: a line the console answers itself (a command, a `y` with no prompt open yet,
    // a message too long) waits until the messages typed before it are answered, so that its reply
    // follows theirs and never lands inside a streamed answer. An answer to an open prompt does not wait.
    if (slash || text.length > MAX_INCOMING_TEXT || (approve !== undefined && !this.outbound.openPrompt))
      await this.#settled(context, chat);
    const say = async (t: string) => {
      await this.outbound.quiet();
      await this.#say(t);
    };
    // The conversation's language (`/settings language`), read for each line: a change counts from the next one.
    const locale = (await context.commands.languageOf(chat)) ?? this.#options.locale;
    this.#locale = locale;
    if (slash) {
      const { name } = slash;
      const invocation = {
        name,
        args: slash.args,
        platform: "console" as const,
        chatId: chat.chatId,
        chatKind: "dm" as const,
        userId: this.#userId(),
        userName: this.#options.userName ?? this.#userId(),
        locale,
      };
      if (!findCommand(name, "console"))
        return say(
          markdownToPlain(
            unknownCommand(locale, name, "console", isAdmin(context.commands.services.config, invocation), ["/quit"]),
            CONSOLE_PLAIN,
          ),
        );
      const answer = await context.commands.runReply(invocation);
      if (answer === undefined) return;
      const reply = answer.text;
      // A yes-or-no question (`/forget`): the next line answers it with y or n.
      if (answer.typed) this.#question = answer.typed;
      return say(
        markdownToPlain(name === "help" ? `${reply}\n\n${localize(locale, TEXT.help)}` : reply, CONSOLE_PLAIN),
      );
    }
    if (approve !== undefined) {
      const prompt = this.outbound.openPrompt;
      if (!prompt) {
        if (command === "y" || command === "n" || command === "a") return say(localize(locale, TEXT.noPrompt));
      } else {
        // The resumed run's answer is awaited like a message's: a command typed next comes after it.
        if (prompt.replyTo !== undefined) this.outbound.expectResumed(prompt.replyTo);
        try {
          const result = await context.decide({
            approvalId: prompt.approvalId,
            platform: "console",
            deciderId: this.#userId(),
            approve,
            ...(always ? { always } : {}),
          });
          if (result.status !== "already_decided" && result.status !== "always_refused")
            this.outbound.openPrompt = undefined;
          if (result.status !== "accepted" && prompt.replyTo !== undefined) this.outbound.forgetAnswer(prompt.replyTo);
          // The shared notice speaks of buttons; the console has none.
          return say(
            result.status === "always_refused"
              ? localize(locale, TEXT.alwaysRefused)
              : consoleDecisionNotice(result, locale),
          );
        } catch (err) {
          if (prompt.replyTo !== undefined) this.outbound.forgetAnswer(prompt.replyTo);
          this.#options.log.warn({ err }, "decision failed");
          return say(localize(locale, TEXT.decideFailed));
        }
      }
    }
    if (text.length > MAX_INCOMING_TEXT) return say(localize(locale, TEXT.tooLong, { max: MAX_INCOMING_TEXT }));
    const message: IncomingMessage = {
      platform: "console",
      chatId: chat.chatId,
      chatKind: "dm",
      userId: this.#userId(),
      userName: this.#options.userName ?? this.#userId(),
      text,
      messageId: `${this.#session}-${++this.#counter}`,
      sentAt: Date.now(),
      reply: {},
    };
    this.outbound.expectAnswer(message.messageId);
    try {
      await context.enqueue(message);
    } catch (err) {
      this.outbound.forgetAnswer(message.messageId);
      if (!(err instanceof EnqueueError)) this.#options.log.error({ err }, "enqueue failed");
      return say(localize(locale, TEXT.tryAgain));
    }
  }

  /**
   * A typed `y` or `n` answering a command's question (`CommandReply.typed`): a press on the
   * button whose data it names (`/forget`'s ⚠️ or Cancel), here as in a private chat; writes what
   * the press says (the text the pressed message would be closed to, else its notice).
   */
  async #answerQuestion(context: AdapterContext, chat: ConversationRef, data: string): Promise<void> {
    const locale = (await context.commands.languageOf(chat)) ?? this.#options.locale;
    this.#locale = locale;
    const answer = await context.press({
      data,
      platform: "console",
      chatId: chat.chatId,
      chatKind: "dm",
      userId: this.#userId(),
      locale,
    });
    await this.outbound.quiet();
    await this.#say(answer.closeText ?? answer.notice);
  }

  /**
   * Waits until the messages typed here so far are answered and no streamed answer is being
   * printed (`ConsoleOutbound.settled`: on the deliveries themselves). In case an answer never
   * comes (a worker that died with the message: nothing is delivered, the job is retried or given
   * up), the conversation's inbox is looked at every {@link IDLE_CHECK_MS}: once it is empty, no
   * message of this conversation is queued or being answered, and nothing more is waited for but
   * the runs resumed by decisions typed here (in no inbox), each for {@link RESUMED_WAIT_MS} at most.
   */
  async #settled(context: AdapterContext, chat: ConversationRef): Promise<void> {
    const settled = this.outbound.settled();
    const redis = context.redis;
    if (!redis) return settled;
    const stop = new AbortController();
    const key = conversationKeys(chat).scheduled;
    void (async () => {
      for (;;) {
        await sleep(IDLE_CHECK_MS, undefined, { signal: stop.signal });
        // A resumed run is in no inbox: waited for until its answer comes, or for RESUMED_WAIT_MS at most.
        if ((await redis.exists(key).catch(() => 1)) === 0)
          this.outbound.forgetAnswer(undefined, Date.now() - RESUMED_WAIT_MS);
      }
    })().catch(() => {}); // aborted: the answers came
    try {
      await settled;
    } finally {
      stop.abort();
    }
  }

  #userId(): string {
    if (this.#options.userId) return this.#options.userId;
    try {
      return userInfo().username || "you";
    } catch {
      return "you";
    }
  }

  /** Writes a reply (listings carry users' text: made harmless for the terminal, see `terminalText`). */
  #say(text: string): Promise<void> {
    return new Promise((resolve) => this.#options.output.write(`bot> ${terminalText(text)}\n`, () => resolve()));
  }
}
