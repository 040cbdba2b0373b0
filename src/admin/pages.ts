/**
 * The console's HTML: server-rendered pages that work with JavaScript off (the usage page's
 * charts are the one script, drawn over tables of the same figures), one stylesheet served from
 * `/admin/console.css` (the Content-Security-Policy allows no inline style or script), forms that POST with the session's CSRF token, in zh-TW or English
 * (`BOT_LOCALE`). Every value is escaped ({@link esc}); names people chose are shown as they are.
 */
import type { Locale } from "../config.js";
import { localize, type Localized } from "../i18n.js";
import type { Reminder } from "../reminders/store.js";
import type { Task } from "../tasks/store.js";

/** HTML-escapes `value` for text and double-quoted attributes. */
export function esc(value: string | number): string {
  return String(value).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );
}

/**
 * Why the console refused a request, in each locale: the refusal page says it in the console's
 * language (`已拒絕這個請求：{why}`), the `warn` log line in English.
 */
export const REFUSALS = {
  notLoggedIn: { "zh-TW": "尚未登入", en: "not logged in" },
  readOnly: { "zh-TW": "佇列頁面是唯讀的", en: "the queue pages are read-only" },
  csrf: { "zh-TW": "缺少或不正確的 CSRF 權杖", en: "missing or wrong CSRF token" },
  otherSite: { "zh-TW": "來自其他網站的請求", en: "request from another site" },
  otherOrigin: { "zh-TW": "來自其他來源的請求", en: "request from another origin" },
  notForm: { "zh-TW": "不是表單", en: "not a form" },
  unknownKind: { "zh-TW": "種類不明（只能是使用者或對話）", en: "unknown kind (user or chat only)" },
  notPrincipal: { "zh-TW": "格式不是「平台:ID」", en: "not platform:id" },
  badGrant: { "zh-TW": "授權資料不正確", en: "bad grant" },
  badScope: { "zh-TW": "記憶範圍不正確", en: "bad memory scope" },
  badOwnerOrId: { "zh-TW": "擁有者或編號不正確", en: "bad owner or id" },
  unknownAction: { "zh-TW": "不明的動作", en: "unknown action" },
  noSuchAction: { "zh-TW": "沒有這個動作", en: "no such action" },
  tooLarge: { "zh-TW": "表單太大", en: "the form is too large" },
  terminalOwned: {
    "zh-TW": "這是終端機對話的項目，請在 npm run chat 裡用 /tasks 或 /reminders 管理",
    en: "this belongs to the terminal chat: use /tasks or /reminders in npm run chat",
  },
} satisfies Record<string, Localized>;

/** A reason of {@link REFUSALS}. */
export type RefusalReason = keyof typeof REFUSALS;

/** The console's own words, in each locale. */
export const T = {
  title: { "zh-TW": "機器人控制台", en: "Bot console" },
  overview: { "zh-TW": "總覽", en: "Overview" },
  queues: { "zh-TW": "佇列", en: "Queues" },
  backToConsole: { "zh-TW": "回到控制台", en: "Back to the console" },
  tools: { "zh-TW": "工具", en: "Tools" },
  tasks: { "zh-TW": "排程任務與提醒", en: "Tasks and reminders" },
  access: { "zh-TW": "存取權限", en: "Access" },
  logout: { "zh-TW": "登出", en: "Log out" },
  terminalOwned: {
    "zh-TW": "終端機對話的項目：請在 npm run chat 裡用 /tasks 或 /reminders 管理",
    en: "The terminal chat's: steer it with /tasks or /reminders in npm run chat",
  },
  login: { "zh-TW": "登入", en: "Log in" },
  token: { "zh-TW": "控制台權杖（ADMIN_CONSOLE_TOKEN）", en: "Console token (ADMIN_CONSOLE_TOKEN)" },
  noToken: {
    "zh-TW": "未設定 ADMIN_CONSOLE_TOKEN：請用啟動時印出的一次性登入連結（10 分鐘內有效）。",
    en: "ADMIN_CONSOLE_TOKEN is not set: use the one-time login link printed at start-up (valid for 10 minutes).",
  },
  wrongToken: { "zh-TW": "權杖不正確。", en: "Wrong token." },
  tooManyLogins: {
    "zh-TW": "這個位址登入失敗太多次，請在 {minutes} 分鐘後再試。",
    en: "Too many failed logins from this address: try again in {minutes} min.",
  },
  linkUsed: {
    "zh-TW": "這個登入連結無效、已使用或已過期。請重新啟動機器人取得新連結，或設定 ADMIN_CONSOLE_TOKEN。",
    en: "This login link is invalid, used or expired. Restart the bot for a new one, or set ADMIN_CONSOLE_TOKEN.",
  },
  health: { "zh-TW": "健康狀態", en: "Health" },
  check: { "zh-TW": "檢查項目", en: "Check" },
  up: { "zh-TW": "正常", en: "up" },
  down: { "zh-TW": "異常", en: "down" },
  queue: { "zh-TW": "佇列", en: "Queue" },
  workers: { "zh-TW": "工作程序", en: "Workers" },
  waiting: { "zh-TW": "等待中", en: "Waiting" },
  active: { "zh-TW": "執行中", en: "Active" },
  delayed: { "zh-TW": "延後", en: "Delayed" },
  failed: { "zh-TW": "失敗", en: "Failed" },
  queueDetails: { "zh-TW": "佇列詳情（Bull Board，唯讀）", en: "Queue details (Bull Board, read-only)" },
  name: { "zh-TW": "名稱", en: "Name" },
  tags: { "zh-TW": "標籤", en: "Tags" },
  dangerous: { "zh-TW": "需確認", en: "Dangerous" },
  source: { "zh-TW": "來源", en: "Source" },
  yes: { "zh-TW": "是", en: "yes" },
  no: { "zh-TW": "否", en: "no" },
  mcpServers: { "zh-TW": "MCP 伺服器", en: "MCP servers" },
  state: { "zh-TW": "狀態", en: "State" },
  serving: { "zh-TW": "已連線，提供 {count} 個工具", en: "connected, {count} {tools}" },
  skipped: { "zh-TW": "已略過：{reason}", en: "skipped: {reason}" },
  noMcp: {
    "zh-TW": "沒有 MCP 伺服器（或工作程序尚未公告）。",
    en: "No MCP servers (or no worker has announced them yet).",
  },
  announced: { "zh-TW": "工作程序公告於 {time}", en: "announced by a worker at {time}" },
  owner: { "zh-TW": "擁有者", en: "Owner" },
  what: { "zh-TW": "內容", en: "What" },
  next: { "zh-TW": "下次", en: "Next" },
  repeat: { "zh-TW": "重複", en: "Repeat" },
  actions: { "zh-TW": "操作", en: "Actions" },
  pause: { "zh-TW": "暫停", en: "Pause" },
  resume: { "zh-TW": "繼續", en: "Resume" },
  cancel: { "zh-TW": "取消", en: "Cancel" },
  ended: { "zh-TW": "已結束", en: "ended" },
  noTasks: { "zh-TW": "沒有排程任務。", en: "No scheduled tasks." },
  reminders: { "zh-TW": "提醒", en: "Reminders" },
  noReminders: { "zh-TW": "沒有提醒。", en: "No reminders." },
  policy: { "zh-TW": "存取政策", en: "Access policy" },
  admins: { "zh-TW": "管理員（ADMIN_USERS）", en: "Admins (ADMIN_USERS)" },
  adminsFromEnv: {
    "zh-TW": "（來自環境變數，控制台不能修改：請改 .env 的 ADMIN_USERS 後重新啟動）",
    en: "(from the environment, not editable here: change ADMIN_USERS in .env and restart)",
  },
  pending: { "zh-TW": "待核准的配對碼", en: "Pending pairing codes" },
  noPending: { "zh-TW": "沒有待核准的配對碼。", en: "No pending pairing codes." },
  code: { "zh-TW": "配對碼", en: "Code" },
  expires: { "zh-TW": "到期", en: "Expires" },
  approve: { "zh-TW": "核准", en: "Approve" },
  deny: { "zh-TW": "拒絕", en: "Deny" },
  users: { "zh-TW": "允許的使用者", en: "Allowed users" },
  chats: { "zh-TW": "啟用的群組與頻道", en: "Enabled groups and channels" },
  fromEnv: { "zh-TW": "環境變數 {list}（請修改 .env）", en: "{list} in the environment (edit .env)" },
  granted: { "zh-TW": "已授權", en: "granted" },
  revoke: { "zh-TW": "撤銷", en: "Revoke" },
  none: { "zh-TW": "（無）", en: "(none)" },
  alwaysAllow: { "zh-TW": "「永久允許」授權", en: "“Always allow” grants" },
  conversation: { "zh-TW": "對話", en: "Conversation" },
  noGrants: { "zh-TW": "沒有「永久允許」授權。", en: "No “always allow” grants." },
  memory: { "zh-TW": "記憶", en: "Memory" },
  memoryNote: {
    "zh-TW": "只顯示大小與數量，控制台從不顯示記憶內容。",
    en: "Sizes and counts only: the console never shows what a memory says.",
  },
  scope: { "zh-TW": "範圍", en: "Scope" },
  person: { "zh-TW": "個人", en: "person" },
  group: { "zh-TW": "群組", en: "group" },
  files: { "zh-TW": "檔案數", en: "Files" },
  bytes: { "zh-TW": "位元組（上限）", en: "Bytes (limit)" },
  updated: { "zh-TW": "最後更新", en: "Last written" },
  erase: { "zh-TW": "清除", en: "Erase" },
  noMemory: { "zh-TW": "沒有任何記憶。", en: "No memory stored." },
  allowUser: {
    "zh-TW": "允許使用者（telegram:<id>、discord:<id>、line:<id>）",
    en: "Allow a user (telegram:<id>, discord:<id>, line:<id>)",
  },
  allowChat: {
    "zh-TW": "啟用群組或頻道（telegram:<群組 id>、discord:<伺服器或頻道 id>）",
    en: "Enable a group or channel (telegram:<group id>, discord:<server or channel id>)",
  },
  allow: { "zh-TW": "允許", en: "Allow" },
  badPrincipal: {
    "zh-TW": "格式應為 平台:id，例如 telegram:123456789（Telegram 群組請用「啟用群組」）。",
    en: "Expected platform:id, e.g. telegram:123456789 (a Telegram group goes under “Enable a group”).",
  },
  modelHour: { "zh-TW": "模型呼叫（最近一小時）", en: "Model calls (last hour)" },
  model: { "zh-TW": "模型", en: "Model" },
  calls: { "zh-TW": "呼叫", en: "Calls" },
  errors: { "zh-TW": "錯誤", en: "Errors" },
  p50: { "zh-TW": "中位延遲（毫秒）", en: "Median ms" },
  p95: { "zh-TW": "p95 延遲（毫秒）", en: "p95 ms" },
  noModelCalls: { "zh-TW": "最近一小時沒有模型呼叫。", en: "No model calls in the last hour." },
  traces: { "zh-TW": "追蹤紀錄", en: "Traces" },
  runs: { "zh-TW": "執行次數", en: "Runs" },
  lastRun: { "zh-TW": "最近一次", en: "Last run" },
  noTraces: { "zh-TW": "沒有儲存的追蹤紀錄。", en: "No stored traces." },
  event: { "zh-TW": "事件", en: "Event" },
  details: { "zh-TW": "內容預覽", en: "Details (previews)" },
  refused: { "zh-TW": "已拒絕這個請求：{why}", en: "Request refused: {why}" },
  usage: { "zh-TW": "用量與費用", en: "Usage and cost" },
  usageNote: {
    "zh-TW":
      "整個機器人最近 {days} 天（{from} 至 {to}）的用量。計費等值 tokens：輸入 ×1、快取寫入 ×1.25、" +
      "快取讀取 ×0.1、輸出 × 模型的輸出/輸入價格比（與每日預算相同）。",
    en:
      "The whole bot's usage over the last {days} days ({from} to {to}). Budget tokens are billed-equivalent " +
      "input tokens: input ×1, cache writes ×1.25, cache reads ×0.1, output × the model's output/input price " +
      "ratio (what the daily budgets count).",
  },
  noPrices: {
    "zh-TW": "未設定 MODEL_PRICES，無法估算費用。",
    en: "MODEL_PRICES is not set: no dollars are estimated.",
  },
  downloadCsv: { "zh-TW": "下載 CSV", en: "Download CSV" },
  windowTotals: { "zh-TW": "合計", en: "Totals" },
  budgetTokens: { "zh-TW": "計費等值 tokens", en: "Budget tokens" },
  usd: { "zh-TW": "估計費用（美元）", en: "Estimated USD" },
  cacheShare: { "zh-TW": "快取讀取比例", en: "Cache-read share" },
  webSearches: { "zh-TW": "網路搜尋次數", en: "Web searches" },
  voiceSeconds: { "zh-TW": "語音轉文字秒數", en: "Transcribed seconds" },
  budgetPerModel: { "zh-TW": "每日計費等值 tokens（依模型）", en: "Budget tokens per day, by model" },
  usdPerModel: { "zh-TW": "每日估計費用（美元，依模型）", en: "Estimated USD per day, by model" },
  byModel: { "zh-TW": "依模型", en: "By model" },
  byDay: { "zh-TW": "依日期", en: "By day" },
  byDayModel: { "zh-TW": "依日期與模型", en: "By day and model" },
  day: { "zh-TW": "日期", en: "Day" },
  topPeople: { "zh-TW": "用量最多的使用者", en: "Top people" },
  topChats: { "zh-TW": "用量最多的對話", en: "Top chats" },
  shareOfAll: { "zh-TW": "佔總量", en: "Share" },
  noUsage: { "zh-TW": "這段期間沒有用量。", en: "No usage in this period." },
} satisfies Record<string, Localized>;

/**
 * Why a task or reminder is paused, as the tasks page shows it in place of its next time: by its
 * stored `paused.by` (`Task["paused"]` of `src/tasks/store.ts`, `Reminder["paused"]` of
 * `src/reminders/store.ts`). A task paused before the operator's mark existed says `owner`.
 */
export const PAUSED_BY = {
  operator: { "zh-TW": "管理者暫停", en: "paused by the operator" },
  owner: { "zh-TW": "擁有者暫停", en: "paused by its owner" },
  failures: { "zh-TW": "連續失敗後暫停", en: "paused after failures" },
  unreachable: { "zh-TW": "無法傳訊到它的聊天室，已暫停", en: "paused: the bot cannot write to its chat" },
  left: { "zh-TW": "擁有者已離開群組，已暫停", en: "paused: its owner left the group" },
} satisfies Record<NonNullable<Task["paused"]>["by"] | NonNullable<Reminder["paused"]>["by"], Localized>;

/** A reason of {@link PAUSED_BY}; any other word (none is stored today) is shown as plain "paused". */
const PAUSED: Localized = { "zh-TW": "已暫停", en: "paused" };

/**
 * The words of a pause reason `by` in `locale` ({@link PAUSED_BY}): never the stored word itself;
 * an unknown one is "已暫停" / "paused". Never throws.
 */
export function pausedWords(locale: Locale, by: string): string {
  return localize(locale, Object.hasOwn(PAUSED_BY, by) ? PAUSED_BY[by as keyof typeof PAUSED_BY] : PAUSED);
}

/** A word of the console in `locale`, with `{name}` placeholders filled. */
export function t(locale: Locale, key: keyof typeof T, params: Record<string, string | number> = {}): string {
  return localize(locale, T[key], params);
}

/** The pages of the navigation bar, by path under `/admin`. */
const NAV: [string, keyof typeof T][] = [
  ["overview", "overview"],
  ["queues/", "queues"],
  ["tools", "tools"],
  ["tasks", "tasks"],
  ["access", "access"],
  ["usage", "usage"],
  ["traces", "traces"],
  ["memory", "memory"],
];

/**
 * A whole page: head (viewport for phones, the stylesheet), the navigation with `current`
 * marked, a log-out form (with `csrf`), an optional notice, and `body`.
 */
export function layout(
  locale: Locale,
  parts: { title: string; body: string; current?: string; csrf?: string; notice?: string; styles?: string[] },
): string {
  const nav = parts.csrf
    ? `<nav>${NAV.map(
        ([path, key]) =>
          `<a href="/admin/${path}"${path === parts.current ? ' aria-current="page"' : ""}>${esc(t(locale, key))}</a>`,
      ).join("")}${postForm("/admin/logout", parts.csrf, {}, t(locale, "logout"), "link")}</nav>`
    : "";
  const notice = parts.notice ? `<p class="notice" role="status">${esc(parts.notice)}</p>` : "";
  return `<!DOCTYPE html>
<html lang="${locale === "en" ? "en" : "zh-Hant-TW"}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${esc(parts.title)} · ${esc(t(locale, "title"))}</title>
<link rel="stylesheet" href="/admin/console.css">
${(parts.styles ?? []).map((href) => `<link rel="stylesheet" href="${esc(href)}">\n`).join("")}</head>
<body>
<header><strong>${esc(t(locale, "title"))}</strong>${nav}</header>
<main>
<h1>${esc(parts.title)}</h1>
${notice}${parts.body}
</main>
</body>
</html>
`;
}

/** A form with one button that POSTs `fields` and the CSRF token to `action`. */
export function postForm(
  action: string,
  csrf: string,
  fields: Record<string, string | number>,
  label: string,
  kind: "button" | "link" | "danger" = "button",
): string {
  const hidden = Object.entries({ csrf, ...fields })
    .map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`)
    .join("");
  return `<form method="post" action="${esc(action)}" class="inline">${hidden}<button type="submit" class="${kind}">${esc(label)}</button></form>`;
}

/** A table with `head` cells and rows of HTML cells (already escaped); `empty` when there are no rows. */
export function table(head: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p class="empty">${esc(empty)}</p>`;
  return `<div class="scroll"><table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${rows
    .map((cells) => `<tr>${cells.map((c) => `<td>${c}</td>`).join("")}</tr>`)
    .join("")}</tbody></table></div>`;
}

/** The stylesheet (`/admin/console.css`): readable on a phone, no web fonts, no images. */
export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Noto Sans TC","PingFang TC","Microsoft JhengHei",sans-serif;color:#1b1f24;background:#f6f7f9}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;padding:.75rem 1rem;background:#1f2a37;color:#fff}
nav{display:flex;flex-wrap:wrap;gap:.25rem .75rem;align-items:center}
nav a{color:#d6e4ff;text-decoration:none;padding:.25rem 0}
nav a[aria-current=page]{color:#fff;border-bottom:2px solid #fff}
main{max-width:64rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.scroll{overflow-x:auto}
@media (max-width:36rem){main{padding:1rem .5rem}th,td{padding:.35rem .3rem}button{padding:.25rem .4rem}}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#eef1f4;font-weight:600}
.ok{color:#0a7d32;font-weight:600}
.bad{color:#b42318;font-weight:600}
.notice{background:#e8f3ff;border-left:4px solid #2f6fdb;padding:.5rem .75rem}
.empty{color:#5b6470}
form.inline{display:inline}
button{font:inherit;padding:.3rem .7rem;margin:.1rem .2rem .1rem 0;border:1px solid #8a96a3;border-radius:.3rem;background:#fff;cursor:pointer}
button.danger{border-color:#b42318;color:#b42318}
button.link{border:0;background:none;color:#d6e4ff;padding:.25rem 0}
label{display:block;margin:.5rem 0 .25rem}
input[type=password],input[type=text]{font:inherit;width:100%;max-width:28rem;padding:.4rem}
form.add{margin:.75rem 0}
code{font-size:.9em;overflow-wrap:anywhere}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(18rem,1fr));gap:1rem}
figure.chart{margin:0;background:#fff;padding:.5rem;min-width:0;overflow:hidden}
figure.chart .u-legend{font-size:.8rem}
figure.chart:not(.drawn){display:none}
figcaption{font-weight:600;margin-bottom:.25rem}
details{margin:1.5rem 0}
summary{cursor:pointer;font-weight:600}
`;
