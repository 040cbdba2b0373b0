/**
 * `npm run chat -- --demo`: the real entry point with no API key and no REDIS_URL (so it starts the
 * private redis-server, as `npm run chat` does), driven line by line through its stdin. The
 * built-in scripted model answers on loopback; the transcript shows the demo label, tool calls
 * with their status lines (streaming), and an approval prompt answered with `y`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { nodeArgs } from "../helpers/compiled.js";
import { waitFor } from "../worker/harness.js";

let child: ChildProcess | undefined;
let cwd: string | undefined;
afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

it(
  "answers with the scripted model: a tool call, a calculation, a todo added then deleted " +
    "after y, every answer labelled [demo]; exits 0 on /quit",
  async () => {
    cwd = await mkdtemp(path.join(tmpdir(), "bot-demo-"));
    // No ANTHROPIC_API_KEY, no REDIS_URL; an ANTHROPIC_BASE_URL that would fail if it were used.
    child = spawn(process.execPath, nodeArgs("src/cli/chat.ts", "--demo"), {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        BOT_LOCALE: "en",
        ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
        LOG_LEVEL: "info",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child!.on("exit", resolve));
    const until = async (text: string | RegExp, timeoutMs = 30_000) => {
      const seen = () => (typeof text === "string" ? out.includes(text) : text.test(out));
      try {
        await waitFor(() => seen() || child!.exitCode !== null, timeoutMs, String(text));
      } catch (error) {
        // The demo's log file (.data/chat.log) says why an answer did not come.
        const logged = await readFile(path.join(cwd!, ".data", "chat.log"), "utf8").catch(() => "(no log file)");
        throw new Error(`${(error as Error).message}; the transcript:\n${out}\nthe log:\n${logged.slice(-6000)}`, {
          cause: error,
        });
      }
      if (!seen()) {
        const logged = await readFile(path.join(cwd!, ".data", "chat.log"), "utf8").catch(() => "(no log file)");
        expect.fail(`${String(text)} not seen; the transcript:\n${out}\nthe log:\n${logged.slice(-6000)}`);
      }
    };
    const say = async (line: string, answer: string | RegExp) => {
      const before = out.length;
      child!.stdin!.write(`${line}\n`);
      await until(answer);
      return out.slice(before);
    };

    await until("Chat started", 90_000);
    expect(out).toMatch(/^\[demo\] This is the demo: a built-in script answers, not Claude; no API key, no network;/);

    const time = await say("what time is it?", /ISO 8601: \S+\+08:00\n/);
    expect(time).toMatch(/^bot> \[demo\] Let me check the clock tool\.\n🔧 Checking the time… ✓\n/);
    expect(time).toMatch(
      /\[demo\] The get_current_datetime tool says:\n.+\(Asia\/Taipei, UTC\+8\)\nISO 8601: \d{4}-\d\d-\d\dT/,
    );

    expect(await say("(1200 + 800) * 0.05", "= 100\n")).toContain(
      "🔧 Calculating: (1200 + 800) * 0.05… ✓\n[demo] The calculate tool says:\n(1200 + 800) * 0.05 = 100",
    );

    const added = await say("add todo buy milk", "to see an approval prompt.\n");
    expect(added).toContain(
      "🔧 Adding a todo: buy milk… ✓\n[demo] The add_todo tool says:\nAdded to your todos: #1 buy milk",
    );

    const asked = await say("delete todo 1", /within \d+ s\.\n/);
    expect(asked).toContain('bot> ⚠️ Confirmation needed: Delete todo #1 "buy milk"');

    const deleted = await say("y", "Deleted: #1 buy milk\n");
    expect(deleted).toContain("[demo] The delete_todo tool says:\nDeleted: #1 buy milk");

    // /compact: the demo's "summary" keeps what was said; its made-up tokens are not recorded.
    for (const n of [1, 2, 3, 4, 5, 6, 7]) {
      const answers = out.split("bot> [demo] This is the demo").length;
      child.stdin!.write(`my favourite colour is blue-${n}\n`);
      await waitFor(
        () => out.split("bot> [demo] This is the demo").length > answers && out.endsWith("\n"),
        30_000,
        `answer ${n}`,
      );
    }
    const compacted = await say("/compact", /blue-1/);
    expect(compacted).toContain("[demo] (the demo does not really summarise: it lists what was said)\n");
    expect(compacted).toContain("- The user said: what time is it?");
    expect(compacted).toContain("- The user said: my favourite colour is blue-1");
    const usage = await say("/usage", /tokens/);
    expect(usage).toMatch(/\b0 tokens/);

    child.stdin!.write("/quit\n");
    expect(await exited).toBe(0);
    expect(out).not.toContain("start-up failed");
  },
  180_000,
);
