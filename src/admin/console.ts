/**
 * The operator's web console at `/admin` of the health server (`ADMIN_CONSOLE=on`; docs/console.md):
 * login (the `ADMIN_CONSOLE_TOKEN`, or a one-time link printed at start-up), then an HttpOnly,
 * SameSite=Strict session cookie; pages for the overview (health checks, workers, queue depths and
 * failed jobs), the queues (Bull Board, read-only, behind the same login, showing jobs without their content:
 * src/admin/job-view.ts), the tools, tasks and
 * reminders, access, memory sizes, traces, and usage and cost (src/admin/usage.ts). Every change is a POST with the session's CSRF token, from this origin
 * (`Origin` / `Sec-Fetch-Site`), and is logged with who (the session's short name) and what —
 * never message content. The pages carry a strict Content-Security-Policy and no script (but the
 * usage page's charts: scripts from this origin only).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createBullBoard } from "@bull-board/api";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import express from "express";
import { DateTime } from "luxon";
import { relative } from "node:path";
import { envListOf, parsePrincipal, principalKind } from "../access/policy.js";
import { AccessStore } from "../access/store.js";
import { grantStoreFor, type GrantOwner } from "../approvals/grants.js";
import { MemoryStore, totalBytes, type MemoryScope } from "../memory/store.js";
import { COMMAND_TEXT } from "../commands/catalog.js";
import type { Config, Locale } from "../config.js";
import { checkHealth, type HealthCheck } from "../health.js";
import { BodyTooLargeError, readBody, refuseAndClose } from "../http-server.js";
import { englishCount, englishNoun, localize, type Localized } from "../i18n.js";
import { redact, type Logger } from "../log.js";
import { readMcpAnnouncement } from "../mcp/announce.js";
import { conversationKey, type Platform } from "../queue/incoming.js";
import type { RedisClient } from "../redis.js";
import { ReminderScheduler, REMINDERS_QUEUE } from "../reminders/schedule.js";
import { deleteReminder, getReminder, listReminders, updateReminder, type Reminder } from "../reminders/store.js";
import { timeInWords } from "../reminders/time.js";
import { cancelTask, pauseTask, resumeTask } from "../tasks/actions.js";
import { shortInstruction } from "../tasks/format.js";
import { TaskScheduler, TASKS_QUEUE } from "../tasks/schedule.js";
import { TraceStore } from "../trace/store.js";
import { getTask, listTasks, type Task } from "../tasks/store.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import { UsageStore } from "../usage/store.js";
import { CONSOLE_CSS, esc, layout, pausedWords, postForm, REFUSALS, T, t, table, type RefusalReason } from "./pages.js";
import { staticFiles, usageCsv, usagePage, usageReport } from "./usage.js";
import { ConsoleQueueAdapter } from "./job-view.js";
import { ConsoleSessions, csrfMatches, SESSION_TTL_SECONDS, tokenMatches, type ConsoleSession } from "./session.js";

/** The session cookie's name (`__Host-` needs HTTPS, which the health server does not speak). */
export const SESSION_COOKIE = "bot_admin";

/** The Content-Security-Policy of the console's own pages: nothing but this origin's stylesheet; no script, no frames. */
export const CONSOLE_CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The policy of the usage page: {@link CONSOLE_CSP} plus scripts from this origin (uPlot and the
 * page's own, under `/admin/static/`); still no inline script or style.
 */
export const USAGE_CSP = CONSOLE_CSP.replace("default-src 'none';", "default-src 'none'; script-src 'self';");

/**
 * The policy of Bull Board's pages (`/admin/queues`): its scripts and styles from this origin only
 * (its React components set inline styles, so `style-src` allows them; no inline script).
 */
export const QUEUES_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'";

/**
 * Bull Board's page links Google Fonts' stylesheet (`<link href="https://fonts.googleapis.com/…">`
 * in its `index.ejs`): {@link QUEUES_CSP} refuses it (the browser logged a policy violation on
 * every visit), and an operator's console should not tell Google when it is opened, nor wait for it
 * where the host has no internet. Its stylesheet falls back to the system's fonts.
 */
const OUTSIDE_FONTS = /<link\s[^>]*href="https:\/\/fonts\.googleapis\.com\/[^"]*"[^>]*>\s*/g;

/**
 * Express middleware for Bull Board's router: its page rendered without {@link OUTSIDE_FONTS}.
 * A render error goes to Express' error handling as before; anything but the page is untouched.
 */
function withoutOutsideFonts(_req: express.Request, res: express.Response, next: express.NextFunction): void {
  const render = res.render.bind(res);
  res.render = ((view: string, options?: object) =>
    render(view, options ?? {}, (error: Error | null, html: string) => {
      if (error) next(error);
      else res.send(html.replace(OUTSIDE_FONTS, ""));
    })) as typeof res.render;
  next();
}

/** Largest form body the console reads, in bytes. */
const MAX_FORM_BYTES = 8 * 1024;
/** Most keys scanned for one listing (people with tasks, reminders, grants or memory). */
const MAX_KEYS_SCANNED = 1000;

/** What the console reads and steers. */
export interface AdminConsoleParts {
  config: Config;
  log: Logger;
  /** A Redis connection of the process (the health server's probe). */
  redis: RedisClient;
  /** The bot's queues (the chat queue and the features' queues), on `redis` with the bot's prefix. */
  queues: Queue[];
  /** The health checks of `/health` (Redis, each adapter's connection). */
  checks: Record<string, HealthCheck>;
  /** Now, in ms since the epoch (the usage page's window ends today); default `Date.now`. */
  now?: () => number;
  /** The tools to list (this process's toolbox, with the MCP tools it knows of). */
  toolbox: () => ToolBox;
  /**
   * Tells an approved stranger they are in, in their DM (`chatId`); rejects when the platform is not
   * configured here (the approval stands; the page says they were not told).
   */
  tell?: (platform: Platform, chatId: string, text: string) => Promise<void>;
}

/** A running console: the request handler the health server delegates `/admin` to, and the start-up login link. */
export interface AdminConsole {
  /** Handles a request whose path is `/admin` or under it. Never throws (a failure answers 500 and is logged). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /**
   * Without `ADMIN_CONSOLE_TOKEN`: makes a one-time login link under `baseUrl` (e.g.
   * `http://127.0.0.1:9090`), valid `LOGIN_LINK_TTL_SECONDS` (src/admin/session.ts), and returns it; undefined with a token.
   */
  loginLink(baseUrl: string): Promise<string | undefined>;
}

type Actor = { session: string; via: string; ip: string | undefined };

/**
 * A request refused before it could change anything: answered with `status` and a page saying
 * `reason` in the console's language, and logged in English (with `detail`, when given).
 */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly reason: RefusalReason,
    readonly detail?: string,
  ) {
    super(REFUSALS[reason].en + (detail ? ` (${detail})` : ""));
  }
}

/**
 * Whether a task's or reminder's owner is the terminal chat's (`npm run chat`, platform `console`):
 * its jobs are on the terminal's own queues (another BullMQ prefix), so the console shows them
 * without pause, resume or cancel — `/tasks` and `/reminders` in the terminal steer them.
 */
function terminalOwned(owner: { platform: Platform }): boolean {
  return owner.platform === "console";
}

/** Creates the console (see the module comment). */
export function createAdminConsole(parts: AdminConsoleParts): AdminConsole {
  const { config, log, redis } = parts;
  const locale: Locale = config.BOT_LOCALE;
  const sessions = new ConsoleSessions(redis);
  const access = new AccessStore(redis, log);
  const grants = grantStoreFor(redis, config, log);
  const memory = new MemoryStore(redis, { log });
  const traces = new TraceStore(redis, { log });
  const usage = new UsageStore(redis, config.TIMEZONE);
  const now = parts.now ?? Date.now;
  const statics = staticFiles();
  const queueNamed = (name: string) => parts.queues.find((q) => q.name === name);
  const taskQueue = queueNamed(TASKS_QUEUE);
  const reminderQueue = queueNamed(REMINDERS_QUEUE);
  const tasks = taskQueue ? new TaskScheduler(taskQueue as Queue) : undefined;
  const reminders = reminderQueue ? new ReminderScheduler(reminderQueue as Queue) : undefined;

  // Bull Board, read-only: every change it offers is refused (a change must carry our CSRF token).
  const board = new ExpressAdapter();
  board.setBasePath("/admin/queues");
  createBullBoard({
    queues: parts.queues.map((q) => new ConsoleQueueAdapter(q)),
    serverAdapter: board,
    options: {
      uiConfig: {
        boardTitle: t(locale, "queues"),
        // Bull Board's header: a way back to the console's own pages.
        miscLinks: [{ text: t(locale, "backToConsole"), url: "/admin/overview" }],
        hideDocsLink: true,
      },
    },
  });
  const boardApp = express();
  boardApp.disable("x-powered-by");
  boardApp.use("/admin/queues", withoutOutsideFonts, board.getRouter());

  const send = (res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "text/html; charset=utf-8", ...headers }).end(html);
  };
  const redirect = (res: ServerResponse, to: string, headers: Record<string, string> = {}): void =>
    void res.writeHead(303, { location: to, ...headers }).end();

  const actorOf = (req: IncomingMessage, session: ConsoleSession): Actor => ({
    session: session.name,
    via: session.via,
    ip: req.socket.remoteAddress,
  });
  const audit = (actor: Actor, action: string, target: Record<string, unknown>, outcome: string) =>
    log.info({ admin: actor, action, ...target, outcome }, `console: ${action} (${outcome})`);
  /**
   * The `kind` of an allow or revoke form: `user` or `chat`, exactly (the console's forms send one
   * of them). Anything else (`admin`, missing) is refused with 400: an unknown kind must not quietly
   * allow or revoke a user.
   */
  const kindOf = (kind: string | null, actor: Actor, action: "allow" | "revoke"): "user" | "chat" => {
    if (kind === "user" || kind === "chat") return kind;
    audit(actor, `access.${action}`, {}, "unknown kind");
    throw new Refused(400, "unknownKind");
  };

  /** Refuses a change from another origin: a browser's `Sec-Fetch-Site` or `Origin` must name this site. */
  const checkOrigin = (req: IncomingMessage) => {
    const site = req.headers["sec-fetch-site"];
    if (site !== undefined && site !== "same-origin")
      throw new Refused(403, "otherSite", `Sec-Fetch-Site: ${String(site).slice(0, 20)}`);
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host}` && origin !== `https://${req.headers.host}`)
      throw new Refused(403, "otherOrigin");
  };

  const readForm = async (req: IncomingMessage): Promise<URLSearchParams> => {
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") throw new Refused(415, "notForm");
    return new URLSearchParams((await readBody(req, MAX_FORM_BYTES)).toString("utf8"));
  };

  const cookieOf = (req: IncomingMessage): string | undefined => {
    for (const part of (req.headers.cookie ?? "").split(";")) {
      const [name, ...value] = part.trim().split("=");
      if (name === SESSION_COOKIE) return value.join("=");
    }
    return undefined;
  };
  const setCookie = (id: string) =>
    `${SESSION_COOKIE}=${id}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_SECONDS}`;

  const loginPage = (res: ServerResponse, status = 200, notice?: string) =>
    send(
      res,
      status,
      layout(locale, {
        title: t(locale, "login"),
        ...(notice ? { notice } : {}),
        body: config.ADMIN_CONSOLE_TOKEN
          ? `<form method="post" action="/admin/login"><label for="token">${esc(t(locale, "token"))}</label>` +
            `<input type="password" id="token" name="token" autocomplete="current-password" required>` +
            ` <button type="submit">${esc(t(locale, "login"))}</button></form>`
          : `<p>${esc(t(locale, "noToken"))}</p>`,
      }),
    );

  const startSession = async (res: ServerResponse, via: ConsoleSession["via"], req: IncomingMessage) => {
    const { id, session } = await sessions.create(via);
    audit(actorOf(req, session), "login", {}, "ok");
    redirect(res, "/admin/overview", { "set-cookie": setCookie(id) });
  };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://console.invalid");
    const path = url.pathname;
    const method = req.method ?? "GET";
    const changes = method !== "GET" && method !== "HEAD";
    res.setHeader(
      "content-security-policy",
      path.startsWith("/admin/queues") ? QUEUES_CSP : path === "/admin/usage" ? USAGE_CSP : CONSOLE_CSP,
    );
    res.setHeader("x-content-type-options", "nosniff");
    // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the forms' POSTs.
    res.setHeader("referrer-policy", "same-origin");
    res.setHeader("x-frame-options", "DENY");
    res.setHeader("cache-control", "no-store");
    if (changes) checkOrigin(req);

    if (path === "/admin/console.css" && !changes) {
      res.writeHead(200, { "content-type": "text/css; charset=utf-8" }).end(CONSOLE_CSS);
      return;
    }
    const file = path.startsWith("/admin/static/") ? statics.get(path.slice("/admin/static/".length)) : undefined;
    if (file && !changes) {
      // Public files (uPlot's, the chart script): no data in them, cacheable for a day.
      res.setHeader("cache-control", "public, max-age=86400");
      res.writeHead(200, { "content-type": file.type }).end(file.body);
      return;
    }
    if (path === "/admin/login") {
      const code = changes ? null : url.searchParams.get("code");
      if (!changes && code === null) return loginPage(res);
      // At most LOGIN_FAILS_ALLOWED refused logins per IP address in 10 minutes; then 429 until the oldest leave the window.
      const ip = req.socket.remoteAddress ?? "?";
      const wait = await sessions.loginHeldBack(ip, now());
      if (wait !== undefined) {
        log.warn({ admin: { ip } }, "console: login held back (too many refused logins from this address)");
        res.setHeader("retry-after", String(wait));
        return loginPage(res, 429, t(locale, "tooManyLogins", { minutes: Math.ceil(wait / 60) }));
      }
      if (!changes) {
        if (await sessions.useLoginCode(code!)) return startSession(res, "link", req);
        await sessions.loginRefused(ip, now());
        log.warn({ admin: { ip } }, "console: login link refused (invalid, used or expired)");
        return loginPage(res, 403, t(locale, "linkUsed"));
      }
      const form = await readForm(req);
      const given = form.get("token") ?? "";
      if (config.ADMIN_CONSOLE_TOKEN && tokenMatches(given, config.ADMIN_CONSOLE_TOKEN)) {
        await sessions.loginWorked(ip);
        return startSession(res, "token", req);
      }
      await sessions.loginRefused(ip, now());
      log.warn({ admin: { ip } }, "console: login refused (wrong token)");
      return loginPage(res, 403, t(locale, "wrongToken"));
    }

    const id = cookieOf(req);
    const session = await sessions.get(id);
    if (!session) {
      if (changes) throw new Refused(401, "notLoggedIn");
      return redirect(res, "/admin/login");
    }
    const actor = actorOf(req, session);

    if (path.startsWith("/admin/queues")) {
      // Read-only: Bull Board's own buttons (retry, clean, pause a queue) would change without our CSRF token.
      if (changes) throw new Refused(405, "readOnly");
      if (path === "/admin/queues") return redirect(res, "/admin/queues/");
      boardApp(req as express.Request, res as express.Response);
      return;
    }

    if (changes) {
      const form = await readForm(req);
      if (!csrfMatches(session, form.get("csrf") ?? undefined)) throw new Refused(403, "csrf");
      return act(path, form, actor, res, id!);
    }

    const notice = noticeText(locale, url.searchParams);
    const page = { csrf: session.csrf, ...(notice ? { notice } : {}) };
    switch (path) {
      case "/admin":
      case "/admin/":
        return redirect(res, "/admin/overview");
      case "/admin/overview":
        return send(
          res,
          200,
          layout(locale, { title: t(locale, "overview"), current: "overview", ...page, body: await overview() }),
        );
      case "/admin/tools":
        return send(
          res,
          200,
          layout(locale, { title: t(locale, "tools"), current: "tools", ...page, body: await toolsPage() }),
        );
      case "/admin/tasks":
        return send(
          res,
          200,
          layout(locale, { title: t(locale, "tasks"), current: "tasks", ...page, body: await tasksPage(session.csrf) }),
        );
      case "/admin/access":
        return send(
          res,
          200,
          layout(locale, {
            title: t(locale, "access"),
            current: "access",
            ...page,
            body: await accessPage(session.csrf),
          }),
        );
      case "/admin/usage":
        return send(
          res,
          200,
          layout(locale, {
            title: t(locale, "usage"),
            current: "usage",
            ...page,
            styles: ["/admin/static/uPlot.min.css"],
            body: usagePage(locale, await usageReport(usage, config, now())),
          }),
        );
      case "/admin/usage.csv": {
        const at = now();
        const report = await usageReport(usage, config, at);
        audit(actor, "usage.csv", {}, "ok");
        res
          .writeHead(200, {
            "content-type": "text/csv; charset=utf-8",
            "content-disposition": `attachment; filename="usage-${report.days.at(-1)!.day}.csv"`,
          })
          .end(usageCsv(report));
        return;
      }
      case "/admin/traces":
        return send(
          res,
          200,
          layout(locale, {
            title: t(locale, "traces"),
            current: "traces",
            ...page,
            body: await tracesPage(url.searchParams.get("c") ?? undefined),
          }),
        );
      case "/admin/memory":
        return send(
          res,
          200,
          layout(locale, {
            title: t(locale, "memory"),
            current: "memory",
            ...page,
            body: await memoryPage(session.csrf),
          }),
        );
      default:
        return send(res, 404, layout(locale, { title: "404", ...page, body: "" }));
    }
  }

  /** A change: the session and CSRF token were checked. Ends with a redirect to the page and a notice. */
  async function act(path: string, form: URLSearchParams, actor: Actor, res: ServerResponse, id: string) {
    const back = (page: string, notice: NoticeCode, params: Record<string, string | number> = {}): void => {
      const query = new URLSearchParams({ notice });
      for (const [key, value] of Object.entries(params)) query.set(key, String(value));
      redirect(res, `/admin/${page}?${query.toString()}`);
    };
    switch (path) {
      case "/admin/logout":
        await sessions.end(id);
        audit(actor, "logout", {}, "ok");
        return redirect(res, "/admin/login", {
          "set-cookie": `${SESSION_COOKIE}=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0`,
        });
      case "/admin/access/approve":
      case "/admin/access/deny": {
        const code = (form.get("code") ?? "").slice(0, 32);
        const approve = path.endsWith("approve");
        const pairing = approve ? await access.approve(code, "console") : await access.deny(code);
        const who = pairing ? `${pairing.platform}:${pairing.userId}` : undefined;
        // A code approved before (here, with /approve or npm run access): whom it let in and when.
        const before = !pairing && approve ? await access.approvedCode(code) : undefined;
        audit(
          actor,
          approve ? "pairing.approve" : "pairing.deny",
          { user: who ?? (before ? `${before.platform}:${before.userId}` : undefined) },
          pairing ? "ok" : before ? "approved already" : "no such code",
        );
        if (before)
          return back("access", "approvedAlready", {
            who: `${before.platform}:${before.userId}`,
            when: DateTime.fromMillis(before.at, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm"),
          });
        if (!pairing) return back("access", "noPairing");
        if (!approve) return back("access", "denied", { who: who! });
        let told = false;
        try {
          await parts.tell?.(
            pairing.platform as Platform,
            pairing.chatId,
            localize(pairing.locale ?? locale, COMMAND_TEXT.youAreIn),
          );
          told = parts.tell !== undefined;
        } catch (error) {
          log.warn({ err: error, user: who }, "console: could not tell an approved user they are in");
        }
        return back("access", told ? "approvedTold" : "approved", { who: who! });
      }
      case "/admin/access/revoke": {
        const chat = kindOf(form.get("kind"), actor, "revoke") === "chat";
        const principal = parsePrincipal(form.get("principal") ?? "");
        if (!principal) throw new Refused(400, "notPrincipal");
        const removed = chat ? await access.revokeChat(principal) : await access.revokeUser(principal);
        // The grant (if any) is gone; an env list of the same kind still lets it in until .env is edited and the bot restarted.
        const list = envListOf(config, principal, chat ? "chat" : "user");
        audit(
          actor,
          chat ? "chat.revoke" : "user.revoke",
          { principal },
          `${removed ? "ok" : "not granted"}${list ? `, in ${list}` : ""}`,
        );
        if (list) return back("access", removed ? "revokedStillEnv" : "notGrantedEnv", { who: principal, list });
        return back("access", removed ? "revoked" : "notGranted", { who: principal });
      }
      case "/admin/access/allow": {
        const chat = kindOf(form.get("kind"), actor, "allow") === "chat";
        const principal = parsePrincipal(form.get("principal") ?? "");
        const kind = principal ? principalKind(principal) : undefined;
        // A group as a user, or a person as a chat (as `npm run access -- allow` / `allow-chat` refuse them).
        if (!principal || (!chat && kind === "group")) {
          audit(actor, chat ? "chat.allow" : "user.allow", {}, "not platform:id");
          return back("access", "badPrincipal");
        }
        if (chat && kind === "person") {
          audit(actor, "chat.allow", { principal }, "a person, not a group");
          return back("access", "personAsChat", { who: principal });
        }
        const list = envListOf(config, principal, chat ? "chat" : "user");
        if (list) {
          // No grant is written: it would add nothing now, and would keep the access after the entry leaves .env.
          audit(actor, chat ? "chat.allow" : "user.allow", { principal }, `in ${list}, not granted`);
          return back("access", "allowedByEnv", { who: principal, list });
        }
        const added = chat ? await access.allowChat(principal) : await access.allowUser(principal);
        audit(actor, chat ? "chat.allow" : "user.allow", { principal }, added ? "ok" : "already allowed");
        return back("access", added ? "allowed" : "allowedAlready", { who: principal });
      }
      case "/admin/access/grant-revoke": {
        const owner = grantOwnerOf(`grants:${form.get("key") ?? ""}`);
        const tool = (form.get("tool") ?? "").slice(0, 128);
        if (!owner || !tool) throw new Refused(400, "badGrant");
        const removed = await grants.revoke(owner, tool);
        const target = { user: `${owner.platform}:${owner.userId}`, conversation: conversationKey(owner), tool };
        audit(actor, "grant.revoke", target, removed ? "ok" : "gone");
        return back("access", removed ? "grantRevoked" : "grantGone", removed ? { who: target.user, tool } : {});
      }
      case "/admin/memory/erase": {
        const scope = memoryScopeOfKey(form.get("scope") ?? "");
        if (!scope) throw new Refused(400, "badScope");
        const files = await memory.erase(scope);
        const who = `${scope.kind} ${scope.platform}:${scope.kind === "personal" ? scope.userId : scope.chatId}`;
        audit(actor, "memory.erase", { scope: who, files }, files > 0 ? "ok" : "empty");
        return back("memory", "memoryErased", { scope: scope.kind, who: who.slice(scope.kind.length + 1), files });
      }
      case "/admin/tasks/task":
      case "/admin/tasks/reminder": {
        const owner = ownerOf(form.get("owner") ?? "");
        const itemId = Number(form.get("id"));
        const action = form.get("action") ?? "";
        if (!owner || !Number.isSafeInteger(itemId) || itemId <= 0) throw new Refused(400, "badOwnerOrId");
        // The terminal chat's jobs are on its own queues (`npm run chat`'s prefix), out of this process's reach.
        if (terminalOwned(owner)) throw new Refused(400, "terminalOwned");
        const target = { item: `${owner.platform}:${owner.userId}#${itemId}` };
        if (path.endsWith("reminder")) {
          if (action !== "cancel" && action !== "pause" && action !== "resume") throw new Refused(400, "unknownAction");
          const reminder = await getReminder(redis, owner, itemId);
          if (!reminder) {
            audit(actor, `reminder.${action}`, target, "gone");
            return back("tasks", "reminderGone");
          }
          let outcome = "ok";
          if (action === "cancel") {
            await deleteReminder(redis, owner, itemId);
            await reminders?.unschedule(owner, reminder);
          } else if (action === "pause") {
            if (reminder.paused) outcome = "already paused";
            // A one-off that was posted (awaiting done or snooze) has nothing left to pause: a resume would bring it back due in the past.
            else if (ended(reminder)) outcome = "ended";
            else {
              // Marked first: a job due meanwhile finds it paused and posts nothing.
              await updateReminder(redis, owner, {
                ...reminder,
                paused: { at: now(), by: "operator" },
                next: undefined,
              });
              await reminders?.unschedule(owner, reminder);
            }
          } else if (!reminder.paused) outcome = ended(reminder) ? "ended" : "not paused";
          // Paused after it was posted (before the console refused that): nothing is left to resume.
          else if (!reminder.repeat && reminder.firedAt !== undefined) outcome = "ended";
          else if (!reminders) outcome = "no reminders queue here";
          else {
            // From now on: a repeat's next time after now; a one-off at its time, or at once when that passed.
            const { paused: _paused, ...rest } = reminder;
            const resumed: Reminder = { ...rest, next: Math.max(now(), reminder.at) };
            await updateReminder(redis, owner, resumed);
            const next = await reminders.resume(owner, resumed, now());
            if (next !== resumed.next) await updateReminder(redis, owner, { ...resumed, next });
          }
          audit(actor, `reminder.${action}`, target, outcome);
          const done = ({ cancel: "reminderCancelled", pause: "reminderPaused", resume: "reminderResumed" } as const)[
            action
          ];
          return back("tasks", outcome === "ok" ? done : "taskOutcome", {
            id: itemId,
            ...(outcome === "ok" ? {} : { outcome }),
          });
        }
        const task = await getTask(redis, owner, itemId, log);
        if (!task) {
          audit(actor, `task.${action.slice(0, 10)}`, target, "gone");
          return back("tasks", "taskGone");
        }
        let outcome = "ok";
        if (action === "pause") {
          if (task.paused) outcome = "already paused";
          else if (ended(task)) outcome = "ended";
          else await pauseTask(redis, tasks, owner, task, { by: "operator" });
        } else if (action === "resume") {
          if (!task.paused) outcome = ended(task) ? "ended" : "not paused";
          else if (!tasks) outcome = "no tasks queue here";
          else await resumeTask(redis, tasks, owner, task);
        } else if (action === "cancel") await cancelTask(redis, tasks, owner, task);
        else throw new Refused(400, "unknownAction");
        audit(actor, `task.${action}`, target, outcome);
        const done = ({ pause: "taskPaused", resume: "taskResumed", cancel: "taskCancelled" } as const)[
          action as "pause"
        ];
        return back("tasks", outcome === "ok" ? done : "taskOutcome", {
          id: itemId,
          ...(outcome === "ok" ? {} : { outcome }),
        });
      }
      default:
        throw new Refused(404, "noSuchAction");
    }
  }

  async function overview(): Promise<string> {
    const health = await checkHealth(parts.checks);
    const checks = table(
      [t(locale, "check"), t(locale, "state")],
      Object.entries(health.checks).map(([name, ok]) => [
        esc(name),
        ok ? `<span class="ok">${esc(t(locale, "up"))}</span>` : `<span class="bad">${esc(t(locale, "down"))}</span>`,
      ]),
      t(locale, "none"),
    );
    const rows = await Promise.all(
      parts.queues.map(async (q) => {
        const [counts, workers] = await Promise.all([
          q.getJobCounts("waiting", "active", "delayed", "failed", "prioritized"),
          q.getWorkersCount().catch(() => -1),
        ]);
        const waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
        const failed = counts.failed ?? 0;
        return [
          `<a href="/admin/queues/queue/${encodeURIComponent(q.name)}">${esc(q.name)}</a>`,
          workers < 0 ? "?" : esc(workers),
          esc(waiting),
          esc(counts.active ?? 0),
          esc(counts.delayed ?? 0),
          failed > 0 ? `<span class="bad">${esc(failed)}</span>` : "0",
        ];
      }),
    );
    const models = [...(await modelStats(Date.now())).entries()].map(([model, m]) => {
      const sorted = [...m.ms].sort((a, b) => a - b);
      const at = (q: number) =>
        sorted.length > 0 ? esc(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!) : "—";
      return [
        `<code>${esc(model)}</code>`,
        esc(m.calls),
        m.errors > 0 ? `<span class="bad">${esc(m.errors)}</span>` : "0",
        at(0.5),
        at(0.95),
      ];
    });
    return (
      `<h2>${esc(t(locale, "health"))}</h2>${checks}` +
      `<h2>${esc(t(locale, "modelHour"))}</h2>` +
      table(
        [t(locale, "model"), t(locale, "calls"), t(locale, "errors"), t(locale, "p50"), t(locale, "p95")],
        models,
        t(locale, "noModelCalls"),
      ) +
      `<h2>${esc(t(locale, "queues"))}</h2>` +
      table(
        [
          t(locale, "queue"),
          t(locale, "workers"),
          t(locale, "waiting"),
          t(locale, "active"),
          t(locale, "delayed"),
          t(locale, "failed"),
        ],
        rows,
        t(locale, "none"),
      ) +
      `<p><a href="/admin/queues/">${esc(t(locale, "queueDetails"))}</a></p>`
    );
  }

  /**
   * Model calls of the last hour, by model, from the stored traces (`trace:{…}`, what `npm run trace`
   * reads; at most {@link MAX_KEYS_SCANNED} conversations, their last runs): calls (answered or
   * failed), failures, and the answered calls' durations in ms.
   */
  async function modelStats(now: number): Promise<Map<string, { calls: number; errors: number; ms: number[] }>> {
    const since = now - 3_600_000;
    const byModel = new Map<string, { calls: number; errors: number; ms: number[] }>();
    const entry = (model: string) => {
      let found = byModel.get(model);
      if (!found) byModel.set(model, (found = { calls: 0, errors: 0, ms: [] }));
      return found;
    };
    for (const key of await scanKeys(redis, "trace:{*}")) {
      const conversation = /^trace:\{(.+)\}$/.exec(key)?.[1];
      if (!conversation) continue;
      for (const run of await traces.runs(conversation)) {
        if (run.finishedAt < since) break; // newest first
        let model = "?";
        for (const event of run.events) {
          if (event.type === "model_call") model = typeof event.data.model === "string" ? event.data.model : "?";
          if (event.at < since) continue;
          if (event.type === "model_response") {
            const stats = entry(model);
            stats.calls += 1;
            if (typeof event.data.durationMs === "number") stats.ms.push(Math.round(event.data.durationMs));
          } else if (event.type === "error" && event.data.where === "model_call") {
            const stats = entry(model);
            stats.calls += 1;
            stats.errors += 1;
          }
        }
      }
    }
    return new Map([...byModel].sort(([a], [b]) => a.localeCompare(b)));
  }

  /**
   * The traces (what `npm run trace` prints): without `conversation`, the conversations with stored
   * runs, newest first; with it, its last runs as timelines (each event's offset, type and its
   * previews: model calls with tokens and ms, tool calls with input and result previews, approvals,
   * compactions, errors).
   */
  async function tracesPage(conversation: string | undefined): Promise<string> {
    if (conversation === undefined) {
      const rows: { key: string; last: number; runs: number }[] = [];
      for (const key of await scanKeys(redis, "trace:{*}")) {
        const name = /^trace:\{(.+)\}$/.exec(key)?.[1];
        if (!name) continue;
        const runs = await traces.runs(name);
        if (runs.length > 0) rows.push({ key: name, last: runs[0]!.finishedAt, runs: runs.length });
      }
      rows.sort((a, b) => b.last - a.last);
      return table(
        [t(locale, "conversation"), t(locale, "runs"), t(locale, "lastRun")],
        rows.map((r) => [
          `<a href="/admin/traces?c=${encodeURIComponent(r.key)}"><code>${esc(r.key)}</code></a>`,
          esc(r.runs),
          esc(DateTime.fromMillis(r.last, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm:ss")),
        ]),
        t(locale, "noTraces"),
      );
    }
    const runs = await traces.runs(conversation.slice(0, 300));
    if (runs.length === 0) return `<p class="empty">${esc(t(locale, "noTraces"))}</p>`;
    return runs
      .map((run) => {
        const title =
          `${DateTime.fromMillis(run.startedAt, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm:ss")} · ` +
          `${run.finishedAt - run.startedAt} ms · ${englishCount(run.events.length, "event")}`;
        const rows = run.events.map((e) => [
          esc(`+${e.at - run.startedAt} ms`),
          e.type === "error" ? `<span class="bad">${esc(e.type)}</span>` : esc(e.type),
          `<code>${esc(
            Object.entries(e.data)
              .map(([k, v]) => `${k}=${typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v))}`)
              .join(" ")
              .slice(0, 2000),
          )}</code>`,
        ]);
        const dropped = run.droppedEvents > 0 ? `<p class="empty">+${esc(run.droppedEvents)}</p>` : "";
        return `<h2>${esc(title)}</h2>${table(["ms", t(locale, "event"), t(locale, "details")], rows, t(locale, "none"))}${dropped}`;
      })
      .join("");
  }

  async function toolsPage(): Promise<string> {
    const tools = [...parts.toolbox().list()].sort((a, b) => a.name.localeCompare(b.name));
    const sourceOf = (tool: (typeof tools)[number]) =>
      tool.source ?? (tool.file.startsWith("/") ? relative(process.cwd(), tool.file) : tool.file);
    const rows = tools.map((tool) => [
      `<code>${esc(tool.name)}</code>`,
      esc(tool.tags.join(", ")),
      tool.dangerous ? `<span class="bad">${esc(t(locale, "yes"))}</span>` : esc(t(locale, "no")),
      esc(sourceOf(tool)),
    ]);
    const announcement = await readMcpAnnouncement(redis).catch(() => undefined);
    const servers = new Map<string, string>();
    for (const tool of announcement?.tools ?? []) servers.set(tool.server, "");
    const mcpRows = [
      ...[...servers.keys()].map((server) => {
        const count = announcement!.tools.filter((x) => x.server === server).length;
        return [
          esc(server),
          `<span class="ok">${esc(t(locale, "serving", { count, tools: englishNoun(count, "tool") }))}</span>`,
        ];
      }),
      ...(announcement?.skipped ?? []).map((s) => [
        esc(s.server),
        `<span class="bad">${esc(t(locale, "skipped", { reason: s.reason.slice(0, 200) }))}</span>`,
      ]),
    ];
    return (
      table(
        [t(locale, "name"), t(locale, "tags"), t(locale, "dangerous"), t(locale, "source")],
        rows,
        t(locale, "none"),
      ) +
      `<h2>${esc(t(locale, "mcpServers"))}</h2>` +
      table([t(locale, "name"), t(locale, "state")], mcpRows, t(locale, "noMcp")) +
      (announcement && mcpRows.length > 0
        ? `<p class="empty">${esc(t(locale, "announced", { time: timeInWords(announcement.at, config.TIMEZONE, locale) }))}</p>`
        : "")
    );
  }

  async function tasksPage(csrf: string): Promise<string> {
    const taskRows: string[][] = [];
    for (const owner of await ownersOf(redis, "task")) {
      for (const task of await listTasks(redis, owner, log))
        taskRows.push(scheduledRow("task", owner, task, task.instruction, csrf));
    }
    const reminderRows: string[][] = [];
    for (const owner of await ownersOf(redis, "reminder")) {
      for (const reminder of await listReminders(redis, owner))
        reminderRows.push(scheduledRow("reminder", owner, reminder, reminder.text, csrf));
    }
    const head = [t(locale, "owner"), "#", t(locale, "what"), t(locale, "next"), t(locale, "actions")];
    return (
      table(head, taskRows, t(locale, "noTasks")) +
      `<h2>${esc(t(locale, "reminders"))}</h2>` +
      table(head, reminderRows, t(locale, "noReminders"))
    );
  }

  /** A task's or reminder's repeat under its next time (one column less: a phone's table fits), or nothing for a one-off. */
  function repeatLine(repeat: string | undefined): string {
    return repeat ? `<br>↻ ${esc(t(locale, "repeat"))}${locale === "zh-TW" ? "：" : ": "}${esc(repeat)}` : "";
  }

  /**
   * One row of the tasks page: a task (`kind` "task", its instruction) or a reminder ("reminder",
   * its text) — owner, id, the words (redacted, then cut to 80 characters), the next time or why
   * there is none with the repeat under it, and pause or resume and cancel (none for the terminal
   * chat's, see {@link terminalOwned}).
   */
  function scheduledRow(
    kind: "task" | "reminder",
    owner: { platform: Platform; userId: string },
    item: Pick<Task | Reminder, "id" | "userName" | "next" | "timezone" | "repeat"> & { paused?: { by: string } },
    words: string,
    csrf: string,
  ): string[] {
    const fields = { owner: `${owner.platform}:${owner.userId}`, id: item.id };
    const button = (action: "pause" | "resume" | "cancel", danger?: "danger") =>
      postForm(`/admin/tasks/${kind}`, csrf, { ...fields, action }, `${t(locale, action)} #${item.id}`, danger);
    const status = item.paused
      ? `<span class="bad">${esc(pausedWords(locale, item.paused.by))}</span>`
      : item.next !== undefined
        ? esc(timeInWords(item.next, item.timezone, locale))
        : esc(t(locale, "ended"));
    return [
      `${esc(item.userName)}<br><code>${esc(fields.owner)}</code>`,
      esc(item.id),
      // Secrets redacted before the cut (a cut secret would no longer match its shape).
      esc(shortInstruction(redact(words), 80)),
      status + repeatLine(item.repeat),
      terminalOwned(owner)
        ? esc(t(locale, "terminalOwned"))
        : ended(item)
          ? // Ended: nothing to pause or resume (a posted one-off reminder awaiting done or snooze); it may be cancelled.
            button("cancel", "danger")
          : // A space between the buttons: a narrow screen breaks the line there (a phone's table fits).
            `${button(item.paused ? "resume" : "pause")} ${button("cancel", "danger")}`,
    ];
  }

  async function accessPage(csrf: string): Promise<string> {
    const [pending, granted] = await Promise.all([access.pending(), access.grants()]);
    const pendingRows = pending.map((p) => [
      `<code>${esc(p.code)}</code>`,
      `${esc(p.userName)}<br><code>${esc(`${p.platform}:${p.userId}`)}</code>`,
      esc(DateTime.fromMillis(p.expiresAt, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm")),
      postForm("/admin/access/approve", csrf, { code: p.code }, `${t(locale, "approve")} ${p.code}`) +
        postForm("/admin/access/deny", csrf, { code: p.code }, `${t(locale, "deny")} ${p.code}`, "danger"),
    ]);
    const listRows = (env: string[], envName: string, granted: string[], kind: "user" | "chat") => [
      ...env.map((p) => [`<code>${esc(p)}</code>`, esc(t(locale, "fromEnv", { list: envName })), ""]),
      ...granted.map((p) => [
        `<code>${esc(p)}</code>`,
        esc(t(locale, "granted")),
        postForm("/admin/access/revoke", csrf, { principal: p, kind }, `${t(locale, "revoke")} ${p}`, "danger"),
      ]),
    ];
    const head = [t(locale, "name"), t(locale, "source"), t(locale, "actions")];
    const allowForm = (kind: "user" | "chat") =>
      `<form method="post" action="/admin/access/allow" class="add"><input type="hidden" name="csrf" value="${esc(csrf)}">` +
      `<input type="hidden" name="kind" value="${kind}"><label for="allow-${kind}">${esc(t(locale, kind === "user" ? "allowUser" : "allowChat"))}</label>` +
      `<input type="text" id="allow-${kind}" name="principal" placeholder="telegram:123456789" maxlength="80" required> ` +
      `<button type="submit">${esc(t(locale, "allow"))}</button></form>`;
    const admins = config.ADMIN_USERS.map((a) => `<code>${esc(a)}</code>`).join(", ") || esc(t(locale, "none"));
    return (
      `<p>${esc(t(locale, "policy"))}: <code>${esc(config.ACCESS_POLICY)}</code></p>` +
      `<p>${esc(t(locale, "admins"))}: ${admins} <span class="empty">${esc(t(locale, "adminsFromEnv"))}</span></p>` +
      `<h2>${esc(t(locale, "pending"))}</h2>` +
      table(
        [t(locale, "code"), t(locale, "owner"), t(locale, "expires"), t(locale, "actions")],
        pendingRows,
        t(locale, "noPending"),
      ) +
      `<h2>${esc(t(locale, "users"))}</h2>` +
      table(head, listRows(config.ALLOWED_USERS, "ALLOWED_USERS", granted.users, "user"), t(locale, "none")) +
      allowForm("user") +
      `<h2>${esc(t(locale, "chats"))}</h2>` +
      table(head, listRows(config.ALLOWED_CHATS, "ALLOWED_CHATS", granted.chats, "chat"), t(locale, "none")) +
      allowForm("chat") +
      `<h2>${esc(t(locale, "alwaysAllow"))}</h2>` +
      table(
        [t(locale, "owner"), t(locale, "conversation"), t(locale, "tools"), t(locale, "expires"), t(locale, "actions")],
        await grantRows(csrf),
        t(locale, "noGrants"),
      )
    );
  }

  /** Rows of every person's unexpired "always allow" grants, each with a revoke form. */
  async function grantRows(csrf: string): Promise<string[][]> {
    const rows: string[][] = [];
    for (const key of await scanKeys(redis, "grants:{*}:*")) {
      const owner = grantOwnerOf(key);
      if (!owner) continue;
      for (const grant of await grants.list(owner)) {
        rows.push([
          `<code>${esc(`${owner.platform}:${owner.userId}`)}</code>`,
          `<code>${esc(conversationKey(owner))}</code>`,
          `<code>${esc(grant.tool)}</code>`,
          esc(DateTime.fromMillis(grant.expiresAt, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm")),
          postForm(
            "/admin/access/grant-revoke",
            csrf,
            { key: key.slice("grants:".length), tool: grant.tool },
            `${t(locale, "revoke")} ${grant.tool}`,
            "danger",
          ),
        ]);
      }
    }
    return rows;
  }

  /** Every scope's memory: sizes, counts and the last write, never the contents; erase forms. */
  async function memoryPage(csrf: string): Promise<string> {
    const rows: string[][] = [];
    for (const key of await scanKeys(redis, "memory:*:{*}")) {
      const scope = memoryScopeOfKey(key);
      if (!scope) continue;
      const files = await memory.read(scope);
      if (files.length === 0) continue;
      const who = `${scope.platform}:${scope.kind === "personal" ? scope.userId : scope.chatId}`;
      const last = Math.max(...files.map((f) => f.updatedAt));
      rows.push([
        esc(t(locale, scope.kind === "personal" ? "person" : "group")),
        `<code>${esc(who)}</code>`,
        esc(files.length),
        esc(`${totalBytes(files)} / ${config.MEMORY_MAX_BYTES}`),
        esc(DateTime.fromMillis(last, { zone: config.TIMEZONE }).toFormat("yyyy-MM-dd HH:mm")),
        postForm("/admin/memory/erase", csrf, { scope: key }, `${t(locale, "erase")} ${who}`, "danger"),
      ]);
    }
    return (
      `<p class="empty">${esc(t(locale, "memoryNote"))}</p>` +
      table(
        [
          t(locale, "scope"),
          t(locale, "name"),
          t(locale, "files"),
          t(locale, "bytes"),
          t(locale, "updated"),
          t(locale, "actions"),
        ],
        rows,
        t(locale, "noMemory"),
      )
    );
  }

  return {
    handle(req, res) {
      route(req, res).catch((error: unknown) => {
        // A form over the limit: refused with the page below, and the connection closed (its body is not read).
        if (error instanceof BodyTooLargeError) {
          if (res.headersSent) return refuseAndClose(req, res, 413);
          res.setHeader("connection", "close");
          error = new Refused(413, "tooLarge");
        }
        if (error instanceof Refused) {
          log.warn(
            {
              admin: { ip: req.socket.remoteAddress },
              method: req.method,
              path: (req.url ?? "").split("?")[0]!.slice(0, 100),
            },
            `console: refused: ${error.message}`,
          );
          if (res.headersSent) return void res.end();
          return send(
            res,
            error.status,
            layout(locale, {
              title: String(error.status),
              body: `<p>${esc(t(locale, "refused", { why: localize(locale, REFUSALS[error.reason]) }))}</p>`,
            }),
          );
        }
        log.error({ err: error }, "console: a page failed");
        if (res.headersSent) return void res.end();
        send(res, 500, layout(locale, { title: "500", body: "" }));
      });
    },
    async loginLink(baseUrl) {
      if (config.ADMIN_CONSOLE_TOKEN) return undefined;
      return `${baseUrl}/admin/login?code=${await sessions.createLoginCode()}`;
    },
  };
}

/** What each parameter of a notice may be: anything else shows no notice at all. */
const NOTICE_PARAMS: Record<string, RegExp> = {
  // platform:id (a Telegram group id is negative; LINE ids are letters and hex digits)
  who: /^(?:telegram|discord|line|console):-?[A-Za-z0-9_]{1,64}$/,
  list: /^[A-Z][A-Z0-9_]{0,39}$/,
  tool: /^[A-Za-z0-9_.-]{1,128}$/,
  scope: /^(?:personal|group)$/,
  files: /^\d{1,6}$/,
  id: /^\d{1,12}$/,
  when: /^\d{4}-\d\d-\d\d \d\d:\d\d$/,
  outcome: /^(?:already paused|not paused|ended|no tasks queue here|no reminders queue here)$/,
};

/** The words of a task's or reminder's `outcome` notice parameter (its values are {@link NOTICE_PARAMS}'s `outcome`). */
const OUTCOMES: Record<string, Localized> = {
  "already paused": { "zh-TW": "原本就已暫停", en: "already paused" },
  "not paused": { "zh-TW": "沒有暫停", en: "not paused" },
  ended: { "zh-TW": "已結束，不能暫停或繼續", en: "it has ended: nothing to pause or resume" },
  "no tasks queue here": { "zh-TW": "這個程序沒有排程任務佇列", en: "no tasks queue here" },
  "no reminders queue here": { "zh-TW": "這個程序沒有提醒佇列", en: "no reminders queue here" },
};

/**
 * The console's own notices after a change, by code: a redirect carries `?notice=<code>` and its
 * parameters (`who`, `id` …), never text, so a link cannot make the console show words of its
 * sender's choosing as an official status.
 */
const NOTICES = {
  noPairing: { "zh-TW": "沒有這個待核准的配對碼（可能已過期）。", en: "No such pending pairing code (expired?)." },
  approvedAlready: {
    "zh-TW": "這個配對碼已經核准過了：{who}，於 {when}。",
    en: "That pairing code was approved already: {who}, on {when}.",
  },
  denied: { "zh-TW": "已拒絕 {who}。", en: "Denied {who}." },
  approvedTold: { "zh-TW": "已核准 {who}，並已通知對方。", en: "Approved {who}; they were told." },
  approved: {
    "zh-TW": "已核准 {who}（無法通知對方，對方現在可以傳訊息了）。",
    en: "Approved {who} (could not tell them; they can write to the bot now).",
  },
  revoked: { "zh-TW": "已撤銷 {who}。", en: "Revoked {who}." },
  notGranted: { "zh-TW": "{who} 原本就沒有授權。", en: "{who} was not granted." },
  revokedStillEnv: {
    "zh-TW": "已撤銷 {who} 的授權，但它仍因環境變數 {list} 而有權限：請從 .env 移除並重新啟動機器人。",
    en: "Revoked the grant of {who}, but it still has access through {list} in the environment: remove it from .env and restart the bot.",
  },
  notGrantedEnv: {
    "zh-TW": "{who} 沒有授權可撤銷：它的權限來自環境變數 {list}，請從 .env 移除並重新啟動機器人。",
    en: "{who} was not granted: it has access through {list} in the environment; remove it from .env and restart the bot.",
  },
  allowedByEnv: {
    "zh-TW": "{who} 已經因環境變數 {list} 而有權限，沒有另外新增授權。",
    en: "{who} already has access through {list} in the environment; no grant was written.",
  },
  personAsChat: {
    "zh-TW": "{who} 是個人，不是群組（Telegram 群組 id 是負數；LINE 群組 id 以 C 或 R 開頭）：請用「允許使用者」。",
    en: "{who} is a person, not a group (Telegram group ids are negative; LINE group ids start with C or R): use “Allow a user”.",
  },
  badPrincipal: T.badPrincipal,
  allowed: { "zh-TW": "已允許 {who}。", en: "Allowed {who}." },
  allowedAlready: { "zh-TW": "{who} 原本就已允許。", en: "{who} was allowed already." },
  grantRevoked: { "zh-TW": "已撤銷 {who} 的「{tool}」永久允許。", en: "Revoked {who}'s always-allow of {tool}." },
  grantGone: { "zh-TW": "這項授權已不存在。", en: "That grant is gone." },
  memoryErased: {
    "zh-TW": "已清除 {scope} {who} 的記憶（{files} 個檔案）。",
    en: "Erased the memory of {scope} {who} ({files} {noun}).",
  },
  reminderCancelled: { "zh-TW": "已取消提醒 #{id}。", en: "Cancelled reminder #{id}." },
  reminderGone: { "zh-TW": "這則提醒已不存在。", en: "That reminder is gone." },
  reminderPaused: { "zh-TW": "已暫停提醒 #{id}。", en: "Paused reminder #{id}." },
  reminderResumed: { "zh-TW": "已繼續提醒 #{id}。", en: "Resumed reminder #{id}." },
  taskGone: { "zh-TW": "這個排程任務已不存在。", en: "That task is gone." },
  taskPaused: { "zh-TW": "已暫停排程任務 #{id}。", en: "Paused task #{id}." },
  taskResumed: { "zh-TW": "已繼續排程任務 #{id}。", en: "Resumed task #{id}." },
  taskCancelled: { "zh-TW": "已取消排程任務 #{id}。", en: "Cancelled task #{id}." },
  taskOutcome: { "zh-TW": "#{id}：{outcome}", en: "#{id}: {outcome}" },
} as const;

/** A notice code of {@link NOTICES}. */
type NoticeCode = keyof typeof NOTICES;

/**
 * The notice a page shows for its query (`?notice=<code>&who=…`): the console's own text for a
 * known code whose placeholders are all present and well formed ({@link NOTICE_PARAMS}); undefined
 * for no code, an unknown code, or a missing or malformed parameter (nothing is shown).
 * @param query - the page address's search parameters.
 */
export function noticeText(locale: Locale, query: URLSearchParams): string | undefined {
  const code = query.get("notice");
  if (!code || !Object.hasOwn(NOTICES, code)) return undefined;
  const texts = NOTICES[code as NoticeCode];
  const values: Record<string, string | number> = {};
  for (const [, name] of texts.en.matchAll(/\{(\w+)\}/g)) {
    if (name === "noun") continue;
    const value = query.get(name!);
    const pattern = NOTICE_PARAMS[name!];
    if (value === null || !pattern?.test(value)) return undefined;
    values[name!] = value;
  }
  if (code === "memoryErased") values.noun = englishNoun(Number(values.files), "file");
  if (typeof values.outcome === "string") values.outcome = localize(locale, OUTCOMES[values.outcome]!);
  return localize(locale, texts, values);
}

/**
 * Whether a task or reminder has ended: not paused and with no next time (a one-off reminder that
 * was posted and awaits done or snooze). The console offers no pause or resume for it, and refuses one.
 */
function ended(item: { next?: number | undefined; paused?: unknown }): boolean {
  return item.paused === undefined && item.next === undefined;
}

/** `platform:userId` of a task or reminder owner, as the forms carry it; undefined when malformed. */
function ownerOf(raw: string): { platform: Platform; userId: string } | undefined {
  const match = /^(telegram|discord|line|console):([^\s]{1,128})$/.exec(raw);
  return match ? { platform: match[1] as Platform, userId: match[2]! } : undefined;
}

/** The people who have records of `kind` (`task:{platform:userId}:items` keys, found with SCAN), sorted. */
async function ownersOf(
  redis: RedisClient,
  kind: "task" | "reminder",
): Promise<{ platform: Platform; userId: string }[]> {
  const tags = (await scanKeys(redis, `${kind}:{*}:items`))
    .map((key) => /^[a-z]+:\{([^}]+)\}:items$/.exec(key)?.[1])
    .filter((tag): tag is string => tag !== undefined);
  return [...new Set(tags)]
    .sort()
    .map(ownerOf)
    .filter((o): o is { platform: Platform; userId: string } => o !== undefined);
}

/** Keys matching `pattern` on every master (SCAN, never KEYS), at most {@link MAX_KEYS_SCANNED}, sorted. */
async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const found = new Set<string>();
  const nodes = "nodes" in redis ? redis.nodes("master") : [redis];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 500);
      cursor = next;
      for (const key of keys) found.add(key);
    } while (cursor !== "0" && found.size < MAX_KEYS_SCANNED);
  }
  return [...found].sort().slice(0, MAX_KEYS_SCANNED);
}

/** The owner and conversation of a grants key, `grants:{<platform>:<userId>}:<platform>:<chatId>[/<topicId>]`. */
function grantOwnerOf(key: string): GrantOwner | undefined {
  const match = /^grants:\{([a-z]+):([^}]+)\}:([a-z]+):([^/]+)(?:\/(.+))?$/.exec(key);
  if (!match || match[1] !== match[3]) return undefined;
  const platform = match[1] as Platform;
  return match[5]
    ? { platform, userId: match[2]!, chatId: match[4]!, topicId: match[5] }
    : { platform, userId: match[2]!, chatId: match[4]! };
}

/** The scope of a memory key, `memory:personal:{<platform>:<userId>}` or `memory:group:{<platform>:<chatId>}`. */
function memoryScopeOfKey(key: string): MemoryScope | undefined {
  const match = /^memory:(personal|group):\{([a-z]+):([^}]+)\}$/.exec(key);
  if (!match) return undefined;
  const platform = match[2] as Platform;
  return match[1] === "personal"
    ? { kind: "personal", platform, userId: match[3]! }
    : { kind: "group", platform, chatId: match[3]! };
}
