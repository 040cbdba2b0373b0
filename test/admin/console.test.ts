/**
 * The operator's web console (src/admin/), end to end in a real browser: Debian's headless
 * Chromium (`/usr/bin/chromium`, no browser download) driven by playwright-core logs in with the
 * token, reads the overview with the queue names, approves a pairing code, revokes an "always
 * allow" grant, erases a person's memory (whose contents the page never shows) and pauses a task
 * through the pages' own forms; the refusals (a wrong token, a change without its CSRF token, a
 * change from another origin, a one-time link used twice) are plain HTTP requests. Real Redis,
 * real BullMQ queues, the real health server. Screenshots go to test-results/console/.
 */
import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Queue } from "bullmq";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createAdminConsole, type AdminConsole } from "../../src/admin/console.js";
import { AccessStore } from "../../src/access/store.js";
import { grantStoreFor } from "../../src/approvals/grants.js";
import { MemoryStore } from "../../src/memory/store.js";
import { startHealthServer } from "../../src/health.js";
import type { RedisClient } from "../../src/redis.js";
import { CHATS_QUEUE } from "../../src/queue/keys.js";
import { REMINDERS_QUEUE } from "../../src/reminders/schedule.js";
import { TaskScheduler, TASKS_QUEUE } from "../../src/tasks/schedule.js";
import { addTask, getTask } from "../../src/tasks/store.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { TraceStore } from "../../src/trace/store.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { useRedis } from "../helpers/use-redis.js";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = "test-results/console";
const TOKEN = "t0ken-for-the-console-test-0123456789abcdef";

let redis: RedisClient;
useRedis((r) => (redis = r));

/** A console on a health server of its own (port 0), over real queues. */
async function startConsole(env: Record<string, string> = {}) {
  const config = testConfig({ ADMIN_CONSOLE: "on", HEALTH_PORT: "9", BOT_LOCALE: "en", ...env });
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

describe("the console in a real browser", () => {
  let browser: Browser;
  let stack: Awaited<ReturnType<typeof startConsole>>;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsole({ ADMIN_CONSOLE_TOKEN: TOKEN });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
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
    expect((await getTask(redis, owner, task.id))!.paused?.by).toBe("owner");
    expect(await stack.queues[1]!.getJobSchedulersCount()).toBe(0);
    expect(await page.locator(`button:has-text("Resume #${task.id}")`).count()).toBe(1);
    await page.screenshot({ path: `${SHOTS}/tasks.png`, fullPage: true });

    // Bull Board behind the same login: its page and API answer this session.
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

  it("refuses a change from another origin, even with the session and its CSRF token", async () => {
    const { cookie, csrf } = await login(stack.base);
    const access = new AccessStore(redis);
    const paired = (await access.pair({ platform: "telegram", userId: "556", chatId: "556", userName: "Y" })) as {
      code: string;
    };
    const headers = { cookie, "content-type": "application/x-www-form-urlencoded" };
    const foreign: Record<string, string>[] = [{ origin: "http://evil.example" }, { "sec-fetch-site": "cross-site" }];
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
