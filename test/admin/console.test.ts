/**
 * The operator's web console (src/admin/), end to end in a real browser: Debian's headless
 * Chromium (`/usr/bin/chromium`, no browser download) driven by playwright-core logs in with the
 * token, reads the overview with the queue names, approves a pairing code, revokes an "always
 * allow" grant, erases a person's memory (whose contents the page never shows) and pauses a task
 * through the pages' own forms; the refusals (a wrong token, a change without its CSRF token, a
 * change from another origin, a one-time link used twice) are plain HTTP requests. Real Redis,
 * real BullMQ queues, the real health server. Screenshots go to test-results/console/.
 */
import { mkdirSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAdminConsole, noticeText, USAGE_CSP, type AdminConsole } from "../../src/admin/console.js";
import { REFUSALS } from "../../src/admin/pages.js";
import { CSV_COLUMNS, csvCell } from "../../src/admin/usage.js";
import { AccessStore } from "../../src/access/store.js";
import { grantStoreFor } from "../../src/approvals/grants.js";
import { MemoryStore } from "../../src/memory/store.js";
import { startHealthServer } from "../../src/health.js";
import type { RedisClient } from "../../src/redis.js";
import { CHATS_QUEUE } from "../../src/queue/keys.js";
import { occurrenceJobId, ReminderScheduler, REMINDERS_QUEUE } from "../../src/reminders/schedule.js";
import { addReminder, getReminder, updateReminder } from "../../src/reminders/store.js";
import { TaskScheduler, TASKS_QUEUE } from "../../src/tasks/schedule.js";
import { addTask, getTask } from "../../src/tasks/store.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { TraceStore } from "../../src/trace/store.js";
import { budgetTokensOf, costOf, periodOf, priceDeltaOf, UsageStore } from "../../src/usage/store.js";
import { outputWeightFor } from "../../src/usage/budget.js";
import { pricesFor, type Config } from "../../src/config.js";
import { connectRedis } from "../../src/redis.js";
import { startStack, type Stack } from "../e2e/harness.js";
import { eventually, localIso, remindersModel } from "../e2e/reminders-helpers.js";
import { testConfig } from "../helpers/config.js";
import { fakePastedSecrets, fakeTelegramToken } from "../helpers/fake-tokens.js";
import { captureLogger } from "../helpers/log.js";
import { useRedis } from "../helpers/use-redis.js";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = "test-results/console";
const TOKEN = "t0ken-for-the-console-test-0123456789abcdef";

let fileRedis: RedisClient;
let redis: RedisClient;
useRedis((r) => (redis = fileRedis = r));

/**
 * A console on a health server of its own (port 0), over real queues; on the file's Redis, or on
 * `on` (another Redis connection, with its bot's configuration).
 */
async function startConsole(
  env: Record<string, string> = {},
  on?: { redis?: RedisClient; config?: Config; now?: () => number },
) {
  const config = on?.config
    ? { ...on.config, ADMIN_CONSOLE: "on" as const, BOT_LOCALE: "en" as const, ADMIN_CONSOLE_TOKEN: TOKEN }
    : testConfig({ ADMIN_CONSOLE: "on", HEALTH_PORT: "9", BOT_LOCALE: "en", ...env });
  const redis = on?.redis ?? fileRedis;
  const { log, lines } = captureLogger("info");
  const queues = [CHATS_QUEUE, TASKS_QUEUE, REMINDERS_QUEUE].map((name) => new Queue(name, { connection: redis }));
  const toolbox = new ToolBox([
    defineTool({
      name: "shell_note",
      description: "Writes a note.",
      tags: ["notes"],
      dangerous: true,
      input: z.object({ text: z.string() }),
      run: () => "ok",
    }),
  ]);
  const admin: AdminConsole = createAdminConsole({
    config,
    log,
    redis,
    queues,
    checks: { redis: async () => (await redis.ping()) === "PONG" },
    toolbox: () => toolbox,
    ...(on?.now ? { now: on.now } : {}),
  });
  const server: Server = await startHealthServer(0, { redis: () => true }, undefined, "127.0.0.1", admin);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    admin,
    queues,
    lines,
    close: async () => {
      server.close();
      await Promise.all(queues.map((q) => q.close()));
    },
  };
}

const form = (fields: Record<string, string>) => ({
  method: "POST",
  redirect: "manual" as const,
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

/** Logs in with the token over plain HTTP; returns the cookie header and the session's CSRF token (read from a page's form). */
async function login(base: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${base}/admin/login`, form({ token: TOKEN }));
  expect(res.status).toBe(303);
  const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
  const page = await (await fetch(`${base}/admin/overview`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
  return { cookie, csrf };
}

/** The console started with a token login. */
type ConsoleStack = Awaited<ReturnType<typeof startConsole>>;

/**
 * Starts the console (token login) and Debian's headless Chromium before a describe's tests, hands
 * both to `set`, and closes them after.
 */
function useConsoleBrowser(set: (browser: Browser, stack: ConsoleStack) => void): void {
  let browser: Browser | undefined;
  let stack: ConsoleStack | undefined;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    set(browser, stack);
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });
}

describe("the console in a real browser", () => {
  let browser: Browser;
  let stack: ConsoleStack;
  useConsoleBrowser((b, s) => {
    browser = b;
    stack = s;
  });

  it("logs in; reads queues, model calls, a trace; approves a pairing, revokes a grant, erases a memory, pauses a task; logs no content", async () => {
    const access = new AccessStore(redis);
    const paired = await access.pair({ platform: "telegram", userId: "4242", chatId: "4242", userName: "Mei" });
    expect(paired.status).toBe("new");
    const code = (paired as { code: string }).code;
    const owner = { platform: "telegram" as const, userId: "77" };
    const task = (await addTask(
      redis,
      owner,
      {
        instruction: "secret plans for the weekend",
        at: Date.now() + 3_600_000,
        next: Date.now() + 3_600_000,
        repeat: "daily",
        timezone: "Asia/Taipei",
        chatId: "77",
        chatKind: "dm",
        userName: "Lin",
        createdAt: Date.now(),
      },
      10,
    ))!;
    await new TaskScheduler(stack.queues[1]! as Queue).schedule(owner, task);
    const grants = grantStoreFor(redis, testConfig());
    const grantee = { platform: "telegram" as const, userId: "88", chatId: "-100200", topicId: "7" };
    await grants.grant(grantee, "shell_note");
    const memory = new MemoryStore(redis);
    const scope = { kind: "personal" as const, platform: "telegram" as const, userId: "99" };
    await memory.update(scope, () => ({
      files: new Map([["/memories/tea.md", "likes oolong tea"]]),
      result: undefined,
    }));

    // Two model calls in the traces (what `npm run trace` reads): one answered in 1200 ms, one failed.
    const run = new TraceStore(redis).startRun({ chat: "telegram:77" });
    run.event("model_call", { model: "claude-test-1", turn: 1 });
    run.event("model_response", { stopReason: "end_turn", durationMs: 1200 });
    run.event("model_call", { model: "claude-test-1", turn: 2 });
    run.event("error", { where: "model_call", error: "ModelUnavailableError", status: 529 });
    expect(await run.finish()).toBe(true);

    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    page.setDefaultTimeout(5000);
    await page.goto(`${stack.base}/admin`);
    expect(new URL(page.url()).pathname).toBe("/admin/login");
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForURL(/\/admin\/overview$/);
    const cookie = (await page.context().cookies()).find((c) => c.name === "bot_admin")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/admin" });
    const modelRow = await page.locator("table").nth(1).locator("tbody tr td").allTextContents();
    expect(modelRow).toEqual(["claude-test-1", "2", "1", "1200", "1200"]);
    const queueCells = await page.locator("table").nth(2).locator("tbody tr td:first-child").allTextContents();
    expect(queueCells).toEqual([CHATS_QUEUE, TASKS_QUEUE, REMINDERS_QUEUE]);
    await page.screenshot({ path: `${SHOTS}/overview.png`, fullPage: true });

    await page.click("nav >> text=Traces");
    await page.click("text=telegram:77");
    await page.waitForURL(/\/admin\/traces\?c=telegram%3A77$/);
    const events = await page.locator("tbody tr td:nth-child(2)").allTextContents();
    expect(events).toEqual(["model_call", "model_response", "model_call", "error"]);
    expect(await page.locator("main").textContent()).toContain("durationMs=1200");
    await page.screenshot({ path: `${SHOTS}/traces.png`, fullPage: true });

    await page.click("nav >> text=Tools");
    await expect.poll(() => page.locator("td code").first().textContent()).toBe("shell_note");
    await page.screenshot({ path: `${SHOTS}/tools.png`, fullPage: true });

    await page.click("nav >> text=Access");
    await page.click(`button:has-text("Approve ${code}")`);
    await page.waitForURL(/\/admin\/access\?notice=/);
    expect(await page.locator(".notice").textContent()).toContain("Approved telegram:4242");
    expect(await access.hasUser("telegram:4242")).toBe(true);
    expect(await access.pending()).toEqual([]);
    await page.fill("#allow-chat", "telegram:-100555");
    await page.click("form.add >> nth=1 >> button");
    await page.waitForURL(/\/admin\/access\?notice=/);
    expect(await page.locator(".notice").textContent()).toBe("Allowed telegram:-100555.");
    expect(await access.hasAnyChat(["telegram:-100555"])).toBe(true);
    await page.fill("#allow-user", "telegram:-100555");
    await page.click("form.add >> nth=0 >> button");
    await page.waitForURL(/\/admin\/access\?notice=/);
    expect(await page.locator(".notice").textContent()).toContain("Expected platform:id");
    await page.click(`button:has-text("Revoke shell_note")`);
    await page.waitForURL(/\/admin\/access\?notice=/);
    expect(await page.locator(".notice").textContent()).toBe("Revoked telegram:88's always-allow of shell_note.");
    expect(await grants.list(grantee)).toEqual([]);
    await page.screenshot({ path: `${SHOTS}/access.png`, fullPage: true });

    await page.click("nav >> text=Memory");
    const memoryText = (await page.locator("main").textContent())!;
    expect(memoryText).toContain("telegram:99");
    expect(memoryText).not.toContain("oolong");
    await page.screenshot({ path: `${SHOTS}/memory.png`, fullPage: true });
    await page.click(`button:has-text("Erase telegram:99")`);
    await page.waitForURL(/\/admin\/memory\?notice=/);
    expect(await page.locator(".notice").textContent()).toBe("Erased the memory of personal telegram:99 (1 file).");
    expect(await memory.read(scope)).toEqual([]);

    await page.click("nav >> text=Tasks and reminders");
    expect(await page.locator("main").textContent()).toContain("secret plans for the weekend");
    await page.click(`button:has-text("Pause #${task.id}")`);
    await page.waitForURL(/\/admin\/tasks\?notice=/);
    expect(await page.locator(".notice").textContent()).toBe(`Paused task #${task.id}.`);
    expect((await getTask(redis, owner, task.id))!.paused?.by).toBe("operator");
    expect(await stack.queues[1]!.getJobSchedulersCount()).toBe(0);
    expect(await page.locator(`button:has-text("Resume #${task.id}")`).count()).toBe(1);
    await page.screenshot({ path: `${SHOTS}/tasks.png`, fullPage: true });

    // Bull Board behind the same login: its page (drawn by its own script, under its policy) and API answer this session.
    const browserErrors: string[] = [];
    page.on("console", (m) => void (m.type() === "error" && browserErrors.push(m.text())));
    const outside: string[] = [];
    page.on("request", (r) => void (new URL(r.url()).host !== new URL(stack.base).host && outside.push(r.url())));
    await page.click("nav >> text=Queues");
    await page.waitForURL(/\/admin\/queues\/$/);
    await expect.poll(() => page.locator(`text=${TASKS_QUEUE}`).count()).toBeGreaterThan(0);
    await page.screenshot({ path: `${SHOTS}/queues.png`, fullPage: true });
    // No stylesheet from Google Fonts: no policy violation logged, no request leaves this host.
    expect(browserErrors).toEqual([]);
    expect(outside).toEqual([]);
    expect(await (await page.request.get(`${stack.base}/admin/queues/`)).text()).not.toContain("fonts.googleapis");
    const api = await page.request.get(`${stack.base}/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10`);
    expect(api.status()).toBe(200);
    expect(((await api.json()) as { queues: { name: string }[] }).queues.map((q) => q.name).sort()).toEqual(
      [CHATS_QUEUE, REMINDERS_QUEUE, TASKS_QUEUE].sort(),
    );
    await page.close();

    const audit = stack.lines.map((l) => JSON.parse(l) as { action?: string; outcome?: string });
    expect(audit.filter((l) => l.action).map((l) => `${l.action} ${l.outcome}`)).toEqual([
      "login ok",
      "pairing.approve ok",
      "chat.allow ok",
      "user.allow not platform:id",
      "grant.revoke ok",
      "memory.erase ok",
      "task.pause ok",
    ]);
    expect(stack.lines.join("\n")).not.toContain("secret plans");
    expect(stack.lines.join("\n")).not.toContain("oolong");
    expect(stack.lines.join("\n")).not.toContain(TOKEN);
  });
});

describe("the queue pages (Bull Board) show no content and no credential", () => {
  let browser: Browser;
  let stack: ConsoleStack;
  useConsoleBrowser((b, s) => {
    browser = b;
    stack = s;
  });

  it("hides a message's text, pasted secrets and a LINE reply token; shows the chat id, sizes and a way back", async () => {
    const pasted = fakePastedSecrets();
    const secrets = [pasted.anthropic, fakeTelegramToken("900000001"), pasted.github, "hunter2"];
    const text = `please remember my keys: ${secrets.slice(0, 3).join(" ")} and password=hunter2, thanks oolong`;
    const replyToken = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6";
    const chatId = "Cfeedface0123456789abcdef0123456";
    const [chats, , reminders] = stack.queues as Queue[];
    await chats!.add(
      "message",
      {
        platform: "line",
        chatId,
        chatKind: "group",
        userId: "Udeadbeef0123456789abcdef0123456",
        userName: "Mei Lin",
        text,
        messageId: "5550001",
        sentAt: Date.now(),
        reply: { replyToken, replyTokenAt: Date.now() },
        media: [{ kind: "image", fileId: "AgACAgUAAxkBAAIfake", size: 2048, name: "my-passport-scan.png" }],
      },
      { jobId: `line-${chatId}-5550001` },
    );
    // A queue the console does not know the shape of (a new feature's): its content hides by its key,
    // or by its length under a key it does not know; a scheduler's template is formatted too.
    const essay = "a long unknown field that reads like a person's words, ".repeat(4);
    await reminders!.upsertJobScheduler(
      "rem-line-test-1",
      { every: 3_600_000 },
      { name: "remind", data: { platform: "line", userId: "U1", reminderId: 1, text: "call mum at 6 oolong", essay } },
    );
    // A failed job: Bull Board has no formatter for its reason and stack trace; the adapter redacts them.
    const tasks = stack.queues[1] as Queue;
    const connection = (redis as Redis).duplicate({ maxRetriesPerRequest: null });
    const worker = new Worker(
      TASKS_QUEUE,
      () => {
        throw new Error(`the API refused ${pasted.anthropic} (password=hunter2)`);
      },
      { connection },
    );
    const failed = new Promise((resolve) => worker.on("failed", resolve));
    await tasks.add("occurrence", { platform: "telegram", userId: "77", taskId: 1, dueAt: Date.now() });
    await failed;
    await worker.close();
    await connection.quit();
    const leaks = [text, ...secrets, replyToken, "oolong", "Mei Lin", "passport", "AgACAgUAAxkB", essay.slice(0, 40)];

    const page = await browser.newPage();
    await page.goto(`${stack.base}/admin/login`);
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForURL(/\/admin\/overview$/);

    // The JSON the board's own script reads, with this session's cookie.
    const fetched: Record<string, string> = {};
    for (const path of [
      "api/queues?activeQueue=chats&status=latest&page=1&jobsPerPage=10",
      `api/queues/chats/${encodeURIComponent(`line-${chatId}-5550001`)}`,
      "api/job-schedulers",
      "api/queues?activeQueue=tasks&status=failed&page=1&jobsPerPage=10",
    ]) {
      const res = await page.request.get(`${stack.base}/admin/queues/${path}`);
      expect([path, res.status()]).toEqual([path, 200]);
      fetched[path] = await res.text();
    }
    const list = JSON.parse(fetched["api/queues?activeQueue=chats&status=latest&page=1&jobsPerPage=10"]!) as {
      queues: { name: string; jobs: { data: Record<string, unknown> }[] }[];
    };
    const data = list.queues.find((q) => q.name === CHATS_QUEUE)!.jobs[0]!.data;
    expect(data).toMatchObject({
      platform: "line",
      chatId,
      userId: "Udeadbeef0123456789abcdef0123456",
      messageId: "5550001",
      text: `[hidden: ${text.length} characters]`,
      userName: "[hidden: 7 characters]",
      reply: { replyToken: "[hidden: credential]" },
      media: [{ kind: "image", fileId: "[hidden: credential]", size: 2048, name: "[hidden: 20 characters]" }],
    });
    expect(fetched["api/queues?activeQueue=tasks&status=failed&page=1&jobsPerPage=10"]).toContain(
      "the API refused [redacted] (password=[redacted])",
    );
    expect(fetched["api/job-schedulers"]).toContain("[hidden: 20 characters]");
    expect(fetched["api/job-schedulers"]).toContain(`[hidden: ${essay.length} characters]`);
    for (const body of Object.values(fetched)) for (const leak of leaks) expect(body).not.toContain(leak);
    expect(fetched[`api/queues/chats/${encodeURIComponent(`line-${chatId}-5550001`)}`]).toContain(chatId);

    // The page itself, drawn by the board's script: the job's card shows the chat id, never the text.
    await page.goto(`${stack.base}/admin/queues/queue/${CHATS_QUEUE}?status=waiting`);
    await expect.poll(() => page.locator(`text=${chatId}`).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    const html = await page.content();
    expect(html).toContain(`[hidden: ${text.length} characters]`);
    for (const leak of leaks) expect(html).not.toContain(leak);
    await page.screenshot({ path: `${SHOTS}/queue-job.png`, fullPage: true });
    // Bull Board's header menu links back to the console.
    await page.locator("header button").last().click();
    await page.click("text=Back to the console");
    await page.waitForURL(/\/admin\/overview$/);
    await page.close();
    await reminders!.removeJobScheduler("rem-line-test-1");
    await chats!.obliterate({ force: true });
  }, 60_000);
});

describe("refusals", () => {
  let stack: Awaited<ReturnType<typeof startConsole>>;
  beforeAll(async () => {
    stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN });
  });
  afterAll(async () => stack?.close());

  it("refuses a wrong token, and every page without a session", async () => {
    const res = await fetch(`${stack.base}/admin/login`, form({ token: `${TOKEN}x` }));
    expect(res.status).toBe(403);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.text()).toContain("Wrong token.");
    const page = await fetch(`${stack.base}/admin/overview`, { redirect: "manual" });
    expect([page.status, page.headers.get("location")]).toEqual([303, "/admin/login"]);
    const board = await fetch(`${stack.base}/admin/queues/api/queues`, { redirect: "manual" });
    expect(board.status).toBe(303);
    const change = await fetch(`${stack.base}/admin/access/approve`, form({ code: "ABCDEFGH", csrf: "x" }));
    expect(change.status).toBe(401);
  });

  it("refuses a change without the CSRF token, or with another session's", async () => {
    const { cookie } = await login(stack.base);
    const other = await login(stack.base);
    const access = new AccessStore(redis);
    const paired = (await access.pair({ platform: "telegram", userId: "555", chatId: "555", userName: "X" })) as {
      code: string;
    };
    const attempts: Record<string, string>[] = [{ code: paired.code }, { code: paired.code, csrf: other.csrf }];
    for (const fields of attempts) {
      const res = await fetch(`${stack.base}/admin/access/approve`, {
        ...form(fields),
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      });
      expect(res.status).toBe(403);
    }
    expect(await access.hasUser("telegram:555")).toBe(false);
    await access.deny(paired.code);
  });

  it("approving a code approved already says so, with whom it let in and when; it grants nothing again", async () => {
    const { cookie, csrf } = await login(stack.base);
    const access = new AccessStore(redis);
    const paired = (await access.pair({ platform: "telegram", userId: "558", chatId: "558", userName: "Z" })) as {
      code: string;
    };
    const approve = () =>
      fetch(`${stack.base}/admin/access/approve`, {
        ...form({ code: paired.code, csrf }),
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        redirect: "manual",
      });
    expect((await approve()).status).toBe(303);
    expect(await access.approvedCode(paired.code)).toMatchObject({ userId: "558", by: "console" });
    await access.revokeUser("telegram:558");
    const again = await approve();
    const location = new URL(again.headers.get("location") ?? "", stack.base);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      notice: "approvedAlready",
      who: "telegram:558",
      when: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d$/),
    });
    expect(noticeText("en", location.searchParams)).toBe(
      `That pairing code was approved already: telegram:558, on ${location.searchParams.get("when")}.`,
    );
    expect(noticeText("zh-TW", location.searchParams)).toBe(
      `這個配對碼已經核准過了：telegram:558，於 ${location.searchParams.get("when")}。`,
    );
    expect(await access.hasUser("telegram:558")).toBe(false);
  });

  it("says why it refused in the console's language (zh-TW or English), never mixing the two", async () => {
    const zh = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN, BOT_LOCALE: "zh-TW" });
    try {
      for (const [console_, expected] of [
        [zh, "已拒絕這個請求：缺少或不正確的 CSRF 權杖"],
        [stack, "Request refused: missing or wrong CSRF token"],
      ] as const) {
        const { cookie } = await login(console_.base);
        const res = await fetch(`${console_.base}/admin/access/approve`, {
          ...form({ code: "ABCDEFGH" }),
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        });
        expect(res.status).toBe(403);
        expect(/<p>([^<]*)<\/p>/.exec(await res.text())?.[1]).toBe(expected);
      }
      // Another origin and a change on the queue pages, in zh-TW too; the log line stays English.
      const { cookie, csrf } = await login(zh.base);
      const other = await fetch(`${zh.base}/admin/access/approve`, {
        ...form({ code: "ABCDEFGH", csrf }),
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site" },
      });
      expect(await other.text()).toContain("已拒絕這個請求：來自其他網站的請求");
      const put = await fetch(`${zh.base}/admin/queues/api/queues/tasks/retry/failed`, {
        method: "PUT",
        headers: { cookie },
      });
      expect([put.status, await put.text()]).toEqual([
        405,
        expect.stringContaining("已拒絕這個請求：佇列頁面是唯讀的"),
      ]);
      expect(zh.lines.join("\n")).toContain("console: refused: request from another site (Sec-Fetch-Site: cross-site)");
    } finally {
      await zh.close();
    }
    // A task's outcome notice too.
    const outcome = new URLSearchParams({ notice: "taskOutcome", id: "3", outcome: "already paused" });
    expect([noticeText("zh-TW", outcome), noticeText("en", outcome)]).toEqual([
      "#3：原本就已暫停",
      "#3: already paused",
    ]);
    // Every reason has both words, and the Chinese ones are not the English ones.
    for (const [reason, words] of Object.entries(REFUSALS))
      expect([reason, words["zh-TW"] !== words.en]).toEqual([reason, true]);
  });

  it("refuses a change from another origin, even with the session and its CSRF token", async () => {
    const { cookie, csrf } = await login(stack.base);
    const access = new AccessStore(redis);
    const paired = (await access.pair({ platform: "telegram", userId: "556", chatId: "556", userName: "Y" })) as {
      code: string;
    };
    const headers = { cookie, "content-type": "application/x-www-form-urlencoded" };
    const foreign: Record<string, string>[] = [
      { origin: "http://evil.example" },
      { "sec-fetch-site": "cross-site" },
      // No page of the console sends it: a POST is always same-origin.
      { "sec-fetch-site": "none" },
    ];
    for (const extra of foreign) {
      const res = await fetch(`${stack.base}/admin/access/approve`, {
        ...form({ code: paired.code, csrf }),
        headers: { ...headers, ...extra },
      });
      expect(res.status).toBe(403);
    }
    expect(await access.hasUser("telegram:556")).toBe(false);
    // The same request from this origin goes through.
    const ok = await fetch(`${stack.base}/admin/access/deny`, {
      ...form({ code: paired.code, csrf }),
      headers: { ...headers, origin: stack.base, "sec-fetch-site": "same-origin" },
    });
    expect([ok.status, decodeURIComponent(ok.headers.get("location") ?? "")]).toEqual([
      303,
      "/admin/access?notice=denied&who=telegram:556",
    ]);
    expect((await access.pending()).map((p) => p.code)).not.toContain(paired.code);
    // Bull Board's own changes are refused: the queue pages are read-only.
    const put = await fetch(`${stack.base}/admin/queues/api/queues/tasks/retry/failed`, {
      method: "PUT",
      headers: { cookie },
    });
    expect(put.status).toBe(405);
  });

  it("refuses a form over the limit with a page that says why (413), and keeps the terminal chat's reminders out of reach", async () => {
    const { cookie, csrf } = await login(stack.base);
    const headers = { cookie, "content-type": "application/x-www-form-urlencoded" };
    const big = await fetch(`${stack.base}/admin/access/allow`, {
      method: "POST",
      headers,
      body: `kind=user&principal=telegram:1&csrf=${csrf}&pad=${"x".repeat(20_000)}`,
    });
    expect(big.status).toBe(413);
    expect(await big.text()).toContain("the form is too large");
    // A reminder of the terminal chat (its jobs on `npm run chat`'s queues): listed, redacted, without actions.
    const at = Date.now() + 600_000;
    const { id } = (await addReminder(
      redis,
      { platform: "console", userId: "demo" },
      {
        text: "drink water password=hunter2",
        at,
        next: at,
        timezone: "Asia/Taipei",
        chatId: "demo",
        chatKind: "dm",
        userName: "demo",
        createdAt: Date.now(),
      },
    ))!;
    const page = await (await fetch(`${stack.base}/admin/tasks`, { headers: { cookie } })).text();
    expect(page).toContain("drink water password=[redacted]");
    expect(page).not.toContain("hunter2");
    expect(page).toContain("steer it with /tasks or /reminders in npm run chat");
    const paused = await fetch(`${stack.base}/admin/tasks/reminder`, {
      ...form({ owner: "console:demo", id: String(id), action: "pause", csrf }),
      headers: { ...headers, origin: stack.base },
    });
    expect(paused.status).toBe(400);
  });

  it("refuses an allow or revoke with an unknown kind (400 and a notice); nobody is allowed", async () => {
    const { cookie, csrf } = await login(stack.base);
    const access = new AccessStore(redis);
    const headers = { cookie, "content-type": "application/x-www-form-urlencoded" };
    const attempts: Record<string, string>[] = [
      { principal: "telegram:777", kind: "admin", csrf },
      { principal: "telegram:777", kind: "", csrf },
      { principal: "telegram:777", csrf },
    ];
    for (const fields of attempts) {
      const res = await fetch(`${stack.base}/admin/access/allow`, { ...form(fields), headers });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("unknown kind (user or chat only)");
    }
    expect(await access.hasUser("telegram:777")).toBe(false);
    await access.allowUser("telegram:778");
    const revoke = await fetch(`${stack.base}/admin/access/revoke`, {
      ...form({ principal: "telegram:778", kind: "admin", csrf }),
      headers,
    });
    expect(revoke.status).toBe(400);
    expect(await access.hasUser("telegram:778")).toBe(true);
    // The console's own form (kind=user) still allows.
    const ok = await fetch(`${stack.base}/admin/access/allow`, {
      ...form({ principal: "telegram:777", kind: "user", csrf }),
      headers,
    });
    expect(ok.status).toBe(303);
    expect(await access.hasUser("telegram:777")).toBe(true);
    await access.revokeUser("telegram:777");
    await access.revokeUser("telegram:778");
  });

  it("shows notices only from its own message table: a code with well-formed parameters; free text or unknown codes show nothing", async () => {
    const { cookie } = await login(stack.base);
    const shown = async (query: string) => {
      const html = await (await fetch(`${stack.base}/admin/access?${query}`, { headers: { cookie } })).text();
      return /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1];
    };
    expect(await shown("notice=allowed&who=telegram:6")).toBe("Allowed telegram:6.");
    expect(await shown("notice=taskPaused&id=12")).toBe("Paused task #12.");
    const phishing = encodeURIComponent("Your session expired. Log in again at http://evil.example");
    expect(await shown(`notice=${phishing}`)).toBeUndefined();
    expect(await shown("notice=toString")).toBeUndefined();
    expect(await shown(`notice=allowed&who=${phishing}`)).toBeUndefined();
    expect(await shown("notice=allowed")).toBeUndefined();
    expect(await shown("")).toBeUndefined();
  });

  it("serves pages with a strict Content-Security-Policy and no script", async () => {
    const { cookie } = await login(stack.base);
    for (const path of ["overview", "tools", "tasks", "access", "memory", "traces"]) {
      const res = await fetch(`${stack.base}/admin/${path}`, { headers: { cookie } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(res.headers.get("content-security-policy")).not.toContain("unsafe");
      expect(await res.text()).not.toMatch(/<script|style=/);
    }
    // The usage page: scripts from this origin only (uPlot from its package, the chart script), no inline script.
    const usage = await fetch(`${stack.base}/admin/usage`, { headers: { cookie } });
    expect(usage.headers.get("content-security-policy")).toBe(USAGE_CSP);
    expect(USAGE_CSP).toMatch(/^default-src 'none'; script-src 'self'; style-src 'self';/);
    const html = await usage.text();
    expect(html).not.toContain("style=");
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!.trim());
    expect(scripts).toEqual([
      'type="application/json" id="usage-data"',
      'src="/admin/static/uPlot.iife.min.js"',
      'src="/admin/static/usage.js"',
    ]);
    const uplot = await fetch(`${stack.base}/admin/static/uPlot.iife.min.js`);
    expect([uplot.status, uplot.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect(await uplot.text()).toContain("uPlot");
    expect((await fetch(`${stack.base}/admin/static/nothing.js`, { redirect: "manual" })).status).toBe(303);
  });

  it("serves the usage CSV only to a session, as an attachment; cells are quoted and never formulas", async () => {
    expect((await fetch(`${stack.base}/admin/usage.csv`, { redirect: "manual" })).status).toBe(303);
    const { cookie } = await login(stack.base);
    const res = await fetch(`${stack.base}/admin/usage.csv`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="usage-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = (await res.text()).split("\r\n");
    expect(lines[0]).toBe(CSV_COLUMNS.join(","));
    expect(lines).toHaveLength(1 + 30 + 1); // header, 30 day rows, the last CRLF
    expect(csvCell('say "hi", then\nleave')).toBe('"say ""hi"", then\nleave"');
    expect(csvCell("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvCell("-1+1")).toBe("'-1+1");
    expect(csvCell(-3)).toBe("-3");
    expect(csvCell(undefined)).toBe("");
    expect(stack.lines.some((l) => l.includes('"action":"usage.csv"'))).toBe(true);
  });
});

describe("allow and revoke with env lists", () => {
  let stack: Awaited<ReturnType<typeof startConsole>>;
  beforeAll(async () => {
    stack = await startConsole({
      ADMIN_CONSOLE_TOKEN: TOKEN,
      ADMIN_USERS: "telegram:7001",
      ALLOWED_CHATS: "telegram:-1007003",
    });
  });
  afterAll(async () => stack?.close());

  /** Posts an allow or revoke form; returns the redirect's query and the notice the access page shows for it. */
  async function post(path: "allow" | "revoke", fields: Record<string, string>) {
    const { cookie, csrf } = await login(stack.base);
    const res = await fetch(`${stack.base}/admin/access/${path}`, {
      ...form({ ...fields, csrf }),
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location") ?? "", stack.base);
    const html = await (await fetch(location, { headers: { cookie } })).text();
    return {
      query: Object.fromEntries(location.searchParams),
      shown: /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1],
      zh: noticeText("zh-TW", location.searchParams),
    };
  }

  it("revokes a granted chat whose id is an admin's: a chat is checked against ALLOWED_CHATS, not ADMIN_USERS", async () => {
    const access = new AccessStore(redis);
    await access.allowChat("telegram:7001");
    const { query, shown } = await post("revoke", { principal: "telegram:7001", kind: "chat" });
    expect(query).toEqual({ notice: "revoked", who: "telegram:7001" });
    expect(shown).toBe("Revoked telegram:7001.");
    expect((await access.grants()).chats).not.toContain("telegram:7001");
  });

  it("revokes the grant of an entry that an env list also names, and says it still has access through that list", async () => {
    const access = new AccessStore(redis);
    await access.allowUser("telegram:7001");
    const user = await post("revoke", { principal: "telegram:7001", kind: "user" });
    expect(user.query).toEqual({ notice: "revokedStillEnv", who: "telegram:7001", list: "ADMIN_USERS" });
    expect(user.shown).toBe(
      "Revoked the grant of telegram:7001, but it still has access through ADMIN_USERS in the environment: remove it from .env and restart the bot.",
    );
    expect(user.zh).toBe(
      "已撤銷 telegram:7001 的授權，但它仍因環境變數 ADMIN_USERS 而有權限：請從 .env 移除並重新啟動機器人。",
    );
    expect(await access.hasUser("telegram:7001")).toBe(false);
    await access.allowChat("telegram:-1007003");
    const chat = await post("revoke", { principal: "telegram:-1007003", kind: "chat" });
    expect(chat.query).toEqual({ notice: "revokedStillEnv", who: "telegram:-1007003", list: "ALLOWED_CHATS" });
    expect((await access.grants()).chats).not.toContain("telegram:-1007003");
    // Nothing granted left: the env list is named, nothing else happens.
    const again = await post("revoke", { principal: "telegram:7001", kind: "user" });
    expect(again.shown).toBe(
      "telegram:7001 was not granted: it has access through ADMIN_USERS in the environment; remove it from .env and restart the bot.",
    );
  });

  it("writes no grant for an entry an env list allows, and says so; refuses a person as a chat", async () => {
    const access = new AccessStore(redis);
    const admin = await post("allow", { principal: "telegram:7001", kind: "user" });
    expect(admin.query).toEqual({ notice: "allowedByEnv", who: "telegram:7001", list: "ADMIN_USERS" });
    expect(admin.shown).toBe(
      "telegram:7001 already has access through ADMIN_USERS in the environment; no grant was written.",
    );
    const person = await post("allow", { principal: "telegram:7001", kind: "chat" });
    expect(person.query).toEqual({ notice: "personAsChat", who: "telegram:7001" });
    expect(person.shown).toBe(
      "telegram:7001 is a person, not a group (Telegram group ids are negative; LINE group ids start with C or R): use “Allow a user”.",
    );
    const { users, chats } = await access.grants();
    expect([users.includes("telegram:7001"), chats.includes("telegram:7001")]).toEqual([false, false]);
    const group = await post("allow", { principal: "telegram:-1009", kind: "chat" });
    expect(group.shown).toBe("Allowed telegram:-1009.");
    expect((await access.grants()).chats).toContain("telegram:-1009");
    await access.revokeChat("telegram:-1009");
  });
});

describe("reminders in the console", () => {
  it("pauses, resumes and cancels a repeating reminder with the queue's job schedulers; logs who and what, never the text", async () => {
    const clock = Date.now();
    const stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN }, { now: () => clock });
    try {
      const owner = { platform: "telegram" as const, userId: "5151" };
      const reminder = (await addReminder(redis, owner, {
        text: "buy birthday present for Ama",
        at: clock + 3_600_000,
        next: clock + 3_600_000,
        repeat: "daily",
        timezone: "Asia/Taipei",
        chatId: "5151",
        chatKind: "dm",
        userName: "Hui",
        createdAt: clock,
      }))!;
      const queue = stack.queues[2]! as Queue;
      await new ReminderScheduler(queue).schedule(owner, reminder, clock);
      expect(await queue.getJobSchedulersCount()).toBe(1);
      const { cookie, csrf } = await login(stack.base);
      const post = (action: string) =>
        fetch(`${stack.base}/admin/tasks/reminder`, {
          ...form({ owner: "telegram:5151", id: String(reminder.id), action, csrf }),
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        });
      const noticeOf = async (res: Response) => {
        const html = await (
          await fetch(new URL(res.headers.get("location")!, stack.base), { headers: { cookie } })
        ).text();
        return { html, notice: /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1] };
      };

      const paused = await noticeOf(await post("pause"));
      expect(paused.notice).toBe(`Paused reminder #${reminder.id}.`);
      expect(paused.html).toContain(`Resume #${reminder.id}`);
      expect((await getReminder(redis, owner, reminder.id))!.paused).toEqual({ at: clock, by: "operator" });
      expect(await queue.getJobSchedulersCount()).toBe(0);
      expect((await noticeOf(await post("pause"))).notice).toBe(`#${reminder.id}: already paused`);

      const resumed = await noticeOf(await post("resume"));
      expect(resumed.notice).toBe(`Resumed reminder #${reminder.id}.`);
      const stored = (await getReminder(redis, owner, reminder.id))!;
      expect(stored.paused).toBeUndefined();
      expect(stored.next).toBeGreaterThan(clock);
      expect(await queue.getJobSchedulersCount()).toBe(1);

      expect((await noticeOf(await post("cancel"))).notice).toBe(`Cancelled reminder #${reminder.id}.`);
      expect(await getReminder(redis, owner, reminder.id)).toBeUndefined();
      expect(await queue.getJobSchedulersCount()).toBe(0);
      expect((await noticeOf(await post("resume"))).notice).toBe("That reminder is gone.");

      const audit = stack.lines
        .map((l) => JSON.parse(l) as { action?: string; outcome?: string; item?: string })
        .filter((l) => l.action?.startsWith("reminder."));
      expect(audit.map((l) => `${l.action} ${l.item} ${l.outcome}`)).toEqual([
        `reminder.pause telegram:5151#${reminder.id} ok`,
        `reminder.pause telegram:5151#${reminder.id} already paused`,
        `reminder.resume telegram:5151#${reminder.id} ok`,
        `reminder.cancel telegram:5151#${reminder.id} ok`,
        `reminder.resume telegram:5151#${reminder.id} gone`,
      ]);
      expect(stack.lines.join("\n")).not.toContain("birthday");
    } finally {
      await stack.close();
    }
  });
});

describe("a snoozed one-off reminder paused and resumed in the console", () => {
  it("is due at once as a job of its own (its time's job ran already), so it is posted", async () => {
    const clock = Date.now();
    const stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN }, { now: () => clock });
    const queue = stack.queues[2]! as Queue;
    const owner = { platform: "telegram" as const, userId: "5353" };
    try {
      const reminder = (await addReminder(redis, owner, {
        text: "take out the bins",
        at: clock - 60_000,
        next: clock - 60_000,
        timezone: "Asia/Taipei",
        chatId: "5353",
        chatKind: "dm",
        userName: "Cy",
        createdAt: clock - 120_000,
      }))!;
      const scheduler = new ReminderScheduler(queue);
      // Its time's job ran (a real worker took it, as delivery would), then the owner pressed snooze.
      await scheduler.schedule(owner, reminder, clock);
      const connection = (redis as Redis).duplicate({ maxRetriesPerRequest: null });
      const worker = new Worker(REMINDERS_QUEUE, async () => "sent", { connection });
      const ranJob = occurrenceJobId(owner, reminder.id, reminder.at);
      await eventually(async () => (await queue.getJob(ranJob))?.finishedOn, "its time's job ran");
      await worker.close();
      await connection.quit();
      const snoozeAt = clock + 600_000;
      await scheduler.snooze(owner, reminder.id, reminder.at, snoozeAt, clock);
      await updateReminder(redis, owner, { ...reminder, next: snoozeAt });

      const { cookie, csrf } = await login(stack.base);
      const post = (action: string) =>
        fetch(`${stack.base}/admin/tasks/reminder`, {
          ...form({ owner: "telegram:5353", id: String(reminder.id), action, csrf }),
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        });
      expect((await post("pause")).status).toBe(303);
      expect((await getReminder(redis, owner, reminder.id))!.paused?.by).toBe("operator");
      expect((await post("resume")).status).toBe(303);
      const resumed = (await getReminder(redis, owner, reminder.id))!;
      expect(resumed.paused).toBeUndefined();
      expect(resumed.next).toBe(clock);
      // A job due now, not yet taken: a worker posts it.
      const due = (await queue.getJobs(["waiting", "delayed", "prioritized"])).filter(
        (j) => j.data.reminderId === reminder.id && j.data.dueAt === clock,
      );
      expect(due).toHaveLength(1);
    } finally {
      await queue.obliterate({ force: true });
      await stack.close();
    }
  });
});

describe("an ended reminder or task in the console", () => {
  it("offers no pause or resume for a posted one-off reminder or an ended task, and refuses a forged one with a notice", async () => {
    const clock = Date.now();
    const stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN }, { now: () => clock });
    try {
      const owner = { platform: "telegram" as const, userId: "5252" };
      const common = {
        timezone: "Asia/Taipei",
        chatId: "5252",
        chatKind: "dm" as const,
        userName: "Bo",
        createdAt: clock,
      };
      // Posted an hour ago, awaiting done or snooze: listed as ended (already ended).
      const fired = (await addReminder(redis, owner, {
        ...common,
        text: "water the plants",
        at: clock - 3_600_000,
        firedAt: clock - 3_600_000,
      }))!;
      // Paused from the console after it was posted, before this was refused.
      const pausedFired = (await addReminder(redis, owner, {
        ...common,
        text: "call the bank",
        at: clock - 3_600_000,
        firedAt: clock - 3_600_000,
        paused: { at: clock - 60_000, by: "operator" },
      }))!;
      const task = (await addTask(
        redis,
        owner,
        { ...common, instruction: "sum up the week", at: clock - 3_600_000 },
        10,
      ))!;
      const { cookie, csrf } = await login(stack.base);
      const page = await (await fetch(`${stack.base}/admin/tasks`, { headers: { cookie } })).text();
      // The action of each form of the page for this owner's item `id` of `kind`.
      const formsOf = (kind: string, id: number) =>
        page
          .split("<form ")
          .filter(
            (f) =>
              f.includes(`action="/admin/tasks/${kind}"`) &&
              f.includes('name="owner" value="telegram:5252"') &&
              f.includes(`name="id" value="${id}"`),
          )
          .map((f) => /name="action" value="(\w+)"/.exec(f)?.[1]);
      expect(formsOf("reminder", fired.id)).toEqual(["cancel"]);
      expect(formsOf("reminder", pausedFired.id)).toEqual(["resume", "cancel"]);
      expect(formsOf("task", task.id)).toEqual(["cancel"]);

      const post = async (kind: string, id: number, action: string) => {
        const res = await fetch(`${stack.base}/admin/tasks/${kind}`, {
          ...form({ owner: "telegram:5252", id: String(id), action, csrf }),
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        });
        const html = await (
          await fetch(new URL(res.headers.get("location")!, stack.base), { headers: { cookie } })
        ).text();
        return /<p class="notice" role="status">([^<]*)<\/p>/.exec(html)?.[1];
      };
      const refused = (id: number) => `#${id}: it has ended: nothing to pause or resume`;
      expect(await post("reminder", fired.id, "pause")).toBe(refused(fired.id));
      expect(await post("reminder", fired.id, "resume")).toBe(refused(fired.id));
      expect(await getReminder(redis, owner, fired.id)).toEqual(fired);
      expect(await post("reminder", pausedFired.id, "resume")).toBe(refused(pausedFired.id));
      expect(await getReminder(redis, owner, pausedFired.id)).toEqual(pausedFired);
      expect(await post("task", task.id, "pause")).toBe(refused(task.id));
      expect(await post("task", task.id, "resume")).toBe(refused(task.id));
      expect(await getTask(redis, owner, task.id)).toEqual(task);
      const queue = stack.queues[2]! as Queue;
      expect(await queue.getJobCounts()).toMatchObject({ delayed: 0, waiting: 0 });

      const audit = stack.lines
        .map((l) => JSON.parse(l) as { action?: string; outcome?: string; item?: string })
        .filter((l) => l.action?.startsWith("reminder.") || l.action?.startsWith("task."));
      expect(audit.map((l) => `${l.action} ${l.outcome}`)).toEqual([
        "reminder.pause ended",
        "reminder.resume ended",
        "reminder.resume ended",
        "task.pause ended",
        "task.resume ended",
      ]);
    } finally {
      await stack.close();
    }
  });
});

describe("why a task or reminder is paused, in the console's language", () => {
  it("shows the reason's words in zh-TW and English, never the stored mark (operator, owner, failures …)", async () => {
    const clock = Date.now();
    const owner = { platform: "telegram" as const, userId: "5353" };
    const common = {
      timezone: "Asia/Taipei",
      chatId: "5353",
      chatKind: "dm" as const,
      userName: "Cy",
      createdAt: clock,
    };
    const taskReasons = ["operator", "owner", "failures", "unreachable", "left"] as const;
    for (const by of taskReasons)
      await addTask(
        redis,
        owner,
        { ...common, instruction: `task-paused-${by}`, at: clock + 3_600_000, paused: { at: clock, by } },
        10,
      );
    for (const by of ["operator", "left"] as const)
      await addReminder(redis, owner, {
        ...common,
        text: `reminder-paused-${by}`,
        at: clock + 3_600_000,
        paused: { at: clock, by },
      });
    const zh = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN, BOT_LOCALE: "zh-TW" }, { now: () => clock });
    const en = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN }, { now: () => clock });
    try {
      // The status cell of the row whose words are `words`, as text.
      const statusOf = (page: string, words: string) =>
        /<span class="bad">([^<]*)<\/span>/.exec(page.split("<tr").find((row) => row.includes(words)) ?? "")?.[1];
      const pageOf = async (console_: ConsoleStack) => {
        const { cookie } = await login(console_.base);
        return (await fetch(`${console_.base}/admin/tasks`, { headers: { cookie } })).text();
      };
      const [zhPage, enPage] = [await pageOf(zh), await pageOf(en)];
      expect(taskReasons.map((by) => statusOf(zhPage, `task-paused-${by}`))).toEqual([
        "管理者暫停",
        "擁有者暫停",
        "連續失敗後暫停",
        "無法傳訊到它的聊天室，已暫停",
        "擁有者已離開群組，已暫停",
      ]);
      expect(taskReasons.map((by) => statusOf(enPage, `task-paused-${by}`))).toEqual([
        "paused by the operator",
        "paused by its owner",
        "paused after failures",
        "paused: the bot cannot write to its chat",
        "paused: its owner left the group",
      ]);
      expect([statusOf(zhPage, "reminder-paused-operator"), statusOf(zhPage, "reminder-paused-left")]).toEqual([
        "管理者暫停",
        "擁有者已離開群組，已暫停",
      ]);
      expect([statusOf(enPage, "reminder-paused-operator"), statusOf(enPage, "reminder-paused-left")]).toEqual([
        "paused by the operator",
        "paused: its owner left the group",
      ]);
      expect(zhPage).not.toMatch(/已暫停（\w+）/);
      expect(enPage).not.toMatch(/paused \((?:operator|owner|failures|unreachable|left)\)/);
    } finally {
      await zh.close();
      await en.close();
    }
  });
});

describe("the login throttle", () => {
  it("holds back an address after 5 refused logins in 10 minutes (429, Retry-After), even with the right token", async () => {
    // A clock of its own, a day back: the other tests' logins (real time) never see these refusals.
    let clock = Date.now() - 86_400_000;
    const start = clock;
    const stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN }, { now: () => clock });
    try {
      for (let i = 0; i < 5; i += 1) {
        clock = start + i * 60_000; // one a minute
        expect((await fetch(`${stack.base}/admin/login`, form({ token: `wrong-${i}` }))).status).toBe(403);
      }
      clock = start + 5 * 60_000;
      const held = await fetch(`${stack.base}/admin/login`, form({ token: TOKEN }));
      expect([held.status, held.headers.get("retry-after"), held.headers.get("set-cookie")]).toEqual([
        429,
        "300", // the first refusal leaves the window at start + 10 min
        null,
      ]);
      expect(await held.text()).toContain("Too many failed logins from this address: try again in 5 min.");
      // A one-time link is held back alike (it stays unused).
      const link = `${stack.base}/admin/login?code=${"A".repeat(43)}`;
      expect((await fetch(link, { redirect: "manual" })).status).toBe(429);
      // Once the first refusal is 10 minutes old, 4 remain: the right token logs in and clears the count.
      clock = start + 10 * 60_000;
      const ok = await fetch(`${stack.base}/admin/login`, form({ token: TOKEN }));
      expect(ok.status).toBe(303);
      expect(await redis.keys("admin:{admin}:fails:*")).toEqual([]);
      const logs = stack.lines.map((l) => JSON.parse(l) as { msg: string });
      expect(logs.filter((l) => l.msg.startsWith("console: login held back")).length).toBe(2);
      expect(stack.lines.join("\n")).not.toContain(TOKEN);
    } finally {
      await stack.close();
    }
  });
});

describe("without ADMIN_CONSOLE_TOKEN", () => {
  let stack: Awaited<ReturnType<typeof startConsole>>;
  beforeAll(async () => {
    stack = await startConsole();
  });
  afterAll(async () => stack?.close());

  it("logs in once with the one-time link; the link is used up", async () => {
    const link = (await stack.admin.loginLink(stack.base))!;
    expect(link).toMatch(/\/admin\/login\?code=[A-Za-z0-9_-]{43}$/);
    const first = await fetch(link, { redirect: "manual" });
    expect([first.status, first.headers.get("location")]).toEqual([303, "/admin/overview"]);
    const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
    expect((await fetch(`${stack.base}/admin/overview`, { headers: { cookie } })).status).toBe(200);
    const again = await fetch(link, { redirect: "manual" });
    expect(again.status).toBe(403);
    expect(again.headers.get("set-cookie")).toBeNull();
    // No token configured: the token form is not even offered, and a posted token is refused.
    expect((await fetch(`${stack.base}/admin/login`, form({ token: TOKEN }))).status).toBe(403);
  });
});

describe("usage and cost, from conversations through the real pipeline", () => {
  const PRICES = "3,15,3.75,0.3;claude-older-1=1,5,1.25,0.1";
  let stack: Stack;
  let connection: RedisClient;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startStack({ env: { MODEL_PRICES: PRICES } });
    connection = connectRedis(stack.redis.url);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await connection?.quit();
    await stack?.stop();
  });

  it("shows the figures of scripted conversations as charts and tables, and the same rows as CSV", async () => {
    // Two conversations through Telegram, the queue, the worker and the fake Messages API.
    const tg = stack.telegram;
    const mei = tg.user(6101, "Mei");
    const lin = tg.user(6102, "Lin");
    tg.sendUserMessage({ chat: tg.privateChat(mei), from: mei, text: "calc 6 * 7" });
    await tg.waitFor(() => tg.sent.find((m) => m.chatId === 6101), 20_000, "Mei's answer");
    tg.sendUserMessage({ chat: tg.privateChat(lin), from: lin, text: "hello there" });
    await tg.waitFor(() => tg.sent.find((m) => m.chatId === 6102), 20_000, "Lin's answer");
    const config = stack.config;
    const model = config.ANTHROPIC_MODEL;
    const answered = stack.model.answered.map((a) => a.usage);
    expect(answered).toHaveLength(3); // calc: tool_use + answer; hello: answer
    const weight = outputWeightFor(config, model);
    const budget = answered.map((u) => budgetTokensOf(u, weight));
    const usdToday = answered.reduce(
      (sum, u) =>
        sum +
        costOf(
          {
            input: u.input_tokens,
            output: u.output_tokens,
            cacheWrite: u.cache_creation_input_tokens,
            cacheRead: u.cache_read_input_tokens,
            tokens: 0,
            budget: 0,
            calls: 1,
            webSearches: 0,
            webFetches: 0,
            voiceSeconds: 0,
          },
          pricesFor(config, model)!,
        ),
      0,
    );
    const meiBudget = budget[0]! + budget[1]!;
    const linBudget = budget[2]!;

    // Earlier days: a call of another model with two web searches (3 days ago), 42 s of voice (2
    // days ago), and a day recorded before usage by model was (5 days ago: its tokens are "(other)").
    const now = Date.now();
    const dayAgo = (n: number) => now - n * 86_400_000;
    const store = new UsageStore(connection, config.TIMEZONE);
    const older = {
      input_tokens: 1000,
      output_tokens: 200,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 4000,
      web_search_requests: 2,
    };
    const olderOwner = { platform: "telegram", userId: "6103", chatId: "-100777" };
    // As the worker records a call of a model priced apart: its price difference and output weight.
    await store.record(
      olderOwner,
      older,
      dayAgo(3),
      priceDeltaOf(older, pricesFor(config, "claude-older-1"), config.MODEL_PRICES),
      outputWeightFor(config, "claude-older-1"),
      "claude-older-1",
    );
    await store.recordVoice({ platform: "telegram", userId: "6101", chatId: "6101" }, 42, dayAgo(2));
    const oldDay = periodOf(dayAgo(5), config.TIMEZONE).day;
    await connection.hset(UsageStore.key("all", "d", oldDay), { in: 500, calls: 1, bt: 500 });

    const consoleStack = await startConsole({}, { redis: connection, config, now: () => now });
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      page.setDefaultTimeout(5000);
      const violations: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) violations.push(m.text());
      });
      page.on("response", (r) => {
        if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) violations.push(`${r.status()} ${r.url()}`);
      });
      page.on("pageerror", (e) => violations.push(e.message));
      await page.goto(`${consoleStack.base}/admin/login`);
      await page.fill("#token", TOKEN);
      await page.click("button[type=submit]");
      await page.waitForURL(/\/admin\/overview$/);
      await page.click("nav >> text=Usage and cost");
      await page.waitForURL(/\/admin\/usage$/);
      // The charts: drawn by uPlot (served from its package) under the page's strict policy.
      await expect.poll(() => page.locator("figure.chart.drawn canvas").count()).toBe(5);
      expect(violations).toEqual([]);
      const cells = (id: string) =>
        page
          .locator(`#${id} tbody tr`)
          .evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")));
      const n = (v: number) => v.toLocaleString("en-US");
      const money = (v: number) =>
        `$${v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
      const olderUsd = costOf(
        {
          input: 1000,
          output: 200,
          cacheWrite: 0,
          cacheRead: 4000,
          tokens: 0,
          budget: 0,
          calls: 1,
          webSearches: 2,
          webFetches: 0,
          voiceSeconds: 0,
        },
        pricesFor(config, "claude-older-1")!,
      );
      const todayBudget = meiBudget + linBudget;
      const cr = answered.reduce((s, u) => s + u.cache_read_input_tokens, 0) + 4000;
      const allInput =
        answered.reduce((s, u) => s + u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens, 0) +
        5000 +
        500;
      // 500 input tokens at the default input price on the day before models were recorded.
      const oldUsd = (500 * 3) / 1_000_000;
      expect(await cells("usage-total")).toEqual([
        [
          "5",
          n(todayBudget + 2400 + 500),
          money(usdToday + olderUsd + oldUsd),
          `${((cr / allInput) * 100).toFixed(1)}%`,
          "2",
          "42",
        ],
      ]);
      const models = await cells("usage-models");
      expect(models.map((r) => r.slice(0, 3))).toEqual(
        [
          ["claude-older-1", "1", "2,400"],
          [model, "3", n(todayBudget)],
          ["(other)", "1", "500"],
        ].sort((a, b) => (a[0] === "(other)" ? 1 : b[0] === "(other)" ? -1 : a[0]!.localeCompare(b[0]!))),
      );
      const days = await cells("usage-days");
      expect(days).toHaveLength(30);
      const today = periodOf(now, config.TIMEZONE).day;
      expect(days[0]!.slice(0, 3)).toEqual([today, "3", n(todayBudget)]);
      expect(days.find((d) => d[0] === periodOf(dayAgo(2), config.TIMEZONE).day)!.slice(1)).toEqual([
        "0",
        "0",
        "$0.00",
        "—",
        "0",
        "42",
      ]);
      const people = [
        { name: "telegram:6101", tokens: meiBudget },
        { name: "telegram:6103", tokens: 2400 },
        { name: "telegram:6102", tokens: linBudget },
      ].sort((a, b) => b.tokens - a.tokens || a.name.localeCompare(b.name));
      expect((await cells("usage-people")).map((r) => r.slice(0, 3))).toEqual(
        people.map((p, i) => [String(i + 1), p.name, n(p.tokens)]),
      );
      expect((await cells("usage-chats")).map((r) => r[1])).toContain("telegram:-100777");
      await page.screenshot({ path: `${SHOTS}/usage.png`, fullPage: true });
      // The same page on a laptop's screen (the README's picture, docs/images/console-usage.png, is this one).
      await page.setViewportSize({ width: 1100, height: 760 });
      await page.evaluate('window.dispatchEvent(new Event("resize"))');
      await page.screenshot({ path: `${SHOTS}/usage-wide.png` });
      await page.setViewportSize({ width: 390, height: 844 });

      // The CSV: the link downloads the same figures.
      const [download] = await Promise.all([page.waitForEvent("download"), page.click("text=Download CSV")]);
      expect(download.suggestedFilename()).toBe(`usage-${today}.csv`);
      const csv = readFileSync((await download.path())!, "utf8");
      const rows = csv
        .trimEnd()
        .split("\r\n")
        .map((line) => line.split(","));
      expect(rows[0]).toEqual([...CSV_COLUMNS]);
      expect(rows.every((r) => r.length === CSV_COLUMNS.length)).toBe(true);
      const row = (kind: string, day: string, name: string) =>
        rows.find((r) => r[0] === kind && r[1] === day && r[2] === name);
      expect(row("day", today, "")!.slice(3, 4)).toEqual(["3"]);
      expect(Number(row("day", today, "")![8])).toBe(todayBudget);
      expect(Number(row("model", today, model)![8])).toBe(todayBudget);
      expect(Number(row("model", today, model)![13])).toBeCloseTo(usdToday, 6);
      const threeAgo = periodOf(dayAgo(3), config.TIMEZONE).day;
      expect(row("model", threeAgo, "claude-older-1")!.slice(3, 11)).toEqual([
        "1",
        "1000",
        "200",
        "0",
        "4000",
        "2400",
        "0.8",
        "2",
      ]);
      expect(row("model", oldDay, "(other)")!.slice(3, 9)).toEqual(["1", "500", "0", "0", "0", "500"]);
      expect(Number(row("day", periodOf(dayAgo(2), config.TIMEZONE).day, "")![12])).toBe(42);
      expect(rows.filter((r) => r[0] === "person").map((r) => [r[2], Number(r[8])])).toContainEqual([
        "telegram:6101",
        meiBudget,
      ]);

      // With JavaScript off the same figures are there as tables; no chart is drawn.
      const noJs = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
      await noJs.addCookies(await page.context().cookies());
      const plain = await noJs.newPage();
      await plain.goto(`${consoleStack.base}/admin/usage`);
      expect(await plain.locator("figure.chart.drawn").count()).toBe(0);
      expect(await plain.locator("#usage-total td").first().textContent()).toBe("5");
      await noJs.close();
      await page.close();
    } finally {
      await consoleStack.close();
    }
  }, 60_000);
});

describe("a reminder or a task paused in the console, seen by its owner through Telegram", () => {
  let stack: Stack;
  let connection: RedisClient;
  beforeAll(async () => {
    stack = await startStack({ model: remindersModel });
    connection = connectRedis(stack.redis.url);
  }, 60_000);
  afterAll(async () => {
    await connection?.quit();
    await stack?.stop();
  });

  it("/reminders lists it as paused by the bot's operator, with a cancel button that cancels it", async () => {
    const tg = stack.telegram;
    const alice = tg.user(6201, "Alice");
    const chat = tg.privateChat(alice);
    const owner = { platform: "telegram" as const, userId: String(alice.id) };
    const first = localIso(Date.now() + 3_600_000);
    tg.sendUserMessage({
      chat,
      from: alice,
      text: `call set_reminder {"text":"吃藥","at":"${first}","repeat":"daily"}`,
    });
    await eventually(() => getReminder(connection, owner, 1), "the reminder stored", 20_000);

    const consoleStack = await startConsole({}, { redis: connection, config: stack.config });
    try {
      const { cookie, csrf } = await login(consoleStack.base);
      const paused = await fetch(`${consoleStack.base}/admin/tasks/reminder`, {
        ...form({ owner: `telegram:${alice.id}`, id: "1", action: "pause", csrf }),
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      });
      expect(paused.status).toBe(303);
      expect((await getReminder(connection, owner, 1))!.paused?.by).toBe("operator");
    } finally {
      await consoleStack.close();
    }

    const seen = tg.sent.length;
    tg.sendUserMessage({ chat, from: alice, text: "/reminders" });
    const listing = await tg.waitFor(
      () => tg.sent.slice(seen).find((m) => m.chatId === chat.id),
      20_000,
      "the /reminders listing",
    );
    expect(listing.text).not.toContain("你在這裡沒有設定提醒");
    expect(listing.text).toContain("#1 吃藥 — 已由機器人管理者暫停");
    const cancel = tg.buttons(listing).find((b) => b.callback_data?.startsWith("rm:cl:"));
    expect(cancel?.text).toBe("❌ 取消 #1");
    const toast = await tg.toast(
      tg.pressButton({ from: alice, message: listing, data: cancel!.callback_data! }),
      20_000,
    );
    expect(toast).toBe("已取消提醒 #1。");
    expect(await getReminder(connection, owner, 1)).toBeUndefined();
  });

  it("/tasks lists a task paused there as paused by the bot's operator: its owner may cancel it, not resume it", async () => {
    const tg = stack.telegram;
    const bob = tg.user(6202, "Bob");
    const chat = tg.privateChat(bob);
    const owner = { platform: "telegram" as const, userId: String(bob.id) };
    const first = localIso(Date.now() + 3_600_000);
    tg.sendUserMessage({
      chat,
      from: bob,
      text: `call schedule_task {"instruction":"今天的天氣","at":"${first}","repeat":"daily"}`,
    });
    const prompt = await tg.waitFor(
      () => tg.messagesTo(chat).find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("ap:"))),
      20_000,
      "the task's confirmation prompt",
    );
    tg.pressButton({
      from: bob,
      message: prompt,
      data: tg.buttons(prompt).find((b) => b.callback_data?.endsWith(":y"))!.callback_data!,
    });
    await eventually(() => getTask(connection, owner, 1), "the task stored", 20_000);

    const consoleStack = await startConsole({}, { redis: connection, config: stack.config });
    try {
      const { cookie, csrf } = await login(consoleStack.base);
      const paused = await fetch(`${consoleStack.base}/admin/tasks/task`, {
        ...form({ owner: `telegram:${bob.id}`, id: "1", action: "pause", csrf }),
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      });
      expect(paused.status).toBe(303);
      expect((await getTask(connection, owner, 1))!.paused?.by).toBe("operator");
    } finally {
      await consoleStack.close();
    }

    const seen = tg.sent.length;
    tg.sendUserMessage({ chat, from: bob, text: "/tasks" });
    const listing = await tg.waitFor(
      () => tg.sent.slice(seen).find((m) => m.chatId === chat.id),
      20_000,
      "the /tasks listing",
    );
    expect(listing.text).toContain("#1 今天的天氣 — 已由機器人管理者暫停");
    expect(tg.buttons(listing).map((b) => b.text)).toEqual(["❌ 取消 #1"]);
    // A resume press made up from the cancel button's data is refused: the operator's pause stands.
    const cancel = tg.buttons(listing)[0]!.callback_data!;
    const resume = cancel.replace(/^tk:cl:/, "tk:rl:");
    expect(resume).not.toBe(cancel);
    expect(await tg.toast(tg.pressButton({ from: bob, message: listing, data: resume }), 20_000)).toBe(
      "排程任務 #1 由機器人管理者暫停，只有管理者可以繼續（你可以取消它）。",
    );
    expect((await getTask(connection, owner, 1))!.paused?.by).toBe("operator");
    expect(await tg.toast(tg.pressButton({ from: bob, message: listing, data: cancel }), 20_000)).toBe(
      "已取消排程任務 #1。",
    );
    expect(await getTask(connection, owner, 1)).toBeUndefined();
  });
});
