/**
 * The console's usage and cost page (`/admin/usage`) and its CSV (`/admin/usage.csv`): the whole
 * bot's usage per day over the last {@link USAGE_DAYS} days (days in `TIMEZONE`) from the usage
 * store (src/usage/store.ts) — budget tokens (billed-equivalent tokens) and estimated dollars per
 * model, the cache-read share, web searches, seconds of voice transcribed — and the people and
 * chats with the most budget tokens. The figures are tables (they work with JavaScript off); with
 * JavaScript on, uPlot (served from its npm package at `/admin/static/uPlot.iife.min.js`) draws
 * them as charts from a JSON data block of the page (`<script type="application/json">`, never
 * executed), so the page's Content-Security-Policy allows scripts from this origin only.
 */
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { pricesFor, type Config, type Locale } from "../config.js";
import { costOf, type DayUsage, type UsageStore, type UsageTotals } from "../usage/store.js";
import { esc, t, table } from "./pages.js";

/** Days the usage page and its CSV cover, ending today. */
export const USAGE_DAYS = 30;
/** People and chats listed in each top table. */
export const TOP_LIMIT = 10;
/** The model name of usage recorded before usage by model was (the rest of a day's totals). */
export const UNATTRIBUTED = "(other)";

/** One model's (or the rest's) figures of one day or of the whole window. */
export interface ModelFigures {
  calls: number;
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  /** Budget tokens (billed-equivalent input tokens, `budgetTokensOf` of src/usage/store.ts). */
  budget: number;
  webSearches: number;
  /** Estimated USD; undefined without `MODEL_PRICES`. */
  usd: number | undefined;
}

/** One day of the report. */
export interface DayFigures extends ModelFigures {
  /** `YYYY-MM-DD` in `TIMEZONE`. */
  day: string;
  webFetches: number;
  /** Seconds of voice messages and audio files transcribed. */
  voiceSeconds: number;
  /** Cache reads over all input (input + cache writes + cache reads), 0..1; undefined with no input. */
  cacheReadShare: number | undefined;
  /** The day by model (the models' figures and, when the day's totals hold more, {@link UNATTRIBUTED}). */
  models: Map<string, ModelFigures>;
}

/** What the usage page and the CSV show. */
export interface UsageReport {
  days: DayFigures[];
  /** Every model seen in the window, sorted (with {@link UNATTRIBUTED} last when present). */
  models: string[];
  /** The window's totals. */
  total: DayFigures;
  /** People (`platform:userId`) by budget tokens over the window, most first. */
  people: { name: string; tokens: number }[];
  /** Chats (`platform:chatId`) by budget tokens over the window, most first. */
  chats: { name: string; tokens: number }[];
  /** Whether dollars are known (`MODEL_PRICES` set). */
  priced: boolean;
}

const ZERO: ModelFigures = {
  calls: 0,
  input: 0,
  output: 0,
  cacheWrite: 0,
  cacheRead: 0,
  budget: 0,
  webSearches: 0,
  usd: undefined,
};

function figuresOf(totals: UsageTotals, usd: number | undefined): ModelFigures {
  return {
    calls: totals.calls,
    input: totals.input,
    output: totals.output,
    cacheWrite: totals.cacheWrite,
    cacheRead: totals.cacheRead,
    budget: totals.budget,
    webSearches: totals.webSearches,
    usd,
  };
}

function add(a: ModelFigures, b: ModelFigures): ModelFigures {
  return {
    calls: a.calls + b.calls,
    input: a.input + b.input,
    output: a.output + b.output,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cacheRead: a.cacheRead + b.cacheRead,
    budget: a.budget + b.budget,
    webSearches: a.webSearches + b.webSearches,
    usd: a.usd === undefined && b.usd === undefined ? undefined : (a.usd ?? 0) + (b.usd ?? 0),
  };
}

/** `b` taken from `a`, never below 0 (the rest of a day's totals not recorded by model). */
function rest(a: ModelFigures, b: ModelFigures): ModelFigures {
  const d = (x: number, y: number) => Math.max(0, x - y);
  return {
    calls: d(a.calls, b.calls),
    input: d(a.input, b.input),
    output: d(a.output, b.output),
    cacheWrite: d(a.cacheWrite, b.cacheWrite),
    cacheRead: d(a.cacheRead, b.cacheRead),
    budget: d(a.budget, b.budget),
    webSearches: d(a.webSearches, b.webSearches),
    usd: a.usd === undefined ? undefined : Math.max(0, a.usd - (b.usd ?? 0)),
  };
}

const shareOf = (f: ModelFigures): number | undefined => {
  const all = f.input + f.cacheWrite + f.cacheRead;
  return all > 0 ? f.cacheRead / all : undefined;
};

/**
 * Builds the report from the usage days of the store ({@link UsageStore.botDays}) and its top sets.
 * Dollars: a day's total is the store's estimate (`costOf` at the default `MODEL_PRICES` plus the
 * recorded price differences, as `/usage` says); each model's is its tokens at its own price now
 * ({@link pricesFor}); what the day holds beyond the models' figures is {@link UNATTRIBUTED}.
 * @param at - now (ms); the window ends with its day in `TIMEZONE`.
 * @throws when Redis fails.
 */
export async function usageReport(
  store: UsageStore,
  config: Pick<Config, "MODEL_PRICES">,
  at: number,
): Promise<UsageReport> {
  const [raw, people, chats] = await Promise.all([
    store.botDays(USAGE_DAYS, at),
    store.topOver("people", USAGE_DAYS, TOP_LIMIT, at),
    store.topOver("chats", USAGE_DAYS, TOP_LIMIT, at),
  ]);
  const priced = config.MODEL_PRICES !== undefined;
  const seen = new Set<string>();
  const days = raw.map((d: DayUsage): DayFigures => {
    const dayUsd = priced ? costOf(d.totals, config.MODEL_PRICES!) : undefined;
    const whole = figuresOf(d.totals, dayUsd);
    const models = new Map<string, ModelFigures>();
    let attributed = ZERO;
    for (const [model, totals] of d.models) {
      const prices = pricesFor(config, model);
      const figures = figuresOf(totals, prices ? costOf(totals, prices) : undefined);
      models.set(model, figures);
      attributed = add(attributed, figures);
      seen.add(model);
    }
    const left = rest(whole, attributed);
    if (left.calls > 0 || left.budget > 0) {
      models.set(UNATTRIBUTED, left);
      seen.add(UNATTRIBUTED);
    }
    return {
      day: d.day,
      ...whole,
      webFetches: d.totals.webFetches,
      voiceSeconds: d.totals.voiceSeconds,
      cacheReadShare: shareOf(whole),
      models,
    };
  });
  const modelsSeen = [...seen].filter((m) => m !== UNATTRIBUTED).sort();
  if (seen.has(UNATTRIBUTED)) modelsSeen.push(UNATTRIBUTED);
  let sum = ZERO;
  const byModel = new Map<string, ModelFigures>();
  let webFetches = 0;
  let voiceSeconds = 0;
  for (const day of days) {
    sum = add(sum, day);
    webFetches += day.webFetches;
    voiceSeconds += day.voiceSeconds;
    for (const [model, figures] of day.models) byModel.set(model, add(byModel.get(model) ?? ZERO, figures));
  }
  const total: DayFigures = {
    day: `${days[0]!.day}..${days.at(-1)!.day}`,
    ...sum,
    webFetches,
    voiceSeconds,
    cacheReadShare: shareOf(sum),
    models: byModel,
  };
  return { days, models: modelsSeen, total, people, chats, priced };
}

/** Whole numbers with thousands separators (`12,345`). */
const int = (n: number) => Math.round(n).toLocaleString("en-US");
/** Dollars with 2 decimals and thousands separators; `—` when unknown. */
const usd = (n: number | undefined) =>
  n === undefined ? "—" : `$${n.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
/** A share as a percentage with one decimal; `—` when unknown. */
const pct = (n: number | undefined) => (n === undefined ? "—" : `${(n * 100).toFixed(1)}%`);

/** The chart data the page's script draws (the same figures as the tables). */
function chartData(locale: Locale, report: UsageReport) {
  const perModel = (pick: (f: ModelFigures) => number | undefined) =>
    report.models.map((model) => ({
      label: model,
      values: report.days.map((d) => {
        const f = d.models.get(model);
        const v = f ? pick(f) : 0;
        return v === undefined ? null : Math.round(v * 1e4) / 1e4;
      }),
    }));
  const charts = [
    { id: "chart-budget", title: t(locale, "budgetPerModel"), series: perModel((f) => f.budget) },
    ...(report.priced ? [{ id: "chart-usd", title: t(locale, "usdPerModel"), series: perModel((f) => f.usd) }] : []),
    {
      id: "chart-cache",
      title: t(locale, "cacheShare"),
      series: [
        {
          label: "%",
          values: report.days.map((d) =>
            d.cacheReadShare === undefined ? null : Math.round(d.cacheReadShare * 1000) / 10,
          ),
        },
      ],
    },
    {
      id: "chart-search",
      title: t(locale, "webSearches"),
      series: [{ label: t(locale, "webSearches"), values: report.days.map((d) => d.webSearches) }],
    },
    {
      id: "chart-voice",
      title: t(locale, "voiceSeconds"),
      series: [{ label: t(locale, "voiceSeconds"), values: report.days.map((d) => d.voiceSeconds) }],
    },
  ];
  return { days: report.days.map((d) => d.day), charts };
}

/**
 * The usage page's body: the charts' places and data block, the window's totals, the figures per
 * day and per model, and the top people and chats. Every cell is escaped.
 */
export function usagePage(locale: Locale, report: UsageReport): string {
  const data = JSON.stringify(chartData(locale, report)).replace(/</g, "\\u003c");
  const { total } = report;
  const summary = table(
    [
      t(locale, "calls"),
      t(locale, "budgetTokens"),
      t(locale, "usd"),
      t(locale, "cacheShare"),
      t(locale, "webSearches"),
      t(locale, "voiceSeconds"),
    ],
    [
      [
        int(total.calls),
        int(total.budget),
        usd(total.usd),
        pct(total.cacheReadShare),
        int(total.webSearches),
        int(total.voiceSeconds),
      ],
    ],
    t(locale, "none"),
  );
  const chartPlaces = chartData(locale, report)
    .charts.map((c) => `<figure class="chart" id="${esc(c.id)}"><figcaption>${esc(c.title)}</figcaption></figure>`)
    .join("");
  const dayRows = [...report.days]
    .reverse()
    .map((d) => [
      `<time>${esc(d.day)}</time>`,
      esc(int(d.calls)),
      esc(int(d.budget)),
      esc(usd(d.usd)),
      esc(pct(d.cacheReadShare)),
      esc(int(d.webSearches)),
      esc(int(d.voiceSeconds)),
    ]);
  const modelRows = report.models.map((model) => {
    const f = total.models.get(model) ?? ZERO;
    return [
      `<code>${esc(model)}</code>`,
      esc(int(f.calls)),
      esc(int(f.budget)),
      esc(usd(f.usd)),
      esc(pct(shareOf(f))),
      esc(int(f.webSearches)),
    ];
  });
  const dayModelRows = [...report.days]
    .reverse()
    .flatMap((d) =>
      [...d.models].map(([model, f]) => [
        `<time>${esc(d.day)}</time>`,
        `<code>${esc(model)}</code>`,
        esc(int(f.calls)),
        esc(int(f.budget)),
        esc(usd(f.usd)),
      ]),
    );
  const topRows = (rows: { name: string; tokens: number }[]) =>
    rows.map((r, i) => [
      esc(i + 1),
      `<code>${esc(r.name)}</code>`,
      esc(int(r.tokens)),
      esc(pct(total.budget > 0 ? r.tokens / total.budget : undefined)),
    ]);
  const topHead = ["#", t(locale, "name"), t(locale, "budgetTokens"), t(locale, "shareOfAll")];
  return (
    `<p class="empty">${esc(t(locale, "usageNote", { days: USAGE_DAYS, from: report.days[0]!.day, to: report.days.at(-1)!.day }))}` +
    (report.priced ? "" : ` ${esc(t(locale, "noPrices"))}`) +
    `</p>` +
    `<p><a href="/admin/usage.csv" download>${esc(t(locale, "downloadCsv"))}</a></p>` +
    `<h2>${esc(t(locale, "windowTotals"))}</h2><div id="usage-total">${summary}</div>` +
    `<div class="charts">${chartPlaces}</div>` +
    `<script type="application/json" id="usage-data">${data}</script>` +
    `<script src="/admin/static/uPlot.iife.min.js"></script><script src="/admin/static/usage.js"></script>` +
    `<h2>${esc(t(locale, "byModel"))}</h2><div id="usage-models">` +
    table(
      [
        t(locale, "model"),
        t(locale, "calls"),
        t(locale, "budgetTokens"),
        t(locale, "usd"),
        t(locale, "cacheShare"),
        t(locale, "webSearches"),
      ],
      modelRows,
      t(locale, "noUsage"),
    ) +
    `</div><h2>${esc(t(locale, "byDay"))}</h2><div id="usage-days">` +
    table(
      [
        t(locale, "day"),
        t(locale, "calls"),
        t(locale, "budgetTokens"),
        t(locale, "usd"),
        t(locale, "cacheShare"),
        t(locale, "webSearches"),
        t(locale, "voiceSeconds"),
      ],
      dayRows,
      t(locale, "noUsage"),
    ) +
    `</div><h2>${esc(t(locale, "topPeople"))}</h2><div id="usage-people">` +
    table(topHead, topRows(report.people), t(locale, "noUsage")) +
    `</div><h2>${esc(t(locale, "topChats"))}</h2><div id="usage-chats">` +
    table(topHead, topRows(report.chats), t(locale, "noUsage")) +
    `</div><details><summary>${esc(t(locale, "byDayModel"))}</summary><div id="usage-day-models">` +
    table(
      [t(locale, "day"), t(locale, "model"), t(locale, "calls"), t(locale, "budgetTokens"), t(locale, "usd")],
      dayModelRows.filter((r) => r[2] !== "0"),
      t(locale, "noUsage"),
    ) +
    `</div></details>`
  );
}

/** The CSV's columns, in order. */
export const CSV_COLUMNS = [
  "row",
  "day",
  "name",
  "calls",
  "input_tokens",
  "output_tokens",
  "cache_write_tokens",
  "cache_read_tokens",
  "budget_tokens",
  "cache_read_share",
  "web_searches",
  "web_fetches",
  "transcribed_seconds",
  "usd",
] as const;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break (quotes doubled); a
 * text starting with `=`, `+`, `-`, `@`, tab or CR gets a leading `'` so a spreadsheet never runs
 * it as a formula (numbers are written as they are).
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * The report as CSV (the same figures as the page): a header, then per day a `day` row (the bot's
 * totals) and a `model` row per model with usage that day, oldest first; then the window's `person`
 * and `chat` rows (budget tokens over the window; `day` is the window, `from..to`). Dollars with 6
 * decimals, empty without `MODEL_PRICES`; the cache-read share as a fraction with 4 decimals.
 * Lines end with CRLF.
 */
export function usageCsv(report: UsageReport): string {
  const money = (n: number | undefined) => (n === undefined ? undefined : Math.round(n * 1e6) / 1e6);
  const share = (n: number | undefined) => (n === undefined ? undefined : Math.round(n * 1e4) / 1e4);
  const figures = (f: ModelFigures) => [
    f.calls,
    f.input,
    f.output,
    f.cacheWrite,
    f.cacheRead,
    f.budget,
    share(shareOf(f)),
    f.webSearches,
  ];
  const lines: (string | number | undefined)[][] = [[...CSV_COLUMNS]];
  for (const d of report.days) {
    lines.push(["day", d.day, "", ...figures(d), d.webFetches, d.voiceSeconds, money(d.usd)]);
    for (const [model, f] of d.models) {
      if (f.calls === 0 && f.budget === 0) continue;
      lines.push(["model", d.day, model, ...figures(f), undefined, undefined, money(f.usd)]);
    }
  }
  const window = report.total.day;
  for (const p of report.people) lines.push(["person", window, p.name, "", "", "", "", "", p.tokens]);
  for (const c of report.chats) lines.push(["chat", window, c.name, "", "", "", "", "", c.tokens]);
  const width = CSV_COLUMNS.length;
  return (
    lines
      .map((cells) => [...cells, ...Array<undefined>(Math.max(0, width - cells.length))].map(csvCell).join(","))
      .join("\r\n") + "\r\n"
  );
}

const require = createRequire(import.meta.url);

/**
 * The console's static files, by name under `/admin/static/`: uPlot's script and stylesheet, read
 * from its npm package (`uplot/dist/`) at start, and the page's own script ({@link USAGE_SCRIPT}).
 */
export function staticFiles(): Map<string, { type: string; body: string }> {
  const read = (file: string) => readFileSync(require.resolve(`uplot/dist/${file}`), "utf8");
  return new Map([
    ["uPlot.iife.min.js", { type: "text/javascript; charset=utf-8", body: read("uPlot.iife.min.js") }],
    ["uPlot.min.css", { type: "text/css; charset=utf-8", body: read("uPlot.min.css") }],
    ["usage.js", { type: "text/javascript; charset=utf-8", body: USAGE_SCRIPT }],
  ]);
}

/**
 * The usage page's script: draws each chart of the page's JSON data block (`#usage-data`) with
 * uPlot in its `<figure>`, one line per series, as wide as the figure (phones too), days on the
 * x axis (in UTC, the data's own calendar days). Without it the tables show the same figures.
 */
export const USAGE_SCRIPT = `"use strict";
(function () {
  var node = document.getElementById("usage-data");
  if (!node || typeof uPlot !== "function") return;
  var data = JSON.parse(node.textContent);
  var xs = data.days.map(function (d) { return Date.parse(d + "T00:00:00Z") / 1000; });
  var colors = ["#2f6fdb", "#d9480f", "#0a7d32", "#7b2cbf", "#b42318", "#0e7490", "#a16207", "#5b6470"];
  var plots = [];
  function width(el) { return Math.max(260, el.clientWidth || 320); }
  data.charts.forEach(function (chart) {
    var el = document.getElementById(chart.id);
    if (!el) return;
    var opts = {
      width: width(el),
      height: 200,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      scales: { x: { time: true } },
      axes: [{ space: 60 }, { size: 60 }],
      series: [{}].concat(chart.series.map(function (s, i) {
        return { label: s.label, stroke: colors[i % colors.length], width: 2, points: { show: true, size: 5 } };
      }))
    };
    var plot = new uPlot(opts, [xs].concat(chart.series.map(function (s) { return s.values; })), el);
    el.classList.add("drawn");
    plots.push({ plot: plot, el: el });
  });
  window.addEventListener("resize", function () {
    plots.forEach(function (p) { p.plot.setSize({ width: width(p.el), height: 200 }); });
  });
})();
`;
