/**
 * Every example the bot suggests does what it says in the demo (`npm run chat -- --demo`), in
 * zh-TW and in English. The examples are gathered where a newcomer reads them, not listed here: the
 * demo's banner, `/help` and `/memory` (asked in the demo itself, so the command texts are the ones
 * shipped), and README.md and docs/ (the `try …` list of the paragraph on `--demo`, and the lines
 * a person says in the conversation pictures, `你：` / `You:`). Each example is typed into the real
 * entry point (piped) and its outcome checked: the tool it should call ran (its status line ends
 * in ✓) and what it answered is the example's point. An example no rule here knows fails the test,
 * so a new suggestion gets its check. The two languages run one after the other on one Redis: the
 * second demo starts fresh (its first todo is #1 again, nothing of the first is listed).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { nodeArgs, ROOT } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";

/** What an example should do: its kind, the order kinds are tried in, and what its answer shows. */
interface Expectation {
  kind: string;
  /** Which examples are of this kind. */
  example: RegExp;
  /** Examples run by rank (todos are added before they are listed or deleted). */
  rank: number;
  /** What the answer to `example` shows (checked on the output after it was typed). */
  shows: (example: string) => RegExp;
}

const EXPECTATIONS: Expectation[] = [
  {
    kind: "web search",
    example: /搜尋|search the web/i,
    rank: 0,
    shows: () => /🔎 (?:搜尋：|Searching: ).+… ✓\n[\s\S]*\[1\][\s\S]*https:\/\/example\.com\/demo-search/,
  },
  {
    kind: "memory",
    example: /^(?:記得|remember)/i,
    rank: 0,
    shows: () => /📝 (?:記住：我住在新竹|Remembering: I live in Hsinchu)… ✓\n/,
  },
  {
    kind: "reminder",
    example: /提醒我|remind me/i,
    rank: 0,
    shows: () => /🔧 (?:設定提醒：繳電費|Setting a reminder: pay the power bill)… ✓\n[\s\S]*T08:00:00\+08:00/,
  },
  {
    kind: "weather",
    example: /下雨|rain/i,
    rank: 0,
    shows: () => /🔧 (?:查詢天氣|Checking the weather)(?:：|: )臺北市… ✓\n[\s\S]*(?:降雨機率|chance of rain) \d+%/,
  },
  {
    kind: "time elsewhere",
    example: /紐約|new york/i,
    rank: 0,
    shows: () => /🔧 (?:查詢時間|Checking the time)(?:：|: )America\/New_York… ✓\n[\s\S]*UTC-[45]/,
  },
  {
    kind: "time",
    example: /幾點|what time/i,
    rank: 0,
    shows: () => /🔧 (?:查詢時間|Checking the time)… ✓\n[\s\S]*(?:ISO 8601：|ISO 8601: )\d{4}-\d\d-\d\dT[\d:]+\+08:00/,
  },
  {
    kind: "discount",
    example: /打八五折|15% off/i,
    rank: 0,
    shows: () => /🔧 (?:計算|Calculating)(?:：|: ).+… ✓\n[\s\S]*= 3312\.45\n/,
  },
  {
    kind: "calculation",
    example: /^\(1200 \+ 800\) \* 0\.05$/,
    rank: 0,
    shows: () => /🔧 (?:計算|Calculating)(?:：|: )\(1200 \+ 800\) \* 0\.05… ✓\n[\s\S]*= 100\n/,
  },
  {
    kind: "add todo",
    example: /新增待辦|記下|記一下|^add/i,
    rank: 1,
    shows: (example) => {
      const title = /(?:待辦\s*|[:：]\s*|add todo\s+)(.+)$/i.exec(example)![1]!;
      return new RegExp(`🔧 (?:新增待辦|Adding a todo)(?:：|: )${escape(title)}… ✓\\n[\\s\\S]*#\\d+ ${escape(title)}`);
    },
  },
  {
    kind: "list todos",
    example: /待辦清單|todo list/i,
    rank: 2,
    shows: () => /🔧 (?:讀取待辦清單|Reading the todo list)… ✓\n[\s\S]*#1 /,
  },
  {
    kind: "delete todo",
    example: /刪|delete/i,
    rank: 3,
    shows: () => /(?:需要確認：刪除待辦 #1|Confirmation needed: Delete todo #1)[\s\S]*(?:秒內有效。|within \d+ s\.)\n/,
  },
];

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The examples of README.md and docs/: the `try …` list of the paragraph on `--demo`, and what a person says in conversation pictures. */
async function documentedExamples(): Promise<string[]> {
  const files = [path.join(ROOT, "README.md")];
  const docs = path.join(ROOT, "docs");
  if (existsSync(docs))
    for (const entry of await readdir(docs, { recursive: true }))
      if (entry.endsWith(".md")) files.push(path.join(docs, entry));
  const examples: string[] = [];
  for (const file of files) {
    for (const line of (await readFile(file, "utf8")).split("\n")) {
      const said = /^(?:你|You)[：:]\s+(.+)$/.exec(line.trim());
      if (said && !said[1]!.includes("🎤")) examples.push(said[1]!.trim());
      if (!line.includes("--demo")) continue;
      const tried = /\btry\b(.*)$/i.exec(line)?.[1] ?? "";
      for (const [, code] of tried.matchAll(/`([^`]+)`/g)) if (!/^[yna]$/.test(code!)) examples.push(code!);
    }
  }
  return examples;
}

/** The examples in a text: what is quoted in 「…」 or in "…" / “…”. */
function quoted(text: string): string[] {
  return [...text.matchAll(/「([^」]+)」|"([^"]+)"|“([^”]+)”/g)].map((m) => (m[1] ?? m[2] ?? m[3])!.trim());
}

let server: TestRedis;
const started: { child: ChildProcess; cwd: string }[] = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const { child, cwd } of started) {
    if (child.exitCode === null) child.kill("SIGKILL");
    await rm(cwd, { recursive: true, force: true });
  }
  await server?.stop();
});

/** Starts the demo in `locale` on the test Redis; returns a way to type a line and wait for what follows it. */
async function startDemo(locale: "zh-TW" | "en") {
  const cwd = await mkdtemp(path.join(tmpdir(), "bot-demo-examples-"));
  const child = spawn(process.execPath, nodeArgs("src/cli/chat.ts", "--demo"), {
    cwd,
    env: { PATH: process.env.PATH ?? "", BOT_LOCALE: locale, REDIS_URL: server.url },
    stdio: ["pipe", "pipe", "pipe"],
  });
  started.push({ child, cwd });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  /** Types `line`; waits until what is printed after it matches `until`; returns that. */
  const say = async (line: string, until: RegExp, what = line) => {
    const from = out.length;
    child.stdin!.write(`${line}\n`);
    try {
      await waitFor(() => until.test(out.slice(from)) || child.exitCode !== null, 30_000, `the answer to ${what}`);
    } catch (error) {
      throw new Error(`${(error as Error).message}: no ${until} in\n${out.slice(from)}`, { cause: error });
    }
    const answer = out.slice(from);
    expect(answer, `the answer to ${JSON.stringify(line)}`).toMatch(until);
    expect(answer).not.toMatch(/✗|start-up failed/);
    return answer;
  };
  await waitFor(() => /開始對話|Chat started/.test(out) || child.exitCode !== null, 90_000, "the demo to start");
  expect(out).toMatch(/開始對話|Chat started/);
  return {
    say,
    banner: out.split("\n")[0]!,
    exited,
    quit: () => child.stdin!.write("/quit\n"),
    kill: () => child.exitCode === null && child.kill("SIGKILL"),
  };
}

/** Walks every suggested example in the demo in `locale` (see the module comment); returns the examples walked. */
async function walkExamples(locale: "zh-TW" | "en"): Promise<string[]> {
  const demo = await startDemo(locale);
  try {
    return await walk(demo, locale);
  } finally {
    demo.kill(); // a failed walk leaves no demo holding the conversation
  }
}

async function walk(demo: Awaited<ReturnType<typeof startDemo>>, locale: "zh-TW" | "en"): Promise<string[]> {
  const help = await demo.say("/help", /(?:在這個終端機|In this terminal).*\n/);
  const helpExamples = /(?:例如：|for example:)\n\n((?:- .+\n)+)/.exec(help)?.[1]!.split("\n").filter(Boolean);
  expect(helpExamples?.length, help).toBeGreaterThanOrEqual(5);
  const memory = await demo.say("/memory", /(?:例如|e\.g\.).*\n/);
  const documented = await documentedExamples();
  expect(documented.length).toBeGreaterThanOrEqual(6);
  const examples = [
    ...new Set([
      ...quoted(demo.banner).filter((e) => !/^[yn]$/.test(e)),
      ...helpExamples!.map((e) => e.slice(2).trim()),
      ...quoted(memory),
      // README and docs examples in the language of the run (Chinese ones in zh-TW, the others in English).
      ...documented.filter((e) => /\p{Script=Han}/u.test(e) === (locale === "zh-TW")),
    ]),
  ];
  const plan = examples.map((example) => {
    const expectation = EXPECTATIONS.find((e) => e.example.test(example));
    if (!expectation)
      throw new Error(`the example ${JSON.stringify(example)} has no check here: add one to EXPECTATIONS`);
    return { example, expectation };
  });
  plan.sort((a, b) => a.expectation.rank - b.expectation.rank);
  const deletes = plan.filter((p) => p.expectation.kind === "delete todo");
  expect(deletes.length).toBeGreaterThan(0);
  let added = 0;
  for (const { example, expectation } of plan) {
    const answer = await demo.say(example, expectation.shows(example));
    // A fresh demo: its first todo is #1, whatever an earlier demo on this Redis added.
    if (expectation.kind === "add todo" && (added += 1) === 1) expect(answer).toMatch(/#1 /);
    if (expectation.kind !== "delete todo") continue;
    // Every delete asks first: declined, todo #1 stays for the next example; the last one is confirmed.
    if (example !== deletes.at(-1)!.example) await demo.say("n", /(?:已取消|Cancelled)/, `n after ${example}`);
    else await demo.say("y", /(?:已刪除：|Deleted: )#1 .+\n/, `y after ${example}`);
  }
  demo.quit();
  expect(await demo.exited).toBe(0);
  return examples;
}

it("zh-TW: every example the banner, /help, /memory and the README suggest does what it says", async () => {
  const examples = await walkExamples("zh-TW");
  expect(examples).toEqual(expect.arrayContaining(["記得我住在新竹", "台北明天會下雨嗎？", "上網搜尋今天的新聞"]));
}, 180_000);

it("English, in a second demo on the same Redis that starts fresh: every suggested example does what it says", async () => {
  const examples = await walkExamples("en");
  expect(examples).toEqual(
    expect.arrayContaining([
      "remember that I live in Hsinchu",
      "Will it rain in Taipei tomorrow?",
      "search the web for today's news",
    ]),
  );
}, 180_000);
