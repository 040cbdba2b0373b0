/**
 * `npm run fakes` (test/fakes/serve.ts) as a newcomer uses it: started as its own process, it
 * prints the variables of its fake servers on loopback; the bot's `npm start` entry point, given
 * exactly those variables, starts with Telegram, Discord and LINE on, and lines typed into the fakes
 * (`tg …`, `dc …`, `dc /…`, `line …`) reach the bot, whose answers (from the fake Messages API, in
 * the language the person wrote in) the fakes print. A slow answer (`慢慢說`) is stopped with
 * `/stop` on Telegram, the ⏹ button on Discord and `/stop` on LINE. The weather and transcription
 * fakes answer with the printed key.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { MEMORY_BLOCK_START } from "../../src/memory/notes.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import { fakeModelReply, replyLanguage, SLOW_ANSWER_MS } from "../fakes/serve.js";
import { childEnv, nodeArgs, ROOT } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

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
  expect(textOf(fakeModelReply(request("記得我住在新竹")))).toBe(
    "［測試用假模型］收到「記得我住在新竹」，提供了 1 個工具。我是測試用的假伺服器，不是真的模型：每次都只回這一行（寫「慢慢說」可以看一段寫得很慢、可以停止的回答）。",
  );
  expect(textOf(fakeModelReply(request("what's the weather?")))).toMatch(
    /^\[fake Messages API\] I received "what's the weather\?" with 1 tools offered\./,
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
});
