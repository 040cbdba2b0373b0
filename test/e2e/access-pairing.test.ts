/**
 * Issue 13 end to end on Telegram with the default policy, `pairing`: the real grammy adapter and
 * worker against the fake Bot API and the strict fake Messages API, a real Redis, and the real
 * `npm run access` CLI against the running bot: once as its own process, else its `accessMain`
 * in this process. One admin
 * (`ADMIN_USERS`), one env-allowed user, and a daily budget of a few hundred tokens.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Chat, User } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { accessMain } from "../../src/cli/access.js";
import { runCli, type CliRun } from "../helpers/cli.js";
import { childEnv, nodeArgs } from "../helpers/compiled.js";
import { PAIRING_CODES_PER_PLATFORM_PER_HOUR } from "../../src/access/store.js";
import { MemoryStore } from "../../src/memory/store.js";
import { itOneRedis } from "../helpers/cluster.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, modelSaw, QUIET_WINDOW_MS } from "./scenarios-common.js";

const ADMIN = 95000;
const ALLOWED = 95001;
/**
 * Less than any model call costs (the system prompt and tool schemas alone are more): one call
 * crosses it, so the served users below ask what the model answers in one call (`say …`).
 */
const BUDGET = 300;

let stack: Stack;
let redis: RedisClient;
useStack(
  {
    env: {
      ACCESS_POLICY: "pairing",
      ADMIN_USERS: `telegram:${ADMIN}`,
      ALLOWED_USERS: ` telegram:${ALLOWED} `,
      USER_DAILY_TOKENS: String(BUDGET),
      RATE_LIMIT_PER_MINUTE: "10",
      MAX_QUEUED_PER_CHAT: "20",
    },
  },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const exec = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));

/** The environment of `npm run access` here: the stack's Redis and fake Bot API, the admin and the env-allowed user. */
function accessEnv(): NodeJS.ProcessEnv {
  return childEnv({
    HOME: process.env.HOME,
    LOG_LEVEL: "silent",
    ...stack.redis.env,
    TELEGRAM_BOT_TOKEN: stack.config.TELEGRAM_BOT_TOKEN,
    TELEGRAM_API_ROOT: stack.config.TELEGRAM_API_ROOT,
    ADMIN_USERS: `telegram:${ADMIN}`,
    ALLOWED_USERS: `telegram:${ALLOWED}`,
    MODEL_PRICES: "15,75,18.75,1.5",
  });
}

/** `npm run access -- ...args` against the running bot, run in this process (`accessMain`). */
function access(...args: string[]): Promise<CliRun> {
  return runCli(accessMain, args, accessEnv());
}

/** `npm run access -- ...args` as its own process (the program itself: `.env`, exit code, output). */
async function accessProcess(...args: string[]): Promise<CliRun> {
  try {
    const { stdout, stderr } = await exec(process.execPath, nodeArgs("src/cli/access.ts", ...args), {
      cwd: root,
      env: accessEnv(),
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

/** `from` writes `text` in `chat`; resolves with the bot's next message there. */
async function ask(chat: Chat, from: User, text: string): Promise<FakeSentMessage> {
  return (await stack.telegram.ask({ chat, from, text }, ANSWER_TIMEOUT_MS)).answer;
}

/** Sends and checks that nothing comes back within the quiet window. */
async function silent(chat: Chat, from: User, text: string): Promise<void> {
  const before = sentTo(chat).length;
  stack.telegram.sendUserMessage({ chat, from, text });
  await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
  expect(sentTo(chat).slice(before)).toEqual([]);
}

const CODE = /`?([A-HJ-NP-Z2-9]{8})`?/;

/** Per test, in ms: the CLI runs as its own process (tsx start-up takes seconds on a busy machine). */
const CLI_TEST_TIMEOUT_MS = 120_000;

describe("pairing (the default policy)", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("a stranger gets a pairing code (the same on retry), nothing reaches the model; npm run access -- approve lets them in", async () => {
    const tg = stack.telegram;
    const stranger = tg.user(95100, "Stranger");
    const dm = tg.privateChat(stranger);
    const first = await ask(dm, stranger, "secret plan: calc 1 + 1");
    const code = CODE.exec(first.text)?.[1];
    expect(code).toBeDefined();
    expect(first.text).toContain("配對碼");
    const again = await ask(dm, stranger, "hello? calc 2 + 2");
    expect(CODE.exec(again.text)?.[1]).toBe(code);
    expect(modelSaw(stack, "secret plan")).toBe(false);
    expect(modelSaw(stack, "hello?")).toBe(false);
    expect(await redis.exists(`history:{telegram:${stranger.id}}`)).toBe(0);

    const list = await access("list");
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("ACCESS_POLICY: pairing");
    expect(list.stdout).toContain(`${code}  telegram:${stranger.id}  Stranger`);
    // The expiry in the bot's TIMEZONE (Asia/Taipei by default), with its offset: not UTC.
    expect(list.stdout).toMatch(
      new RegExp(
        `${code}  telegram:${stranger.id}  Stranger  expires \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\+08:00\n`,
      ),
    );

    const wrong = await access("approve", "ZZZZZZZZ");
    expect(wrong.code).toBe(1);
    const before = sentTo(dm).length;
    // The program itself once; every other command runs in this process.
    const approved = await accessProcess("approve", code!.toLowerCase());
    expect(approved.stderr).toBe("");
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`approved Stranger (telegram:${stranger.id})`);
    const told = await tg.waitFor(() => sentTo(dm)[before], ANSWER_TIMEOUT_MS, "you are in");
    expect(told.text).toContain("你已獲得使用許可");

    const answer = await ask(dm, stranger, "say 42");
    expect(answer.text).toBe("You said: say 42");
    expect(modelSaw(stack, "say 42")).toBe(true);
    expect((await access("list")).stdout).toContain(`allowed users (granted): telegram:${stranger.id}`);
  });

  itOneRedis("an admin approves a code with /approve in a DM; others are refused", async () => {
    const tg = stack.telegram;
    const stranger = tg.user(95101, "Visitor");
    const code = CODE.exec((await ask(tg.privateChat(stranger), stranger, "hi there")).text)?.[1];
    expect(code).toBeDefined();
    const member = tg.user(ALLOWED, "Allowed");
    expect((await ask(tg.privateChat(member), member, `/approve ${code}`)).text).toContain("只有機器人管理員");
    const admin = tg.user(ADMIN, "Owner");
    const before = sentTo(tg.privateChat(stranger)).length;
    expect((await ask(tg.privateChat(admin), admin, `/approve ${code}`)).text).toContain(
      `已核准 Visitor（telegram:${stranger.id}）`,
    );
    await tg.waitFor(() => sentTo(tg.privateChat(stranger))[before], ANSWER_TIMEOUT_MS, "you are in");
    expect((await ask(tg.privateChat(stranger), stranger, "say 9")).text).toBe("You said: say 9");
  });

  itOneRedis(
    "approving a code again says it was approved already (whom, by whom, when), on /approve and npm run access; " +
      "an old code never approves again",
    async () => {
      const tg = stack.telegram;
      const admin = tg.user(ADMIN, "Owner");
      const adminDm = tg.privateChat(admin);
      const guest = tg.user(95110, "Guest");
      const code = CODE.exec((await ask(tg.privateChat(guest), guest, "hello"))?.text)?.[1];
      expect(code).toBeDefined();
      const before = sentTo(tg.privateChat(guest)).length;
      expect((await ask(adminDm, admin, `/approve ${code}`)).text).toBe(`已核准 Guest（telegram:${guest.id}）。`);
      // "You are in" first: the second /approve below must not tell them again.
      await tg.waitFor(() => sentTo(tg.privateChat(guest))[before], ANSWER_TIMEOUT_MS, "you are in");
      const kept = await redis.ttl(`access:{access}:approved:${code}`);
      expect(kept).toBeGreaterThan(86_400 - 60);
      expect(kept).toBeLessThanOrEqual(86_400);

      // Again, as typed (lower case, a dash): approved already, by whom and when — not "mistyped or expired".
      const typed = `${code!.slice(0, 4).toLowerCase()}-${code!.slice(4)}`;
      const again = (await ask(adminDm, admin, `/approve ${typed}`)).text;
      expect(again).toMatch(
        new RegExp(
          `^配對碼「${code}」已經核准過了：Guest（telegram:${guest.id}）` +
            `已於 \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d 由 Owner \\(telegram:${ADMIN}\\) 核准。$`,
        ),
      );
      const cli = await access("approve", code!);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe("");
      expect(cli.stderr.trim()).toMatch(
        new RegExp(
          `^Pairing code “${code}” was approved already: Guest \\(telegram:${guest.id}\\), ` +
            `by Owner \\(telegram:${ADMIN}\\) on \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\.$`,
        ),
      );
      // Not told "you are in" again.
      await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
      expect(sentTo(tg.privateChat(guest))).toHaveLength(before + 1);

      // Revoked, the old code does not let them back in: it only says it was approved before.
      expect((await access("revoke", `telegram:${guest.id}`)).code).toBe(0);
      expect((await ask(adminDm, admin, `/approve ${code}`)).text).toMatch(/^配對碼「.+」已經核准過了：/);
      expect(await redis.sismember("access:{access}:users", `telegram:${guest.id}`)).toBe(0);
      expect((await ask(tg.privateChat(guest), guest, "hello again")).text).toContain("配對碼");

      // Approved with npm run access: /approve names the command line. A name is shown as it was written, never as formatting.
      const other = tg.user(95111, "*Caller*");
      const second = CODE.exec((await ask(tg.privateChat(other), other, "hi"))?.text)?.[1];
      expect((await access("approve", second!)).code).toBe(0);
      expect((await ask(adminDm, admin, `/approve ${second}`)).text).toMatch(
        new RegExp(
          `^配對碼「${second}」已經核准過了：\\*Caller\\*（telegram:${other.id}）已於 .+ 由 命令列（npm run access） 核准。$`,
        ),
      );
      // A code never given is still "mistyped or expired".
      expect((await ask(adminDm, admin, "/approve ZZZZZZZZ")).text).toContain("找不到配對碼");
      expect((await ask(adminDm, admin, "/approve **ZZ**")).text).toMatch(/^找不到配對碼「\*\*ZZ\*\*」/);
    },
  );

  itOneRedis(
    "a stranger is answered in their language (the client's, else the one they write in), and told they are in in it",
    async () => {
      const tg = stack.telegram;
      // An English Telegram client: English, whatever the text.
      const visitor = tg.user(95102, "Visitor", { language_code: "en" });
      const dm = tg.privateChat(visitor);
      const first = await ask(dm, visitor, "你好");
      expect(first.text).toContain("Hi! This is a private bot");
      const code = CODE.exec(first.text)?.[1];
      const before = sentTo(dm).length;
      expect((await access("approve", code!)).stdout).toContain("they were told they are in");
      const told = await tg.waitFor(() => sentTo(dm)[before], ANSWER_TIMEOUT_MS, "you are in");
      expect(told.text).toMatch(/^You're in/);
      // No client language (Discord and LINE never tell it): the script of the text.
      const english = tg.user(95103, "Traveller", { language_code: undefined });
      expect((await ask(tg.privateChat(english), english, "hello, can you help?")).text).toContain(
        "Hi! This is a private bot",
      );
      const chinese = tg.user(95104, "阿明", { language_code: undefined });
      expect((await ask(tg.privateChat(chinese), chinese, "hi 你好")).text).toContain("你的配對碼");
      // A command (Telegram's first contact is /start): the app's language, never the command's letters.
      const starter = tg.user(95106, "Starter", { language_code: "en-US" });
      expect((await ask(tg.privateChat(starter), starter, "/start")).text).toContain("Hi! This is a private bot");
      const starter2 = tg.user(95107, "阿華");
      expect((await ask(tg.privateChat(starter2), starter2, "/start")).text).toContain("你的配對碼");
      // Nothing to tell by (digits only): BOT_LOCALE.
      const digits = tg.user(95105, "Digits", { language_code: undefined });
      expect((await ask(tg.privateChat(digits), digits, "123")).text).toContain("你的配對碼");
    },
  );

  itOneRedis(
    "names with line breaks, terminal escapes and bidi controls are one plain row in npm run access -- list",
    async () => {
      const tg = stack.telegram;
      const forged = `Eve\n  ZZZZZZZZ  telegram:${ADMIN}  Owner  expires 2099-01-01T00:00:00.000Z`;
      const eve = tg.user(96200, forged, { last_name: "\u202Egnp.exe\u001b[2J\u0007\u200B" });
      const code = CODE.exec((await ask(tg.privateChat(eve), eve, "hi")).text)?.[1];
      expect(code).toBeDefined();
      const list = await access("list");
      expect(list.code).toBe(0);
      const rows = list.stdout.split("\n");
      // One line, spaces for the line break and the controls, the bidi and zero-width characters gone; the listing shows 64 characters of it.
      const plain = `Eve ZZZZZZZZ telegram:${ADMIN} Owner expires 2099-01-01T00:00:00.000Z gnp.exe [2J`;
      expect(
        rows.filter((r) => r.startsWith(`  ${code}  telegram:${eve.id}  ${plain.slice(0, 64)}  expires 20`)),
      ).toHaveLength(1);
      // No row of its own for the forged id, and no control or bidi character reaches the terminal.
      expect(
        rows
          .filter((r) => r.includes(`telegram:${ADMIN}`) && !r.startsWith(`  ${code}  `))
          .every((r) => r.startsWith("admins (ADMIN_USERS)")),
      ).toBe(true);
      expect(list.stdout.replace(/\n/g, "")).not.toMatch(/[\p{Cc}\p{Cf}]/u);
      const approved = await access("approve", code!);
      expect(approved.stdout).toBe(`approved ${plain.slice(0, 64)} (telegram:${eve.id})\nthey were told they are in\n`);
    },
  );

  itOneRedis(
    "a group that is not enabled stays silent (one note a day); /enable by an admin makes it answer; a member's /enable and /reset are refused",
    async () => {
      const tg = stack.telegram;
      const group = tg.group(-1009500100, "陌生群組");
      const ann = tg.user(95200, "Ann");
      const admin = tg.user(ADMIN, "Owner");
      const bot = `@${tg.bot.username}`;
      const requests = stack.model.requests.length;
      const note = await ask(group, ann, `${bot} calc 5 * 5`);
      expect(note.text).toContain("/enable");
      await silent(group, ann, `${bot} calc 5 * 6`);
      expect(stack.model.requests.length).toBe(requests);
      expect(modelSaw(stack, "calc 5 *")).toBe(false);

      expect((await ask(group, ann, "/enable")).text).toContain("只有機器人管理員");
      expect((await ask(group, admin, "/enable")).text).toContain("已在這裡啟用");
      const answer = await ask(group, ann, `${bot} say 49`);
      expect(answer.text).toContain("49");

      expect((await ask(group, ann, "/reset")).text).toContain("只有群組管理員");
      expect(await redis.exists(`history:{telegram:${group.id}}`)).toBe(1);
      expect((await ask(group, admin, "/reset")).text).toContain("忘掉");
      expect(await redis.exists(`history:{telegram:${group.id}}`)).toBe(0);

      expect((await ask(group, admin, "/disable")).text).toContain("已在這裡停用");
      await silent(group, ann, `${bot} calc 8 * 8`);
      expect(modelSaw(stack, "calc 8 * 8")).toBe(false);
    },
  );

  it(
    "a budget of a few hundred tokens is crossed by one model call: the run stops before the " +
      "next; the next message is refused without a model call; /usage shows the model's usage",
    async () => {
      const tg = stack.telegram;
      const user = tg.user(ALLOWED, "Allowed");
      const dm = tg.privateChat(user);
      const first = await ask(dm, user, "calc 1201 * 3");
      // The budget is checked before every model call: the call that would have answered the tool result is not made.
      expect(first.text).toContain("今天的用量已達上限");
      const used = stack.model.answered.filter((a) => JSON.stringify(a.request.messages).includes("calc 1201 * 3"));
      expect(used.length).toBe(1); // the tool call only
      const sum = (k: "input_tokens" | "output_tokens" | "cache_creation_input_tokens" | "cache_read_input_tokens") =>
        used.reduce((n, a) => n + a.usage[k], 0);
      const total =
        sum("input_tokens") +
        sum("output_tokens") +
        sum("cache_creation_input_tokens") +
        sum("cache_read_input_tokens");
      expect(total).toBeGreaterThan(BUDGET);

      const requests = stack.model.requests.length;
      const refused = await ask(dm, user, "calc 1301 * 3");
      expect(refused.text).toContain("今天的用量已達上限");
      expect(refused.text).toContain("Asia/Taipei");
      expect(stack.model.requests.length).toBe(requests);
      expect(modelSaw(stack, "calc 1301 * 3")).toBe(false);

      const usage = (await ask(dm, user, "/usage")).text;
      expect(usage).toContain(
        `${total} tokens，${used.length} 次模型呼叫（輸入 ${sum("input_tokens")}、輸出 ${sum("output_tokens")}、` +
          `快取寫入 ${sum("cache_creation_input_tokens")}、快取讀取 ${sum("cache_read_input_tokens")}）`,
      );
      expect(usage).toContain(`剩 0 / ${BUDGET} tokens（今天已計 `);
      expect(usage).toContain("額度以計費等值 tokens 計算：輸入 ×1、快取寫入 ×1.25、快取讀取 ×0.1、輸出 ×5");

      // The admin has no budget, and sees everyone's usage; the CLI shows the same figures with the cost.
      const admin = tg.user(ADMIN, "Owner");
      const all = (await ask(tg.privateChat(admin), admin, "/usage all")).text;
      // The top list ranks budget tokens: input + 1.25 × cache writes + 0.1 × cache reads + 5 × output (no MODEL_PRICES in the bot).
      const budgetTokens = used.reduce(
        (n, a) =>
          n +
          Math.round(
            a.usage.input_tokens +
              1.25 * a.usage.cache_creation_input_tokens +
              0.1 * a.usage.cache_read_input_tokens +
              5 * a.usage.output_tokens,
          ),
        0,
      );
      expect(all).toContain(`telegram:${ALLOWED} — 額度計 ${budgetTokens} tokens`);
      expect((await ask(dm, user, "/usage all")).text).toContain("只有機器人管理員");
      const cli = await access("usage", `telegram:${ALLOWED}`);
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain(`${total} tokens in ${used.length} model ${used.length === 1 ? "call" : "calls"}`);
      expect(cli.stdout).toMatch(/Estimated cost: today \$\d/);
    },
  );

  itOneRedis(
    "the CLI refuses to revoke an env-listed user and says where it comes from; allow and revoke work while the bot runs",
    async () => {
      const revoke = await access("revoke", `telegram:${ALLOWED}`);
      expect(revoke.code).toBe(2);
      expect(revoke.stderr).toContain("has access through ALLOWED_USERS in the environment (.env)");
      const tg = stack.telegram;
      const carol = tg.user(95300, "Carol");
      expect((await access("allow", `telegram:${carol.id}`)).code).toBe(0);
      expect((await ask(tg.privateChat(carol), carol, "say 42")).text).toBe("You said: say 42");
      expect((await access("revoke", `telegram:${carol.id}`)).code).toBe(0);
      expect(CODE.test((await ask(tg.privateChat(carol), carol, "calc 2 * 22")).text)).toBe(true);
      expect((await access("allow", "nonsense")).code).toBe(2);
    },
  );

  // Four CLI processes: on one Redis only (the cluster run gains nothing here: the memory store's keys are one per
  // person, tested on the cluster by memory-telegram).
  it.skipIf(process.env.TEST_REDIS === "cluster")(
    "npm run access -- memory / forget show and erase a person's memory, the terminal chat's user's too; a group is refused",
    async () => {
      const memory = new MemoryStore(redis);
      const person = { kind: "personal" as const, platform: "telegram" as const, userId: String(ALLOWED) };
      const terminal = { kind: "personal" as const, platform: "console" as const, userId: "root" };
      await memory.update(person, () => ({
        files: new Map([["/memories/home.md", "住在新竹\n\u001b[31m養貓"]]),
        result: undefined,
      }));
      await memory.update(terminal, () => ({
        files: new Map([["/memories/me.md", "prefers English"]]),
        result: undefined,
      }));

      const shown = await access("memory", `telegram:${ALLOWED}`);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain(`memory of telegram:${ALLOWED}`);
      expect(shown.stdout).toContain("/memories/home.md");
      expect(shown.stdout).toContain("  住在新竹\n");
      expect(shown.stdout).not.toContain("\u001b"); // the model's words reach the terminal as plain text
      const console_ = await access("memory", "console:root");
      expect(console_.code).toBe(0);
      expect(console_.stdout).toContain("memory of console:root");
      expect(console_.stdout).toContain("  prefers English");

      expect((await access("forget", "console:root")).stdout).toContain("erased the memory of console:root (1 file)");
      expect(await memory.read(terminal)).toEqual([]);
      expect((await memory.read(person)).length).toBe(1); // nobody else's
      const group = await access("memory", "telegram:-100123");
      expect(group.code).toBe(2);
      expect(group.stderr).toContain("is a Telegram group, not a person");
    },
  );

  // Last in the file: the flood uses up this hour's new codes on Telegram.
  it(
    "issue 39 (8): a flood of 50 throwaway accounts cannot push out a real stranger's code; new " +
      "strangers are told to try again in an hour, and npm run access -- list shows the flood",
    async () => {
      const tg = stack.telegram;
      const real = tg.user(96300, "RealPerson");
      const realCode = CODE.exec((await ask(tg.privateChat(real), real, "hello, I was invited")).text)?.[1];
      expect(realCode).toBeDefined();
      const flood = Array.from({ length: 50 }, (_, i) => tg.user(96400 + i, `Throwaway${i}`));
      const answers = await Promise.all(
        flood.map(async (account) => (await ask(tg.privateChat(account), account, "hi")).text),
      );
      const busy = "這是私人機器人。這一小時內要配對碼的人太多了，請一小時後再試。";
      const given = answers.filter((a) => CODE.test(a) && a.includes("配對碼"));
      expect(given.length).toBeLessThan(PAIRING_CODES_PER_PLATFORM_PER_HOUR);
      expect(answers.filter((a) => a === busy)).toHaveLength(50 - given.length);
      // A new stranger after the flood waits too; a throwaway writing again hears nothing more this hour.
      const late = tg.user(96500, "Late");
      expect((await ask(tg.privateChat(late), late, "hello")).text).toBe(busy);
      const turnedAway = answers.findIndex((a) => a === busy);
      await silent(tg.privateChat(flood[turnedAway]!), flood[turnedAway]!, "hello again");

      const list = await access("list");
      expect(list.code).toBe(0);
      expect(list.stdout).toContain(`${realCode}  telegram:${real.id}  RealPerson`);
      const refused = 50 - given.length + 2; // the throwaways turned away, Late, and the throwaway that wrote again
      expect(list.stdout).toMatch(
        new RegExp(
          `^ {2}telegram: ${refused} new strangers refused by the limit of ${PAIRING_CODES_PER_PLATFORM_PER_HOUR} ` +
            `new codes an hour \\(a flood of new accounts\\?\\), 0 over the limit of 3 codes a day per person — since \\d{4}-`,
          "m",
        ),
      );
      expect(
        stack.logs().filter((l) => String(l.msg).startsWith("pairing codes for new strangers are used up")),
      ).toHaveLength(1);
      // The real stranger's code survived the flood.
      expect((await access("approve", realCode!)).code).toBe(0);
      expect((await ask(tg.privateChat(real), real, "say hi")).text).toBe("You said: say hi");
    },
  );
});
