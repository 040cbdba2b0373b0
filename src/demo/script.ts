/**
 * The demo's script (`npm run chat -- --demo`): what the scripted model answers, by rules, never by
 * understanding. A user's words pick one tool and its input — web search, memory, a reminder, the
 * todo list, the weather, the calculator, the clock — or the help text; a turn of tool results gets
 * an answer that shows them (a dangerous call the person declined: that it was not done, in their
 * language, as a model would say it; to English words, a result in the bot's Chinese as the tool's
 * own English for it, `english.ts`, or said to be in Chinese when there is none). Every example the bot suggests (the demo's banner, `/help`, `/memory`,
 * the README) is one of these rules, in zh-TW and in English (`test/console/demo-examples.test.ts`
 * walks them all). Every text starts with the demo label, so nobody takes it for Claude.
 *
 * Web search is the API's server tool: the script answers as the API would (`server_tool_use`, a
 * `web_search_tool_result`, text citing it), with one result that says it is scripted, on
 * example.com (a domain reserved for examples, RFC 2606).
 */
import { randomBytes } from "node:crypto";
import { DateTime } from "luxon";
import { notRunVerdict, type NotRunVerdict } from "../agent/not-run.js";
import type { Locale } from "../config.js";
import { localize, writtenLocale, type Localized } from "../i18n.js";
import { CALCULATOR_CONSTANTS, CALCULATOR_FUNCTIONS } from "../../tools/calculate.js";
import { englishResult } from "./english.js";
import { resolveCity } from "../../tools/cwa/cities.js";

/** A content block of the demo's answers, as the Messages API sends it. */
export type DemoBlock =
  | { type: "text"; text: string; citations?: DemoCitation[] }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "server_tool_use"; id: string; name: "web_search"; input: { query: string } }
  | { type: "web_search_tool_result"; tool_use_id: string; content: DemoSearchResult[] };

/** A web search result (`web_search_result`). */
export interface DemoSearchResult {
  type: "web_search_result";
  url: string;
  title: string;
  encrypted_content: string;
  page_age: string | null;
}

/** A citation of a web search result (`web_search_result_location`). */
export interface DemoCitation {
  type: "web_search_result_location";
  url: string;
  title: string;
  cited_text: string;
  encrypted_index: string;
}

/** What the demo answers to one request: its content and why it stopped. */
export interface DemoReply {
  content: DemoBlock[];
  stop_reason: "end_turn" | "tool_use";
}

/** What the script knows of a request besides the user's words. */
export interface DemoTurn {
  locale: Locale;
  /** The user's time zone (`TIMEZONE`), for "tomorrow at 8". */
  timezone: string;
  /** Names of the tools the request offers (deferred ones too). */
  tools: ReadonlySet<string>;
  /** The memory files the request carries: path → text. */
  memory: ReadonlyMap<string, string>;
  /** Now, ms since the Unix epoch. */
  now: number;
}

/** The memory file the demo writes what it is told to remember into. */
export const DEMO_MEMORY_FILE = "/memories/profile.md";

/** The label every demo answer starts with. */
export function demoLabel(locale: Locale): string {
  return localize(locale, { "zh-TW": "［示範］", en: "[demo] " });
}

const TEXT = {
  help: {
    "zh-TW":
      "這是示範模式：回答的是內建的腳本，不是 Claude，不需要 API 金鑰，也不連網路；每次啟動都是全新的示範（待辦、記憶、對話都清空）。" +
      "試試看：{examples}{then}。/help 有更多例子，/tools 列出工具，/quit 離開。",
    en:
      "This is the demo: a built-in script answers, not Claude; no API key, no network; each start is a fresh demo " +
      "(todos, memory and the conversation are cleared). Try {examples}{then}. /help has more examples, /tools lists " +
      "the tools, /quit leaves.",
  },
  thenDelete: {
    "zh-TW": "，然後「刪除待辦 1」（會先問你確認，輸入 y 或 n）",
    en: ', then "delete todo 1" (it asks you first: type y or n)',
  },
  clock: { "zh-TW": "我用時鐘工具看一下。", en: "Let me check the clock tool." },
  calculating: { "zh-TW": "我用計算機算一下。", en: "Let me use the calculator." },
  adding: { "zh-TW": "好，我把它加進你的待辦。", en: "Sure, adding it to your todo list." },
  deleting: { "zh-TW": "刪除需要你先確認。", en: "Deleting needs your approval first." },
  completing: { "zh-TW": "好，我把它標成完成。", en: "Sure, marking it done." },
  listing: { "zh-TW": "我看一下你的待辦清單。", en: "Let me look at your todo list." },
  weather: {
    "zh-TW": "我查一下中央氣象署的預報（示範用的是專案附的錄製資料）。",
    en: "Let me look up the Central Weather Administration's forecast (the demo uses a recorded one).",
  },
  remembering: { "zh-TW": "好，我記下來。", en: "OK, I will remember that." },
  reminding: { "zh-TW": "好，我設定提醒。", en: "Sure, setting a reminder." },
  searching: {
    "zh-TW": "我上網搜尋一下（示範：結果是腳本寫好的，不是真的搜尋）。",
    en: "Let me search the web (demo: the result is scripted, not a real search).",
  },
  searched: {
    "zh-TW":
      "這是腳本寫好的搜尋結果，不是真的上網：示範模式不連網路。真正的機器人會用 Anthropic 的網頁搜尋查「{query}」，" +
      "讀過找到的網頁再回答，並附上可以點的來源，像這樣：",
    en:
      "This is a scripted search result, not a real search: the demo does not use the network. The real bot searches " +
      'the web for "{query}" with Anthropic\'s web search, reads what it finds and answers with sources you can open, like this:',
  },
  resultTitle: {
    "zh-TW": "［示範］腳本寫好的搜尋結果（不是真的搜尋）",
    en: "[demo] A scripted search result (not a real search)",
  },
  resultCited: {
    "zh-TW": "示範的搜尋結果：這一頁不存在，真正的搜尋結果會在這裡。",
    en: "A scripted search result: this page does not exist; a real result would be here.",
  },
  result: { "zh-TW": "工具 {tool} 的結果：\n{result}", en: "The {tool} tool says:\n{result}" },
  failed: { "zh-TW": "工具 {tool} 沒有成功：{result}", en: "The {tool} tool did not succeed: {result}" },
  // Only for a person writing English: a tool's result in the bot's language that the demo has no English for.
  resultInBotLanguage: {
    "zh-TW": "工具 {tool} 的結果：\n{result}",
    en:
      "The {tool} tool says (in Chinese: the tools answer in the bot's language; a real model would tell you " +
      "in English, and /settings language en switches the bot to English):\n{result}",
  },
  failedInBotLanguage: {
    "zh-TW": "工具 {tool} 沒有成功：{result}",
    en:
      "The {tool} tool did not succeed; it says (in Chinese: the tools answer in the bot's language; a real " +
      "model would tell you in English, and /settings language en switches the bot to English): {result}",
  },
  deleted: { "zh-TW": "刪除", en: "deleted" },
  done: { "zh-TW": "執行", en: "done" },
  afterAdd: {
    "zh-TW": "接著試試「刪除待辦 {id}」，看看確認提示。",
    en: 'Now try "delete todo {id}" to see an approval prompt.',
  },
  afterWeather: {
    "zh-TW": "（這是專案附的錄製預報，示範模式不連網路，所以不是今天的天氣。）",
    en: "(This is a recorded forecast shipped with the project: the demo does not use the network, so it is not today's weather.)",
  },
  afterMemory: { "zh-TW": "輸入 /memory 看看我記得什麼。", en: "Type /memory to see what I remember." },
  afterReminder: { "zh-TW": "輸入 /reminders 看看你的提醒。", en: "Type /reminders to see your reminders." },
  recall: { "zh-TW": "我記得這些：\n{notes}", en: "This is what I remember:\n{notes}" },
  recallNothing: {
    "zh-TW": "我還沒記住關於你的事。試試「記得我住在新竹」。",
    en: 'I do not remember anything about you yet. Try "remember that I live in Hsinchu".',
  },
  noTime: {
    "zh-TW": "示範腳本看不懂這個時間。試試「明天早上 8 點提醒我繳電費」或「10 分鐘後提醒我喝水」。",
    en: 'The demo\'s script cannot read that time. Try "remind me at 8 tomorrow morning to pay the power bill" or "remind me in 10 minutes to drink water".',
  },
  unavailable: {
    "zh-TW": "這個機器人沒有提供 {tool} 工具（設定關掉了），所以示範不了這個。",
    en: "This bot does not offer the {tool} tool (it is turned off in the settings), so the demo cannot show it.",
  },
} satisfies Record<string, Localized>;

/**
 * The answer to a dangerous call that was not run (its `tool_result` is the loop's instruction to
 * the model, in English: `src/agent/not-run.ts`), by the approval's verdict, as a model would put it
 * to the person; `{what}` is {@link TEXT}'s `deleted` for delete_todo, else `done`.
 */
const NOT_RUN: Record<NotRunVerdict, Localized> = {
  declined: { "zh-TW": "好的，已取消，沒有{what}。", en: "OK, cancelled; nothing was {what}." },
  expired: {
    "zh-TW": "確認逾時，所以沒有{what}；還需要的話，再說一次就好。",
    en: "The confirmation timed out, so nothing was {what}; ask again if you still want it.",
  },
  superseded: {
    "zh-TW": "你沒有確認就傳了新訊息，所以沒有{what}。",
    en: "You wrote again instead of confirming, so nothing was {what}.",
  },
};

/** The examples the demo's help suggests, in order, each with the tool it needs. */
const EXAMPLES: { tool: string; example: Localized }[] = [
  { tool: "get_current_datetime", example: { "zh-TW": "現在幾點？", en: "what time is it?" } },
  { tool: "calculate", example: { "zh-TW": "(1200 + 800) * 0.05", en: "(1200 + 800) * 0.05" } },
  { tool: "get_weather", example: { "zh-TW": "台北明天會下雨嗎？", en: "will it rain in Taipei tomorrow?" } },
  { tool: "memory", example: { "zh-TW": "記得我住在新竹", en: "remember that I live in Hsinchu" } },
  { tool: "web_search", example: { "zh-TW": "上網搜尋今天的新聞", en: "search the web for today's news" } },
  { tool: "add_todo", example: { "zh-TW": "新增待辦 買牛奶", en: "add todo buy milk" } },
];

/** The help text, without the label: what the demo is, and the examples of the tools in `tools`. */
function helpText(locale: Locale, tools: ReadonlySet<string>): string {
  const examples = EXAMPLES.filter((e) => tools.has(e.tool)).map((e) => {
    const example = localize(locale, e.example);
    return locale === "en" ? `"${example}"` : `「${example}」`;
  });
  return localize(locale, TEXT.help, {
    examples: examples.join(locale === "en" ? ", " : "、"),
    then: tools.has("add_todo") && tools.has("delete_todo") ? localize(locale, TEXT.thenDelete) : "",
  });
}

/**
 * The demo's banner, printed when the chat starts: what it is and what to try, an example for each
 * tool of `tools` that has one (the weather only when the recorded forecast is there, web search
 * only with `WEB_SEARCH=on` …).
 */
export function demoHelp(locale: Locale, tools: ReadonlySet<string>): string {
  return `${demoLabel(locale)}${helpText(locale, tools)}`;
}

let counter = 0;
function blockId(prefix: string): string {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

/** A reply that calls one tool of the bot, after a short lead sentence (or, when the request does not offer it, says so). */
function callTool(turn: DemoTurn, lead: Localized, name: string, input: Record<string, unknown>): DemoReply {
  if (!turn.tools.has(name)) return say(turn, localize(turn.locale, TEXT.unavailable, { tool: name }));
  return {
    content: [
      { type: "text", text: `${demoLabel(turn.locale)}${localize(turn.locale, lead)}` },
      { type: "tool_use", id: blockId("toolu_demo_"), name, input },
    ],
    stop_reason: "tool_use",
  };
}

/** A final answer of plain text, labelled. */
function say(turn: DemoTurn, text: string): DemoReply {
  return { content: [{ type: "text", text: `${demoLabel(turn.locale)}${text}` }], stop_reason: "end_turn" };
}

/** `text` without the punctuation around it. */
function trimmed(text: string): string {
  return text.replace(/^[\s:：,，、。.!！?？"'「」“”]+|[\s:：,，、。.!！?？"'「」“”]+$/g, "");
}

const CHINESE_DIGITS: Record<string, number> = {
  零: 0,
  〇: 0,
  一: 1,
  二: 2,
  兩: 2,
  三: 3,
  四: 4,
  五: 5,
  六: 6,
  七: 7,
  八: 8,
  九: 9,
};

/** `8`, `八`, `十`, `十二`, `二十` → the number; NaN for anything else. */
function numberOf(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const ten = text.indexOf("十");
  if (ten === -1) return text.length === 1 ? (CHINESE_DIGITS[text] ?? NaN) : NaN;
  const tens = ten === 0 ? 1 : (CHINESE_DIGITS[text.slice(0, ten)] ?? NaN);
  const ones = ten === text.length - 1 ? 0 : (CHINESE_DIGITS[text.slice(ten + 1)] ?? NaN);
  return tens * 10 + ones;
}

/** Places people ask the time of, by their names in both languages, with their IANA zone. */
const TIME_ZONES: [RegExp, string][] = [
  [/紐約|new york/i, "America/New_York"],
  [/洛杉磯|舊金山|los angeles|san francisco/i, "America/Los_Angeles"],
  [/倫敦|london/i, "Europe/London"],
  [/巴黎|paris/i, "Europe/Paris"],
  [/柏林|berlin/i, "Europe/Berlin"],
  [/東京|tokyo/i, "Asia/Tokyo"],
  [/首爾|seoul/i, "Asia/Seoul"],
  [/香港|hong kong/i, "Asia/Hong_Kong"],
  [/新加坡|singapore/i, "Asia/Singapore"],
  [/雪梨|sydney/i, "Australia/Sydney"],
];

/** The county or city of Taiwan named in `line` (its CWA name), if any: the longest Chinese name, else an English one. */
function cityIn(line: string): string | undefined {
  for (const run of line.match(/\p{Script=Han}+/gu) ?? []) {
    const chars = [...run];
    for (let length = Math.min(4, chars.length); length >= 2; length -= 1)
      for (let start = 0; start + length <= chars.length; start += 1) {
        const match = resolveCity(chars.slice(start, start + length).join(""));
        if (match.ok) return match.name;
      }
  }
  const words = line.split(/[^A-Za-z]+/).filter((w) => w.length >= 3);
  for (let i = 0; i < words.length; i += 1) {
    for (const candidate of [`${words[i]} ${words[i + 1] ?? ""}`.trim(), words[i]!]) {
      const match = resolveCity(candidate);
      if (match.ok) return match.name;
    }
  }
  return undefined;
}

/** True when `expression` is one parenthesised group, `(…)`. */
function enclosed(expression: string): boolean {
  if (!expression.startsWith("(")) return false;
  let depth = 0;
  for (let i = 0; i < expression.length; i += 1) {
    depth += expression[i] === "(" ? 1 : expression[i] === ")" ? -1 : 0;
    if (depth === 0) return i === expression.length - 1;
  }
  return false;
}

/**
 * The pieces of an expression the demo looks for in a sentence (read after NFKC, ×/÷ and minus
 * signs made ASCII): a number, in scientific notation too (`1e308`, `2.5E-3`, `3e+2`: the `e` is
 * the number's only when digits follow it); a name (a word of letters, digits and `_`: a constant
 * of the calculator, a function when `(` follows, else a word of the sentence); an operator; a
 * parenthesis; a comma (between a function's arguments); white space; anything else.
 */
const PIECE = new RegExp(
  [
    String.raw`(?<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)`,
    String.raw`(?<name>[A-Za-z_π][A-Za-z0-9_]*)`,
    String.raw`(?<op>[-+*/^%])`,
    String.raw`(?<open>\()`,
    String.raw`(?<close>\))`,
    String.raw`(?<comma>,)`,
    String.raw`(?<space>\s+)`,
    String.raw`(?<other>[\s\S])`,
  ].join("|"),
  "gu",
);

/** One piece of {@link PIECE}: its kind and its text. */
interface Piece {
  kind: "number" | "constant" | "function" | "op" | "open" | "close" | "comma" | "space";
  text: string;
}

/** The calculator's constants (`pi`, `π`, `e`) and functions (`sqrt`, `abs` …), as the tool names them. */
const CONSTANTS = new Set(CALCULATOR_CONSTANTS);
const FUNCTIONS = new Set(CALCULATOR_FUNCTIONS);

/**
 * The runs of `text` that can be part of an expression, in order, each a list of pieces: numbers,
 * the calculator's constants, functions (a word right before `(`, or one of the calculator's
 * functions before spaces and `(`: a function the calculator does not have is kept too, so that
 * it answers it does not know it rather than a number without it), operators, parentheses, spaces,
 * and commas inside parentheses. A run ends at a word of the sentence, at any other character, at
 * a comma outside parentheses and at a `)` closing nothing; the `(`s it leaves open are dropped.
 */
function expressionRuns(text: string): Piece[][] {
  const pieces = [...text.matchAll(PIECE)].map((m) => ({
    kind: Object.entries(m.groups!).find(([, value]) => value !== undefined)![0] as Piece["kind"] | "name" | "other",
    text: m[0],
  }));
  const runs: Piece[][] = [];
  let run: Piece[] = [];
  let open: number[] = []; // indexes in `run` of the `(`s not yet closed
  const end = () => {
    const unclosed = new Set(open);
    runs.push(run.filter((_, i) => !unclosed.has(i)));
    run = [];
    open = [];
  };
  for (let i = 0; i < pieces.length; i += 1) {
    const { kind, text: piece } = pieces[i]!;
    const next = pieces.slice(i + 1).find((p) => p.kind !== "space");
    const called = pieces[i + 1]?.kind === "open" || (FUNCTIONS.has(piece) && next?.kind === "open");
    if (kind === "name" && called) run.push({ kind: "function", text: piece });
    else if (kind === "name" && CONSTANTS.has(piece)) run.push({ kind: "constant", text: piece });
    else if (kind === "open") {
      open.push(run.length);
      run.push({ kind, text: piece });
    } else if (kind === "close" && open.length > 0) {
      open.pop();
      run.push({ kind, text: piece });
    } else if (kind === "comma" && open.length > 0) run.push({ kind, text: piece });
    else if (kind === "number" || kind === "op" || kind === "space") run.push({ kind, text: piece });
    else end();
  }
  end();
  return runs;
}

/** What ends an operand (a number, a constant, `)`, a percent sign) and what starts one (a number, a name, `(`, a sign). */
const OPERAND_END = new Set(["number", "constant", "close"]);
const OPERAND_START = new Set(["number", "constant", "function", "open"]);

/** True when `run` calculates something: an operator between two operands, or a function call. */
function calculates(run: Piece[]): boolean {
  const pieces = run.filter((p) => p.kind !== "space");
  return pieces.some((piece, i) => {
    if (piece.kind === "function") return true;
    if (piece.kind !== "op") return false;
    const before = pieces[i - 1];
    const after = pieces[i + 1];
    const operandBefore = before && (OPERAND_END.has(before.kind) || before.text === "%");
    const operandAfter = after && (OPERAND_START.has(after.kind) || after.text === "-" || after.text === "+");
    return Boolean(operandBefore && operandAfter);
  });
}

/** The text of a run: its pieces joined, without the spaces around it or a full stop after its last number. */
function runText(run: Piece[]): string {
  return run
    .map((p) => p.text)
    .join("")
    .trim()
    .replace(/(\d)\.$/, "$1");
}

/**
 * The expression to calculate in `line`, or undefined: the first run of the sentence that
 * calculates something ({@link expressionRuns}, {@link calculates}), with ×/÷ as * and /,
 * full-width forms as ASCII, numbers in scientific notation whole (`1e308*10`: the calculator
 * answers it is beyond its bounds), the calculator's constants and functions in it (`sqrt(2)*3`,
 * `2 * pi`, `round(2.345, 2)`), none of the words around it (`幫我算 sqrt(2)*3 是多少`, `what is
 * 2^70?`); a Chinese discount (`打八五折`: × 85%) or `15% off …` (× 85%) applied to the numbers.
 */
function expressionIn(line: string): string | undefined {
  let text = line.normalize("NFKC").replace(/[×✕]/g, "*").replace(/÷/g, "/").replace(/[−–]/g, "-");
  let factor: string | undefined;
  const off = /(\d+(?:\.\d+)?)\s*%\s*off\b/i.exec(text);
  if (off) {
    factor = `${Number((100 - Number(off[1])).toFixed(6))}%`;
    text = text.replace(off[0], " ");
  }
  const discount = /打\s*([一二三四五六七八九\d])\s*([一二三四五六七八九\d])?\s*折/.exec(text);
  if (discount) {
    factor = `${numberOf(discount[1]!) * 10 + (discount[2] ? numberOf(discount[2]) : 0)}%`;
    text = text.replace(discount[0], " ");
  }
  for (const run of expressionRuns(text)) {
    const expression = runText(run);
    const operator = calculates(run);
    if (operator || (factor && /\d/.test(expression)))
      return factor ? `${operator && !enclosed(expression) ? `(${expression})` : expression} * ${factor}` : expression;
  }
  return undefined;
}

/** When `line` (which asks for a reminder) says it should come: an ISO 8601 local date-time in `timezone`, or undefined. */
function reminderTime(line: string, timezone: string, now: number): string | undefined {
  const start = DateTime.fromMillis(now, { zone: timezone });
  const after = /(\d+)\s*(?:分鐘|minutes?|mins?)\s*(?:後|以後|之後)?|in\s+(\d+)\s*(?:minutes?|mins?)/i.exec(line);
  if (after) return start.plus({ minutes: Number(after[1] ?? after[2]) }).toFormat("yyyy-MM-dd'T'HH:mm:ss");
  const zh = /(\d{1,2}|[零一二兩三四五六七八九十]{1,3})\s*(?:點|時)\s*(?:(\d{1,2})\s*分|(半))?/.exec(line);
  const en =
    /\bat\s+(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)?|\b(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?|o'clock)/i.exec(
      line,
    );
  let hour = zh ? numberOf(zh[1]!) : en ? Number(en[1] ?? en[4]) : NaN;
  const minute = zh ? (zh[3] ? 30 : Number(zh[2] ?? 0)) : en ? Number(en[2] ?? en[5] ?? 0) : 0;
  if (!Number.isInteger(hour) || hour > 24 || minute > 59) return undefined;
  const suffix = (en?.[3] ?? en?.[6] ?? "").toLowerCase();
  const afternoon = /下午|傍晚|晚上|今晚|afternoon|evening|tonight|night/i.test(line) || suffix.startsWith("p");
  if (afternoon && hour < 12) hour += 12;
  if ((/早上|上午|清晨|morning/i.test(line) || suffix.startsWith("a")) && hour === 12) hour = 0;
  const days = /後天|day after tomorrow/i.test(line)
    ? 2
    : /明天|明早|tomorrow/i.test(line)
      ? 1
      : /今天|今晚|today|tonight/i.test(line)
        ? 0
        : undefined;
  let at = start.plus({ days: days ?? 0 }).set({ hour: hour % 24, minute, second: 0, millisecond: 0 });
  if (days === undefined && at.toMillis() <= now + 60_000) at = at.plus({ days: 1 });
  return at.toFormat("yyyy-MM-dd'T'HH:mm");
}

/** What to be reminded of, from a line asking for a reminder. */
function reminderText(line: string): string {
  const zh = /提醒我\s*(?:要|去)?(.*)$/.exec(line);
  if (zh && trimmed(zh[1]!)) return trimmed(zh[1]!);
  const en = /remind me\b(.*)$/i.exec(line)?.[1] ?? "";
  const what = /\bto\s+(.+)$/i.exec(en)?.[1] ?? en;
  return trimmed(what.replace(/\s+(?:at\s+\d.*|tomorrow.*|today.*|tonight.*|in\s+\d+\s+\w+.*)$/i, ""));
}

/** The reply that searches the web for `query`, as the API answers (its server tool, one scripted result, a cited text). */
function webSearch(turn: DemoTurn, query: string): DemoReply {
  if (!turn.tools.has("web_search")) return say(turn, localize(turn.locale, TEXT.unavailable, { tool: "web_search" }));
  const id = blockId("srvtoolu_demo_");
  const url = `https://example.com/demo-search?q=${encodeURIComponent(query)}`;
  const title = localize(turn.locale, TEXT.resultTitle);
  const cited = localize(turn.locale, TEXT.resultCited);
  const secret = () => randomBytes(12).toString("base64");
  return {
    content: [
      { type: "text", text: `${demoLabel(turn.locale)}${localize(turn.locale, TEXT.searching)}` },
      { type: "server_tool_use", id, name: "web_search", input: { query } },
      {
        type: "web_search_tool_result",
        tool_use_id: id,
        content: [{ type: "web_search_result", url, title, encrypted_content: secret(), page_age: null }],
      },
      { type: "text", text: `${demoLabel(turn.locale)}${localize(turn.locale, TEXT.searched, { query })}\n` },
      {
        type: "text",
        text: cited,
        citations: [{ type: "web_search_result_location", url, title, cited_text: cited, encrypted_index: secret() }],
      },
    ],
    stop_reason: "end_turn",
  };
}

/** The memory call that adds `fact` to {@link DEMO_MEMORY_FILE}: a new file, or a line at the end of it. */
function remember(turn: DemoTurn, fact: string): DemoReply {
  const existing = turn.memory.get(DEMO_MEMORY_FILE);
  const input =
    existing === undefined
      ? { command: "create", path: DEMO_MEMORY_FILE, file_text: fact }
      : { command: "insert", path: DEMO_MEMORY_FILE, insert_line: existing.split("\n").length, insert_text: fact };
  return callTool(turn, TEXT.remembering, "memory", input);
}

/** What the demo remembers, as an answer. */
function recall(turn: DemoTurn): DemoReply {
  const notes = [...turn.memory.values()]
    .flatMap((text) => text.split("\n"))
    .map((line) => line.trim())
    .filter((line) => line !== "");
  if (notes.length === 0) return say(turn, localize(turn.locale, TEXT.recallNothing));
  return say(turn, localize(turn.locale, TEXT.recall, { notes: notes.map((n) => `- ${n}`).join("\n") }));
}

/**
 * The script for a user's `text` (see the module comment): the first rule that matches, in this
 * order — web search, what the demo remembers, remember something, a reminder, delete / complete
 * / add / list todos, the weather, a calculation, the time — else the help text.
 */
export function answerText(text: string, turn: DemoTurn): DemoReply {
  return answerRule(text, turn) ?? say(turn, helpText(turn.locale, turn.tools));
}

/**
 * The reply of the first rule of the script that matches a user's `text` (the rules of
 * {@link answerText}, in its order), or undefined when none does (where {@link answerText} falls
 * back to the help text). A rule whose tool the request does not offer still matches: its reply
 * says the tool is not offered.
 */
export function answerRule(text: string, turn: DemoTurn): DemoReply | undefined {
  const line = text.replace(/^\[[^\]]*\]\s*/, "").trim(); // a group's "[Name #code] " label
  const search =
    /(?:上網查|上網搜尋|搜尋|搜索)(?:一下)?\s*[:：]?\s*(.+)$/.exec(line) ??
    /\b(?:search(?:\s+(?:the\s+)?(?:web|internet|online))?(?:\s+for)?|look\s+up|google)\s+(.+)$/i.exec(line);
  if (search || /新聞|\bnews\b/i.test(line)) return webSearch(turn, trimmed(search?.[1] ?? line));
  if (/我住(?:在)?哪|記得.*(?:什麼|甚麼)|what do you (?:remember|know) about me|where do i live/i.test(line))
    return recall(turn);
  const fact =
    /^(?:請)?(?:幫我)?(?:要)?(?:記得|記住)\s*[:：,，]?\s*(.+)$/.exec(line) ??
    /^(?:please\s+)?remember(?:\s+that)?[\s:,]+(.+)$/i.exec(line);
  if (fact && trimmed(fact[1]!)) return remember(turn, trimmed(fact[1]!));
  if (/提醒我|remind me/i.test(line)) {
    const at = reminderTime(line, turn.timezone, turn.now);
    if (!at) return say(turn, localize(turn.locale, TEXT.noTime));
    return callTool(turn, TEXT.reminding, "set_reminder", { text: reminderText(line), at });
  }
  const deleted =
    /(?:刪除?|刪掉|移除|拿掉|delete|remove)\D{0,12}?#?\s*(\d{1,6})/i.exec(line) ??
    /#?\s*(\d{1,6})\s*號?\s*(?:刪掉|刪除|移除|拿掉)/.exec(line);
  if (deleted) return callTool(turn, TEXT.deleting, "delete_todo", { todo_id: Number(deleted[1]) });
  const done =
    /(?:完成|做完了?|勾掉|complete|finish|mark)\D{0,12}?#?\s*(\d{1,6})/i.exec(line) ??
    /#?\s*(\d{1,6})\s*號?\s*(?:完成了?|做完了?|(?:is\s+)?done)/i.exec(line);
  if (done) return callTool(turn, TEXT.completing, "complete_todo", { todo_id: Number(done[1]) });
  const todo =
    /^(?:請)?(?:幫我)?(?:新增|加入|加|記下來?|記一下)(?:一個|一項|個)?(?:待辦(?:事項)?)?\s*[:：,，]?\s*(.+)$/.exec(
      line,
    ) ??
    /^(?:please\s+)?add(?:\s+(?:a|an))?(?:\s+(?:todo|to-do|task|item))?(?:\s+to\s+my\s+(?:todo\s+)?list)?[\s:：,]+(.+)$/i.exec(
      line,
    ) ??
    /^(?:待辦|todo)[\s:：]+(.+)$/i.exec(line);
  if (todo && trimmed(todo[1]!))
    return callTool(turn, TEXT.adding, "add_todo", { title: [...trimmed(todo[1]!)].slice(0, 200).join("") });
  if (/待辦|清單|\btodos?\b|\bto-do\b|\blist\b/i.test(line)) return callTool(turn, TEXT.listing, "list_todos", {});
  if (/天氣|下雨|降雨|氣溫|溫度|雨傘|weather|\brain|forecast|temperature|umbrella/i.test(line)) {
    const city = cityIn(line);
    return callTool(turn, TEXT.weather, "get_weather", city ? { city } : {});
  }
  const expression = expressionIn(line);
  if (expression) return callTool(turn, TEXT.calculating, "calculate", { expression });
  if (/幾點|時間|日期|今天|星期幾|禮拜幾|\btime\b|\bdate\b|what day|clock/i.test(line)) {
    const zone = TIME_ZONES.find(([place]) => place.test(line))?.[1];
    return callTool(turn, TEXT.clock, "get_current_datetime", zone ? { timezone: zone } : {});
  }
  return undefined;
}

/** One tool call of the previous turn and its result. */
export interface DemoToolResult {
  tool: string;
  /** The call's input (what the script asked the tool for). */
  input: Record<string, unknown>;
  result: string;
  isError: boolean;
}

/**
 * The script for a turn of tool results: an answer that shows each result, with a hint of what to
 * try next; a dangerous call the person declined (or did not confirm in time) gets a short answer
 * saying it was not done ({@link NOT_RUN}), not the instruction its result gives the model.
 */
export function answerResults(results: readonly DemoToolResult[], turn: DemoTurn): DemoReply {
  const parts: string[] = [];
  const after = new Set<string>();
  for (const { tool, input, result: given, isError } of results) {
    const notRun = isError ? notRunVerdict(given) : undefined;
    if (notRun) {
      const what = localize(turn.locale, tool === "delete_todo" ? TEXT.deleted : TEXT.done);
      parts.push(localize(turn.locale, NOT_RUN[notRun], { what }));
      continue;
    }
    // The tools answer in the bot's language: to a person writing English, the tool's own English
    // for a Chinese result (`english.ts`), else the result as it came, said to be in the bot's language.
    const foreign = turn.locale === "en" && writtenLocale(given) === "zh-TW";
    const english = foreign ? englishResult(tool, input, given, turn.timezone) : undefined;
    const result = english ?? given;
    const texts =
      foreign && english === undefined
        ? isError
          ? TEXT.failedInBotLanguage
          : TEXT.resultInBotLanguage
        : isError
          ? TEXT.failed
          : TEXT.result;
    parts.push(localize(turn.locale, texts, { tool, result }));
    if (isError) continue;
    if (tool === "add_todo") {
      const id = /#(\d+)/.exec(result)?.[1];
      if (id) after.add(localize(turn.locale, TEXT.afterAdd, { id }));
    }
    if (tool === "get_weather") after.add(localize(turn.locale, TEXT.afterWeather));
    if (tool === "memory") after.add(localize(turn.locale, TEXT.afterMemory));
    if (tool === "set_reminder") after.add(localize(turn.locale, TEXT.afterReminder));
  }
  return say(turn, [...parts, ...after].join("\n\n"));
}
