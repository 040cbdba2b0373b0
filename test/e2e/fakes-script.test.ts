/**
 * `npm run fakes` (test/fakes/serve.ts) as a newcomer uses it: started as its own process, it
 * prints the variables of its fake servers on loopback; the bot's `npm start` entry point, given
 * exactly those variables, starts with Telegram, Discord and LINE on, and lines typed into the fakes
 * (`tg …`, `dc …`, `dc /…`, `line …`) reach the bot, whose answers (from the fake Messages API, in
 * the language the person wrote in) the fakes print. A slow answer (`慢慢說`) is stopped with
 * `/stop` on Telegram, the ⏹ button on Discord and `/stop` on LINE. The weather and transcription
 * fakes answer with the printed key. Words one of the demo script's rules matches get the script's
 * tool calls: a todo added and listed on fake Telegram, its deletion asking for approval,
 * `tg press 取消` keeping it (the script saying so in the person's words) and `tg press 確認` running it.
 * In the group the bot is in (`tg group …`, `dc group …`, `line group …`: the bot's mention
 * prepended), Dave (`tg as dave …`) is answered as the group's, and his press on an approval prompt
 * Alice asked there is refused while hers runs it. What the bot sends is printed with its controls
 * shown, never acted on by the terminal, naming the chat when it is not a DM of Alice, Bob or Carol.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { notRunText, notRunVerdict, type NotRunVerdict } from "../../src/agent/not-run.js";
import { loadConfig } from "../../src/config.js";
import { MEMORY_BLOCK_START } from "../../src/memory/notes.js";
import { TRANSCRIPT_START } from "../../src/prompts.js";
import { connectRedis } from "../../src/redis.js";
import { calculate } from "../../tools/calculate.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import {
  FAKE_GROUP,
  FAKE_PEOPLE,
  fakeModelReply,
  replyLanguage,
  SLOW_ANSWER_MS,
  startLocalFakes,
} from "../fakes/serve.js";
import { childEnv, nodeArgs, ROOT } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { todoLines } from "./approvals-helpers.js";

let server: TestRedis;
const children: ChildProcess[] = [];
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  await server?.stop();
});

/** Starts a child; returns it with a way to wait until its output (stdout and stderr) matches. */
function start(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, args, { env: childEnv(env) });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const waitFor = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const started = Date.now();
      const check = () => {
        const match = pattern.exec(output);
        if (match) return resolve(match);
        if (child.exitCode !== null || Date.now() - started > timeoutMs)
          return reject(new Error(`no ${pattern} in:\n${output}`));
        setTimeout(check, 50);
      };
      check();
    });
  return { child, waitFor, output: () => output };
}

it("npm run fakes prints the variables that run the bot against fake Telegram, Discord, LINE, Messages API, CWA and transcription", async () => {
  // …and a slow answer can be stopped on each platform.
  // Through tsx, as `npm run fakes` runs it: the fakes read their recordings and specs from test/fixtures/.
  const tsx = pathToFileURL(path.join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
  const fakes = start(["--import", tsx, path.join(ROOT, "test", "fakes", "serve.ts")], {});
  await fakes.waitFor(/Ctrl-C stops the fakes\./);
  const env = Object.fromEntries(
    [...fakes.output().matchAll(/^([A-Z][A-Z0-9_]+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const),
  );
  expect(Object.keys(env)).toEqual(
    expect.arrayContaining([
      "ANTHROPIC_BASE_URL",
      "TELEGRAM_BOT_TOKEN",
      "TELEGRAM_API_ROOT",
      "DISCORD_TOKEN",
      "DISCORD_API_URL",
      "LINE_CHANNEL_SECRET",
      "LINE_CHANNEL_ACCESS_TOKEN",
      "LINE_API_URL",
      "LINE_DATA_API_URL",
      "LINE_WEBHOOK_PORT",
      "CWA_API_KEY",
      "CWA_API_BASE",
      "STT_BASE_URL",
    ]),
  );
  // Every address is on loopback, and the bot's configuration accepts the lot.
  for (const name of [
    "ANTHROPIC_BASE_URL",
    "TELEGRAM_API_ROOT",
    "DISCORD_API_URL",
    "LINE_API_URL",
    "LINE_DATA_API_URL",
    "CWA_API_BASE",
    "STT_BASE_URL",
  ])
    expect(env[name]).toMatch(/^http:\/\/127\.0\.0\.1:\d+/);
  const config = loadConfig(env, { purpose: "inspect" });
  expect(config.TELEGRAM_BOT_TOKEN).toBe(env.TELEGRAM_BOT_TOKEN);

  // The weather and transcription fakes answer with the printed keys.
  const weather = await fetch(
    `${env.CWA_API_BASE}/v1/rest/datastore/F-C0032-001?locationName=${encodeURIComponent("臺北市")}`,
    { headers: { authorization: env.CWA_API_KEY! } },
  );
  expect(weather.status).toBe(200);
  const form = new FormData();
  form.set("file", new Blob([Buffer.from("OggS fake audio")], { type: "audio/ogg" }), "voice.ogg");
  form.set("model", "whisper-1");
  const heard = await fetch(`${env.STT_BASE_URL}/audio/transcriptions`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.STT_API_KEY}` },
    body: form,
  });
  expect(heard.status).toBe(200);

  // The bot, given exactly these variables, answers what is typed into the fakes.
  const bot = start(nodeArgs("src/main.ts"), { ...env, REDIS_URL: server.url, LOG_LEVEL: "info" });
  await bot.waitFor(/the bot is running/, 60_000);
  const type = (line: string) => fakes.child.stdin!.write(`${line}\n`);
  // Answers in the language the person wrote in: zh-TW, or English for Latin letters only.
  type("tg 你好，這是 Telegram");
  await fakes.waitFor(/^telegram bot: ［測試用假模型］收到「你好，這是 Telegram」/m);
  type("dc hello from Discord");
  await fakes.waitFor(/^discord bot(?: \(edited\))?: \[fake Messages API\] I received "hello from Discord"/m);
  type("line 你好，這是 LINE");
  await fakes.waitFor(/^line bot \((?:reply|push)\): ［測試用假模型］收到「你好，這是 LINE」/m);
  type("what?");
  await fakes.waitFor(/type tg <text>, dc <text> or line <text>/);

  // A slow answer, stopped: Telegram (a private chat's draft) with /stop.
  const stopped = (platform: string) => new RegExp(`^${platform} bot[^\\n]*⏹ 已停止`, "m");
  type("tg 請慢慢說");
  await fakes.waitFor(/^telegram bot \(draft\): 這是測試用假模型慢慢寫的回答/m);
  type("tg /stop");
  await fakes.waitFor(stopped("telegram"), 20_000);
  // Discord: the ⏹ 停止 button on the streamed message; then /stop as a slash command, with nothing left to stop.
  type("dc 慢慢說");
  await fakes.waitFor(/^discord bot: 這是測試[^\n]*\[⏹ 停止\]/m, 20_000);
  type("dc press 停止");
  await fakes.waitFor(stopped("discord"), 20_000);
  type("dc /stop");
  await fakes.waitFor(/^discord bot \(to the command\): [^\n]*沒有正在寫的回答/m, 20_000);
  // LINE: /stop while the answer is written (LINE shows a loading animation, then the stopped part).
  type("line 慢慢說");
  // The model has the request (the answer is registered before the model is called): the third slow answer begun.
  await fakes.waitFor(/(?:^fake model: 正在慢慢寫回答[^\n]*\n[\s\S]*){3}/m, 20_000);
  type("line /stop");
  await fakes.waitFor(stopped("line"), 20_000);

  // A slash command's answer is printed with its buttons, which `dc press` presses (Bob's ephemeral
  // reply); the press's answer, the listing in the language chosen, is printed with its own.
  type("dc /settings");
  await fakes.waitFor(/^discord bot \(to the command\): [^\n]*\[Language: English\]/m, 20_000);
  type("dc press Language: English");
  await fakes.waitFor(/^pressed "Language: English" on Discord as Bob/m);
  await fakes.waitFor(/^discord bot \(to the press\): [^\n]*\[語言：中文（臺灣）\]/m, 20_000);

  bot.child.kill("SIGTERM");
  fakes.child.kill("SIGTERM");
  const exited =
    fakes.child.exitCode ?? (await new Promise<number | null>((resolve) => fakes.child.on("exit", resolve)));
  expect(exited).toBe(0);
}, 180_000);

it("npm run fakes answers with the demo's script: a todo added, listed, kept when 取消 is pressed and deleted once 確認 is pressed on fake Telegram", async () => {
  // The fakes as serve.ts starts them (in this process, to read what they received), and the bot's
  // `npm start` entry point given exactly their variables, on a Redis of its own (the first test's
  // bot left its Telegram polling lease and update offset in the shared one).
  const fakes = await startLocalFakes();
  const own = await startRedis();
  const redis = connectRedis(own.url);
  try {
    const bot = start(nodeArgs("src/main.ts"), { ...fakes.env, REDIS_URL: own.url, LOG_LEVEL: "info" });
    await bot.waitFor(/the bot is running/, 60_000);
    const tg = fakes.telegram;
    const printed: string[] = [];
    const stopFollowing = fakes.follow((line) => printed.push(line), 50);
    /** Types `line` into the fakes; resolves with the bot's first new Telegram message whose text matches `answer`. */
    const type = async (line: string, answer: RegExp) => {
      const before = tg.sent.length;
      expect(await fakes.handle(line)).toBe("sent to the bot on Telegram as Alice");
      return tg.waitFor(() => tg.sent.slice(before).find((m) => answer.test(m.text)), 20_000, String(answer));
    };

    // The script calls add_todo, then list_todos; each answer shows the tool's result.
    const added = await type("tg 新增待辦：買牛奶", /add_todo/);
    expect(added.text).toBe(
      "［示範］工具 add_todo 的結果：\n已新增待辦：#1 買牛奶\n\n接著試試「刪除待辦 1」，看看確認提示。\n\n🔧 新增待辦：買牛奶",
    );
    const listed = await type("tg 列出待辦", /list_todos/);
    expect(listed.text).toBe(
      "［示範］工具 list_todos 的結果：\n你的待辦（1 項未完成）：\n#1 買牛奶\n\n🔧 讀取待辦清單",
    );

    // Declined with `tg press 取消`: the prompt shows it, and the script answers as a model would, in
    // Alice's language (not with the loop's English instruction to the model); the todo stays.
    const asked = await type("tg 刪除待辦 1", /需要你的確認/);
    const beforeDecline = tg.sent.length;
    expect(await fakes.handle("tg press 取消")).toBe('pressed "❌ 取消" on Telegram as Alice');
    const declined = await tg.waitFor(
      () => tg.sent.slice(beforeDecline).find((m) => m.text.startsWith("［示範］")),
      20_000,
      "the answer after the decline",
    );
    expect(declined.text).toBe("［示範］好的，已取消，沒有刪除。");
    await tg.waitFor(() => asked.text.startsWith("❌"), 20_000, "the prompt edited to the outcome");
    expect(asked.text).toBe("❌ 已取消，未執行：刪除待辦 #1「買牛奶」");
    expect(await todoLines(redis, "telegram", "7001")).toEqual(["#1 買牛奶"]);

    // delete_todo waits for Alice's approval: the prompt, with its buttons, printed as the newcomer sees it.
    // The declined prompt above is printed as it was when polled (its buttons may be gone already): only lines after this one count.
    const printedBefore = printed.length;
    const prompt = await type("tg 刪除待辦 1", /需要你的確認/);
    expect(prompt.text).toMatch(
      /^⚠️ 需要你的確認\n刪除待辦 #1「買牛奶」\n\n只有 Alice 可以決定，\d\d:\d\d 前有效（約 5 分鐘）。$/,
    );
    expect(tg.buttons(prompt).map((b) => b.text)).toEqual(["✅ 確認", "❌ 取消", "🔓 一律允許"]);
    await tg.waitFor(
      () =>
        printed.slice(printedBefore).find((l) => l.startsWith("telegram bot: ⚠️ 需要你的確認 ⏎ 刪除待辦 #1「買牛奶」")),
      5_000,
      "the prompt printed",
    );
    expect(printed.slice(printedBefore).find((l) => l.includes("需要你的確認"))).toMatch(
      /\[✅ 確認\] \[❌ 取消\] \[🔓 一律允許\]$/,
    );
    expect(await todoLines(redis, "telegram", "7001")).toEqual(["#1 買牛奶"]);

    // `tg press 確認` runs it: the prompt shows the outcome without buttons, the answer the tool's result.
    const before = tg.sent.length;
    expect(await fakes.handle("tg press 確認")).toBe('pressed "✅ 確認" on Telegram as Alice');
    const deleted = await tg.waitFor(
      () => tg.sent.slice(before).find((m) => m.text.includes("delete_todo")),
      20_000,
      "the answer after the approval",
    );
    expect(deleted.text).toBe("［示範］工具 delete_todo 的結果：\n已刪除：#1 買牛奶\n\n🔧 刪除待辦 #1");
    await tg.waitFor(() => prompt.text.startsWith("✅"), 20_000, "the prompt edited to the outcome");
    expect(prompt.text).toBe("✅ 已確認：刪除待辦 #1「買牛奶」");
    expect(tg.buttons(prompt)).toEqual([]);

    // The todo is gone: the list as the script shows it, and as stored.
    const after = await type("tg 列出待辦", /list_todos/);
    expect(after.text).toBe("［示範］工具 list_todos 的結果：\n你的待辦清單是空的。\n\n🔧 讀取待辦清單");
    expect(await todoLines(redis, "telegram", "7001")).toEqual([]);

    // The strict fake Messages API took every request; the script asked for the three tools.
    expect(fakes.anthropic.rejections).toEqual([]);
    const called = fakes.anthropic.answered.flatMap((a) => a.content.filter((b) => b.type === "tool_use"));
    expect(called.map((b) => [b.name, b.input])).toEqual([
      ["add_todo", { title: "買牛奶" }],
      ["list_todos", {}],
      ["delete_todo", { todo_id: 1 }],
      ["delete_todo", { todo_id: 1 }],
      ["list_todos", {}],
    ]);
    stopFollowing();
    bot.child.kill("SIGTERM");
    await new Promise((resolve) => (bot.child.exitCode !== null ? resolve(null) : bot.child.on("exit", resolve)));
  } finally {
    redis.disconnect();
    await fakes.stop();
    await own.stop();
  }
}, 120_000);

it("npm run fakes has a group and Dave: his mention there is answered as the group's; his press on Alice's prompt is refused, hers runs it", async () => {
  // The fakes as serve.ts starts them, and the bot's `npm start` entry point given exactly their
  // variables (ACCESS_POLICY=open: the group is served without /enable), on a Redis of its own.
  const fakes = await startLocalFakes();
  const own = await startRedis();
  const redis = connectRedis(own.url);
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 50);
  try {
    const bot = start(nodeArgs("src/main.ts"), { ...fakes.env, REDIS_URL: own.url, LOG_LEVEL: "info" });
    await bot.waitFor(/the bot is running/, 60_000);
    const tg = fakes.telegram;
    const group = fakes.group.telegram;
    expect(group).toMatchObject({ id: FAKE_GROUP.telegram.chatId, type: "supergroup" });
    expect(String(group.id)).toMatch(/^-100\d+$/);
    /** Resolves once a printed line matches `pattern` (printed since `from`). */
    const printedLine = (pattern: RegExp, from = 0) =>
      tg.waitFor(
        () => printed.slice(from).find((l) => pattern.test(l)),
        20_000,
        `${pattern} in:\n${printed.join("\n")}`,
      );
    /** The bot's first message in `chatId` since `before` whose text matches `text` (as its edits left it). */
    const answerIn = (chatId: number, before: number, text: RegExp) =>
      tg.waitFor(
        () => tg.sent.slice(before).find((m) => m.chatId === chatId && text.test(m.text)),
        20_000,
        `${String(text)} in chat ${chatId}`,
      );
    const mentionNote =
      "(the bot's mention prepended: in a group it answers only what mentions it, replies to it or is a command)";

    // Dave mentions the bot in the group (the note says the mention was prepended): the answer goes
    // to the group, where the model saw Dave's words under his speaker label, and is printed as the group's.
    let before = tg.sent.length;
    expect(await fakes.handle("tg as dave group 你好，我是 Dave")).toBe(
      `sent to the Telegram group as Dave, as "@taiwan_test_bot 你好，我是 Dave" ${mentionNote}`,
    );
    const toDave = await answerIn(group.id, before, /個工具。/);
    expect(toDave.text).toMatch(/^［測試用假模型］收到「\[Dave #[0-9a-z]+\] 你好，我是 Dave」，提供了 \d+ 個工具。/);
    await printedLine(
      /^telegram \(group\) bot(?: \(edited\))?: ［測試用假模型］收到「\[Dave #[0-9a-z]+\] 你好，我是 Dave」，提供了 \d+ 個工具。/,
    );
    expect(printed.filter((l) => l.includes("我是 Dave") && !l.startsWith("telegram (group) bot"))).toEqual([]);
    // In his DM: printed as Dave's.
    before = tg.sent.length;
    expect(await fakes.handle("tg as dave hello")).toBe("sent to the bot on Telegram as Dave");
    expect((await answerIn(FAKE_PEOPLE.dave.telegramId, before, /tools? offered\./)).text).toMatch(
      /^\[fake Messages API\] I received "hello" with/,
    );
    await printedLine(/^telegram \(Dave's DM\) bot: \[fake Messages API\] I received "hello" with \d+ tools offered\./);

    // Alice adds a todo in the group, then asks to delete it: the prompt is the group's, hers to decide.
    before = tg.sent.length;
    expect(await fakes.handle("tg group 新增待辦：買牛奶")).toBe(
      `sent to the Telegram group as Alice, as "@taiwan_test_bot 新增待辦：買牛奶" ${mentionNote}`,
    );
    await answerIn(group.id, before, /已新增待辦：#1 買牛奶/);
    before = tg.sent.length;
    const fromPrompt = printed.length;
    await fakes.handle("tg group 刪除待辦 1");
    const prompt = await answerIn(group.id, before, /需要你的確認/);
    expect(prompt.text).toMatch(/^⚠️ 需要你的確認\n刪除待辦 #1「買牛奶」\n\n只有 Alice 可以決定，/);
    await printedLine(
      /^telegram \(group\) bot: ⚠️ 需要你的確認 ⏎ 刪除待辦 #1「買牛奶」 ⏎ 只有 Alice 可以決定.*\[✅ 確認\]/,
      fromPrompt,
    );

    // Dave presses 確認: the bot refuses him in a toast only he sees, printed as such; nothing runs.
    const fromDave = printed.length;
    expect(await fakes.handle("tg as dave press 確認")).toBe('pressed "✅ 確認" in the Telegram group as Dave');
    await printedLine(/^telegram \(group\) bot \(toast to Dave\): /, fromDave);
    expect(printed.slice(fromDave)).toContain("telegram (group) bot (toast to Dave): 只有 Alice 可以決定。");
    expect(tg.buttons(prompt).map((b) => b.text)).toEqual(["✅ 確認", "❌ 取消", "🔓 一律允許"]);
    expect(await todoLines(redis, "telegram", "7001")).toEqual(["#1 買牛奶"]);

    // Alice's press runs it: her toast, the prompt closed, the todo gone.
    const fromAlice = printed.length;
    before = tg.sent.length;
    expect(await fakes.handle("tg press 確認")).toBe('pressed "✅ 確認" in the Telegram group as Alice');
    await printedLine(/^telegram \(group\) bot \(toast\): 已確認，處理中…$/, fromAlice);
    const deleted = await answerIn(group.id, before, /delete_todo/);
    expect(deleted.text).toBe("［示範］工具 delete_todo 的結果：\n已刪除：#1 買牛奶\n\n🔧 刪除待辦 #1");
    await tg.waitFor(() => prompt.text.startsWith("✅"), 20_000, "the prompt edited to the outcome");
    expect(prompt.text).toBe("✅ 已確認：刪除待辦 #1「買牛奶」");
    expect(await todoLines(redis, "telegram", "7001")).toEqual([]);

    // The same on Discord (the server's channel) and LINE (a group of Carol and Dave), printed as the group's.
    expect(await fakes.handle("dc as dave group hello")).toBe(
      `sent to the Discord group as Dave, as "<@${fakes.discord.bot.id}> hello" ${mentionNote}`,
    );
    await printedLine(
      /^discord \(group\) bot(?: \(edited\))?: \[fake Messages API\] I received "\[Dave #[0-9a-z]+\] hello" with/,
    );
    expect(await fakes.handle("line as dave group 你好")).toBe(
      `sent to the LINE group as Dave, as "@${fakes.line.botName} 你好" ${mentionNote}`,
    );
    await printedLine(/^line \(group\) bot \(reply\): ［測試用假模型］收到「\[Dave #[0-9a-z]+\] 你好」/);
    expect(fakes.anthropic.rejections).toEqual([]);

    bot.child.kill("SIGTERM");
    await new Promise((resolve) => (bot.child.exitCode !== null ? resolve(null) : bot.child.on("exit", resolve)));
  } finally {
    stopFollowing();
    redis.disconnect();
    await fakes.stop();
    await own.stop();
  }
}, 120_000);

it("the fake model of npm run fakes answers in the person's language (zh-TW by default) and slowly when asked", () => {
  const request = (...texts: string[]): FakeRequest => ({
    model: "claude-test",
    max_tokens: 1024,
    tools: [{ name: "calculate", input_schema: { type: "object" } }],
    messages: [{ role: "user", content: texts.map((text) => ({ type: "text", text })) }],
  });
  const textOf = (reply: ReturnType<typeof fakeModelReply>) =>
    reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  expect(replyLanguage("你好")).toBe("zh-TW");
  expect(replyLanguage("hello")).toBe("en");
  expect(replyLanguage("幫我算 1+1 ok")).toBe("zh-TW");
  expect(replyLanguage("👍 123")).toBe("zh-TW");
  // Words no rule of the demo's script matches get the one line (those a rule matches: the next test).
  expect(textOf(fakeModelReply(request("幫我想想晚餐吃什麼")))).toBe(
    "［測試用假模型］收到「幫我想想晚餐吃什麼」，提供了 1 個工具。我是測試用的假伺服器，不是真的模型：只會回這一行，" +
      "或照示範的腳本回答（「新增待辦 買牛奶」、「現在幾點？」；寫「慢慢說」可以看一段寫得很慢、可以停止的回答）。",
  );
  expect(textOf(fakeModelReply(request("how are you?")))).toMatch(
    /^\[fake Messages API\] I received "how are you\?" with 1 tool offered\./,
  );
  // The memory block the bot adds (English markup, the person's notes) is not what the person wrote.
  expect(textOf(fakeModelReply(request(`${MEMORY_BLOCK_START}>\n- lives in Hsinchu\n</memory>`, "hi")))).toMatch(
    /received "hi"/,
  );
  for (const [said, line] of [
    ["請慢慢說", "這是測試用假模型慢慢寫的回答，第 1 行"],
    ["answer slowly please", "Line 1 of a slow answer"],
  ] as const) {
    const slow = fakeModelReply(request(said));
    expect(textOf(slow)).toContain(line);
    expect(slow.stream).toMatchObject({ totalMs: SLOW_ANSWER_MS });
    expect([...textOf(slow)].length / (slow.stream!.chunkChars ?? 20)).toBeGreaterThan(100); // 100+ deltas: a live answer grows
  }
  // A compaction's transcript holds the fake's own earlier answers, which mention "slowly": no slow answer for it.
  const compaction = fakeModelReply(
    request(
      `${TRANSCRIPT_START}\nuser: hi\nassistant: [fake Messages API] … write "slowly" for a slow answer\n</transcript>`,
    ),
  );
  expect(compaction.stream).toBeUndefined();
  expect(textOf(compaction)).not.toContain("slow answer from the fake");
});

it("the fake model of npm run fakes answers with the demo's script when one of its rules matches the person's words", () => {
  const tools: FakeRequest["tools"] = [
    ...["add_todo", "get_weather", "calculate"].map((name) => ({ name, input_schema: { type: "object" } })),
    { type: "memory_20250818", name: "memory" },
    { type: "web_search_20250305", name: "web_search" },
  ];
  const request = (...messages: FakeRequest["messages"]): FakeRequest => ({
    model: "claude-test",
    max_tokens: 1024,
    tools,
    messages,
  });
  const said = (text: string) => request({ role: "user", content: [{ type: "text", text }] });
  expect(fakeModelReply(said("記得我住在新竹"))).toEqual({
    content: [
      { type: "text", text: "［示範］好，我記下來。" },
      {
        type: "tool_use",
        id: expect.stringMatching(/^toolu_/) as string,
        name: "memory",
        input: { command: "create", path: "/memories/profile.md", file_text: "我住在新竹" },
      },
    ],
    stop_reason: "tool_use",
  });
  // In the person's language, as the demo answers.
  expect(fakeModelReply(said("what's the weather in Taipei?"))).toMatchObject({
    content: [
      { type: "text", text: expect.stringMatching(/^\[demo\] /) as string },
      { type: "tool_use", name: "get_weather", input: { city: "臺北市" } },
    ],
    stop_reason: "tool_use",
  });
  // A tool the request does not offer: the script says so (a rule matched), no tool call.
  expect(fakeModelReply(said("列出待辦"))).toEqual({
    content: [{ type: "text", text: "［示範］這個機器人沒有提供 list_todos 工具（設定關掉了），所以示範不了這個。" }],
    stop_reason: "end_turn",
  });
  // A turn of tool results: the script's answer showing them.
  const results = request(
    { role: "user", content: [{ type: "text", text: "新增待辦 買牛奶" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "add_todo", input: { title: "買牛奶" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "已新增待辦：#1 買牛奶" }] },
  );
  expect(fakeModelReply(results)).toEqual({
    content: [
      {
        type: "text",
        text: "［示範］工具 add_todo 的結果：\n已新增待辦：#1 買牛奶\n\n接著試試「刪除待辦 1」，看看確認提示。",
      },
    ],
    stop_reason: "end_turn",
  });
  // Web search as the fake scripts it: the result and the citation without encrypted fields (the fake issues them).
  const search = fakeModelReply(said("search the web for today's news"));
  expect(search.stop_reason).toBe("end_turn");
  expect(search.content.map((b) => b.type)).toEqual([
    "text",
    "server_tool_use",
    "web_search_tool_result",
    "text",
    "text",
  ]);
  const url = "https://example.com/demo-search?q=today's%20news";
  expect(search.content[2]).toEqual({
    type: "web_search_tool_result",
    tool_use_id: (search.content[1] as { id: string }).id,
    results: [{ url, title: "[demo] A scripted search result (not a real search)", page_age: null }],
  });
  expect(search.content[4]).toMatchObject({ citations: [{ url, cited_text: expect.any(String) as string }] });
  expect(JSON.stringify(search)).not.toMatch(/encrypted/);
});

it("npm run fakes prints what the bot sends with its controls shown, never acted on, as the console adapter does", async () => {
  // A bot message can carry what any user steered the model to write: ESC and CSI sequences, BEL,
  // a lone CR (which would overwrite the printed line), C1 controls, bidi overrides. The fakes'
  // console shows them as `terminalText` does (src/plain-text.ts): ␛, ␇, ␍; C1 and bidi controls gone.
  const fakes = await startLocalFakes();
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 20);
  try {
    const hostile = "\x1b[2J\x1b]0;pwned\x07A\rB\u009b31m\u202eC";
    const shownAs = "␛[2J␛]0;pwned␇A␍B31mC";
    const label = "\x1b[31mOK";
    const post = async (url: string, body: unknown, headers: Record<string, string> = {}, method = "POST") => {
      const response = await fetch(url, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      expect(response.status, `${method} ${url}: ${await response.clone().text()}`).toBeLessThan(300);
      return response.status === 204 ? undefined : ((await response.json()) as Record<string, unknown>);
    };
    /** Waits until `line` is printed (a message's line before its edit: the fakes print a message as it is then). */
    const printedLine = (line: string) =>
      fakes.telegram.waitFor(() => printed.includes(line) || undefined, 5_000, `${line} in ${printed.join("\n")}`);

    // Telegram: a message with a button, its edit, a draft.
    const tg = fakes.telegram;
    const dave = tg.user(7002, "Dave");
    tg.sendUserMessage({ chat: tg.privateChat(dave), from: dave, text: "hi" });
    const bot = `${tg.apiRoot}/bot${tg.token}`;
    const sent = (await post(`${bot}/sendMessage`, {
      chat_id: dave.id,
      text: hostile,
      reply_markup: { inline_keyboard: [[{ text: label, callback_data: "x" }]] },
    }))!.result as { message_id: number };
    await printedLine(`telegram bot: ${shownAs} [␛[31mOK]`);
    await post(`${bot}/editMessageText`, {
      chat_id: dave.id,
      message_id: sent.message_id,
      text: `edited ${hostile}`,
      reply_markup: { inline_keyboard: [[{ text: label, callback_data: "x" }]] },
    });
    await post(`${bot}/sendMessageDraft`, { chat_id: dave.id, draft_id: 1, text: `draft ${hostile}` });

    // Discord: a DM with a button and its edit; a slash command's answer, with a button, and its edit.
    const dc = fakes.discord;
    const erin = { id: "700000000000000009", username: "erin", global_name: "Erin" };
    const channel = dc.dmChannel(erin);
    const auth = { authorization: `Bot ${dc.token}` };
    const button = { type: 1, components: [{ type: 2, style: 2, custom_id: "x", label }] };
    const message = (await post(
      `${dc.apiUrl}/v10/channels/${channel}/messages`,
      { content: hostile, components: [button] },
      auth,
    ))!;
    await printedLine(`discord bot: ${shownAs} [␛[31mOK]`);
    await post(
      `${dc.apiUrl}/v10/channels/${channel}/messages/${String(message.id)}`,
      { content: `edited ${hostile}` },
      auth,
      "PATCH",
    );
    const interaction = dc.slashCommand(erin, "help", { dm: true });
    await post(`${dc.apiUrl}/v10/interactions/${interaction.id}/${interaction.token}/callback`, {
      type: 4,
      data: { content: `answer ${hostile}`, components: [button] },
    });
    await printedLine(`discord bot (to the command): answer ${shownAs} [␛[31mOK]`);
    await post(
      `${dc.apiUrl}/v10/webhooks/${dc.applicationId}/${interaction.token}/messages/@original`,
      { content: `answer edited ${hostile}` },
      {},
      "PATCH",
    );

    // LINE: a push with a quick reply button.
    const frank = fakes.line.user("Frank");
    await post(
      `${fakes.line.apiUrl}/v2/bot/message/push`,
      {
        to: frank.userId,
        messages: [
          {
            type: "text",
            text: hostile,
            quickReply: { items: [{ type: "action", action: { type: "postback", label, data: "x" } }] },
          },
        ],
      },
      { authorization: `Bearer ${fakes.line.token}` },
    );

    const expected = [
      `telegram bot: ${shownAs} [␛[31mOK]`,
      `telegram bot (edited): edited ${shownAs} [␛[31mOK]`,
      `telegram bot (draft): draft ${shownAs}`,
      `discord bot: ${shownAs} [␛[31mOK]`,
      `discord bot (edited): edited ${shownAs}`,
      `discord bot (to the command): answer ${shownAs} [␛[31mOK]`,
      `discord bot (to the command): answer edited ${shownAs}`,
      `line bot (push): ${shownAs} [␛[31mOK]`,
    ];
    for (const line of expected) await printedLine(line);
    expect(printed).toHaveLength(expected.length);
    // What the fakes' console answers a press with names the button as shown.
    expect(await fakes.handle("tg press OK")).toBe('pressed "␛[31mOK" on Telegram as Alice');
    // No control but a tab reaches the terminal, and every print is one line.
    // eslint-disable-next-line no-control-regex -- the controls are what is looked for
    for (const line of printed) expect(line).not.toMatch(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202e]/);
  } finally {
    stopFollowing();
    await fakes.stop();
  }
});

it("the demo's script answers a dangerous call the person declined in their language, not with the instruction to the model", () => {
  const tools: FakeRequest["tools"] = ["add_todo", "delete_todo"].map((name) => ({
    name,
    input_schema: { type: "object" },
  }));
  /** The turn after the person's `said` asked to delete todo 1: the call not run, with what the loop tells the model. */
  const notRun = (said: string, verdict: NotRunVerdict, tool = "delete_todo"): FakeRequest => ({
    model: "claude-test",
    max_tokens: 1024,
    tools,
    messages: [
      { role: "user", content: [{ type: "text", text: said }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: tool, input: { todo_id: 1 } }] },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: notRunText(tool, verdict, 300),
            is_error: true,
          },
        ],
      },
    ],
  });
  const textOf = (request: FakeRequest) =>
    fakeModelReply(request)
      .content.map((b) => (b.type === "text" ? b.text : ""))
      .join("");
  expect(textOf(notRun("刪除待辦 1", "declined"))).toBe("［示範］好的，已取消，沒有刪除。");
  expect(textOf(notRun("delete todo 1", "declined"))).toBe("[demo] OK, cancelled; nothing was deleted.");
  expect(textOf(notRun("刪除待辦 1", "expired"))).toBe("［示範］確認逾時，所以沒有刪除；還需要的話，再說一次就好。");
  expect(textOf(notRun("delete todo 1", "expired"))).toBe(
    "[demo] The confirmation timed out, so nothing was deleted; ask again if you still want it.",
  );
  expect(textOf(notRun("delete todo 1", "superseded"))).toBe(
    "[demo] You wrote again instead of confirming, so nothing was deleted.",
  );
  // Another dangerous tool: nothing was done.
  expect(textOf(notRun("刪除待辦 1", "declined", "schedule_task"))).toBe("［示範］好的，已取消，沒有執行。");
  // The loop's text is read back only from an error result; a tool's own error is shown as before.
  for (const verdict of ["declined", "expired", "superseded"] as const)
    expect(notRunVerdict(notRunText("delete_todo", verdict, 300))).toBe(verdict);
  expect(notRunVerdict("找不到待辦 #9")).toBeUndefined();
});

it("the demo script's calculator rule passes numbers in scientific notation whole, so the calculator answers with its bounds", () => {
  const tools: FakeRequest["tools"] = [{ name: "calculate", input_schema: { type: "object" } }];
  const request = (...messages: FakeRequest["messages"]): FakeRequest => ({
    model: "claude-test",
    max_tokens: 1024,
    tools,
    messages,
  });
  const said = (text: string) => request({ role: "user", content: [{ type: "text", text }] });
  const expressionOf = (text: string) =>
    fakeModelReply(said(text)).content.flatMap((b) =>
      b.type === "tool_use" ? [(b.input as { expression?: unknown }).expression] : [],
    );
  expect(expressionOf("1e308*10")).toEqual(["1e308*10"]);
  // In the default language: an exponent's e is not English.
  expect(replyLanguage("1e308*10")).toBe("zh-TW");
  expect(fakeModelReply(said("1e308*10")).content[0]).toEqual({ type: "text", text: "［示範］我用計算機算一下。" });
  expect(expressionOf("2.5e-3 * 4")).toEqual(["2.5e-3 * 4"]);
  expect(expressionOf("幫我算 1E308 × 10")).toEqual(["1E308 * 10"]);
  expect(expressionOf("3e+2 - 1 是多少")).toEqual(["3e+2 - 1"]);
  expect(expressionOf("what is 2 + 3e2?")).toEqual(["2 + 3e2"]);
  expect(expressionOf("1e3 打八五折")).toEqual(["1e3 * 85%"]);
  // As before: a letter that is not an exponent ends the expression, and a number alone is none.
  expect(expressionOf("(1200 + 800) * 0.05")).toEqual(["(1200 + 800) * 0.05"]);
  expect(expressionOf("3 eggs + 2 eggs")).toEqual([]);
  expect(expressionOf("2.5e-3")).toEqual([]);

  // The calculator's own answer: beyond its bounds, which the script shows.
  expect(calculate("2.5e-3 * 4", "zh-TW")).toBe("2.5e-3 * 4 = 0.01");
  let refusal = "";
  try {
    calculate("1E308 * 10", "zh-TW");
  } catch (error) {
    refusal = (error as Error).message;
  }
  expect(refusal).toBe("結果太大（超過 100 位數），不計算。");
  const answer = fakeModelReply(
    request(
      { role: "user", content: [{ type: "text", text: "幫我算 1E308 × 10" }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "calculate", input: { expression: "1E308 * 10" } }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: refusal, is_error: true }] },
    ),
  );
  expect(answer.content).toEqual([
    { type: "text", text: "［示範］工具 calculate 沒有成功：結果太大（超過 100 位數），不計算。" },
  ]);
});

it("npm run fakes gives its fake users the same ids at every start, so the chats the bot kept are theirs after a restart", async () => {
  // What the bot sees of each person: Alice's Telegram chat, the Discord DM channel Bob writes in,
  // and the LINE user id in the signed webhook of a `line …` line (caught here instead of a bot);
  // Dave's, and the group's on each platform.
  const seen = async () => {
    const fakes = await startLocalFakes();
    const hooks: { events: { source: { userId: string; type: string; groupId?: string } }[] }[] = [];
    const hook = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        hooks.push(JSON.parse(body) as (typeof hooks)[number]);
        res.writeHead(200).end("{}");
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", resolve));
    try {
      fakes.line.webhookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
      expect(await fakes.handle("line hi")).toBe("sent to the bot on LINE as Carol");
      expect(await fakes.handle("dc hi")).toBe("sent to the bot on Discord as Bob");
      expect(await fakes.handle("tg hi")).toBe("sent to the bot on Telegram as Alice");
      expect(await fakes.handle("line as dave hi")).toBe("sent to the bot on LINE as Dave");
      expect(await fakes.handle("line group /help")).toBe("sent to the LINE group as Carol");
      const bob = fakes.people.bob;
      const dave = fakes.people.dave;
      return {
        line: hooks[0]!.events[0]!.source.userId,
        discordUser: bob.id,
        // The channel of Bob's DM, as the message he wrote names it.
        discordChannel: fakes.discord.sendUserMessage(bob, "again", { dm: true }).channel_id,
        telegramChat: fakes.telegram.privateChat(fakes.people.alice).id,
        daveLine: hooks[1]!.events[0]!.source.userId,
        daveDiscord: [dave.discord.id, fakes.discord.sendUserMessage(dave.discord, "hi", { dm: true }).channel_id],
        daveTelegram: fakes.telegram.privateChat(dave.telegram).id,
        group: {
          line: [hooks[2]!.events[0]!.source.type, hooks[2]!.events[0]!.source.groupId],
          discord: fakes.discord.sendUserMessage(dave.discord, "hi", { channelId: fakes.group.discord }).channel_id,
          telegram: fakes.group.telegram.id,
        },
      };
    } finally {
      await new Promise((resolve) => hook.close(resolve));
      await fakes.stop();
    }
  };
  const first = await seen();
  expect(first.line).toMatch(/^U[0-9a-f]{32}$/);
  expect(first.daveLine).toMatch(/^U[0-9a-f]{32}$/);
  expect(first.daveLine).not.toBe(first.line);
  expect(first.group.line).toEqual(["group", expect.stringMatching(/^C[0-9a-f]{32}$/)]);
  expect(first).toMatchObject({
    daveDiscord: [FAKE_PEOPLE.dave.discordId, FAKE_PEOPLE.dave.dmChannelId],
    daveTelegram: 7004,
    group: { discord: FAKE_GROUP.discord.channelId, telegram: -1007000000001 },
  });
  expect(await seen()).toEqual(first);
});

it("npm run fakes numbers Telegram messages from the clock, so a restarted fake's messages are not dropped as repeats", async () => {
  // The bot remembers a conversation's message ids for 2 days (in Redis): a fake restarted against
  // the same Redis must not begin again at the ids of its earlier run.
  const before = Math.floor(Date.now() / 1000);
  const fakes = await startLocalFakes();
  const after = Math.floor(Date.now() / 1000);
  try {
    const alice = fakes.telegram.user(1, "Alice");
    const sent = fakes.telegram.sendUserMessage({ chat: fakes.telegram.privateChat(alice), from: alice, text: "hi" });
    expect(sent.message_id).toBeGreaterThanOrEqual(1000 + (before % 1_000_000) * 1000);
    expect(sent.message_id).toBeLessThan(1000 + ((after % 1_000_000) + 1) * 1000);
    expect(sent.message_id).toBeLessThan(2 ** 31);
  } finally {
    await fakes.stop();
  }
});

/** Calls the fake Bot API as the bot would (`POST <apiRoot>/bot<token>/<method>`); expects `ok` and returns the result. */
function botCall(tg: { apiRoot: string; token: string }) {
  const bot = `${tg.apiRoot}/bot${tg.token}`;
  return async (method: string, body: Record<string, unknown>): Promise<unknown> => {
    const response = await fetch(`${bot}/${method}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as { ok: boolean; result: unknown };
    expect(json.ok, `${method}: ${JSON.stringify(json)}`).toBe(true);
    return json.result;
  };
}

it("npm run fakes prints the bot's answer to a Telegram press (its toast or alert), in order with the other lines", async () => {
  // The bot answers a press with answerCallbackQuery; its `text` is all the presser sees of some answers
  // (「只有 Alice 可以決定。」, 「這個請求已經確認過了。」), so the console prints it where it came.
  const fakes = await startLocalFakes();
  const printed: string[] = [];
  // Slow polling: the toast, the edit and the new message below arrive between two looks.
  const stopFollowing = fakes.follow((line) => printed.push(line), 400);
  try {
    const tg = fakes.telegram;
    const call = botCall(tg);
    const alice = tg.user(7001, "Alice");
    const prompt = (await call("sendMessage", {
      chat_id: alice.id,
      text: "⚠️ 需要你的確認",
      reply_markup: { inline_keyboard: [[{ text: "✅ 確認", callback_data: "ap:1:y" }]] },
    })) as { message_id: number };
    await tg.waitFor(
      () => printed.includes("telegram bot: ⚠️ 需要你的確認 [✅ 確認]") || undefined,
      5_000,
      "the prompt",
    );

    // Alice presses; the bot (this test, reading its updates) answers with a toast, edits the prompt, then sends a message.
    expect(await fakes.handle("tg press 確認")).toBe('pressed "✅ 確認" on Telegram as Alice');
    const updates = (await call("getUpdates", { timeout: 0 })) as { callback_query?: { id: string } }[];
    const queries = updates.flatMap((u) => (u.callback_query ? [u.callback_query.id] : []));
    expect(queries).toHaveLength(1);
    await call("answerCallbackQuery", { callback_query_id: queries[0], text: "這個請求已經確認過了。\x1b[2J" });
    await call("editMessageText", { chat_id: alice.id, message_id: prompt.message_id, text: "✅ 已確認" });
    await call("sendMessage", { chat_id: alice.id, text: "done" });
    const expected = [
      "telegram bot: ⚠️ 需要你的確認 [✅ 確認]",
      "telegram bot (toast): 這個請求已經確認過了。␛[2J",
      "telegram bot (edited): ✅ 已確認",
      "telegram bot: done",
    ];
    await tg.waitFor(() => printed.length >= expected.length || undefined, 5_000, "the lines printed");
    expect(printed).toEqual(expected);

    // An alert (show_alert) is printed as one; an answer without text shows nothing, and prints nothing.
    tg.pressButton({ from: alice, message: tg.sent[0]!, data: "ap:1:y" });
    tg.pressButton({ from: alice, message: tg.sent[0]!, data: "ap:1:y" });
    const more = (await call("getUpdates", { timeout: 0 })) as { callback_query?: { id: string } }[];
    const [silent, alert] = more.flatMap((u) => (u.callback_query ? [u.callback_query.id] : [])).slice(-2);
    await call("answerCallbackQuery", { callback_query_id: silent });
    await call("answerCallbackQuery", { callback_query_id: alert, text: "只有 Alice 可以決定。", show_alert: true });
    await tg.waitFor(() => printed.length > expected.length || undefined, 5_000, "the alert printed");
    expect(printed.slice(expected.length)).toEqual(["telegram bot (alert): 只有 Alice 可以決定。"]);
  } finally {
    stopFollowing();
    await fakes.stop();
  }
});

it("npm run fakes prints a Telegram edit with the buttons it leaves, and an edit of only the buttons; press finds an edited message's buttons", async () => {
  // The /memory delete-all question is an edit with buttons; a /reminders list split over several
  // messages loses a cancelled reminder's button by editMessageReplyMarkup.
  const fakes = await startLocalFakes();
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 50);
  try {
    const tg = fakes.telegram;
    const call = botCall(tg);
    const alice = tg.user(7001, "Alice");
    const first = (await call("sendMessage", {
      chat_id: alice.id,
      text: "提醒 #1",
      reply_markup: { inline_keyboard: [[{ text: "全部刪除", callback_data: "mem:all" }]] },
    })) as { message_id: number };
    const second = (await call("sendMessage", {
      chat_id: alice.id,
      text: "提醒 #2",
      reply_markup: {
        inline_keyboard: [
          [
            { text: "❌ 取消 #2", callback_data: "rm:2" },
            { text: "❌ 取消 #3", callback_data: "rm:3" },
          ],
        ],
      },
    })) as { message_id: number };
    // A sent message is printed as it is when the console looks (the bot edits later, after a press).
    await tg.waitFor(() => printed.length >= 2 || undefined, 5_000, "the messages printed");
    await call("editMessageText", {
      chat_id: alice.id,
      message_id: first.message_id,
      text: "確定要<b>全部</b>刪除嗎？",
      parse_mode: "HTML",
      reply_markup: {
        inline_keyboard: [
          [
            { text: "⚠️ 確定全部刪除", callback_data: "mem:yes" },
            { text: "取消", callback_data: "mem:no" },
          ],
        ],
      },
    });
    await call("editMessageReplyMarkup", {
      chat_id: alice.id,
      message_id: second.message_id,
      reply_markup: { inline_keyboard: [[{ text: "❌ 取消 #3", callback_data: "rm:3" }]] },
    });
    await call("editMessageReplyMarkup", { chat_id: alice.id, message_id: second.message_id });
    const expected = [
      "telegram bot: 提醒 #1 [全部刪除]",
      "telegram bot: 提醒 #2 [❌ 取消 #2] [❌ 取消 #3]",
      "telegram bot (edited): 確定要全部刪除嗎？ [⚠️ 確定全部刪除] [取消]",
      "telegram bot (buttons changed): [❌ 取消 #3]",
      "telegram bot (buttons removed)",
    ];
    await tg.waitFor(() => printed.length >= expected.length || undefined, 5_000, "the lines printed");
    expect(printed).toEqual(expected);
    expect(await fakes.handle("tg press 確定全部刪除")).toBe('pressed "⚠️ 確定全部刪除" on Telegram as Alice');
  } finally {
    stopFollowing();
    await fakes.stop();
  }
});

it("npm run fakes prints a Discord press's update of the ephemeral reply it was pressed on once, as the answer to the press", async () => {
  // A cancel press on /reminders answers with response type 7, which rewrites the command's reply.
  const fakes = await startLocalFakes();
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 50);
  try {
    const dc = fakes.discord;
    const bob = { id: "700000000000000002", username: "bob", global_name: "Bob" };
    const answer = async (interaction: { id: string; token: string }, body: Record<string, unknown>) => {
      const response = await fetch(`${dc.apiUrl}/v10/interactions/${interaction.id}/${interaction.token}/callback`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status, await response.clone().text()).toBe(204);
    };
    const cancel = (n: number) => ({ type: 2, style: 4, label: `❌ 取消 #${n}`, custom_id: `rm:${n}` });
    const command = dc.slashCommand(bob, "reminders", { dm: true });
    await answer(command, {
      type: 4,
      data: {
        content: "你在這裡的提醒：\n#1 喝水\n#2 散步",
        flags: 64,
        components: [{ type: 1, components: [cancel(1), cancel(2)] }],
      },
    });
    const pressed = dc.clickEphemeralButton(bob, command, "rm:1");
    await answer(pressed, {
      type: 7,
      data: {
        content: "已取消提醒 #1。\n你在這裡的提醒：\n#2 散步",
        components: [{ type: 1, components: [cancel(2)] }],
      },
    });
    const expected = [
      "discord bot (to the command): 你在這裡的提醒： ⏎ #1 喝水 ⏎ #2 散步 [❌ 取消 #1] [❌ 取消 #2]",
      "discord bot (to the press): 已取消提醒 #1。 ⏎ 你在這裡的提醒： ⏎ #2 散步 [❌ 取消 #2]",
    ];
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(printed).toEqual(expected);
  } finally {
    stopFollowing();
    await fakes.stop();
  }
});

it("dc press refuses a button the bot disabled (a decided approval prompt's), as Discord's clients do, and sends nothing", async () => {
  const fakes = await startLocalFakes();
  try {
    const dc = fakes.discord;
    const bob = { id: "700000000000000002", username: "bob", global_name: "Bob" };
    const channel = dc.dmChannel(bob);
    /** The bot posts a prompt with 確認 and 取消 to Bob's DM, both `disabled` or not. */
    const post = async (content: string, disabled: boolean, id: string) => {
      const response = await fetch(`${dc.apiUrl}/v10/channels/${channel}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bot ${dc.token}` },
        body: JSON.stringify({
          content,
          components: [
            {
              type: 1,
              components: [
                { type: 2, style: 3, label: "✅ 確認", custom_id: `ap:${id}:y`, disabled },
                { type: 2, style: 4, label: "❌ 取消", custom_id: `ap:${id}:n`, disabled },
              ],
            },
          ],
        }),
      });
      expect(response.status, await response.clone().text()).toBe(200);
    };

    // The only prompt is decided: its buttons are disabled, and pressing one is refused.
    await post("✅ 已確認：刪除待辦 #1", true, "closed");
    expect(await fakes.handle("dc press 確認")).toBe(
      'the Discord button "✅ 確認" is disabled (the bot closed that prompt): Discord does not let Bob press it, nothing was sent',
    );
    expect(dc.interactions.size).toBe(0);

    // A pending prompt's button is pressed, even when a decided prompt came after it.
    await post("⚠️ 需要你的確認：刪除待辦 #2", false, "2");
    await new Promise((resolve) => setTimeout(resolve, 5));
    await post("❌ 已取消：刪除待辦 #3", true, "closed");
    expect(await fakes.handle("dc press 取消")).toBe('pressed "❌ 取消" on Discord as Bob');
    expect([...dc.interactions.values()].map((i) => (i.payload.data as { custom_id: string }).custom_id)).toEqual([
      "ap:2:n",
    ]);
  } finally {
    await fakes.stop();
  }
});

it("npm run fakes reads `as dave` and `group` only where they name a person and the chat, and a press reaches only what the presser sees", async () => {
  // What the fake Telegram hands the bot is read here with getUpdates, as the bot would.
  const fakes = await startLocalFakes();
  try {
    const tg = fakes.telegram;
    const call = botCall(tg);
    type Update = {
      update_id: number;
      message?: { chat: { id: number }; from: { id: number }; text: string; entities?: { type: string }[] };
      callback_query?: { from: { id: number }; message: { chat: { id: number } }; data: string };
    };
    let offset = 0;
    /** The updates queued since the last look. */
    const updates = async () => {
      const got = (await call("getUpdates", { timeout: 0, offset })) as Update[];
      if (got.length > 0) offset = got.at(-1)!.update_id + 1;
      return got;
    };
    const groupId = FAKE_GROUP.telegram.chatId;

    // Words that name no fake person, and texts for Alice's DM, are sent as before.
    expect(await fakes.handle("tg as soon as possible")).toBe("sent to the bot on Telegram as Alice");
    // A person not on that platform, or a group with nothing to send, is said so, and nothing is sent.
    expect(await fakes.handle("tg as bob hi")).toBe(
      "Bob is not on Telegram: there, type tg <text> (Alice) or tg as dave <text>",
    );
    expect(await fakes.handle("tg group")).toMatch(
      /^type tg <text>, dc <text> or line <text> .*tg as dave group <text>$/,
    );
    // A command in the group is sent as is; a plain text with the bot's mention, which Telegram marks.
    expect(await fakes.handle("tg group /help")).toBe("sent to the Telegram group as Alice");
    await fakes.handle("tg as dave group hi");
    expect(
      (await updates()).map((u) => [
        u.message!.chat.id,
        u.message!.from.id,
        u.message!.text,
        u.message!.entities?.[0]?.type,
      ]),
    ).toEqual([
      [7001, 7001, "as soon as possible", undefined],
      [groupId, 7001, "/help", "bot_command"],
      [groupId, 7004, "@taiwan_test_bot hi", "mention"],
    ]);

    /** The bot posts a prompt with a 確認 button to `chatId`. */
    const prompt = (chatId: number, data: string) =>
      call("sendMessage", {
        chat_id: chatId,
        text: "⚠️ 需要你的確認",
        reply_markup: { inline_keyboard: [[{ text: "✅ 確認", callback_data: data }]] },
      });
    // Alice's DM is not Dave's to see, and is not the group.
    await prompt(7001, "ap:dm:y");
    expect(await fakes.handle("tg as dave press 確認")).toBe(
      'no Telegram button "確認" on the bot\'s messages that Dave can see',
    );
    expect(await fakes.handle("tg group press 確認")).toBe(
      'no Telegram button "確認" on the bot\'s messages in the group',
    );
    // A prompt in the group, then a newer one in Alice's DM: Dave presses the group's, `group press`
    // the group's as Alice, and a plain `press` the newest Alice sees (her DM's), as before.
    await prompt(groupId, "ap:group:y");
    await prompt(7001, "ap:dm2:y");
    expect(await fakes.handle("tg as dave press 確認")).toBe('pressed "✅ 確認" in the Telegram group as Dave');
    expect(await fakes.handle("tg group press 確認")).toBe('pressed "✅ 確認" in the Telegram group as Alice');
    // A newer message with other buttons only (a memory note's ↩️) does not hide the prompt above it.
    await call("sendMessage", {
      chat_id: 7001,
      text: "📝 記住了",
      reply_markup: { inline_keyboard: [[{ text: "↩️ 復原", callback_data: "mu:1" }]] },
    });
    expect(await fakes.handle("tg press 確認")).toBe('pressed "✅ 確認" on Telegram as Alice');
    expect(
      (await updates()).map((u) => [
        u.callback_query!.from.id,
        u.callback_query!.message.chat.id,
        u.callback_query!.data,
      ]),
    ).toEqual([
      [7004, groupId, "ap:group:y"],
      [7001, groupId, "ap:group:y"],
      [7001, 7001, "ap:dm2:y"],
    ]);
  } finally {
    await fakes.stop();
  }
});

it("npm run fakes sends pictures, files and voice messages from a path: tg|dc|line photo, file and voice reach the bot, which answers them", async () => {
  // The fakes as serve.ts starts them, and the bot's `npm start` entry point given exactly their
  // variables (STT_* included: the fake transcription server knows the words of the sample speech).
  const fakes = await startLocalFakes();
  const own = await startRedis();
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 50);
  try {
    const bot = start(nodeArgs("src/main.ts"), { ...fakes.env, REDIS_URL: own.url, LOG_LEVEL: "info" });
    await bot.waitFor(/the bot is running/, 60_000);
    const { telegram: tg, discord: dc, line } = fakes;
    const alice = FAKE_PEOPLE.alice.telegramId;
    const samples = "test/fixtures/samples";
    const bytesOf = (file: string) => statSync(path.join(ROOT, samples, file)).size;
    /** Types `typed`, expecting `note`; resolves with the bot's first new Telegram message to Alice matching `answer`. */
    const onTelegram = async (typed: string, note: string, answer: RegExp) => {
      const before = tg.sent.length;
      expect(await fakes.handle(typed)).toBe(note);
      return tg.waitFor(
        () => tg.sent.slice(before).find((m) => m.chatId === alice && answer.test(m.text)),
        30_000,
        `${String(answer)} in ${tg.sent.map((m) => m.text).join("\n")}`,
      );
    };
    const cwd = process.cwd();
    process.chdir(ROOT); // paths are read from the folder the fakes run in (npm run fakes: the project's)
    try {
      // A picture with a caption: the model gets the image and the caption.
      const photo = await onTelegram(
        `tg photo ${samples}/receipt.jpg 總共多少錢？`,
        "sent receipt.jpg as a picture (640×400) to the bot on Telegram as Alice",
        /收到/,
      );
      expect(photo.text).toMatch(/^［測試用假模型］收到「總共多少錢？」和 1 張圖片，提供了 \d+ 個工具。/);
      const photoRequest = fakes.anthropic.requests.at(-1)!.messages.at(-1)!.content as { type: string }[];
      expect(photoRequest.map((b) => b.type)).toContain("image");
      // A PDF: a document block.
      const pdf = await onTelegram(
        `tg file ${samples}/bill.pdf`,
        `sent bill.pdf as a file (application/pdf, ${bytesOf("bill.pdf")} bytes) to the bot on Telegram as Alice`,
        /收到/,
      );
      expect(pdf.text).toMatch(/和 1 份文件/);
      // A text file: its words reach the model.
      const notes = await onTelegram(
        `tg file ${samples}/notes.md 這是什麼？`,
        `sent notes.md as a file (text/markdown, ${bytesOf("notes.md")} bytes) to the bot on Telegram as Alice`,
        /收到/,
      );
      expect(notes.text).toMatch(/這是什麼？/);
      // A voice note: transcribed by the fake transcription server (the sample's words), then answered.
      const voice = await onTelegram(
        "tg voice test/fixtures/speech/speech.ogg",
        "sent speech.ogg as a voice message (3 s) to the bot on Telegram as Alice",
        /收到/,
      );
      expect(voice.text).toContain("你好，這是語音回覆。");
      expect(fakes.transcription.requests.filter((r) => r.status === 200)).toHaveLength(1);

      // In the group: the caption gets the bot's mention, so the picture is answered there.
      const groupBefore = tg.sent.length;
      expect(await fakes.handle(`tg group photo ${samples}/receipt.jpg 多少錢？`)).toBe(
        "sent receipt.jpg as a picture (640×400) to the Telegram group as Alice",
      );
      const inGroup = await tg.waitFor(
        () => tg.sent.slice(groupBefore).find((m) => m.chatId === fakes.group.telegram.id && /個工具/.test(m.text)),
        30_000,
        "the group's picture answered",
      );
      expect(inGroup.text).toMatch(/多少錢？」和 1 張圖片/);

      // Discord: Bob's voice message (flag IS_VOICE_MESSAGE, Ogg Opus) is transcribed and answered.
      const dcBefore = { sent: dc.sent.length, edits: dc.edits.length };
      expect(await fakes.handle("dc voice test/fixtures/speech/speech.ogg")).toBe(
        "sent speech.ogg as a voice message (3 s) to the bot on Discord as Bob",
      );
      // The transcript line is sent first, then the message is edited to it and the answer.
      const dcVoice = await dc.waitFor(
        () =>
          [
            ...dc.sent.slice(dcBefore.sent).map((m) => m.content),
            ...dc.edits.slice(dcBefore.edits).map((e) => String(e.payload.content)),
          ].find((content) => content.includes("收到")),
        30_000,
        "Bob's voice message answered",
      );
      expect(dcVoice).toContain("你好，這是語音回覆。");
      // LINE: Carol's picture is answered.
      const lineBefore = line.sent.length;
      expect(await fakes.handle(`line photo ${samples}/receipt.jpg`)).toBe(
        "sent receipt.jpg as a picture (640×400) to the bot on LINE as Carol",
      );
      const linePhoto = await line.waitFor(
        () => line.sent.slice(lineBefore).find((m) => m.text.includes("收到")),
        30_000,
        "Carol's picture answered",
      );
      expect(linePhoto.text).toMatch(/1 張圖片/);

      // What cannot be sent is said, and nothing is.
      expect(await fakes.handle("tg photo no/such/file.jpg")).toMatch(/^could not read no\/such\/file\.jpg \(ENOENT\)/);
      expect(await fakes.handle(`tg photo ${samples}/notes.md`)).toMatch(/is not a picture/);
      expect(await fakes.handle(`tg voice ${samples}/notes.md`)).toMatch(/is not audio/);
      expect(await fakes.handle("tg photo")).toMatch(/^type tg photo <path> \[caption\]/);
    } finally {
      process.chdir(cwd);
    }
    // The console printed the answers as they came.
    expect(printed.some((l) => l.startsWith("telegram bot: ") && l.includes("你好，這是語音回覆。"))).toBe(true);
    expect(fakes.anthropic.rejections).toEqual([]);
    stopFollowing();
    bot.child.kill("SIGTERM");
    await new Promise((resolve) => (bot.child.exitCode !== null ? resolve(null) : bot.child.on("exit", resolve)));
  } finally {
    stopFollowing();
    await fakes.stop();
    await own.stop();
  }
}, 180_000);

it("npm run fakes never prints a draft below the message that followed it: a draft held back by its once-a-second rule is dropped", async () => {
  // The console prints a private chat's newest draft at most once a second. A draft sent less than a
  // second after the one printed, just before the final message, was printed a poll later, below
  // that message: it read as a draft sent after the answer (`…/stop。`, then `(draft): …/sto`).
  const fakes = await startLocalFakes();
  const printed: string[] = [];
  const stopFollowing = fakes.follow((line) => printed.push(line), 50);
  try {
    const tg = fakes.telegram;
    const call = botCall(tg);
    const alice = tg.user(FAKE_PEOPLE.alice.telegramId, "Alice");
    tg.sendUserMessage({ chat: tg.privateChat(alice), from: alice, text: "慢慢說" });
    await call("sendMessageDraft", { chat_id: alice.id, draft_id: 7, text: "第一行" });
    await tg.waitFor(() => printed.length > 0 || undefined, 5_000, "the first draft printed");
    await call("sendMessageDraft", { chat_id: alice.id, draft_id: 7, text: "第一行，第二" });
    await call("sendMessage", { chat_id: alice.id, text: "第一行，第二行。" });
    await new Promise((r) => setTimeout(r, 1_500)); // past the second that held the draft back
    expect(printed).toEqual(["telegram bot (draft): 第一行", "telegram bot: 第一行，第二行。"]);
    // The next answer's drafts are printed again.
    await call("sendMessageDraft", { chat_id: alice.id, draft_id: 8, text: "下一個回答" });
    await tg.waitFor(() => printed.length > 2 || undefined, 5_000, "the next answer's draft printed");
    expect(printed.slice(2)).toEqual(["telegram bot (draft): 下一個回答"]);
  } finally {
    stopFollowing();
    await fakes.stop();
  }
});
