/**
 * The demo's model (`npm run chat -- --demo`): a small scripted stand-in for Claude, served on
 * loopback as a real Messages API endpoint (`POST /v1/messages`, JSON or server-sent events when
 * the request says `"stream": true`), so the bot's own client, agent loop, toolbox, approvals and
 * streaming run unchanged, with no API key and nothing sent off this machine.
 *
 * It answers by rules, never by understanding: the last user turn's text picks a tool
 * (`get_current_datetime`, `calculate`, `add_todo`, `delete_todo`, `list_todos`) or the help
 * text; a turn of `tool_result` blocks gets a short answer built from the results. A compaction's
 * request (no tools, a `<transcript>` to summarise) gets a "summary" that lists what the users
 * said, oldest first, merged after the earlier summary's points — not a real summary, but one that
 * keeps the facts, so `/compact` and `/context` show what compaction does. Every text it writes
 * starts with a demo label, so nobody takes it for Claude.
 *
 * Wire format: https://docs.anthropic.com/en/api/messages (request and response) and
 * https://docs.anthropic.com/en/api/messages-streaming (`message_start`, `content_block_start`,
 * `content_block_delta` with `text_delta` / `input_json_delta`, `content_block_stop`,
 * `message_delta`, `message_stop`).
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { z } from "zod";
import type { Locale } from "../config.js";
import { localize } from "../i18n.js";
import { TRANSCRIPT_END, TRANSCRIPT_START } from "../prompts.js";

/** A content block of the demo's answers. */
type Block =
  { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** What the demo answers to one request: its content and why it stopped. */
interface DemoReply {
  content: Block[];
  stop_reason: "end_turn" | "tool_use";
}

/** The parts of a Messages API request the demo reads; anything else in it is accepted and ignored. */
const RequestSchema = z.object({
  model: z.string().min(1),
  stream: z.boolean().optional(),
  tools: z.array(z.looseObject({})).optional(),
  messages: z
    .array(
      z.object({
        role: z.enum(["user", "assistant"]),
        content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]),
      }),
    )
    .min(1),
});
type DemoRequest = z.infer<typeof RequestSchema>;

/** The label every demo answer starts with. */
function demoLabel(locale: Locale): string {
  return localize(locale, { "zh-TW": "［示範］", en: "[demo] " });
}

const TEXT = {
  help: {
    "zh-TW":
      "這是示範模式：回答的是內建的腳本，不是 Claude，不需要 API 金鑰，也不連網路。試試看：「現在幾點？」、「(1200 + 800) * 0.05」、「新增待辦 買牛奶」，然後「刪除待辦 1」（會先問你確認，輸入 y 或 n）。/tools 列出工具，/quit 離開。",
    en:
      "This is the demo: a built-in script answers, not Claude; no API key, no network. Try " +
      '"what time is it?", "(1200 + 800) * 0.05", "add todo buy milk", then "delete todo 1" (it ' +
      "asks you first: type y or n). /tools lists the tools, /quit leaves.",
  },
  clock: { "zh-TW": "我用時鐘工具看一下。", en: "Let me check the clock tool." },
  calculating: { "zh-TW": "我用計算機算一下。", en: "Let me use the calculator." },
  adding: { "zh-TW": "好，我把它加進你的待辦。", en: "Sure, adding it to your todo list." },
  deleting: { "zh-TW": "刪除需要你先確認。", en: "Deleting needs your approval first." },
  listing: { "zh-TW": "我看一下你的待辦清單。", en: "Let me look at your todo list." },
  result: { "zh-TW": "工具 {tool} 的結果：\n{result}", en: "The {tool} tool says:\n{result}" },
  failed: { "zh-TW": "工具 {tool} 沒有成功：{result}", en: "The {tool} tool did not succeed: {result}" },
  afterAdd: {
    "zh-TW": "接著試試「刪除待辦 {id}」，看看確認提示。",
    en: 'Now try "delete todo {id}" to see an approval prompt.',
  },
};

/** The text of a user turn (its text blocks joined), or undefined when it holds tool results. */
function userText(message: DemoRequest["messages"][number]): string | undefined {
  if (typeof message.content === "string") return message.content;
  if (message.content.some((b) => b.type === "tool_result")) return undefined;
  return message.content.flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : [])).join("\n");
}

/** The text of a `tool_result` block's `content` (a string, or text blocks). */
function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .flatMap((b: { type?: unknown; text?: unknown }) =>
        b?.type === "text" && typeof b.text === "string" ? [b.text] : [],
      )
      .join("\n");
  return "";
}

let toolCounter = 0;
function toolId(): string {
  toolCounter += 1;
  return `toolu_demo_${Date.now().toString(36)}${toolCounter}`;
}

/** A reply that calls one tool, after a short lead sentence. */
function callTool(lead: string, name: string, input: Record<string, unknown>): DemoReply {
  return {
    content: [
      { type: "text", text: lead },
      { type: "tool_use", id: toolId(), name, input },
    ],
    stop_reason: "tool_use",
  };
}

/** The demo's banner, printed when the chat starts: what it is and what to try. */
export function demoBanner(locale: Locale): string {
  return `${demoLabel(locale)}${localize(locale, TEXT.help)}`;
}

/** The script: a user text picks a tool (or the help text). */
function answerText(text: string, locale: Locale): DemoReply {
  const say = (t: Record<Locale, string>) => `${demoLabel(locale)}${localize(locale, t)}`;
  const line = text.replace(/^\[[^\]]*\]\s*/, "").trim(); // a group's "[Name] " prefix
  const todoNumber = /(?:刪除?|delete|remove)\D{0,12}?#?(\d{1,6})/i.exec(line);
  if (todoNumber) return callTool(say(TEXT.deleting), "delete_todo", { todo_id: Number(todoNumber[1]) });
  const todo =
    /^(?:新增|加入?|記下?|add\b)\s*(?:一?個?待辦(?:事項)?|todo)?[\s:：]*(.+)$/i.exec(line) ??
    /^(?:待辦|todo)[\s:：]+(.+)$/i.exec(line);
  if (todo) return callTool(say(TEXT.adding), "add_todo", { title: todo[1]!.trim().slice(0, 200) });
  if (/待辦|清單|todos?\b|list/i.test(line)) return callTool(say(TEXT.listing), "list_todos", {});
  const expression = /[-+*/^()\d.\s%]*\d\s*[-+*/^%]\s*[-+*/^()\d.\s%]*/.exec(line)?.[0]?.trim();
  if (expression && /\d/.test(expression)) return callTool(say(TEXT.calculating), "calculate", { expression });
  if (/幾點|時間|日期|今天|星期|time|date|day|clock/i.test(line))
    return callTool(say(TEXT.clock), "get_current_datetime", {});
  return { content: [{ type: "text", text: say(TEXT.help) }], stop_reason: "end_turn" };
}

/** The script: a turn of tool results gets an answer that shows them. */
function answerResults(request: DemoRequest, locale: Locale): DemoReply {
  const last = request.messages[request.messages.length - 1]!;
  const previous = request.messages[request.messages.length - 2];
  const calls = new Map<string, string>();
  if (previous && Array.isArray(previous.content)) {
    for (const b of previous.content)
      if (b.type === "tool_use" && typeof b.id === "string" && typeof b.name === "string") calls.set(b.id, b.name);
  }
  const parts: string[] = [];
  let added: string | undefined;
  for (const block of Array.isArray(last.content) ? last.content : []) {
    if (block.type !== "tool_result") continue;
    const tool = calls.get(String(block.tool_use_id)) ?? "?";
    const result = resultText(block.content);
    parts.push(localize(locale, block.is_error === true ? TEXT.failed : TEXT.result, { tool, result }));
    if (tool === "add_todo" && block.is_error !== true) added = /#(\d+)/.exec(result)?.[1];
  }
  if (added) parts.push(localize(locale, TEXT.afterAdd, { id: added }));
  return { content: [{ type: "text", text: `${demoLabel(locale)}${parts.join("\n\n")}` }], stop_reason: "end_turn" };
}

/**
 * What the demo answers to a request: to tool results, an answer showing them; to a user text, a
 * tool call or the help text (see the module comment).
 */
function demoReply(request: DemoRequest, locale: Locale): DemoReply {
  const last = request.messages[request.messages.length - 1]!;
  const text = last.role === "user" ? userText(last) : undefined;
  if (text !== undefined && request.tools === undefined && text.includes(TRANSCRIPT_START))
    return { content: [{ type: "text", text: demoSummary(text, locale) }], stop_reason: "end_turn" };
  return text === undefined ? answerResults(request, locale) : answerText(text, locale);
}

/** Most points a demo summary keeps (the oldest go first). */
const MAX_SUMMARY_POINTS = 30;

/**
 * The demo's "summary" of a compaction request's text: the earlier summary's points (the lines
 * starting with `- `), then one point per user paragraph of the transcript (`User: …`, cut to 120
 * characters), at most {@link MAX_SUMMARY_POINTS}, under the demo label.
 */
function demoSummary(request: string, locale: Locale): string {
  const earlier = /<earlier_summary>\n([\s\S]*?)\n<\/earlier_summary>/.exec(request)?.[1] ?? "";
  const transcript = request.slice(
    request.indexOf(TRANSCRIPT_START) + TRANSCRIPT_START.length,
    Math.max(0, request.lastIndexOf(TRANSCRIPT_END)),
  );
  const said = localize(locale, { "zh-TW": "使用者說", en: "The user said" });
  const points = [
    ...earlier.split("\n").filter((l) => l.startsWith("- ")),
    ...transcript
      .split("\n\n")
      .map((p) => p.trim())
      .filter((p) => p.startsWith("User: ") && !p.startsWith("User: [tool"))
      .map((p) =>
        `- ${said}：${[...p.slice(6).replace(/\s+/g, " ").trim()].slice(0, 120).join("")}`.replace(
          "：",
          locale === "en" ? ": " : "：",
        ),
      ),
  ];
  const note = localize(locale, {
    "zh-TW": "（示範模式不會真的摘要：這裡只列出說過的話）",
    en: "(the demo does not really summarise: it lists what was said)",
  });
  return `${demoLabel(locale)}${note}\n${points.slice(-MAX_SUMMARY_POINTS).join("\n")}`;
}

/** Options of {@link startDemoModel}. */
export interface DemoModelOptions {
  /** The language of the script's answers. */
  locale: Locale;
  /** Characters per streamed text delta (default 3). */
  chunkChars?: number;
  /** Pause between two streamed deltas, in ms (default 25): slow enough to watch the answer grow. */
  deltaMs?: number;
}

/** The running demo model. */
export interface DemoModel {
  /** Its base URL (`http://127.0.0.1:<port>`), for `ANTHROPIC_BASE_URL`. */
  url: string;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Roughly one token per four characters, for the `usage` of a response. */
function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ type: "error", error: { type, message } }));
}

/** Writes one server-sent event. */
function event(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Streams `reply` as the Messages API does: text in small deltas, a tool's input as one `input_json_delta`. */
async function streamReply(
  res: ServerResponse,
  message: Record<string, unknown>,
  reply: DemoReply,
  options: DemoModelOptions,
  closed: () => boolean,
): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  event(res, "message_start", {
    type: "message_start",
    message: { ...message, content: [], stop_reason: null, stop_sequence: null },
  });
  const size = options.chunkChars ?? 3;
  for (const [index, block] of reply.content.entries()) {
    if (block.type === "text") {
      event(res, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" },
      });
      const characters = [...block.text];
      for (let i = 0; i < characters.length && !closed(); i += size) {
        event(res, "content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: characters.slice(i, i + size).join("") },
        });
        await sleep(options.deltaMs ?? 25);
      }
    } else {
      event(res, "content_block_start", { type: "content_block_start", index, content_block: { ...block, input: {} } });
      event(res, "content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    event(res, "content_block_stop", { type: "content_block_stop", index });
  }
  event(res, "message_delta", {
    type: "message_delta",
    delta: { stop_reason: reply.stop_reason, stop_sequence: null },
    usage: message.usage,
  });
  event(res, "message_stop", { type: "message_stop" });
  res.end();
}

/** Reads a request body (at most 32 MB, as the API allows). */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 32 * 1024 * 1024) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Starts the demo model on a free port of 127.0.0.1 (loopback only: nothing off this machine can
 * reach it). It answers `POST /v1/messages`; any other path gets 404, a request it cannot read 400,
 * both in the API's error shape.
 */
export async function startDemoModel(options: DemoModelOptions): Promise<DemoModel> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== "POST" || !req.url?.startsWith("/v1/messages"))
        return sendError(res, 404, "not_found_error", "the demo model answers POST /v1/messages only");
      const body = await readBody(req);
      let parsed: ReturnType<typeof RequestSchema.safeParse> | undefined;
      try {
        parsed = body === undefined ? undefined : RequestSchema.safeParse(JSON.parse(body));
      } catch {
        parsed = undefined;
      }
      if (!parsed?.success)
        return sendError(res, 400, "invalid_request_error", "the demo model could not read this request");
      const request = parsed.data;
      const reply = demoReply(request, options.locale);
      const written = reply.content.map((b) => (b.type === "text" ? b.text : JSON.stringify(b.input))).join("");
      const usage = {
        input_tokens: tokens(body!),
        output_tokens: tokens(written),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      };
      const message = {
        id: `msg_demo_${randomBytes(8).toString("hex")}`,
        type: "message",
        role: "assistant",
        model: request.model,
        usage,
      };
      if (request.stream) {
        let closed = false;
        res.on("close", () => (closed = true));
        return streamReply(res, message, reply, options, () => closed);
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ ...message, content: reply.content, stop_reason: reply.stop_reason, stop_sequence: null }),
      );
    })().catch(() => {
      if (!res.headersSent) sendError(res, 500, "api_error", "the demo model failed");
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
