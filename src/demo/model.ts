/**
 * The demo's model (`npm run chat -- --demo`): a small scripted stand-in for Claude, served on
 * loopback as a real Messages API endpoint (`POST /v1/messages`, JSON or server-sent events when
 * the request says `"stream": true`), so the bot's own client, agent loop, toolbox, approvals and
 * streaming run unchanged, with no API key and nothing sent off this machine. What it answers is
 * the script of `script.ts`. A compaction's request (no tools, a `<transcript>` to summarise) gets
 * a "summary" that lists what the users said, oldest first, merged after the earlier summary's
 * points — not a real summary, but one that keeps the facts, so `/compact` and `/context` show what
 * compaction does.
 *
 * The same server answers the weather tool offline (`forecast`): the CWA REST datastore
 * `GET /cwa/api/v1/rest/datastore/F-C0032-001?locationName=…` from a recorded response shipped with
 * the project (`test/fixtures/cwa/`, see its README), so `CWA_API_BASE` can point here.
 *
 * Wire format: https://docs.anthropic.com/en/api/messages (request and response) and
 * https://docs.anthropic.com/en/api/messages-streaming (`message_start`, `content_block_start`,
 * `content_block_delta` with `text_delta` / `input_json_delta` / `citations_delta`,
 * `content_block_stop`, `message_delta`, `message_stop`); server tool blocks as in
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool .
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { z } from "zod";
import { readFile } from "node:fs/promises";
import type { Locale } from "../config.js";
import { localize, writtenLocale } from "../i18n.js";
import { MEMORY_BLOCK_START } from "../memory/notes.js";
import { TRANSCRIPT_END, TRANSCRIPT_START } from "../prompts.js";
import {
  answerResults,
  answerRule,
  answerText,
  demoLabel,
  type DemoReply,
  type DemoToolResult,
  type DemoTurn,
} from "./script.js";
import { forecastResponse } from "./weather.js";

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

type DemoMessage = DemoRequest["messages"][number];

/** The text blocks of a user turn joined, without the memory block; undefined when it holds tool results. */
function userText(message: DemoMessage): string | undefined {
  if (typeof message.content === "string") return message.content;
  if (message.content.some((b) => b.type === "tool_result")) return undefined;
  return message.content
    .flatMap((b) =>
      b.type === "text" && typeof b.text === "string" && !b.text.startsWith(MEMORY_BLOCK_START) ? [b.text] : [],
    )
    .join("\n");
}

/** The memory files of the request's memory block (`<file name="…">…</file>`, see `src/memory/notes.ts`): path → text. */
function memoryOf(request: DemoRequest): Map<string, string> {
  const files = new Map<string, string>();
  for (const message of request.messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "text" || typeof block.text !== "string" || !block.text.startsWith(MEMORY_BLOCK_START))
        continue;
      for (const [, path, text] of block.text.matchAll(/<file name="([^"]+)">\n([\s\S]*?)\n<\/file>/g))
        files.set(path!, text!);
    }
  }
  return files;
}

/** The text of a `tool_result` block's `content` (a string, or text blocks). */
function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .flatMap((b: { type?: unknown; text?: unknown }) =>
      b?.type === "text" && typeof b.text === "string" ? [b.text] : [],
    )
    .join("\n");
}

/** The tool results of the last user turn, each with the name and input of the call the turn before made. */
function toolResults(request: DemoRequest): DemoToolResult[] {
  const last = request.messages[request.messages.length - 1]!;
  const previous = request.messages[request.messages.length - 2];
  const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
  if (previous && Array.isArray(previous.content))
    for (const b of previous.content)
      if (b.type === "tool_use" && typeof b.id === "string" && typeof b.name === "string")
        calls.set(b.id, {
          name: b.name,
          input: typeof b.input === "object" && b.input !== null ? (b.input as Record<string, unknown>) : {},
        });
  return (Array.isArray(last.content) ? last.content : [])
    .filter((b) => b.type === "tool_result")
    .map((b) => {
      const call = calls.get(String(b.tool_use_id));
      return {
        tool: call?.name ?? "?",
        input: call?.input ?? {},
        result: resultText(b.content),
        isError: b.is_error === true,
      };
    });
}

/** The words of the latest user turn that has text (not tool results), without the memory block. */
function lastUserWords(request: DemoRequest): string | undefined {
  for (const message of [...request.messages].reverse()) {
    if (message.role !== "user") continue;
    const text = userText(message);
    if (text !== undefined && text.trim() !== "") return text;
  }
  return undefined;
}

/** The text of the last turn when it is a user's text (not tool results), without the memory block. */
function lastText(request: DemoRequest): string | undefined {
  const last = request.messages[request.messages.length - 1]!;
  return last.role === "user" ? userText(last) : undefined;
}

/** True for a compaction's request: it offers no tools and its text holds the transcript to summarise. */
function isCompaction(request: DemoRequest, text: string | undefined): text is string {
  return text !== undefined && request.tools === undefined && text.includes(TRANSCRIPT_START);
}

/** What the script knows of `request` (`text`: its last user text, undefined for a turn of tool results). */
function turnOf(request: DemoRequest, text: string | undefined, options: ScriptedReplyOptions): DemoTurn {
  // The script answers in the language the person last wrote in (BOT_LOCALE when the words tell nothing, e.g. `1+1`).
  const said = text ?? lastUserWords(request);
  return {
    locale: (said !== undefined ? writtenLocale(said.replace(/^\[[^\]]*\]\s*/, "")) : undefined) ?? options.locale,
    timezone: options.timezone ?? "Asia/Taipei",
    tools: new Set((request.tools ?? []).flatMap((t) => (typeof t.name === "string" ? [t.name] : []))),
    memory: memoryOf(request),
    now: Date.now(),
  };
}

/**
 * What the demo answers to a request: a compaction's request gets the demo summary; a user text the
 * script's tool call or answer (the help text when no rule matches); tool results an answer showing
 * them (see `script.ts`).
 */
function demoReply(request: DemoRequest, options: DemoModelOptions): DemoReply {
  const text = lastText(request);
  if (isCompaction(request, text))
    return { content: [{ type: "text", text: demoSummary(text, options.locale) }], stop_reason: "end_turn" };
  const turn = turnOf(request, text, options);
  return text === undefined ? answerResults(toolResults(request), turn) : answerText(text, turn);
}

/** The options {@link scriptedReply} reads: the language when the words do not tell, and the time zone. */
export type ScriptedReplyOptions = Pick<DemoModelOptions, "locale" | "timezone">;

/**
 * The demo script's reply to a Messages API request, for another fake of the API to answer as the
 * demo does when its script has something to say (`npm run fakes`): a turn of tool results gets the
 * answer showing them ({@link answerResults}); a user's words the reply of the script's rule they
 * match ({@link answerRule}: a tool call, or an answer).
 * @param body - the request body (parsed JSON).
 * @returns the reply, or undefined when the words match no rule (the demo answers those with its
 * help text), for a compaction's request (the demo answers it with its summary), a turn without
 * tool results or text, and a body the demo cannot read as a Messages API request.
 */
export function scriptedReply(body: unknown, options: ScriptedReplyOptions): DemoReply | undefined {
  const parsed = RequestSchema.safeParse(body);
  if (!parsed.success) return undefined;
  const request = parsed.data;
  const text = lastText(request);
  if (isCompaction(request, text)) return undefined;
  const turn = turnOf(request, text, options);
  if (text !== undefined) return answerRule(text, turn);
  const results = toolResults(request);
  return results.length > 0 ? answerResults(results, turn) : undefined;
}

/** Most points a demo summary keeps (the oldest go first). */
const MAX_SUMMARY_POINTS = 30;

/**
 * The demo's "summary" of a compaction request's text: the earlier summary's points (the lines
 * starting with `- `), then one point per user paragraph of the transcript (`[code] User: …`, cut to 120
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
      // A turn's label is `[code] User:` (the code is new per request, `transcriptOf`).
      .map((p) => p.trim().replace(/^\[[0-9a-f]+\] /, ""))
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
  /** The language of the script's answers when the person's words do not tell (`BOT_LOCALE`); otherwise they follow the words. */
  locale: Locale;
  /** The user's time zone (`TIMEZONE`), for reminders; default Asia/Taipei. */
  timezone?: string;
  /** A recorded CWA REST response of F-C0032-001 (a file path) to serve to the weather tool; unset = no weather. */
  forecast?: string;
  /** Characters per streamed text delta (default 3; more for a long text, which streams in about {@link MAX_DELTAS} deltas). */
  chunkChars?: number;
  /** Pause between two streamed deltas, in ms (default 25): slow enough to watch the answer grow. */
  deltaMs?: number;
}

/** Where the demo serves the CWA API (its base, ending in `/api` as `CWA_API_BASE` must). */
const CWA_PATH = "/cwa/api";

/** Most deltas one text block streams in: a long text comes in bigger pieces, so no text block takes more than about half a second. */
const MAX_DELTAS = 20;

/** The running demo model. */
export interface DemoModel {
  /** Its base URL (`http://127.0.0.1:<port>`), for `ANTHROPIC_BASE_URL`. */
  url: string;
  /** The CWA API base it serves (for `CWA_API_BASE`, ending in `/api`), when `forecast` was given. */
  cwaBase?: string;
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

/**
 * Streams `reply` as the Messages API does: a text block's citations as `citations_delta` events,
 * then its text in small deltas; a tool's input as one `input_json_delta`; a server tool's result
 * whole in its `content_block_start`.
 */
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
  for (const [index, block] of reply.content.entries()) {
    if (block.type === "text") {
      event(res, "content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" },
      });
      for (const citation of block.citations ?? [])
        event(res, "content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "citations_delta", citation },
        });
      const characters = [...block.text];
      const size = Math.max(options.chunkChars ?? 3, Math.ceil(characters.length / MAX_DELTAS));
      for (let i = 0; i < characters.length && !closed(); i += size) {
        event(res, "content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: characters.slice(i, i + size).join("") },
        });
        await sleep(options.deltaMs ?? 25);
      }
    } else if (block.type === "web_search_tool_result") {
      event(res, "content_block_start", { type: "content_block_start", index, content_block: block });
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
 * reach it). It answers `POST /v1/messages`, and with `forecast` the CWA forecast
 * (`GET /cwa/api/v1/rest/datastore/F-C0032-001`); any other path gets 404, a request it cannot
 * read 400, both in the API's error shape.
 * @throws when `forecast` cannot be read as JSON, or no port can be had.
 */
export async function startDemoModel(options: DemoModelOptions): Promise<DemoModel> {
  const forecast: unknown = options.forecast ? JSON.parse(await readFile(options.forecast, "utf8")) : undefined;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (
        forecast !== undefined &&
        req.method === "GET" &&
        url.pathname === `${CWA_PATH}/v1/rest/datastore/F-C0032-001`
      ) {
        res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
        return res.end(JSON.stringify(forecastResponse(forecast, url.searchParams.get("locationName"))));
      }
      if (req.method !== "POST" || url.pathname !== "/v1/messages")
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
      const reply = demoReply(request, options);
      const written = reply.content.map((b) => (b.type === "text" ? b.text : JSON.stringify(b))).join("");
      const searches = reply.content.filter((b) => b.type === "server_tool_use").length;
      const usage = {
        input_tokens: tokens(body!),
        output_tokens: tokens(written),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        ...(searches > 0 ? { server_tool_use: { web_search_requests: searches, web_fetch_requests: 0 } } : {}),
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
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    ...(forecast !== undefined ? { cwaBase: `${url}${CWA_PATH}` } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
