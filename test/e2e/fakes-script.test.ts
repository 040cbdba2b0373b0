/**
 * `npm run fakes` (test/fakes/serve.ts) as a newcomer uses it: started as its own process, it
 * prints the variables of five fake servers on loopback; the bot's `npm start` entry point, given
 * exactly those variables, starts with Telegram and Discord on, and lines typed into the fakes
 * (`tg …`, `dc …`) reach the bot, whose answers (from the fake Messages API) the fakes print. The
 * weather and transcription fakes answer with the printed key.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { nodeArgs, ROOT } from "../helpers/compiled.js";
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
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? "", ...env } });
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

it("npm run fakes prints the variables that run the bot against fake Telegram, Discord, Messages API, CWA and transcription", async () => {
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
      "CWA_API_KEY",
      "CWA_API_BASE",
      "STT_BASE_URL",
    ]),
  );
  // Every address is on loopback, and the bot's configuration accepts the lot.
  for (const name of ["ANTHROPIC_BASE_URL", "TELEGRAM_API_ROOT", "DISCORD_API_URL", "CWA_API_BASE", "STT_BASE_URL"])
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
  fakes.child.stdin!.write("tg 你好，這是 Telegram\n");
  await fakes.waitFor(/^telegram bot: \[fake Messages API\] I received "你好，這是 Telegram"/m);
  fakes.child.stdin!.write("dc hello from Discord\n");
  await fakes.waitFor(/^discord bot(?: \(edited\))?: \[fake Messages API\] I received "hello from Discord"/m);
  fakes.child.stdin!.write("what?\n");
  await fakes.waitFor(/type tg <text> or dc <text>/);

  bot.child.kill("SIGTERM");
  fakes.child.kill("SIGTERM");
  const exited =
    fakes.child.exitCode ?? (await new Promise<number | null>((resolve) => fakes.child.on("exit", resolve)));
  expect(exited).toBe(0);
}, 120_000);
