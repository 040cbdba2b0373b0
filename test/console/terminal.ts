/**
 * `npm run chat` in a real pseudo-terminal: the entry point runs under util-linux `script` (which
 * gives it a pty, so stdin and stdout are TTYs as in a terminal window), and what it prints is fed
 * to a headless terminal emulator (@xterm/headless), which interprets `\r`, `\x1b[K`, cursor moves
 * and wide characters as a terminal does; the test reads the screen.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import xterm from "@xterm/headless";
import { afterAll, beforeAll } from "vitest";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic.js";
import { nodeArgs } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";

/** A chat running in a pseudo-terminal. */
export interface TerminalChat {
  /** Types `line` and Enter (the pty echoes it, as a terminal does). */
  type(line: string): void;
  /** Sends `keys` as typed, without Enter (e.g. `\x1b[D` for ←, `\x15` for Ctrl-U). */
  keys(keys: string): void;
  /** The folder the chat runs in (its `.data/`). */
  cwd: string;
  /** The rows visible now (the viewport, without the scrollback), trailing blanks trimmed, empty rows at the end dropped. */
  viewport(): string[];
  /** Resolves with the exit code once the chat has exited. */
  exited: Promise<number | null>;
  /** The screen's rows (scrollback included), trailing blanks trimmed, empty rows at the end dropped. */
  screen(): string[];
  /**
   * The screen's logical lines: rows the terminal wrapped (a line longer than the width) joined
   * back into the line that was printed; trailing blanks trimmed, empty lines at the end dropped.
   */
  lines(): string[];
  /** Everything the program wrote, raw (escape sequences included). */
  raw(): string;
  /** Waits until `check(screen)` holds (up to `timeoutMs`, default 30 s). */
  waitForScreen(check: (rows: string[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Sends SIGTERM to the chat, waits for it to exit and removes its folder. */
  close(): Promise<void>;
}

/** Single-quotes `s` for `sh -c`. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Starts `npm run chat` (`src/cli/chat.ts`, with `args`) under `script -qefc` in a fresh folder
 * (its `.data/chat.log` goes there), with a terminal of `cols` × `rows` (`stty` inside the pty).
 * @param env - the chat's environment besides PATH and TERM (REDIS_URL, ANTHROPIC_BASE_URL, …).
 */
export async function startTerminalChat(options: {
  env: Record<string, string>;
  args?: string[];
  cols?: number;
  rows?: number;
  /** Called with the chat's folder before it starts (to put files in its `.data/`). */
  prepare?: (cwd: string) => Promise<void>;
}): Promise<TerminalChat> {
  const cols = options.cols ?? 100;
  const rows = options.rows ?? 40;
  const cwd = await mkdtemp(path.join(tmpdir(), "bot-tty-"));
  await options.prepare?.(cwd);
  const command = [
    `stty cols ${cols} rows ${rows}`,
    `exec ${[process.execPath, ...nodeArgs("src/cli/chat.ts", ...(options.args ?? []))].map(shellQuote).join(" ")}`,
  ].join(" && ");
  const child: ChildProcess = spawn("script", ["-qefc", command, "/dev/null"], {
    cwd,
    env: { PATH: process.env.PATH ?? "", TERM: "xterm-256color", ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const term = new xterm.Terminal({ cols, rows, scrollback: 1000, allowProposedApi: true });
  let raw = "";
  let pending = 0;
  child.stdout!.on("data", (d: Buffer) => {
    raw += d.toString();
    pending += 1;
    term.write(d, () => (pending -= 1));
  });
  child.stderr!.on("data", (d: Buffer) => (raw += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const screen = () => {
    const buffer = term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < buffer.length; i += 1) lines.push(buffer.getLine(i)?.translateToString(true) ?? "");
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return lines;
  };
  const lines = () => {
    const buffer = term.buffer.active;
    const out: string[] = [];
    for (let i = 0; i < buffer.length; i += 1) {
      const row = buffer.getLine(i);
      if (!row) continue;
      const continued = buffer.getLine(i + 1)?.isWrapped ?? false;
      const piece = row.translateToString(!continued);
      if (row.isWrapped && out.length > 0) out[out.length - 1] += piece;
      else out.push(piece);
    }
    while (out.length > 0 && out[out.length - 1] === "") out.pop();
    return out;
  };
  const viewport = () => {
    const buffer = term.buffer.active;
    const visible: string[] = [];
    for (let i = buffer.viewportY; i < buffer.viewportY + rows; i += 1)
      visible.push(buffer.getLine(i)?.translateToString(true) ?? "");
    while (visible.length > 0 && visible[visible.length - 1] === "") visible.pop();
    return visible;
  };
  return {
    type: (line) => child.stdin!.write(`${line}\r`),
    keys: (keys) => child.stdin!.write(keys),
    cwd,
    viewport,
    exited,
    screen,
    lines,
    raw: () => raw,
    waitForScreen: async (check, what, timeoutMs = 30_000) => {
      try {
        await waitFor(() => pending === 0 && check(screen()), timeoutMs, what);
      } catch (error) {
        throw new Error(
          `${(error as Error).message}; the screen:\n${screen().join("\n")}\n(output: ${JSON.stringify(raw.slice(-2000))})`,
          { cause: error },
        );
      }
    },
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(killer);
      await rm(cwd, { recursive: true, force: true });
    },
  };
}

/**
 * For a test file: before its tests, a test Redis, the strict fake Messages API and one
 * {@link startTerminalChat} on them (zh-TW, streaming with edits every 100 ms), started and shown
 * ready ("開始對話" on screen); after them all three are stopped. Read `chat` and `fake` in the tests.
 */
export function useTerminalChat(options: { cols?: number; rows?: number; prepare?: (cwd: string) => Promise<void> }): {
  readonly chat: TerminalChat;
  readonly fake: FakeAnthropic;
} {
  let server: TestRedis | undefined;
  let fake: FakeAnthropic | undefined;
  let chat: TerminalChat | undefined;
  beforeAll(async () => {
    server = await startRedis();
    fake = await startFakeAnthropic();
    chat = await startTerminalChat({
      ...options,
      env: {
        REDIS_URL: server.url,
        ANTHROPIC_API_KEY: "test-key",
        ANTHROPIC_BASE_URL: fake.url,
        BOT_LOCALE: "zh-TW",
        STREAMING: "on",
        STREAM_EDIT_INTERVAL_MS: "100",
      },
    });
    await chat.waitForScreen((rows) => rows.some((r) => r.includes("開始對話")), "the chat to start", 90_000);
  }, 120_000);
  afterAll(async () => {
    await chat?.close();
    await fake?.close();
    await server?.stop();
  });
  return {
    get chat() {
      return chat!;
    },
    get fake() {
      return fake!;
    },
  };
}
